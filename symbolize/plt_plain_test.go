package symbolize

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/buildid"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
)

// TestPLTNamesWithSeparateDebugFile symbolizes samples in each PLT stub of
// this machine's libc when its symbols come from a separate debug file
// (libc6-dbg's, which keeps no PLT names): served by Debian's debuginfod
// with the library nowhere local, and found in /usr/lib/debug beside the
// mapped library. Each stub is named as objdump -d labels it in the
// library ("calloc@plt", "*ABS*+0x9f550@plt"); main said _init or
// nothing. Without the library anywhere, the stubs stay unnamed (never
// another function's) and the report says why.
func TestPLTNamesWithSeparateDebugFile(t *testing.T) {
	lib, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	bid := buildID(t, lib)
	dbg := buildid.Paths("/usr/lib/debug", bid, buildid.Tree, buildid.Debuginfo)[0].Path
	if _, err := os.Stat(dbg); err != nil {
		t.Fatalf("libc's debug file %s missing (package libc6-dbg): run make deps", dbg)
	}
	objdump := debuginfodtest.NeedTool(t, "objdump", "binutils")
	out, err := exec.Command(objdump, "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", lib).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	labels := regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>]+@plt)>:$`).FindAllStringSubmatch(string(out), -1)
	if len(labels) < 10 {
		t.Fatalf("objdump labels %d PLT stubs in %s", len(labels), lib)
	}
	const base = 0x7f3a12000000
	// A profile with one sample in the middle of each stub, in the
	// library mapped at base from path.
	newProf := func(path string) (*profile.Profile, map[*profile.Location]string) {
		m := mapBinary(t, lib, bid, base)
		m.File = path
		p := newProfile(m)
		want := map[*profile.Location]string{}
		for _, l := range labels {
			a, _ := strconv.ParseUint(l[1], 16, 64)
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: base + a + 4}
			p.Location = append(p.Location, loc)
			want[loc] = l[2]
		}
		return p, want
	}
	name := func(l *profile.Location) string {
		if len(l.Line) == 0 {
			return ""
		}
		return l.Line[len(l.Line)-1].Function.Name
	}
	check := func(what string, p *profile.Profile, want map[*profile.Location]string, rep *Report) {
		t.Helper()
		bad := 0
		for l, w := range want {
			if got := name(l); got != w {
				if bad++; bad <= 5 {
					t.Errorf("%s: %#x named %q, objdump %q", what, l.Address-base, got, w)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d stubs named unlike objdump; report %+v", what, bad, len(want), rep.Mappings)
		}
	}

	dir := t.TempDir()
	for src, dst := range map[string]string{lib: "libc.so.6", dbg: "libc.so.6.debug"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := debuginfodtest.Start(t, dir)
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hermetic()
	cfg.Fetcher = client
	p, want := newProf("/nonexistent/libc.so.6")
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; !strings.Contains(r.Source, "debuginfod debuginfo") {
		t.Errorf("debuginfod: source %q, want the debug file from debuginfod", r.Source)
	}
	check("debuginfod", p, want, rep)
	var exe int
	for _, r := range srv.AllRequests() {
		if strings.HasSuffix(r.Path, "/executable") {
			exe++
		}
	}
	if exe != 1 {
		t.Errorf("debuginfod: %d requests for the executable, want 1: %v", exe, srv.AllRequests())
	}

	cfg = hermetic()
	cfg.SystemDebugDir = "/usr/lib/debug"
	p, want = newProf(lib)
	rep, _ = New(cfg).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; !strings.Contains(r.Source, "system build-ID tree") {
		t.Errorf("libc6-dbg: source %q, want the system build-ID tree", r.Source)
	}
	check("libc6-dbg", p, want, rep)

	cfg = hermetic()
	cfg.SystemDebugDir = "/usr/lib/debug"
	p, want = newProf("/nonexistent/libc.so.6")
	rep, _ = New(cfg).Symbolize(context.Background(), p, Options{})
	for l := range want {
		if got := name(l); got != "" {
			t.Errorf("no library: %#x named %q; a stub without its name must not take another function's", l.Address-base, got)
			break
		}
	}
	if r := rep.Mappings[0]; !strings.Contains(r.Reason, "in the PLT left unnamed") {
		t.Errorf("no library: report %+v does not say the PLT stubs were left unnamed", r)
	}
}
