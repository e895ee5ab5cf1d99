package web_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/webtest"
)

// BenchmarkOnDemand20Binaries measures, for a profile of 20 binaries whose
// debug info (1 MiB each) is only on a local debuginfod server, the time
// from the upload to the "symbolized" event, against the anchor: elfutils'
// debuginfod-find fetching the same 20 files one after another plus our
// symbolization alone once they are local. Fresh caches every iteration.
//
//	go test -run '^$' -bench OnDemand20 -benchtime 3x ./web
//
// ratio is pipeline / (debuginfod-find + symbolization alone); the goal is
// at most 1.2.
func BenchmarkOnDemand20Binaries(b *testing.B) {
	const n = 20
	find := debuginfodtest.NeedTool(b, "debuginfod-find", "debuginfod")
	built := b.TempDir()
	if out, err := exec.Command("sh", filepath.Join(webtest.OndemandDir(), "build.sh"), built, fmt.Sprint(n)).CombinedOutput(); err != nil {
		b.Fatalf("build.sh: %v: %s", err, out)
	}
	served := b.TempDir()
	var exes, bids []string
	for i := range n {
		name := fmt.Sprintf("ondemand%d", i)
		exe := filepath.Join(built, "bin", name)
		dbg := filepath.Join(built, "debuginfo", name+".debug")
		webtest.PadDebugFile(b, dbg, filepath.Join(served, name+".debug"), 1<<20)
		bid, err := debuginfodtest.BuildID(exe)
		if err != nil {
			b.Fatal(err)
		}
		exes, bids = append(exes, exe), append(bids, bid)
	}
	dsrv := debuginfodtest.Start(b, served)
	profileBytes := func(seed int) []byte {
		var ps []*profile.Profile
		for i := range n {
			p, err := profile.ParseData(webtest.OndemandProfile(b, exes[i], filepath.Join(built, "debuginfo", fmt.Sprintf("ondemand%d.debug", i)), fmt.Sprintf("/opt/ondemand/lib%d.so", i), seed))
			if err != nil {
				b.Fatal(err)
			}
			// Move each binary to its own address range.
			shift := uint64(i) << 32
			for _, m := range p.Mapping {
				m.Start, m.Limit = m.Start+shift, m.Limit+shift
			}
			for _, l := range p.Location {
				l.Address += shift
			}
			ps = append(ps, p)
		}
		merged, err := profile.Merge(ps)
		if err != nil {
			b.Fatal(err)
		}
		merged.Comments = []string{fmt.Sprintf("seed %d", seed)}
		var buf bytes.Buffer
		if err := merged.Write(&buf); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}

	var pipe, fetch, sym time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		data := profileBytes(1000 + i)
		// Anchor 1: debuginfod-find, one file after another, fresh cache.
		cache := b.TempDir()
		start := time.Now()
		for _, bid := range bids {
			cmd := exec.Command(find, "debuginfo", bid)
			cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS="+dsrv.URL, "DEBUGINFOD_CACHE_PATH="+cache, "DEBUGINFOD_PROGRESS=")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("debuginfod-find %s: %v: %s", bid, err, out)
			}
		}
		fetch += time.Since(start)
		// Anchor 2: our symbolization alone, the files already local.
		p, err := profile.ParseData(data)
		if err != nil {
			b.Fatal(err)
		}
		engine := symbolize.New(symbolize.Config{DebuginfodCacheDir: cache, SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"})
		start = time.Now()
		rep, err := engine.Symbolize(context.Background(), p, symbolize.Options{})
		sym += time.Since(start)
		if err != nil || rep.Symbolized() != n {
			b.Fatalf("symbolization alone: %v, %d of %d symbolized", err, rep.Symbolized(), n)
		}
		// The pipeline: a fresh server and cache, upload to the final event.
		_, base := webtest.SymbolizingServer(b, []string{dsrv.URL}, 2)
		b.StartTimer()
		start = time.Now()
		id := webtest.UploadAPI(b, base, "", data)
		s, _ := finalEvent(b, base, id)
		pipe += time.Since(start)
		b.StopTimer()
		if s.Resolved != n {
			b.Fatalf("pipeline resolved %d of %d: %+v", s.Resolved, n, s)
		}
		b.StartTimer()
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(per(pipe), "pipeline-ms")
	b.ReportMetric(per(fetch), "debuginfod-find-ms")
	b.ReportMetric(per(sym), "symbolize-alone-ms")
	b.ReportMetric(float64(pipe)/float64(fetch+sym), "ratio")
}
