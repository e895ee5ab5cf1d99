package web_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"viewer/web/webtest"
)

// perfWithDebuginfod is bookworm-backports' perf, which .ci/deps unpacks
// because Debian bookworm's own perf 6.1 is built without debuginfod.
const perfWithDebuginfod = "/opt/viewer-ci/perf-debuginfod/usr/bin/perf"

// TestDebuginfodPerfClient has perf fetch the private binary's debug file
// from viewer, its only debuginfod server, as a user does with
// `perf record --debuginfod=URL`: perf puts the file in its build-ID cache
// (~/.debug), and `perf report` then names private_work, the function the
// stripped binary alone does not name.
func TestDebuginfodPerfClient(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf")
	}
	perf := perfWithDebuginfod
	if _, err := os.Stat(perf); err != nil {
		t.Fatalf("%s: %v (perf with debuginfod support; run make deps)", perf, err)
	}
	stripped, debugFile, bid := webtest.PrivFiles(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	if err := os.WriteFile(exe, mustRead(t, stripped), 0o755); err != nil {
		t.Fatal(err)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{})

	// record runs the program under perf with viewer as the debuginfod
	// server, in a fresh HOME (an empty ~/.debug) and client cache, and
	// returns perf report's symbol of the most samples and its share.
	record := func(name string) (string, float64, string) {
		home, cache := t.TempDir(), t.TempDir()
		env := []string{"HOME=" + home, "DEBUGINFOD_CACHE_PATH=" + cache, "PATH=" + os.Getenv("PATH")}
		data := filepath.Join(dir, name+".data")
		cmd := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "--debuginfod="+ds.URL, "-o", data, "--", exe, "300000000")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("perf record: %v\n%s", err, out)
		}
		cmd = exec.Command(perf, "report", "-i", data, "--stdio", "--sort", "sym", "--percent-limit", "5")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("perf report: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || strings.HasPrefix(f[0], "#") || !strings.HasSuffix(f[0], "%") {
				continue
			}
			share, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
			if err != nil {
				continue
			}
			return f[len(f)-1], share, string(out)
		}
		t.Fatalf("perf report printed no row:\n%s", out)
		return "", 0, ""
	}

	// Before the upload viewer has no file for the build ID: perf names
	// nothing in the program (raw addresses).
	if sym, _, out := record("before"); sym == "private_work" {
		t.Fatalf("perf named private_work before its debug file was uploaded:\n%s", out)
	}
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != http.StatusCreated {
		t.Fatalf("PUT debuginfo: %d %s", code, body)
	}
	sym, share, out := record("after")
	if sym != "private_work" || share < 80 {
		t.Errorf("perf report's top symbol is %q with %.1f%%, want private_work with most samples, from viewer's debug file:\n%s", sym, share, out)
	}
}
