package ondemand

import (
	"context"
	"fmt"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
)

// Engine adapts the symbolization engine to the Manager's Symbolizer: each
// binary's state changes become Updates keyed by symbolize.BinaryKey, and
// Timeout (when set) bounds each call.
type Engine struct {
	Symbolizer *symbolize.Symbolizer
	Timeout    time.Duration
}

// Symbolize implements Symbolizer.
func (e Engine) Symbolize(ctx context.Context, p *profile.Profile, req Request) (err error) {
	// A panic on one binary's debug info fails that binary, not the server
	// (the job runs outside any request).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("symbolization failed on this binary's debug info (%v); it stays unsymbolized", r)
		}
	}()
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	_, err = e.Symbolizer.Symbolize(ctx, p, symbolize.Options{
		NoDebuginfod: req.NoDebuginfod,
		Progress: func(ev symbolize.Event) {
			key := ""
			if ev.Mapping != nil {
				key = symbolize.BinaryKey(ev.Mapping)
			}
			req.Update(Update{Key: key, BuildID: ev.BuildID, File: ev.File, State: ev.State, Source: ev.Source, Err: ev.Err})
		},
	})
	return err
}
