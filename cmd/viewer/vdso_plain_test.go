package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
)

// clockLoop calls clock_gettime in a loop: its samples are mostly in the vDSO.
const clockLoop = `#include <stdio.h>
#include <time.h>
int main(void) {
	struct timespec ts;
	long s = 0;
	for (long i = 0; i < 6000000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec;
	}
	printf("%ld\n", s);
	return 0;
}
`

// TestVDSONamesAsPerfScript records a program calling clock_gettime in a
// loop with perf and names its samples' [vdso] leaf frames as perf script
// does (__vdso_clock_gettime; [unknown] where the vDSO has no symbol):
// with `viewer symbolize` from the running kernel's vDSO (same build ID),
// and from the image perf put in its build-ID cache (~/.debug) when the
// running one is not used. Main left every [vdso] frame unnamed.
func TestVDSONamesAsPerfScript(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("gcc is not installed: run make deps")
	}
	dir := t.TempDir()
	src, exe, data := filepath.Join(dir, "clock.c"), filepath.Join(dir, "clock"), filepath.Join(dir, "perf.data")
	if err := os.WriteFile(src, []byte(clockLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-g", "-fno-omit-frame-pointer", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	// perf's build-ID cache, home/.debug: perf caches nothing without home.
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	rec := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", data, "--", exe)
	rec.Env = env
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	sc := exec.Command(perf, "script", "-i", data, "-G", "-F", "ip,sym,dso")
	sc.Env = env
	out, err := sc.Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	// perf script's name of each sample's leaf in the vDSO, counted.
	want := map[string]int64{}
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 3 && f[2] == "([vdso])" {
			name := f[1]
			if name == "[unknown]" {
				name = ""
			}
			want[name]++
		}
	}
	if want["__vdso_clock_gettime"] == 0 {
		t.Fatalf("perf script names no sample __vdso_clock_gettime: %v\n%s", want, out)
	}

	t.Setenv("DEBUGINFOD_URLS", "")
	t.Setenv("HOME", t.TempDir()) // no perf cache: the running kernel's vDSO
	sym := filepath.Join(dir, "sym.pb.gz")
	var stderr bytes.Buffer
	if err := runWith(context.Background(), []string{"symbolize", data, "-o", sym}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &stderr}); err != nil {
		t.Fatalf("viewer symbolize: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the running kernel's vDSO") {
		t.Errorf("summary does not name the running kernel's vDSO as the source:\n%s", stderr.String())
	}
	compareVDSOLeaves(t, "running kernel's vDSO", readProfile(t, sym), want)

	// The image perf cached, with the running vDSO ignored.
	conv := filepath.Join(dir, "conv.pb.gz")
	if err := runWith(context.Background(), []string{"convert", data, "-o", conv}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}); err != nil {
		t.Fatalf("viewer convert: %v", err)
	}
	p := readProfile(t, conv)
	s := symbolize.New(symbolize.Config{IgnoreRunningVDSO: true, BuildIDCacheDir: filepath.Join(home, ".debug"), SystemDebugDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"})
	rep, err := s.Symbolize(context.Background(), p, symbolize.Options{NoDebuginfod: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Mappings {
		if r.File == "[vdso]" && !strings.Contains(r.Source, "perf build-ID cache") {
			t.Errorf("perf cache: [vdso] source %q state %s (%s)", r.Source, r.State, r.Reason)
		}
	}
	compareVDSOLeaves(t, "perf's build-ID cache", p, want)
}

func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// compareVDSOLeaves counts p's samples by the name of their leaf frame in
// [vdso] ("" when unnamed) and compares with perf script's counts.
func compareVDSOLeaves(t *testing.T, what string, p *profile.Profile, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Location) == 0 || s.Location[0].Mapping == nil || s.Location[0].Mapping.File != "[vdso]" {
			continue
		}
		name := ""
		if ln := s.Location[0].Line; len(ln) > 0 {
			name = ln[len(ln)-1].Function.Name
		}
		got[name] += s.Value[0]
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("%s: [vdso] leaves by name %v, perf script %v", what, sorted(got), sorted(want))
	}
}

func sorted(m map[string]int64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%q:%d", k, v))
	}
	sort.Strings(out)
	return out
}
