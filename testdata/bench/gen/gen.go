// Package gen generates the deterministic benchmark profile used by
// genprofile, the flame benchmarks and testdata/bench/flame.sh.
package gen

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"
)

var (
	pkgs  = []string{"net/http", "encoding/json", "runtime", "compress/flate", "database/sql", "github.com/acme/store", "github.com/acme/api", "google.golang.org/grpc", "crypto/tls", "sync"}
	types = []string{"Server", "conn", "Decoder", "Encoder", "Writer", "Reader", "Tx", "Pool", "Handler", "state"}
	verbs = []string{"serve", "read", "write", "decode", "encode", "flush", "lookup", "compress", "handle", "dispatch", "parse", "marshal"}
)

// Generate returns a CPU profile of nSamples samples over nStacks unique
// stacks of depth 10–60 made of nFuncs functions in nMaps mappings, with
// Zipf-like frequencies; the same arguments give the same profile.
func Generate(nSamples, nStacks, nFuncs, nMaps int, seed uint64) *profile.Profile {
	p, samples := generate(nSamples, nStacks, nFuncs, nMaps, seed)
	p.Sample = make([]*profile.Sample, 0, nSamples)
	samples(func(locs []*profile.Location, ns int64) {
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{1, ns}})
	})
	return p
}

// generate is Generate's profile without its samples, and a function that
// calls yield with each sample's locations (leaf first) and CPU time, in
// Generate's order.
func generate(nSamples, nStacks, nFuncs, nMaps int, seed uint64) (*profile.Profile, func(yield func([]*profile.Location, int64))) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10000000,
		DurationNanos: 60e9,
		TimeNanos:     1700000000e9,
	}
	for i := range nMaps {
		file := fmt.Sprintf("/usr/lib/x86_64-linux-gnu/libbench%02d.so.1", i)
		if i == 0 {
			file = "/usr/local/bin/bench-server"
		}
		start := uint64(0x400000) + uint64(i)<<32
		p.Mapping = append(p.Mapping, &profile.Mapping{
			ID: uint64(i + 1), Start: start, Limit: start + 1<<30, File: file,
			BuildID: fmt.Sprintf("%040x", r.Uint64()), HasFunctions: true,
		})
	}
	for i := range nFuncs {
		name := fmt.Sprintf("%s.(*%s%d).%s%d", pkgs[i%len(pkgs)], types[(i/7)%len(types)], i%97, verbs[(i/3)%len(verbs)], i)
		p.Function = append(p.Function, &profile.Function{ID: uint64(i + 1), Name: name, SystemName: name, Filename: fmt.Sprintf("src/%s/file%d.go", pkgs[i%len(pkgs)], i%50)})
	}
	// One location per function, and a third more at other lines; one in
	// ten carries an inlined call.
	nLocs := nFuncs + nFuncs/3
	for i := range nLocs {
		fi := i
		if i >= nFuncs {
			fi = r.IntN(nFuncs)
		}
		fn := p.Function[fi]
		m := p.Mapping[fi%nMaps]
		loc := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: m.Start + uint64(fi)*0x400 + uint64(r.IntN(0x3f0))}
		if r.IntN(10) == 0 {
			inl := p.Function[r.IntN(nFuncs)]
			loc.Line = append(loc.Line, profile.Line{Function: inl, Line: int64(1 + r.IntN(900))})
		}
		loc.Line = append(loc.Line, profile.Line{Function: fn, Line: int64(1 + r.IntN(900))})
		p.Location = append(p.Location, loc)
	}
	// Frames are drawn Zipf-like too, so some functions are hot everywhere.
	locZipf := rand.NewZipf(r, 1.05, 8, uint64(nLocs-1))
	h := fnv.New64a()
	seen := make(map[uint64]bool, nStacks)
	all := make([][]*profile.Location, 0, nStacks)
	roots := p.Location[:8] // a few entry points: main, goroutine starts
	for len(all) < nStacks {
		depth := 10 + r.IntN(51)
		var st []*profile.Location // root first while building
		if len(all) > 0 && r.IntN(10) < 9 {
			// Share a prefix with an earlier stack, as real call trees do.
			prev := all[r.IntN(len(all))]
			st = append(st, prev[:1+r.IntN(min(len(prev), depth))]...)
		} else {
			st = append(st, roots[r.IntN(len(roots))])
		}
		for len(st) < depth {
			st = append(st, p.Location[locZipf.Uint64()])
		}
		h.Reset()
		for _, l := range st {
			var b [8]byte
			for i := range b {
				b[i] = byte(l.ID >> (8 * i))
			}
			h.Write(b[:])
		}
		k := h.Sum64()
		if seen[k] {
			continue
		}
		seen[k] = true
		all = append(all, st)
	}
	// Leaf first, as pprof stores stacks.
	leafFirst := make([][]*profile.Location, len(all))
	for i, st := range all {
		rev := make([]*profile.Location, len(st))
		for j, l := range st {
			rev[len(st)-1-j] = l
		}
		leafFirst[i] = rev
	}
	// Every stack once, the rest Zipf-distributed over stacks, shuffled.
	stackZipf := rand.NewZipf(r, 1.1, 4, uint64(nStacks-1))
	order := make([]int, 0, nSamples)
	for i := range min(nStacks, nSamples) {
		order = append(order, i)
	}
	for len(order) < nSamples {
		order = append(order, int(stackZipf.Uint64()))
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return p, func(yield func([]*profile.Location, int64)) {
		for _, si := range order {
			yield(leafFirst[si], p.Period+int64(r.IntN(1000)))
		}
	}
}

// WriteStream writes Generate's profile to w, gzipped, without holding its
// samples: the profile without samples, then each sample appended as a
// Profile.sample field (protobuf concatenation appends repeated fields).
// Generate's 20M-sample profile would need about 16 GB before it is
// written; this needs its stacks only.
func WriteStream(w io.Writer, nSamples, nStacks, nFuncs, nMaps int, seed uint64) error {
	p, samples := generate(nSamples, nStacks, nFuncs, nMaps, seed)
	zw := gzip.NewWriter(w)
	if err := p.WriteUncompressed(zw); err != nil {
		return err
	}
	var msg, buf []byte
	var err error
	samples(func(locs []*profile.Location, ns int64) {
		if err != nil {
			return
		}
		msg = msg[:0]
		var ids []byte
		for _, l := range locs {
			ids = protowire.AppendVarint(ids, l.ID)
		}
		msg = protowire.AppendTag(msg, 1, protowire.BytesType) // location_id, packed
		msg = protowire.AppendBytes(msg, ids)
		vals := protowire.AppendVarint(protowire.AppendVarint(nil, 1), uint64(ns))
		msg = protowire.AppendTag(msg, 2, protowire.BytesType) // value, packed
		msg = protowire.AppendBytes(msg, vals)
		buf = protowire.AppendTag(buf[:0], 2, protowire.BytesType) // Profile.sample
		buf = protowire.AppendBytes(buf, msg)
		_, err = zw.Write(buf)
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// AddTimes gives each of p's samples (one per event, as Generate makes
// them) a time bucket over p's duration and one of threads thread IDs, as
// the perf.data converter labels them (perfdata.TimeLabel, at most
// perfdata.MaxTimeBuckets buckets): the benchmark profile of the timeline.
// Samples are in random order, so every bucket holds a mix of stacks.
func AddTimes(p *profile.Profile, threads int, bucket int64) {
	n := int64(len(p.Sample))
	for i, s := range p.Sample {
		at := int64(i) * p.DurationNanos / n / bucket * bucket
		s.NumLabel = map[string][]int64{"time": {at}, "pid": {1}, "tid": {int64(1 + i%threads)}}
		s.NumUnit = map[string][]string{"time": {"nanoseconds"}}
		s.Label = map[string][]string{"comm": {"bench-server"}}
	}
}

// Profile2M returns the bytes of the profile in $VIEWER_BENCH_PROFILE, by
// default the 2M-sample profile that testdata/bench/growth.sh 2m generates
// into /tmp/viewer-bench; the benchmark is skipped, saying how to make it,
// when there is none.
func Profile2M(tb testing.TB) []byte {
	tb.Helper()
	name := os.Getenv("VIEWER_BENCH_PROFILE")
	if name == "" {
		name = "/tmp/viewer-bench/bench-2m.pb.gz"
	}
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Skipf("%v; make it with testdata/bench/growth.sh 2m or name a profile in VIEWER_BENCH_PROFILE", err)
	}
	return data
}
