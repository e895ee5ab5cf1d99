package ingest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// perfReportSamples is the sum of `perf report --stdio -n`'s Samples
// column for file, sorted by comm, without call graphs.
func perfReportSamples(t *testing.T, perf, file string) int64 {
	t.Helper()
	cmd := exec.Command(perf, "report", "--stdio", "-n", "--no-children", "-g", "none", "--sort", "comm", "-i", file)
	cmd.Env = append(os.Environ(), "PAGER=cat")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf report -i %s: %v", file, err)
	}
	var n int64
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasSuffix(f[0], "%") && !strings.HasPrefix(l, "#") {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("perf report line %q", l)
			}
			n += v
		}
	}
	return n
}

// TestCompressedPerfDataSpooled uploads `perf record -z` recordings
// (ParseFile, as the server reads them): the two testdata/perf/record.sh
// commits (file and pipe mode) and two it records itself of
// testdata/perf/deep, 0.1 s and 2 s at 100,000 samples a second of CPU
// (deep runs for wall-clock seconds: on a loaded machine the longer one
// is recorded again for 6 and 18 s until it holds enough records to
// compare). Each converts to perf report's sample count; the
// decompressed records go to a file in the spool directory, which is
// empty again afterwards; and the live heap while the stacks are
// aggregated (the index, 16 bytes a record, and the samples kept, which
// grow with the time buckets) grows by less than half as much as the
// decompressed records, as it would not if they were held in the heap.
func TestCompressedPerfDataSpooled(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf for seconds: make test runs it")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	tmp := t.TempDir()
	record := func(secs string) string {
		file := filepath.Join(tmp, "z"+secs+".data")
		cmd := exec.Command(perf, "record", "-q", "-z", "-e", "cpu-clock", "-c", "10000", "-g", "-o", file, "--", filepath.Join(perfDir, "deep"), secs)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("perf record: %v\n%s", err, out)
		}
		return file
	}
	type run struct{ decompressed, peak int64 }
	parse := func(file string) run {
		spool := t.TempDir()
		var r run
		calls := 0
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := int64(ms.HeapAlloc)
		ctx := WithProgress(context.Background(), func(phase string, done, total int64) {
			switch phase {
			case "reading records":
				r.decompressed = total // the decompressed records are read last
			case "aggregating stacks":
				if calls++; calls%4 == 0 || done == total {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					r.peak = max(r.peak, int64(ms.HeapAlloc)-base)
				}
			}
		})
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := ParseFile(ctx, f, Limits{SpoolDir: spool})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		c := CountSamples(p)
		if want := perfReportSamples(t, perf, file); len(c.Events) != 1 || c.Events[0].Samples != want {
			t.Errorf("%s: counted %+v, perf report -n counts %d samples", filepath.Base(file), c.Events, want)
		}
		if left, _ := os.ReadDir(spool); len(left) != 0 {
			t.Errorf("%s: the spool directory still holds %d files after the parse", filepath.Base(file), len(left))
		}
		if len(c.Events) == 1 {
			t.Logf("%s: %d samples; %d bytes decompressed; heap peak +%d KiB while aggregating", filepath.Base(file), c.Events[0].Samples, r.decompressed, r.peak>>10)
		}
		return r
	}
	parse(filepath.Join(perfDir, "z.data"))
	parse(filepath.Join(perfDir, "pipez.data"))
	small := parse(record("0.1"))
	enough := func(big run) bool { return big.decompressed >= 3*small.decompressed && big.decompressed >= 4<<20 }
	var big run
	for _, secs := range []string{"2", "6", "18"} {
		if big = parse(record(secs)); enough(big) {
			break
		}
	}
	if !enough(big) {
		t.Fatalf("the recordings decompress to %d and %d bytes: too few to tell", small.decompressed, big.decompressed)
	}
	// In the heap, the records alone would grow it by more.
	if grew, more := big.peak-small.peak, big.decompressed-small.decompressed; grew > more/2 {
		t.Errorf("%d more bytes of records took %d more bytes of heap", more, grew)
	}
}
