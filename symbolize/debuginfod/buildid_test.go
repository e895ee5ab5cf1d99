package debuginfod_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize/debuginfod"
)

func TestFileBuildID(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"hello": helloID, "hello.debug": helloID, "other": otherID, "other.debug": otherID} {
		got, err := debuginfod.FileBuildID(filepath.Join(filesDir, name))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", name, got, err, want)
		}
	}
	// buildids.txt, written by build.sh with eu-readelf, agrees.
	list, err := os.ReadFile(filepath.Join(filesDir, "..", "buildids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		id, file, _ := strings.Cut(line, " ")
		got, err := debuginfod.FileBuildID(filepath.Join(filesDir, "..", file))
		if err != nil || got != id {
			t.Errorf("%s: %q, %v; eu-readelf says %s", file, got, err, id)
		}
	}
	bad := filepath.Join(t.TempDir(), "page.html")
	os.WriteFile(bad, []byte("<html>oops</html>"), 0o644)
	if _, err := debuginfod.FileBuildID(bad); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("HTML file: %v, want not an ELF", err)
	}
}

// FuzzFileBuildID feeds damaged ELF files to the build-ID reader: it must
// return an error, never panic or hang.
func FuzzFileBuildID(f *testing.F) {
	f.Add(testFile(f, "hello.debug"))
	f.Add(testFile(f, "other"))
	truncated := testFile(f, "hello")
	f.Add(truncated[:len(truncated)/3])
	// One file, rewritten by each input (a directory per input made and
	// removed cost more than the parse).
	p := filepath.Join(f.TempDir(), "f")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		id, err := debuginfod.FileBuildID(p)
		if err == nil && id == "" {
			t.Fatal("no error and no build ID")
		}
	})
}
