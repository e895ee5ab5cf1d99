// Command genprofile writes the benchmark profile: a deterministic CPU
// profile of 200,000 samples over 50,000 unique stacks of depth 10–60,
// 20,000 functions in 20 mappings, with Zipf-like stack frequencies (about
// 7.7 MB gzipped).
//
//	go run ./testdata/bench/genprofile -o /tmp/bench.pb.gz
package main

import (
	"flag"
	"fmt"
	"os"

	"viewer/testdata/bench/gen"
	"viewer/web/ingest/perfdata"
)

func main() {
	out := flag.String("o", "bench.pb.gz", "output `file`")
	samples := flag.Int("samples", 200000, "number of samples")
	stacks := flag.Int("stacks", 50000, "number of unique stacks")
	functions := flag.Int("functions", 20000, "number of functions")
	mappings := flag.Int("mappings", 20, "number of mappings")
	seed := flag.Uint64("seed", 1, "random seed")
	threads := flag.Int("times", 0, "give the samples times over the 60 s and this many threads (0: no times), for the timeline")
	stream := flag.Bool("stream", false, "write samples as they are made instead of building the whole profile first (the same profile; for tens of millions of samples; not with -times)")
	flag.Parse()
	if *stream {
		if *threads > 0 {
			fmt.Fprintln(os.Stderr, "genprofile: -stream cannot add -times")
			os.Exit(2)
		}
		f, err := os.Create(*out)
		if err == nil {
			err = gen.WriteStream(f, *samples, *stacks, *functions, *mappings, *seed)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	p := gen.Generate(*samples, *stacks, *functions, *mappings, *seed)
	if *threads > 0 {
		gen.AddTimes(p, *threads, int64(perfdata.TimeBucket(uint64(p.DurationNanos))))
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := p.Write(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fi, _ := os.Stat(*out)
	fmt.Fprintf(os.Stderr, "%s: %d samples, %d stacks, %d functions, %d locations, %d mappings, %d bytes\n",
		*out, len(p.Sample), *stacks, len(p.Function), len(p.Location), len(p.Mapping), fi.Size())
}
