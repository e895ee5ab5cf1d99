package symbolize

import (
	"context"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

// namePLT names the PLT stubs of a binary whose symbols come from a
// separate debug file (from debuginfod, a -dbgsym package), which keeps
// .plt's section header but not the relocations and dynamic symbols that
// name its stubs: without them a sample in strlen@plt goes to _init, or
// to nothing. When one of objAddrs is in the PLT it finds the executable
// as Locate finds code (a local file with the build ID, else debuginfod's
// /buildid/ID/executable unless opt says no) and takes the names from it,
// once per loaded binary. It returns why the stubs stay unnamed, or nil.
func (s *Symbolizer) namePLT(ctx context.Context, l *loaded, m *profile.Mapping, opt Options, objAddrs []uint64) error {
	df, ok := l.obj.(*elfsym.File)
	if !ok || df.PLTNamed() {
		return nil
	}
	in := 0
	for _, a := range objAddrs {
		if df.InPLT(a) {
			in++
		}
	}
	if in == 0 {
		return nil
	}
	l.pltMu.Lock()
	defer l.pltMu.Unlock()
	if !l.pltDone {
		l.pltErr = s.usePLTOfExecutable(ctx, df, m, opt)
		l.pltDone = ctx.Err() == nil // a skipped binary tries again
	}
	if l.pltErr != nil && ctx.Err() == nil {
		return fmt.Errorf("%d addresses in the PLT left unnamed, as the executable that names its stubs was not found: %w", in, l.pltErr)
	}
	return nil
}

// usePLTOfExecutable gives df the PLT names of m's executable, located as
// Locate finds code.
func (s *Symbolizer) usePLTOfExecutable(ctx context.Context, df *elfsym.File, m *profile.Mapping, opt Options) error {
	loc, err := s.Locate(ctx, m, opt, NeedCode)
	if err != nil {
		return err
	}
	trust := localfile.Configured
	if loc.Exec == m.File {
		trust = localfile.Named // the mapped file, as find opened it
	}
	exe, err := elfsym.OpenContext(ctx, loc.Exec, trust)
	if err != nil {
		return err
	}
	defer exe.Close()
	df.UsePLTOf(exe)
	return nil
}
