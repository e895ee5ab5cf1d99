package symbolize

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/buildid"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/unwind"
)

// TestFinderChecksIdentity opens a copy of deep the ways a perf.data can
// name it, through the unwinder's Finder and this package's locator, and
// checks that a file that is not the one perf saw is refused.
func TestFinderChecksIdentity(t *testing.T) {
	data, err := os.ReadFile("../testdata/perf/deep")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "deep")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elfsym.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	bid := f.BuildID()
	f.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	local := New(hermetic())
	scfg := hermetic()
	scfg.IgnoreMappingPaths = true
	server := New(scfg)
	cases := []struct {
		name    string
		fi      *unwind.Finder
		bid     string
		ino     uint64
		wantErr string
	}{
		{"build ID matches", unwind.NewFinder(local), bid, 0, ""},
		{"build ID differs", unwind.NewFinder(local), "00112233445566778899aabbccddeeff00112233", 0, "has build ID"},
		{"bad build ID", unwind.NewFinder(local), "../../etc", 0, "build ID"},
		{"inode matches", unwind.NewFinder(local), "", st.Ino, ""},
		{"inode differs", unwind.NewFinder(local), "", st.Ino + 1, "replaced"},
		{"neither", unwind.NewFinder(local), "", 0, "neither a build ID nor an inode"},
		{"server", &unwind.Finder{Locator: server, IgnorePaths: true}, bid, 0, "not on this machine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := c.fi.Object(path, c.bid, c.ino)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := o.Row(0x1189); err != nil { // leaf's first instruction
					t.Errorf("Row: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("err = %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

// TestLocateForDataTypes: for the data-type page, the mapping's own file is
// used only when its build ID matches; a FIFO named by a profile is never
// opened. (It was the data-type page's own finder's test.)
func TestLocateForDataTypes(t *testing.T) {
	full, err := filepath.Abs("../testdata/datatype/datatype-dw4-nopie")
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(t, full)
	cfg := hermetic()
	cfg.DebugDirs = []string{t.TempDir()}
	s := New(cfg)
	ctx := context.Background()
	locate := func(m *profile.Mapping) (Located, error) { return s.Locate(ctx, m, Options{}, NeedTypes) }

	d, err := locate(&profile.Mapping{File: full, BuildID: strings.ToUpper(id)})
	if err != nil || d.Exec != full || d.Debug != full || !strings.Contains(d.Source, "the mapped file") {
		t.Errorf("unstripped binary: %+v, %v", d, err)
	}
	if _, err := locate(&profile.Mapping{File: full, BuildID: "00112233"}); err == nil || !strings.Contains(err.Error(), "no executable with build ID 00112233") {
		t.Errorf("build ID mismatch: %v", err)
	}
	if _, err := locate(&profile.Mapping{File: full, BuildID: "../../etc"}); err == nil || !strings.Contains(err.Error(), "not hexadecimal") {
		t.Errorf("hostile build ID: %v", err)
	}
	if _, err := locate(&profile.Mapping{File: "[kernel.kallsyms]", BuildID: "aabbccdd"}); err == nil || !strings.Contains(err.Error(), "no vmlinux with build ID aabbccdd") {
		t.Errorf("kernel: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := locate(&profile.Mapping{File: fifo})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("a FIFO was accepted as a binary")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Locate blocked on a FIFO named by the profile")
	}
}

// funcAddr is the address of function name in the ELF file at path.
func funcAddr(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return s.Value
		}
	}
	t.Fatalf("no function %s in %s", name, path)
	return 0
}

// copyFile copies src to dst, making dst's directory.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestEveryConsumerHonoursDebugDirAndIgnoreVmlinux: the four consumers of
// debug info (the symbolizer, the data-type page, the perf.data unwinder
// and the source view) find a binary that is only in a --debug-dir, and
// none of them uses a vmlinux with --ignore-vmlinux, while without the flag
// each finds it (so each check can fail).
func TestEveryConsumerHonoursDebugDirAndIgnoreVmlinux(t *testing.T) {
	exe, err := filepath.Abs("../testdata/datatype/datatype-dw5-pie")
	if err != nil {
		t.Fatal(err)
	}
	vmlinux, err := filepath.Abs("../testdata/datatype/datatype-vmlinux")
	if err != nil {
		t.Fatal(err)
	}
	bid, kid := buildID(t, exe), buildID(t, vmlinux)
	debugDir := t.TempDir()
	userFile := buildid.Paths(debugDir, bid, buildid.Tree, buildid.Executable)[0].Path
	kernelFile := buildid.Paths(debugDir, kid, buildid.Tree, buildid.Debuginfo)[0].Path
	copyFile(t, exe, userFile)
	copyFile(t, vmlinux, kernelFile)

	// The user binary is mapped from a path this machine does not have:
	// only --debug-dir can provide it.
	const base = 0x555555554000
	um := mapBinary(t, exe, bid, base)
	um.File = "/nonexistent/datatype-dw5-pie"
	uaddr := base + funcAddr(t, exe, "get_key")
	vf, err := elfsym.Open(vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := vf.KernelText()
	vf.Close()
	km := &profile.Mapping{Start: text, Limit: text + 0x100000, Offset: text, File: "[kernel.kallsyms]_text", BuildID: kid}
	kaddr := funcAddr(t, vmlinux, "get_key")
	profileOf := func(m *profile.Mapping, addr uint64) *profile.Profile {
		mm := *m
		p := newProfile(&mm)
		l := &profile.Location{ID: 1, Mapping: &mm, Address: addr}
		p.Location = []*profile.Location{l}
		p.Sample = []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{1}}}
		return p
	}
	engine := func(debugDirs bool, ignoreVmlinux bool) *Symbolizer {
		cfg := hermetic()
		cfg.KernelRelease = "none"
		if debugDirs {
			cfg.DebugDirs = []string{debugDir}
		}
		cfg.IgnoreVmlinux = ignoreVmlinux
		return New(cfg)
	}
	ctx := context.Background()

	consumers := []struct {
		name string
		// uses reports the file the consumer used for mapping m at addr,
		// or the error saying why it found none.
		uses func(s *Symbolizer, m *profile.Mapping, addr uint64) (string, error)
	}{
		{"symbolizer", func(s *Symbolizer, m *profile.Mapping, addr uint64) (string, error) {
			rep, err := s.Symbolize(ctx, profileOf(m, addr), Options{})
			if err != nil {
				return "", err
			}
			if r := rep.Mappings[0]; r.State != StateSymbolized {
				return "", errors.New(r.Reason)
			}
			return rep.Mappings[0].Source, nil
		}},
		{"data-type page", func(s *Symbolizer, m *profile.Mapping, addr uint64) (string, error) {
			d := s.DataTypes(ctx, profileOf(m, addr), 0, DataTypeOptions{}).Profile.DSOs[0]
			if d.Error != "" {
				return "", errors.New(d.Error)
			}
			return d.DebugSource, nil
		}},
		{"unwinder", func(s *Symbolizer, m *profile.Mapping, addr uint64) (string, error) {
			if IsKernel(m.File) { // the unwinder never unwinds the kernel: its locator's answer
				exec, _, err := s.LocateCode(ctx, m.File, m.BuildID)
				return exec, err
			}
			o, err := unwind.NewFinder(s).Object(m.File, m.BuildID, 0)
			if err != nil {
				return "", err
			}
			if _, err := o.Row(addr - base); err != nil {
				return "", err
			}
			exec, _, err := s.LocateCode(ctx, m.File, m.BuildID)
			return exec, err
		}},
		{"source view", func(s *Symbolizer, m *profile.Mapping, addr uint64) (string, error) {
			h, err := s.Open(ctx, m, Options{})
			if err != nil {
				return "", err
			}
			defer h.Close()
			u, ok, err := h.Unit(addr)
			if err != nil {
				return "", err
			}
			if !ok {
				return "", errors.New("no compile unit (no DWARF): " + h.Source())
			}
			return h.Source() + " unit in " + u.Dir, nil
		}},
	}
	for _, c := range consumers {
		t.Run(c.name, func(t *testing.T) {
			if got, err := c.uses(engine(true, false), um, uaddr); err != nil || !strings.Contains(got, userFile) {
				t.Errorf("with --debug-dir: used %q (%v), want %s", got, err, userFile)
			}
			if got, err := c.uses(engine(false, false), um, uaddr); err == nil {
				t.Errorf("without --debug-dir: used %q, want nothing found", got)
			}
			if got, err := c.uses(engine(true, false), km, kaddr); err != nil || !strings.Contains(got, kernelFile) {
				t.Errorf("kernel: used %q (%v), want the vmlinux %s", got, err, kernelFile)
			}
			if got, err := c.uses(engine(true, true), km, kaddr); err == nil || strings.Contains(got, kernelFile) {
				t.Errorf("kernel with --ignore-vmlinux: used %q (%v), want no vmlinux", got, err)
			}
		})
	}
}
