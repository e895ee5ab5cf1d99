package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
)

// hugeMemory is the memory budget the 2M-sample profile must be served
// within (issue 18): the huge perf.data's server runs under GOMEMLIMIT at
// it; the 2M profile's runs with the default limits, whose soft limit is
// under it.
const hugeMemory = "1536MiB"

// TestHugeProfile uploads the benchmark generator's 2M-sample profile
// (500k stacks, 100k functions) to `viewer serve` running under GOMEMLIMIT
// at the budget, and checks what a user would against `go tool pprof -top`
// on the same file (its table kept in testdata for the file's SHA-256,
// see pprofTopOf): flame.json's total, the top table's flat and cum of
// the 20 heaviest functions, and the same figures read from the
// downloaded profile.pb.gz. The server's peak RSS is
// logged (the benchmark, testdata/bench/huge.sh, reports the ratios).
func TestHugeProfile(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("heavy: a 2M-sample profile and go tool pprof -top on it (minutes); not with -short or -race: make test runs it without -race")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// VIEWER_HUGE_SAMPLES=200000 checks the same things quickly on the
	// 200k benchmark profile's shape.
	n := 2000000
	if s := os.Getenv("VIEWER_HUGE_SAMPLES"); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("VIEWER_HUGE_SAMPLES=%q: %v", s, err)
		}
	}
	// Generate's profile, streamed: the test process does not hold its 2M
	// samples.
	start := time.Now()
	if err := gen.WriteStream(f, n, n/4, n/20, 20, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d samples in %v", n, time.Since(start).Round(time.Millisecond))

	// pprof reads the file meanwhile, as a user comparing the two would:
	// on the 2M profile it takes minutes (258 s of CPU), the longest part
	// of the test, so its table for this very file (same bytes, same Go
	// release's pprof) is kept in testdata and pprof runs only when the
	// file or the toolchain changed.
	wantTop := make(chan pprofResult, 1)
	go func() { wantTop <- pprofTopOf(t, path, dir, n) }()

	bin := buildViewer(t)
	// The server a user starts: the default limits (its 2M records are
	// 17.5M frames in 500k distinct stacks, under --max-frames' 50M; its
	// parse is estimated at about 590 MiB, under --ingest-memory's 1 GiB)
	// and the default --memory-limit (--ingest-memory + 256 MiB), under
	// the hugeMemory; only the data directory is the test's own,
	// and it reads no binaries of this machine.
	v := startViewer(t, nil, nil, bin, "--data", filepath.Join(dir, "data"), "--no-local-files")

	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Post(v.base+"/api/profiles", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %s: %s", resp.Status, b)
	}
	var up struct{ URL string }
	if err := json.Unmarshal(b, &up); err != nil {
		t.Fatal(err)
	}
	get := func(suffix string) []byte {
		t.Helper()
		resp, err := client.Get(v.base + up.URL + suffix)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v: %.300s", suffix, resp.Status, err, b)
		}
		return b
	}
	var tree struct {
		SampleType string `json:"sampleType"`
		Total      int64  `json:"total"`
	}
	if err := json.Unmarshal(get("/flame.json?si=cpu"), &tree); err != nil {
		t.Fatal(err)
	}
	var top struct {
		Total int64    `json:"total"`
		Rows  [][3]any `json:"rows"`
	}
	if err := json.Unmarshal(get("/top.json?si=cpu&sort=flat&n=40"), &top); err != nil {
		t.Fatal(err)
	}
	download := filepath.Join(dir, "download.pb.gz")
	if err := os.WriteFile(download, get("/profile.pb.gz"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak RSS %d MiB with the default limits (goal: %s); upload, flame.json, top.json and profile.pb.gz in %v",
		v.peakRSS(t)>>20, hugeMemory, time.Since(start).Round(time.Millisecond))
	v.kill()
	// The downloaded copy is checked in-process against the same pprof
	// table: a second `go tool pprof -top` of it cost minutes of make test.
	gotTotal, gotTop, err := topOfFile(download, "cpu")
	if err != nil {
		t.Fatal(err)
	}

	want := <-wantTop
	if want.err != nil {
		t.Fatal(want.err)
	}
	t.Logf("go tool pprof -top of the original done %v after the start", time.Since(start).Round(time.Millisecond))
	if tree.Total != want.total || top.Total != want.total {
		t.Errorf("flame.json total %d, top.json total %d; go tool pprof -top: %d", tree.Total, top.Total, want.total)
	}
	// Rows of equal flat may come in another order: match by name.
	byName := map[string][2]int64{}
	for _, r := range top.Rows {
		name, _ := r[0].(string)
		flat, _ := r[1].(float64)
		cum, _ := r[2].(float64)
		byName[name] = [2]int64{int64(flat), int64(cum)}
	}
	for i, w := range want.rows[:20] {
		g, ok := byName[w.name]
		if !ok || g[0] != w.flat || g[1] != w.cum {
			t.Errorf("top row %d %s: in top.json %v, flat %d cum %d; pprof: flat %d cum %d", i+1, w.name, ok, g[0], g[1], w.flat, w.cum)
		}
	}
	if gotTotal != want.total {
		t.Errorf("downloaded profile.pb.gz: total %d; go tool pprof -top of the original: %d", gotTotal, want.total)
	}
	for i, w := range want.rows[:20] {
		if g := gotTop[w.name]; g != [2]int64{w.flat, w.cum} {
			t.Errorf("downloaded profile.pb.gz, row %d %s: flat %d cum %d; pprof of the original: flat %d cum %d", i+1, w.name, g[0], g[1], w.flat, w.cum)
		}
	}
}

// topOfFile reads a profile and returns its total and each function's
// flat and cum for the sample type, counted as pprof -top counts them:
// flat for the innermost function of a sample's leaf location, cum once
// per sample for every function on its stack. Functions are counted by
// name, as pprof lists them, in arrays indexed by name (the parsed
// profile's IDs are renumbered to indices): maps of names took 60 s of
// CPU on the 2M profile, most of TestHugeProfile's serial time.
func topOfFile(path, sampleType string) (int64, map[string][2]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v", path, err)
	}
	si := -1
	for i, st := range p.SampleType {
		if st.Type == sampleType {
			si = i
		}
	}
	if si < 0 {
		return 0, nil, fmt.Errorf("%s: no sample type %q", path, sampleType)
	}
	// Each location's functions as indices of their names, one flat
	// array: the 2M profile's 70M frames are counted through it, not
	// through the Line and Function pointers of each frame.
	nameIndex := map[string]uint32{}
	var names []string
	for _, fn := range p.Function {
		i, ok := nameIndex[fn.Name]
		if !ok {
			i = uint32(len(names))
			nameIndex[fn.Name] = i
			names = append(names, fn.Name)
		}
		fn.ID = uint64(i)
	}
	start := make([]int, len(p.Location)+1)
	leaf := make([]int32, len(p.Location)) // the name of the location's first line, or -1
	var frames []uint32
	for i, l := range p.Location {
		l.ID = uint64(i)
		start[i] = len(frames)
		leaf[i] = -1
		if len(l.Line) > 0 && l.Line[0].Function != nil {
			leaf[i] = int32(l.Line[0].Function.ID)
		}
		for _, ln := range l.Line {
			if ln.Function != nil {
				frames = append(frames, uint32(ln.Function.ID))
			}
		}
	}
	start[len(p.Location)] = len(frames)
	var total int64
	flat, cum := make([]int64, len(names)), make([]int64, len(names))
	counted := make([]int, len(names)) // the sample (from 1) that last added to cum; 0: on no stack
	for n, s := range p.Sample {
		v := s.Value[si]
		total += v
		for i, l := range s.Location {
			if i == 0 && leaf[l.ID] >= 0 {
				flat[leaf[l.ID]] += v
			}
			for _, k := range frames[start[l.ID]:start[l.ID+1]] {
				if counted[k] != n+1 {
					counted[k] = n + 1
					cum[k] += v
				}
			}
		}
	}
	top := map[string][2]int64{}
	for k, name := range names {
		if counted[k] != 0 {
			top[name] = [2]int64{flat[k], cum[k]}
		}
	}
	return total, top, nil
}

// pprofResult is what `go tool pprof -top` printed: the total, the rows
// (values in nanoseconds) and the table's text.
type pprofResult struct {
	total int64
	rows  []pprofRow
	text  string
	err   error
}

type pprofRow struct {
	name      string
	flat, cum int64
}

var pprofTotalRE = regexp.MustCompile(`of (\d+)ns total`)

// pprofTopGolden is `go tool pprof -top` of TestHugeProfile's 2M-sample
// profile, made by pprof itself: `go test -run '^TestHugeProfile$'
// ./cmd/viewer/ -update-pprof-top` re-makes it. Its header names the
// file's SHA-256 and the Go release whose pprof printed it.
const pprofTopGolden = "../../testdata/bench/pprof-top-2m.txt"

var updatePprofTop = flag.Bool("update-pprof-top", false, "rerun go tool pprof -top for TestHugeProfile and rewrite "+pprofTopGolden)

// pprofTopOf returns go tool pprof -top of path (TestHugeProfile's
// profile of n samples): pprofTopGolden's table when it was printed for a
// file of the same SHA-256 by this Go release's pprof, else pprof's run
// now (and the golden rewritten with -update-pprof-top).
func pprofTopOf(t *testing.T, path, tmp string, n int) pprofResult {
	sum, err := fileSHA256(path)
	if err != nil {
		return pprofResult{err: err}
	}
	header := fmt.Sprintf("# go tool pprof %s huge.pb.gz\n# huge.pb.gz: gen.WriteStream(%d samples, %d stacks, %d functions, 20 mappings, seed 1), sha256 %s\n# pprof of %s\n# re-make: go test -run '^TestHugeProfile$' ./cmd/viewer/ -update-pprof-top\n",
		strings.Join(pprofTopArgs, " "), n, n/4, n/20, sum, runtime.Version())
	if !*updatePprofTop {
		if b, err := os.ReadFile(pprofTopGolden); err == nil {
			if out, ok := strings.CutPrefix(string(b), header); ok {
				t.Logf("go tool pprof -top: %s's table, printed for this file by this Go release's pprof", pprofTopGolden)
				return parsePprofTop([]byte(out))
			}
		}
		t.Logf("%s is not for this file and Go release (sha256 %s, %s): running go tool pprof -top (minutes); -update-pprof-top rewrites it", pprofTopGolden, sum, runtime.Version())
	}
	out, r := runPprofTop(t.Context(), path, tmp)
	if r.err == nil && *updatePprofTop {
		if err := os.WriteFile(pprofTopGolden, append([]byte(header), out...), 0o644); err != nil {
			return pprofResult{err: err}
		}
	}
	return r
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pprofTopArgs: the cpu sample type, in nanoseconds, every function
// counted, the 20 heaviest listed.
var pprofTopArgs = []string{"-top", "-unit=ns", "-sample_index=cpu", "-nodefraction=0", "-nodecount=20"}

// runPprofTop runs go tool pprof -top on path and returns its output and
// table; it is killed when ctx ends.
func runPprofTop(ctx context.Context, path, tmp string) ([]byte, pprofResult) {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"tool", "pprof"}, pprofTopArgs...), path)...)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, pprofResult{err: fmt.Errorf("go tool pprof -top %s: %v\n%s", path, err, out)}
	}
	return out, parsePprofTop(out)
}

// parsePprofTop reads go tool pprof -top's output.
func parsePprofTop(out []byte) pprofResult {
	var r pprofResult
	m := pprofTotalRE.FindSubmatch(out)
	if m == nil {
		return pprofResult{err: fmt.Errorf("no total in go tool pprof -top:\n%s", out)}
	}
	r.total, _ = strconv.ParseInt(string(m[1]), 10, 64)
	header := false
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == "flat" {
			header = true
			continue
		}
		if !header || len(f) < 6 {
			continue
		}
		flat, err1 := strconv.ParseInt(strings.TrimSuffix(f[0], "ns"), 10, 64)
		cum, err2 := strconv.ParseInt(strings.TrimSuffix(f[3], "ns"), 10, 64)
		if err1 != nil || err2 != nil {
			return pprofResult{err: fmt.Errorf("go tool pprof -top row %q", l)}
		}
		name := strings.Join(f[5:], " ")
		name = strings.TrimSuffix(strings.TrimSuffix(name, " (partial-inline)"), " (inline)")
		r.rows = append(r.rows, pprofRow{name: name, flat: flat, cum: cum})
		r.text += l + "\n"
	}
	if len(r.rows) < 20 {
		return pprofResult{err: fmt.Errorf("go tool pprof -top listed %d rows:\n%s", len(r.rows), out)}
	}
	return r
}

// TestHugePerfData records a system-wide perf.data of at least 500,000
// cpu-clock samples (perf record -a at 40 kHz, 10 s on 2 CPUs, every CPU
// kept busy), uploads
// it to `viewer serve` under GOMEMLIMIT at the budget, and checks the
// sample count flame.json gives against the sum of `perf report --stdio
// -n`'s Samples column for the same file.
func TestHugePerfData(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("heavy: records and reads a 500k-sample perf.data; not with -short or -race: make test runs it without -race")
	}
	perf := needTool(t, "perf", "linux-perf")
	dir := t.TempDir()
	data := filepath.Join(dir, "huge.data")
	// At 40 kHz a CPU gives about 32,000 samples a second idle, but only
	// 23,000 on a busy 2-CPU machine as CI's (the kernel lowers the rate;
	// 464k and 471k samples in 10 s there): record long enough for about
	// 640,000 at the lower rate, so that 500,000 are there with room, and no
	// longer (the test's cost grows with the samples).
	secs := min(max((640000+22000*runtime.NumCPU()-1)/(22000*runtime.NumCPU()), 3), 20)
	// cpu-clock counts running time only, so an idle machine gives a
	// fraction of the rate: every CPU spins in this process meanwhile.
	spin := make(chan struct{})
	var spinners sync.WaitGroup
	for range runtime.NumCPU() {
		spinners.Go(func() {
			for x := 0; ; x++ {
				if x%(1<<20) == 0 {
					select {
					case <-spin:
						return
					default:
					}
				}
			}
		})
	}
	start := time.Now()
	rec := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "-F", "40000", "-a", "-g", "-o", data, "--", "sleep", strconv.Itoa(secs))
	out, err := rec.CombinedOutput()
	close(spin)
	spinners.Wait()
	if err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	t.Logf("recorded %d s in %v", secs, time.Since(start).Round(time.Millisecond))
	// perf report reads the file meanwhile, as a user comparing the two
	// would.
	type report struct {
		samples int64
		err     error
	}
	wantReport := make(chan report, 1)
	go func() {
		rep, err := exec.CommandContext(t.Context(), perf, "report", "--stdio", "-n", "--no-children", "-g", "none", "--sort", "comm", "-i", data).CombinedOutput()
		if err != nil {
			wantReport <- report{err: fmt.Errorf("perf report: %v\n%s", err, rep)}
			return
		}
		var r report
		for _, l := range strings.Split(string(rep), "\n") {
			f := strings.Fields(l)
			if len(f) >= 3 && strings.HasSuffix(f[0], "%") && !strings.HasPrefix(l, "#") {
				n, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					wantReport <- report{err: fmt.Errorf("perf report line %q", l)}
					return
				}
				r.samples += n
			}
		}
		wantReport <- r
	}()
	bin := buildViewer(t)
	v := startViewer(t, []string{"GOMEMLIMIT=" + hugeMemory}, nil, bin, "--data", filepath.Join(dir, "data"),
		"--ingest-memory", "1200MiB", "--max-upload", "1GiB", "--render-timeout", "10m", "--no-local-files")
	body, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Post(v.base+"/api/profiles", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload of %d bytes: %s: %s", len(body), resp.Status, b)
	}
	var up struct{ URL string }
	if err := json.Unmarshal(b, &up); err != nil {
		t.Fatal(err)
	}
	resp, err = client.Get(v.base + up.URL + "/flame.json?si=cpu-clock_count")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("flame.json: %s: %.300s", resp.Status, b)
	}
	var tree struct {
		Total int64 `json:"total"`
	}
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes; server peak RSS %d MiB under GOMEMLIMIT=%s; flame.json %v after the start",
		len(body), v.peakRSS(t)>>20, hugeMemory, time.Since(start).Round(time.Millisecond))
	v.kill()
	rep := <-wantReport
	if rep.err != nil {
		t.Fatal(rep.err)
	}
	want := rep.samples
	t.Logf("%d samples; perf report done %v after the start", want, time.Since(start).Round(time.Millisecond))
	if want < 500000 {
		t.Fatalf("perf record took %d samples in %d s on %d CPUs, want at least 500,000 (is perf_event_max_sample_rate lowered?)", want, secs, runtime.NumCPU())
	}
	if tree.Total != want {
		t.Errorf("flame.json counts %d samples; perf report --stdio -n: %d", tree.Total, want)
	}
}
