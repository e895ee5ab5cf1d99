package symbolize

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/buildid"
)

// TestSignalTrampolineNamedAtItsStart symbolizes a frame-pointer stack of a
// signal handler, whose return address is a signal trampoline's first
// instruction: this machine's glibc's __restore_rt (symbols from libc6-dbg)
// and a Go program's runtime.sigreturn__sigaction. perf script names the
// frame __restore_rt; main looked it up one byte back, as it does a
// caller's, in the padding before it, and left it unnamed (62 of
// the 2,023 samples of testdata/fidelity/system-fp's first recording). The handler's own frame
// keeps its name.
func TestSignalTrampolineNamedAtItsStart(t *testing.T) {
	lib, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	bid := buildID(t, lib)
	dbg := buildid.Paths("/usr/lib/debug", bid, buildid.Tree, buildid.Debuginfo)[0].Path
	if _, err := os.Stat(dbg); err != nil {
		t.Fatalf("libc's debug file %s missing (package libc6-dbg): run make deps", dbg)
	}
	gowork, err := filepath.Abs("../testdata/fidelity/gowork")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, symsFrom, trampoline, want string
		base                             uint64
	}{
		{lib, dbg, "__restore_rt", "__restore_rt", 0x7f3a12000000},
		{gowork, gowork, "runtime.sigreturn__sigaction.abi0", "runtime.sigreturn__sigaction.abi0", 0},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			ef, err := elf.Open(c.symsFrom)
			if err != nil {
				t.Fatal(err)
			}
			syms, _ := ef.Symbols()
			ef.Close()
			var at, leaf uint64
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
					continue
				}
				if s.Name == c.trampoline {
					at = s.Value
				} else if leaf == 0 && s.Size > 16 {
					leaf = s.Value + 8
				}
			}
			if at == 0 {
				t.Fatalf("%s has no symbol %s", c.symsFrom, c.trampoline)
			}
			m := mapBinary(t, c.file, buildID(t, c.file), c.base)
			p := newProfile(m)
			handler := &profile.Location{ID: 1, Mapping: m, Address: c.base + leaf}
			tramp := &profile.Location{ID: 2, Mapping: m, Address: c.base + at}
			p.Location = []*profile.Location{handler, tramp}
			p.Sample = []*profile.Sample{{Location: []*profile.Location{handler, tramp}, Value: []int64{1}}}
			CallSites(p)
			cfg := hermetic()
			cfg.SystemDebugDir = "/usr/lib/debug"
			rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := p.Sample[0].Location[1]
			if len(got.Line) == 0 || got.Line[len(got.Line)-1].Function.Name != c.want {
				var name string
				if len(got.Line) > 0 {
					name = got.Line[len(got.Line)-1].Function.Name
				}
				t.Errorf("the signal handler's return address %#x (%s) is named %q, want %q; report %+v", at, c.trampoline, name, c.want, rep.Mappings)
			}
			if l := p.Sample[0].Location[0]; len(l.Line) == 0 {
				t.Errorf("the handler's frame at %#x is unnamed", leaf)
			}
		})
	}
}
