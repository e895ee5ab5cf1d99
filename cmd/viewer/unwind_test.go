package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

const dwarfData = "../../testdata/perf/dwarf.data"

// perfHome points HOME at a fresh directory whose perf build-ID cache holds
// the checked-in deep, so that the unwinder finds exactly that binary
// wherever the repository is checked out (perf recorded it elsewhere).
func perfHome(t *testing.T) {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	deep, _ := filepath.Abs("../../testdata/perf/deep")
	if out, err := exec.Command(perf, "buildid-cache", "-a", deep).CombinedOutput(); err != nil {
		t.Fatalf("perf buildid-cache -a %s: %v\n%s", deep, err, out)
	}
}

// userDepths returns the fewest and most user-space frames of p's samples.
func userDepths(p *profile.Profile) (lo, hi int) {
	lo = 1 << 30
	for _, s := range p.Sample {
		n := 0
		for _, l := range s.Location {
			if l.Mapping != nil && !strings.HasPrefix(l.Mapping.File, "[kernel") {
				n++
			}
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	return lo, hi
}

// TestConvertUnwindsDWARFStacks converts the --call-graph=dwarf recording:
// every sample gets deep's whole call chain (leaf, 15 levels, main, libc's
// start, _start); with --unwind=false only the sampled frame, and a warning
// that says why and what to do.
func TestConvertUnwindsDWARFStacks(t *testing.T) {
	perfHome(t)
	for _, unwind := range []bool{true, false} {
		out := filepath.Join(t.TempDir(), "dwarf.pb.gz")
		var stderr bytes.Buffer
		args := []string{"convert", dwarfData, "-o", out}
		if !unwind {
			args = append(args, "--unwind=false")
		}
		if err := runWith(context.Background(), args, stdio{out: &bytes.Buffer{}, err: &stderr}); err != nil {
			t.Fatal(err, stderr.String())
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := userDepths(p)
		if unwind {
			if lo < 19 || !strings.Contains(stderr.String(), "unwound 41 of 41 --call-graph=dwarf user stacks") {
				t.Errorf("unwound: user frames per sample %d..%d, want at least 19; stderr:\n%s", lo, hi, stderr.String())
			}
		} else {
			if hi != 1 || !strings.Contains(stderr.String(), "not unwound here (--unwind=false was given)") || !strings.Contains(stderr.String(), "on the machine that recorded it") {
				t.Errorf("--unwind=false: user frames per sample %d..%d, want 1; stderr:\n%s", lo, hi, stderr.String())
			}
		}
	}
}

// profileOf fetches the profile a running serve holds for id.
func profileOf(t *testing.T, base, id string) *profile.Profile {
	t.Helper()
	resp, err := http.Get(base + "/p/" + id + "/profile.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p, err := profile.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeUnwindsOnlyOnLoopback loads the --call-graph=dwarf recording
// into a real serve: on loopback its stacks are unwound with this machine's
// binaries; behind a proxy they are not, and the profile says why. Then
// `viewer upload` sends it to the proxied server converted (and unwound) on
// this machine.
func TestServeUnwindsOnlyOnLoopback(t *testing.T) {
	perfHome(t)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	idRe := regexp.MustCompile(`/p/([a-z2-7]{20})\t`)

	base, out, _ := startServe(t, "--data", t.TempDir(), "--no-debuginfod", dwarfData)
	p := profileOf(t, base, waitForOutput(t, out, idRe)[1])
	if lo, _ := userDepths(p); lo < 19 {
		t.Errorf("serve on loopback: %d user frames in the shallowest sample, want the unwound 19+", lo)
	}

	base, out, _ = startServe(t, "--data", t.TempDir(), "--no-debuginfod", "--behind-proxy", dwarfData)
	p = profileOf(t, base, waitForOutput(t, out, idRe)[1])
	if _, hi := userDepths(p); hi != 1 || !strings.Contains(strings.Join(p.Comments, "\n"), "reachable from other machines") {
		t.Errorf("serve --behind-proxy: up to %d user frames, want 1 and a warning saying why; comments %q", hi, p.Comments)
	}

	var stdout, stderr bytes.Buffer
	if err := runWith(context.Background(), []string{"upload", "--server", base, dwarfData}, stdio{out: &stdout, err: &stderr}); err != nil {
		t.Fatal(err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "as pprof converted here") {
		t.Errorf("upload stderr %q does not say it converted locally", stderr.String())
	}
	link := strings.TrimSpace(stdout.String())
	id := link[strings.LastIndexByte(link, '/')+1:]
	p = profileOf(t, base, id)
	if lo, _ := userDepths(p); lo < 19 {
		t.Errorf("upload to a proxied server: %d user frames in the shallowest sample, want the unwound 19+", lo)
	}
}

// TestSymbolizeUnwindsDWARFStacks symbolizes the --call-graph=dwarf
// recording: the unwound callers get names (main, libc's start), which a
// leaf-only profile could not have.
func TestSymbolizeUnwindsDWARFStacks(t *testing.T) {
	perfHome(t)
	t.Setenv("DEBUGINFOD_URLS", "")
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "sym.pb.gz")
	var stderr bytes.Buffer
	err := runWith(context.Background(), []string{"symbolize", "--no-debuginfod", "--debug-dir", "../../testdata/perf", dwarfData, "-o", out}, stdio{out: &bytes.Buffer{}, err: &stderr})
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "unwound 41 of 41") {
		t.Errorf("stderr does not report unwinding:\n%s", stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, fn := range p.Function {
		names[fn.Name] = true
	}
	for _, want := range []string{"leaf", "level", "main", "__libc_start_call_main", "_start"} {
		if !names[want] {
			t.Errorf("no function %s after symbolizing the unwound stacks", want)
		}
	}
}
