package unwind

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"viewer/symbolize/elfsym"
)

// TestFinderChecksIdentity opens a copy of deep the ways a perf.data can
// name it, and checks that a file that is not the one perf saw is refused.
func TestFinderChecksIdentity(t *testing.T) {
	data, err := os.ReadFile(deepPath)
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
	cases := []struct {
		name    string
		fi      *Finder
		bid     string
		ino     uint64
		wantErr string
	}{
		{"build ID matches", &Finder{}, bid, 0, ""},
		{"build ID differs", &Finder{}, "00112233445566778899aabbccddeeff00112233", 0, "has build ID"},
		{"bad build ID", &Finder{}, "../../etc", 0, "build ID"},
		{"inode matches", &Finder{}, "", st.Ino, ""},
		{"inode differs", &Finder{}, "", st.Ino + 1, "replaced"},
		{"neither", &Finder{}, "", 0, "neither a build ID nor an inode"},
		{"server", &Finder{IgnorePaths: true}, bid, 0, "not on this machine"},
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
