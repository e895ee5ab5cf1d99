package symbolize

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

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
