package localfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"viewer/symbolize/localfile"
)

// TestOpenRefuses checks what Open refuses, and that a FIFO is refused at
// once instead of blocking open(2).
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "a.c")
	os.WriteFile(regular, []byte("int a;\n"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(regular, link)
	procLink := filepath.Join(dir, "env")
	os.Symlink("/proc/self/environ", procLink)
	procDir := filepath.Join(dir, "self")
	os.Symlink("/proc/self", procDir)

	for _, tc := range []struct {
		path  string
		trust localfile.Trust
		want  string // "" opens
	}{
		{regular, localfile.Named, ""},
		{fifo, localfile.Named, "not a regular file (a FIFO)"},
		{fifo, localfile.Configured, "not a regular file (a FIFO)"},
		{dir, localfile.Named, "not a regular file (a directory)"},
		{"/dev/null", localfile.Configured, "under /dev"},
		{"/proc/self/environ", localfile.Configured, "under /proc"},
		{link, localfile.Named, "is a symbolic link"},
		{link, localfile.Configured, ""},
		{procLink, localfile.Configured, "under /proc"},
		{filepath.Join(procDir, "environ"), localfile.Named, "under /proc"},
		{dir + "/x" + strings.Repeat("/..", 30) + "/proc/self/environ", localfile.Named, "under /proc"},
	} {
		start := time.Now()
		f, err := localfile.Open(context.Background(), tc.path, tc.trust)
		if time.Since(start) > 2*time.Second {
			t.Errorf("%s: Open took %v", tc.path, time.Since(start))
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (trust %d): %v, want it opened", tc.path, tc.trust, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, localfile.ErrRefused)):
			t.Errorf("%s (trust %d): %v, want a refusal saying %q", tc.path, tc.trust, err, tc.want)
		}
		if f != nil {
			f.Close()
		}
	}
	if _, err := localfile.ReadFile(context.Background(), regular, localfile.Named, 3); err == nil || !strings.Contains(err.Error(), "larger than the 3-byte limit") {
		t.Errorf("ReadFile over the limit: %v", err)
	}
	if _, err := localfile.OpenELF(context.Background(), regular, localfile.Named); !errors.Is(err, localfile.ErrNotELF) || strings.Contains(err.Error(), "int a") {
		t.Errorf("OpenELF of a text file: %v, want ErrNotELF quoting nothing", err)
	}
}
