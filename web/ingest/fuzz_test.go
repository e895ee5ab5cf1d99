package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// fuzzLimits keep one fuzz input from expanding past what a test may spend.
var fuzzLimits = Limits{MaxBytes: 64 << 20, MaxSamples: 100000, MaxLocations: 100000, MaxFunctions: 100000, MaxMappings: 10000, MaxRecords: 1000000}

// parseDeadline is how long one fuzz input may take to parse before it
// counts as a hang: far more than any of the corpus takes under -race.
const parseDeadline = 60 * time.Second

// FuzzParse feeds format detection and every parser behind it arbitrary
// bytes: go test -fuzz FuzzParse ./web/ingest. Whatever the input, Parse
// returns an error or a valid profile that survives a pprof round trip, and
// no parser panics (a recovered panic is reported as a failure here).
func FuzzParse(f *testing.F) {
	for _, name := range []string{
		"../flame/testdata/small.pb.gz",
		"../../testdata/perf/fp.folded", "../../testdata/perf/pipe.pid.script", "../../testdata/perf/pipez.data",
		"../../testdata/perf/flat.data", "../../testdata/perf/z.data", "../../testdata/perf/read.data",
	} {
		b, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			f.Fatalf("seed %s: %v", name, err)
		}
		f.Add(b)
		if !isGzip(b) && len(b) > 4096 {
			f.Add(b[:4096])
		}
	}
	for _, name := range []string{"../../testdata/perf/fp.json", "../../testdata/perf/fp.script", "../../testdata/perf/fp.data"} {
		b, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			f.Fatalf("seed %s: %v", name, err)
		}
		f.Add(b[:min(len(b), 8192)])
	}
	if b, err := os.ReadFile("../flame/testdata/small.pb.gz"); err == nil {
		if p, err := profile.Parse(bytes.NewReader(b)); err == nil {
			var raw bytes.Buffer
			p.WriteUncompressed(&raw)
			f.Add(raw.Bytes())
		}
	}
	for _, name := range []string{
		"pprof/cppbench.heap", "pprof/java.cpu", "pprof/go.godoc.thread", "pprof/java.contention", "pprof/cppbench.thread",
		"speedscope/stackcollapse-simple-utf16-le.txt", "speedscope/stackcollapse-simple-with-invalids.txt", "flamegraph/perf-java-stacks-02.txt",
	} {
		b, err := os.ReadFile(filepath.Join("../../testdata/peers", filepath.FromSlash(name)))
		if err != nil {
			f.Fatalf("seed %s: %v", name, err)
		}
		f.Add(b[:min(len(b), 8192)])
	}
	// OpenTelemetry profiles, protobuf and JSON (otlp_test.go).
	otlpReq := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.Native(), otlptest.CheckoutResource))
	if b, err := otlpReq.MarshalProto(); err == nil {
		f.Add(b)
	}
	if b, err := otlpReq.MarshalJSON(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}}],"startTime":0,"endTime":1,"samples":[1],"timeDeltas":[1]}`))
	f.Add([]byte("# callgrind format\nevents: Ir\nfn=main\n16 200\n"))
	f.Add([]byte("Script_a log opened (PC)\n1:PUSH:7:1:None:a..f\n3:PUSH:8:1:None:a..g\n3:POP:8:1:None:a..g\n9:POP:7:1:None:a..f\nLog closed\n"))
	if b, err := os.ReadFile("ghcprof/testdata/bt-P.prof"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("main;work;compute 10\nmain;idle 3\n"))
	f.Add(gzipped([]byte("a;b 1\n")))
	f.Add(gzipped(gzipped([]byte("a;b 1\n"))))
	f.Add([]byte(`{"linux-perf-json-version":1,"samples":[{"timestamp":1,"pid":1,"tid":1,"comm":"x","callchain":[{"ip":"0x1","symbol":"f","dso":"a"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang fails at once, with every goroutine's stack, instead of
		// at the end of the fuzz time or the test binary's timeout; the
		// panic ends the fuzz worker, so the input is kept in the corpus.
		watchdog := time.AfterFunc(parseDeadline, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("Parse has not ended after %v on %d bytes:\n%s", parseDeadline, len(data), buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		p, format, err := Parse(data, fuzzLimits)
		var pe *PanicError
		if errors.As(err, &pe) {
			t.Fatalf("%s parser panicked: %v\n%s", pe.Format, pe.Value, pe.Stack)
		}
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned a profile and an error %v", err)
			}
			return
		}
		if format == "" {
			t.Fatal("Parse succeeded without naming the format")
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("%s gave an invalid profile: %v", format, err)
		}
		var b bytes.Buffer
		if err := p.Write(&b); err != nil {
			t.Fatalf("%s profile does not encode: %v", format, err)
		}
		q, err := profile.Parse(&b)
		if err != nil {
			t.Fatalf("%s profile does not re-parse: %v", format, err)
		}
		if len(q.Sample) != len(p.Sample) {
			t.Fatalf("round trip changed the samples: %d → %d", len(p.Sample), len(q.Sample))
		}
	})
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

// TestParserPanicIsAnError checks a format whose parser panics yields an
// error for that input, not a crash.
func TestParserPanicIsAnError(t *testing.T) {
	saved := formats
	t.Cleanup(func() { formats = saved })
	formats = append([]Format{{
		Name:  "boom",
		Sniff: func(head []byte) bool { return bytes.HasPrefix(head, []byte("BOOM")) },
		Parse: func([]byte, Limits) (*profile.Profile, error) {
			var p *profile.Profile
			_ = p.Sample[0]
			return nil, nil
		},
	}}, saved...)
	_, _, err := Parse([]byte("BOOM and more"), Limits{})
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, ErrCorrupt) || pe.Format != "boom" {
		t.Fatalf("Parse with a panicking parser: %v; want a *PanicError matching ErrCorrupt", err)
	}
	if p, _, err := Parse([]byte("a;b 1\n"), Limits{}); err != nil || len(p.Sample) != 1 {
		t.Fatalf("after a panic, folded input: %v", err)
	}
}
