package profiles_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/unwind"
	"viewer/testdata/bench/gen"
	"viewer/web/ingest"
	"viewer/web/profiles"
	"viewer/web/store"
)

// BenchmarkColdLoad is a profile's first load after a restart: from the
// converted copy stored at upload ("converted"), against parsing and
// unwinding the original as before the copy existed ("original": the
// copy is removed before each load, as in a data directory of then).
//
//	go test -run '^$' -bench ColdLoad -benchtime 20x ./web/profiles
func BenchmarkColdLoad(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"dwarf.data", "fp.script"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", name))
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		st, err := store.NewDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		lim := ingest.Limits{Binaries: unwind.NewFinder(symbolize.New(symbolize.Config{}))}
		up, err := profiles.New(profiles.Config{Store: st, Limits: lim})
		if err != nil {
			b.Fatal(err)
		}
		id, err := up.Ingest(ctx, data, name)
		if err != nil {
			b.Fatal(err)
		}
		conv, err := os.ReadFile(filepath.Join(dir, id, profiles.KeyConverted))
		if err != nil {
			b.Fatal(err)
		}
		for _, from := range []string{"converted", "original"} {
			b.Run(name+"/"+from, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					if from == "original" {
						os.Remove(filepath.Join(dir, id, profiles.KeyConverted))
					} else if err := st.Put(ctx, profiles.Key(id, profiles.KeyConverted), bytes.NewReader(conv)); err != nil {
						b.Fatal(err)
					}
					s, err := profiles.New(profiles.Config{Store: st, Limits: lim})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := s.Profile(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkUpload is an upload's parse and store (original, meta and the
// converted copy, each fsynced by store.Dir) against its parse alone and
// the encoding of the copy, to show what storing the copy adds at upload.
//
//	go test -run '^$' -bench Upload -benchtime 20x ./web/profiles
func BenchmarkUpload(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"dwarf.data", "fp.script"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", name))
		if err != nil {
			b.Fatal(err)
		}
		lim := ingest.Limits{Binaries: unwind.NewFinder(symbolize.New(symbolize.Config{}))}
		b.Run(name+"/parse", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := ingest.Parse(data, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encode", func(b *testing.B) {
			p, _, err := ingest.Parse(data, lim)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := p.Write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/ingest", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st, err := store.NewDir(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				s, err := profiles.New(profiles.Config{Store: st, Limits: lim})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := s.Ingest(ctx, data, name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteGzipped is the stored copy's encoding (what an upload,
// a symbolized copy and the OTLP intake write) of the profile in
// $VIEWER_BENCH_PROFILE, by default the 2M-sample profile that
// testdata/bench/growth.sh 2m generates, read by viewer's own parser.
//
//	go test -run '^$' -bench WriteGzipped -benchtime 3x -benchmem ./web/profiles
func BenchmarkWriteGzipped(b *testing.B) {
	p, _, err := ingest.Parse(gen.Profile2M(b), ingest.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	cpu0 := cpuTime()
	for b.Loop() {
		w := &countingWriter{}
		if err := profiles.WriteGzipped(w, p); err != nil {
			b.Fatal(err)
		}
		n = w.n
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(n)/(1<<20), "gzipped-MiB")
	b.ReportMetric(float64(len(p.Sample)), "samples")
}

// cpuTime is the user and system CPU time this process has used: on a
// shared machine, what to compare rather than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkLoadAfterSymbolization is the page load that follows a
// symbolization on the same server: parsing the stored symbolized copy, as
// before profiles.Replace ("parse": the cache dropped, the copy read back),
// against the profile handed over in memory ("handover"). The profile is
// dwarf.data symbolized by the engine with this machine's files.
//
//	go test -run '^$' -bench LoadAfterSymbolization -benchtime 20x ./web/profiles
func BenchmarkLoadAfterSymbolization(b *testing.B) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", "dwarf.data"))
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	engine := symbolize.New(symbolize.Config{})
	s, err := profiles.New(profiles.Config{Store: st, Limits: ingest.Limits{Binaries: unwind.NewFinder(engine)}})
	if err != nil {
		b.Fatal(err)
	}
	id, err := s.Ingest(ctx, data, "dwarf.data")
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.Converted(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := engine.Symbolize(ctx, p, symbolize.Options{NoDebuginfod: true}); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := profiles.WriteGzipped(&buf, p); err != nil {
		b.Fatal(err)
	}
	if err := st.Put(ctx, profiles.Key(id, profiles.KeySymbolized), bytes.NewReader(buf.Bytes())); err != nil {
		b.Fatal(err)
	}
	for _, how := range []string{"parse", "handover"} {
		b.Run(how, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				if how == "parse" {
					s.Invalidate(id)
				} else {
					s.Replace(ctx, id, p, buf.Bytes())
				}
				cpu0 := cpuTime()
				b.StartTimer()
				l, err := s.Profile(ctx, id)
				if err != nil || !l.Symbolized {
					b.Fatal(err, l.Symbolized)
				}
				b.StopTimer()
				cpu += cpuTime() - cpu0
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(p.Sample)), "samples")
		})
	}
}
