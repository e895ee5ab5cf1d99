// Command genprofile writes the benchmark profile: a deterministic CPU
// profile of 200,000 samples over 50,000 unique stacks of depth 10–60,
// 20,000 functions in 20 mappings, with Zipf-like stack frequencies (about
// 7.7 MB gzipped). Its other flags vary the profile's shape (issue 36):
// merged records, depths, locations per function, long names, inlining,
// labels and sample types.
//
//	go run ./testdata/bench/genprofile -o /tmp/bench.pb.gz
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"

	"viewer/symbolize/sampling"
	"viewer/testdata/bench/gen"
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
	depth := flag.String("depth", "10-60", "stack depths, `MIN-MAX`")
	locations := flag.Int("locations", 0, "number of locations (0: a third more than -functions); more makes many locations per function")
	nameLen := flag.Int("name-len", 0, "make function names long Go and C++ names of about this many `bytes` (0: short Go names)")
	inline := flag.Int("inline", 0, "give every location this many inlined calls (0: one location in ten has one)")
	labels := flag.Int("labels", 0, "give every sample this many string labels (and a numeric one when more than 1)")
	types := flag.Int("types", 2, "number of sample types (samples, cpu, then counts)")
	merged := flag.Bool("merged", false, "one record per distinct stack, its values summed, instead of one per sample")
	shape := flag.String("shape", "", "start from gen.Variants' shape of this `name` (records, merged, shallow, deep, locs, names, inline, labels, types, all); the other flags given change it further")
	flag.Parse()
	sh := gen.Shape{Samples: *samples, Stacks: *stacks, Functions: *functions, Mappings: *mappings, Seed: *seed,
		Locations: *locations, NameLen: *nameLen, Inline: *inline, Labels: *labels, Types: *types, Merged: *merged}
	if *shape != "" {
		v, ok := gen.Variant(*shape, sh.Samples, sh.Stacks, sh.Functions, sh.Mappings, sh.Seed)
		if !ok {
			fmt.Fprintf(os.Stderr, "genprofile: no -shape %q; see gen.Variants\n", *shape)
			os.Exit(2)
		}
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if !given["depth"] {
			*depth = fmt.Sprintf("%d-%d", cmp.Or(v.MinDepth, 10), cmp.Or(v.MaxDepth, 60))
		}
		if !given["locations"] {
			sh.Locations = v.Locations
		}
		if !given["name-len"] {
			sh.NameLen = v.NameLen
		}
		if !given["inline"] {
			sh.Inline = v.Inline
		}
		if !given["labels"] {
			sh.Labels = v.Labels
		}
		if !given["types"] {
			sh.Types = cmp.Or(v.Types, 2)
			*types = sh.Types
		}
		if !given["merged"] {
			sh.Merged = v.Merged
		}
	}
	if _, err := fmt.Sscanf(*depth, "%d-%d", &sh.MinDepth, &sh.MaxDepth); err != nil || sh.MinDepth < 1 || sh.MaxDepth < sh.MinDepth {
		fmt.Fprintf(os.Stderr, "genprofile: -depth %q: want MIN-MAX, 1 <= MIN <= MAX\n", *depth)
		os.Exit(2)
	}
	if *types < 2 {
		fmt.Fprintln(os.Stderr, "genprofile: -types must be 2 or more")
		os.Exit(2)
	}
	if *stream {
		if *threads > 0 {
			fmt.Fprintln(os.Stderr, "genprofile: -stream cannot add -times")
			os.Exit(2)
		}
		f, err := os.Create(*out)
		if err == nil {
			err = sh.WriteStream(f)
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
	p := sh.Generate()
	if *threads > 0 {
		if *labels > 0 {
			fmt.Fprintln(os.Stderr, "genprofile: -times replaces the samples' labels; not with -labels")
			os.Exit(2)
		}
		gen.AddTimes(p, *threads, int64(sampling.TimeBucket(uint64(p.DurationNanos))))
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
