package ingest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/papyrus"
)

// papyrusFormat reads Papyrus script and stack profiles (package papyrus).
var papyrusFormat = Format{
	Name:  "Papyrus profile",
	Sniff: papyrus.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := papyrus.Parse(bytes.NewReader(data), papyrus.Options{MaxLineBytes: lim.MaxLineBytes, MaxSamples: lim.MaxSamples, MaxStackDepth: lim.MaxStackDepth})
		if errors.Is(err, papyrus.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
	Named: true, // its first line says what it is
}
