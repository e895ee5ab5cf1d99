package web_test

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/webtest"
)

// perfMapRecording is testdata/perfmap (record.sh): node.data, a perf
// record -g of node --perf-basic-prof running hot.js, and the perf map
// node wrote, perf-PID.map, whose path the recording's JIT frames name.
func perfMapRecording(t *testing.T) (data, mapFile string, pid int) {
	t.Helper()
	dir := webtest.Testdata("perfmap")
	maps, _ := filepath.Glob(filepath.Join(dir, "perf-*.map"))
	if len(maps) != 1 {
		t.Fatalf("%d perf maps in %s, want 1: rerun record.sh", len(maps), dir)
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(maps[0]), "perf-"), ".map"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "node.data"), maps[0], pid
}

// jitStacks sums the weight of each sample's JIT frames (those of the
// mapping named /tmp/perf-PID.map), leaf first, joined by ";"; an
// unnamed frame is "[unknown]", as perf script prints it.
type jitStacks map[string]int64

// share is the part of total weight whose JIT frames include one named
// with prefix.
func (s jitStacks) share(prefix string, total int64) float64 {
	var w int64
	for k, v := range s {
		for _, f := range strings.Split(k, ";") {
			if strings.HasPrefix(f, prefix) {
				w += v
				break
			}
		}
	}
	return float64(w) / float64(total)
}

// perfScriptJIT is perf script's view of the recording with the perf map
// at /tmp/perf-PID.map, where perf reads it: the test puts it there, and
// takes it away after, unless a file of the same bytes was there already.
func perfScriptJIT(t *testing.T, data, mapFile string, pid int) (jitStacks, int64) {
	t.Helper()
	perf := debuginfodtest.NeedTool(t, "perf", "linux-perf")
	text, err := os.ReadFile(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join("/tmp", filepath.Base(mapFile))
	f, err := os.OpenFile(at, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case errors.Is(err, fs.ErrExist):
		if old, _ := os.ReadFile(at); !bytes.Equal(old, text) {
			t.Fatalf("%s is there with other contents (another process with the recorded PID?): remove it to run this test", at)
		}
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(func() { os.Remove(at) })
		if _, err := f.Write(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(perf, "script", "-i", data, "-F", "period,ip,sym,dso", "--max-stack=4096")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no build-ID cache: only the map names JIT frames
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	dso := "(" + at + ")"
	stacks := jitStacks{}
	var total int64
	for _, block := range strings.Split(string(out), "\n\n") {
		sc := bufio.NewScanner(strings.NewReader(block))
		var period int64 = -1
		var names []string
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			if period < 0 {
				if period, err = strconv.ParseInt(line, 10, 64); err != nil {
					t.Fatalf("perf script sample header %q", line)
				}
				continue
			}
			if !strings.HasSuffix(line, dso) {
				continue
			}
			_, sym, _ := strings.Cut(strings.TrimSuffix(line, " "+dso), " ")
			names = append(names, sym)
		}
		if period < 0 {
			continue
		}
		total += period
		if len(names) > 0 {
			stacks[strings.Join(names, ";")] += period
		}
	}
	return stacks, total
}

// viewerJIT is the same from the profile the server serves.
func viewerJIT(t *testing.T, base, id string, pid int) (jitStacks, int64) {
	t.Helper()
	p := webtest.ServedProfile(t, base, id)
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu-clock" {
			vi = i
		}
	}
	if vi < 0 {
		t.Fatalf("no cpu-clock sample type in %v", p.SampleType)
	}
	file := "/tmp/perf-" + strconv.Itoa(pid) + ".map"
	stacks := jitStacks{}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[vi]
		var names []string
		for _, l := range s.Location {
			if l.Mapping == nil || l.Mapping.File != file {
				continue
			}
			if len(l.Line) == 0 {
				names = append(names, "[unknown]")
			}
			for _, ln := range l.Line {
				names = append(names, ln.Function.Name)
			}
		}
		if len(names) > 0 {
			stacks[strings.Join(names, ";")] += s.Value[vi]
		}
	}
	return stacks, total
}

// TestPerfMapRecording: a real perf record -g of node --perf-basic-prof,
// uploaded to a server that reads local files, gets its JIT frames named
// from the perf map as perf script names them: the same weight in
// optimized JS functions (JS:*), and the same JIT stacks sample for
// sample. Before, the map's mapping was a pseudo one and its frames
// stayed addresses.
func TestPerfMapRecording(t *testing.T) {
	data, mapFile, pid := perfMapRecording(t)
	want, wantTotal := perfScriptJIT(t, data, mapFile, pid)
	body, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	// The map is read from testdata, by the name the mapping gives: the
	// server's own check of that name is the same as in production.
	_, base := webtest.SymbolizingServer(t, nil, 1, func(c *symbolize.Config) { c.PerfMapDir = filepath.Dir(mapFile) })
	id := webtest.UploadAPI(t, base, "", body)
	s, _ := finalEvent(t, base, id)
	var row *struct{ state, reason string }
	for _, b := range s.Binaries {
		if symbolize.IsPerfMap(b.File) {
			row = &struct{ state, reason string }{string(b.State), b.Reason}
		}
	}
	if row == nil || row.state != string(symbolize.StateSymbolized) {
		t.Fatalf("the perf map's row: %+v (all rows %+v)", row, s.Binaries)
	}
	got, gotTotal := viewerJIT(t, base, id, pid)
	if gotTotal != wantTotal {
		t.Errorf("viewer's total weight %d, perf script's %d", gotTotal, wantTotal)
	}
	wantJS, gotJS := want.share("JS:*", wantTotal), got.share("JS:*", gotTotal)
	t.Logf("weight with optimized JS frames: perf script %.1f%%, viewer %.1f%%; JIT stacks: perf %d, viewer %d", 100*wantJS, 100*gotJS, len(want), len(got))
	if wantJS < 0.2 {
		t.Errorf("perf script puts %.1f%% of the weight in JS:* functions: the recording shows too little JIT code to test with; rerun record.sh", 100*wantJS)
	}
	if gotJS != wantJS {
		t.Errorf("viewer puts %.2f%% of the weight in JS:* functions, perf script %.2f%%", 100*gotJS, 100*wantJS)
	}
	var same, all int64
	for _, k := range slices.Sorted(maps.Keys(want)) {
		all += want[k]
		same += min(want[k], got[k])
		if want[k] != got[k] {
			t.Errorf("JIT stack %q: weight %d in viewer, %d in perf script", k, got[k], want[k])
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("JIT stack %q (weight %d) is not perf script's", k, v)
		}
	}
	t.Logf("%.2f%% of the JIT frames' weight has perf script's names", 100*float64(same)/float64(max(all, 1)))
}

// TestPerfMapNotReadWithoutLocalFiles: a server that does not read the
// files profiles name (IgnoreMappingPaths: reachable from other machines,
// or --no-local-files) leaves the recording's JIT frames as addresses
// although the map is there, and its panel says why and what to do.
func TestPerfMapNotReadWithoutLocalFiles(t *testing.T) {
	data, mapFile, pid := perfMapRecording(t)
	body, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	_, base := webtest.SymbolizingServer(t, nil, 1, func(c *symbolize.Config) {
		c.PerfMapDir = filepath.Dir(mapFile)
		c.IgnoreMappingPaths = true
	})
	id := webtest.UploadAPI(t, base, "", body)
	s, _ := finalEvent(t, base, id)
	found := false
	for _, b := range s.Binaries {
		if !symbolize.IsPerfMap(b.File) {
			continue
		}
		found = true
		if b.State != symbolize.StateNotFound || !strings.Contains(b.Reason, "was not read: this server does not open the files profiles name") || b.Help != symbolize.PerfMapHelp {
			t.Errorf("the perf map's row: %+v", b)
		}
	}
	if !found {
		t.Fatalf("no row for the perf map: %+v", s.Binaries)
	}
	got, _ := viewerJIT(t, base, id, pid)
	if len(got) == 0 {
		t.Fatal("no JIT frames in the profile")
	}
	for k := range got {
		for _, f := range strings.Split(k, ";") {
			if f != "[unknown]" {
				t.Fatalf("a JIT frame was named %q without local files", f)
			}
		}
	}
	code, _, page := fetch(t, base+"/p/"+id)
	for _, want := range []string{"perf-" + strconv.Itoa(pid) + ".map", "does not open the files profiles name", "run viewer serve on that machine"} {
		if code != 200 || !strings.Contains(string(page), want) {
			t.Errorf("the flame page (%d) does not say %q:\n%s", code, want, between(string(page), `id="symbolization"`, "</section>"))
		}
	}
}
