// Command genv8 writes a deterministic V8 CPU profile for benchmarks
// (package v8gen): a .cpuprofile of -samples samples, or a Chrome trace
// of about -bytes bytes whose threads' samples are ProfileChunk events.
//
//	go run ./testdata/bench/genv8 -o /tmp/1m.cpuprofile -samples 1000000
//	go run ./testdata/bench/genv8 -o /tmp/100m.json -trace -bytes 100000000
package main

import (
	"flag"
	"log"
	"os"

	"viewer/testdata/bench/v8gen"
)

func main() {
	out := flag.String("o", "profile.cpuprofile", "output `file`")
	trace := flag.Bool("trace", false, "write a Chrome trace (Profile and ProfileChunk events) instead of a .cpuprofile")
	samples := flag.Int("samples", 1000000, "samples of the .cpuprofile")
	bytes := flag.Int64("bytes", 100_000_000, "about this many bytes of trace")
	nodes := flag.Int("nodes", 5000, "nodes of each call tree")
	threads := flag.Int("threads", 2, "threads of the trace, a profile each")
	chunk := flag.Int("chunk", 300, "samples per ProfileChunk")
	xs := flag.Int("x", 20, "X events between two chunks")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if *trace {
		err = v8gen.WriteChromeTrace(f, v8gen.TraceShape{Bytes: *bytes, Threads: *threads, Nodes: *nodes, ChunkSamples: *chunk, XPerChunk: *xs, Seed: *seed})
	} else {
		err = v8gen.WriteCPUProfile(f, *samples, *nodes, *seed)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		log.Fatal(err)
	}
}
