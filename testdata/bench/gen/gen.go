// Package gen generates the deterministic benchmark profile used by
// genprofile, the flame benchmarks and testdata/bench/flame.sh.
package gen

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"strings"
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

// Shape is what a generated profile looks like besides its counts: the
// layout of its records, its stacks' depths, its locations, names, labels
// and sample types. The zero values of its options are the benchmark
// profile's (Generate's); the issue-36 shapes vary one option each, so
// that a cost that grows with one of them shows up on its own.
type Shape struct {
	Samples, Stacks, Functions, Mappings int
	Seed                                 uint64
	// MinDepth and MaxDepth bound each stack's depth (0: 10 and 60).
	MinDepth, MaxDepth int
	// Locations is the number of locations (0: a third more than the
	// functions, each function's first one and others at other lines).
	Locations int
	// NameLen, when more than 0, makes function names long Go and C++
	// names (alternately) of about this many bytes.
	NameLen int
	// Inline, when more than 0, gives every location this many inlined
	// calls (lines) above its function; 0: one location in ten has one.
	Inline int
	// Labels gives every sample this many string labels, and a numeric
	// one when more than 1; their values depend on the stack, so they do
	// not make more distinct samples.
	Labels int
	// Types is the number of sample types (0: 2, samples and cpu).
	Types int
	// Merged writes one record per distinct stack, its values summed,
	// instead of one record per sample.
	Merged bool
}

// Variants are issue 36's shapes, each the benchmark shape (Generate's)
// with one option changed, and "all" with several; growth.sh's SIZE-NAME,
// genprofile -shape and the per-shape benchmarks name them.
var Variants = []struct {
	Name  string
	Apply func(*Shape)
}{
	{"records", func(*Shape) {}}, // one record per sample, as Generate
	{"merged", func(s *Shape) { s.Merged = true }},
	{"shallow", func(s *Shape) { s.MinDepth, s.MaxDepth = 5, 10 }},
	{"deep", func(s *Shape) { s.MinDepth, s.MaxDepth = 60, 120 }}, // 45M frames at 2M: under --max-frames 50M
	{"locs", func(s *Shape) { s.Locations = 8 * s.Functions }},
	{"names", func(s *Shape) { s.NameLen = 200 }},
	{"inline", func(s *Shape) { s.Inline = 4 }},
	{"labels", func(s *Shape) { s.Labels = 4 }},
	{"types", func(s *Shape) { s.Types = 4 }},
	{"all", func(s *Shape) { s.NameLen, s.Inline, s.Labels, s.Types, s.MinDepth, s.MaxDepth = 200, 4, 4, 4, 10, 100 }},
}

// Variant returns the benchmark shape of these counts changed as the
// variant named name changes it; false when there is none of that name.
func Variant(name string, samples, stacks, functions, mappings int, seed uint64) (Shape, bool) {
	sh := Shape{Samples: samples, Stacks: stacks, Functions: functions, Mappings: mappings, Seed: seed}
	for _, v := range Variants {
		if v.Name == name {
			v.Apply(&sh)
			return sh, true
		}
	}
	return sh, false
}

// Generate returns a CPU profile of nSamples samples over nStacks unique
// stacks of depth 10–60 made of nFuncs functions in nMaps mappings, with
// Zipf-like frequencies; the same arguments give the same profile.
func Generate(nSamples, nStacks, nFuncs, nMaps int, seed uint64) *profile.Profile {
	return Shape{Samples: nSamples, Stacks: nStacks, Functions: nFuncs, Mappings: nMaps, Seed: seed}.Generate()
}

// Generate returns the profile of shape sh, one record per sample (or per
// stack, Merged); the same shape gives the same profile.
func (sh Shape) Generate() *profile.Profile {
	p, samples := sh.generate()
	p.Sample = make([]*profile.Sample, 0, sh.Samples)
	samples(func(locs []*profile.Location, vals []int64, labels []label) {
		s := &profile.Sample{Location: locs, Value: append([]int64(nil), vals...)}
		for _, l := range labels {
			if l.str != "" {
				if s.Label == nil {
					s.Label = map[string][]string{}
				}
				s.Label[l.key] = []string{l.str}
			} else {
				if s.NumLabel == nil {
					s.NumLabel = map[string][]int64{}
				}
				s.NumLabel[l.key] = []int64{l.num}
			}
		}
		p.Sample = append(p.Sample, s)
	})
	return p
}

// label is one label of a generated sample: a string one when str is set,
// else a numeric one.
type label struct {
	key, str string
	num      int64
}

// labelValues are the values the generated string labels take.
var labelValues = []string{"GET /api/v1/orders", "POST /api/v1/checkout", "grpc.health.v1.Health/Check", "batch-reindex", "scheduler", "GET /static/app.js", "kafka-consumer-7", "cron: nightly-report"}

// longName is function i's name of about n bytes: a Go method of a
// generic type for even i, a C++ member function template for odd ones.
func longName(i, n int) string {
	var b strings.Builder
	if i%2 == 0 {
		fmt.Fprintf(&b, "github.com/acme/%s/internal/%s.(*%s%d[", pkgs[i%len(pkgs)], verbs[(i/3)%len(verbs)], types[(i/7)%len(types)], i%97)
		for k := 0; b.Len() < n-24; k++ {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "go.shape.struct { %s.%s%d }", pkgs[(i+k)%len(pkgs)], types[k%len(types)], k)
		}
		fmt.Fprintf(&b, "]).%s%d", verbs[(i/3)%len(verbs)], i)
		return b.String()
	}
	fmt.Fprintf(&b, "acme::%s::%s%d<", verbs[(i/5)%len(verbs)], types[(i/7)%len(types)], i%97)
	for k := 0; b.Len() < n-40; k++ {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "std::__1::basic_string<char, std::__1::char_traits<char>, acme::Alloc%d>", k)
	}
	fmt.Fprintf(&b, ">::%s%d(unsigned long) const", verbs[(i/3)%len(verbs)], i)
	return b.String()
}

// generate is Generate's profile without its samples, and a function that
// calls yield with each record's locations (leaf first), values and
// labels, in Generate's order; yield may keep none of its arguments.
func (sh Shape) generate() (*profile.Profile, func(yield func([]*profile.Location, []int64, []label))) {
	nSamples, nStacks, nFuncs, nMaps := sh.Samples, sh.Stacks, sh.Functions, sh.Mappings
	minDepth, maxDepth := cmp.Or(sh.MinDepth, 10), cmp.Or(sh.MaxDepth, 60)
	nTypes := cmp.Or(sh.Types, 2)
	r := rand.New(rand.NewPCG(sh.Seed, 0x5eed))
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10000000,
		DurationNanos: 60e9,
		TimeNanos:     1700000000e9,
	}
	for i := 2; i < nTypes; i++ {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: fmt.Sprintf("event%d", i), Unit: "count"})
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
		if sh.NameLen > 0 {
			name = longName(i, sh.NameLen)
		}
		p.Function = append(p.Function, &profile.Function{ID: uint64(i + 1), Name: name, SystemName: name, Filename: fmt.Sprintf("src/%s/file%d.go", pkgs[i%len(pkgs)], i%50)})
	}
	// One location per function, and a third more at other lines; one in
	// ten carries an inlined call.
	nLocs := nFuncs + nFuncs/3
	if sh.Locations > 0 {
		nLocs = max(sh.Locations, nFuncs)
	}
	for i := range nLocs {
		fi := i
		if i >= nFuncs {
			fi = r.IntN(nFuncs)
		}
		fn := p.Function[fi]
		m := p.Mapping[fi%nMaps]
		loc := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: m.Start + uint64(fi)*0x400 + uint64(r.IntN(0x3f0))}
		if sh.Inline > 0 {
			for range sh.Inline {
				inl := p.Function[r.IntN(nFuncs)]
				loc.Line = append(loc.Line, profile.Line{Function: inl, Line: int64(1 + r.IntN(900))})
			}
		} else if r.IntN(10) == 0 {
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
		depth := minDepth + r.IntN(maxDepth-minDepth+1)
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
	labelsOf := func(si int, ls []label) []label {
		ls = ls[:0]
		for k := range sh.Labels {
			ls = append(ls, label{key: fmt.Sprintf("label%d", k), str: labelValues[(si*7+k)%len(labelValues)]})
		}
		if sh.Labels > 1 {
			ls = append(ls, label{key: "goroutine", num: int64(1 + si%1000)})
		}
		return ls
	}
	return p, func(yield func([]*profile.Location, []int64, []label)) {
		vals := make([]int64, nTypes)
		var ls []label
		if !sh.Merged {
			for _, si := range order {
				vals[0], vals[1] = 1, p.Period+int64(r.IntN(1000))
				for i := 2; i < nTypes; i++ {
					vals[i] = int64(i)
				}
				yield(leafFirst[si], vals, labelsOf(si, ls))
			}
			return
		}
		// One record per stack in the order of their first samples.
		sums := make([][]int64, len(leafFirst))
		var first []int
		for _, si := range order {
			if sums[si] == nil {
				sums[si] = make([]int64, nTypes)
				first = append(first, si)
			}
			sums[si][0]++
			sums[si][1] += p.Period + int64(r.IntN(1000))
			for i := 2; i < nTypes; i++ {
				sums[si][i] += int64(i)
			}
		}
		for _, si := range first {
			yield(leafFirst[si], sums[si], labelsOf(si, ls))
		}
	}
}

// WriteStream writes Generate's profile to w, gzipped, without holding its
// samples: the profile without samples, then each sample appended as a
// Profile.sample field (protobuf concatenation appends repeated fields).
// Generate's 20M-sample profile would need about 16 GB before it is
// written; this needs its stacks only.
func WriteStream(w io.Writer, nSamples, nStacks, nFuncs, nMaps int, seed uint64) error {
	return Shape{Samples: nSamples, Stacks: nStacks, Functions: nFuncs, Mappings: nMaps, Seed: seed}.WriteStream(w)
}

// WriteStream writes shape sh's profile to w as the package's
// WriteStream does; the strings of labels follow the profile's string
// table, as more of its entries.
func (sh Shape) WriteStream(w io.Writer) error {
	p, samples := sh.generate()
	var head bytes.Buffer
	if err := p.WriteUncompressed(&head); err != nil {
		return err
	}
	nStrings, err := countStrings(head.Bytes())
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(head.Bytes()); err != nil {
		return err
	}
	strIndex := map[string]uint64{}
	str := func(s string) uint64 {
		if i, ok := strIndex[s]; ok {
			return i
		}
		i := uint64(nStrings + len(strIndex))
		strIndex[s] = i
		if err == nil {
			_, err = zw.Write(protowire.AppendString(protowire.AppendTag(nil, 6, protowire.BytesType), s)) // Profile.string_table
		}
		return i
	}
	var msg, buf, lb []byte
	samples(func(locs []*profile.Location, vals []int64, labels []label) {
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
		var vb []byte
		for _, v := range vals {
			vb = protowire.AppendVarint(vb, uint64(v))
		}
		msg = protowire.AppendTag(msg, 2, protowire.BytesType) // value, packed
		msg = protowire.AppendBytes(msg, vb)
		for _, l := range labels {
			lb = protowire.AppendTag(lb[:0], 1, protowire.VarintType) // key
			lb = protowire.AppendVarint(lb, str(l.key))
			if l.str != "" {
				lb = protowire.AppendTag(lb, 2, protowire.VarintType) // str
				lb = protowire.AppendVarint(lb, str(l.str))
			} else {
				lb = protowire.AppendTag(lb, 3, protowire.VarintType) // num
				lb = protowire.AppendVarint(lb, uint64(l.num))
			}
			msg = protowire.AppendTag(msg, 3, protowire.BytesType) // label
			msg = protowire.AppendBytes(msg, lb)
		}
		if err != nil {
			return
		}
		buf = protowire.AppendTag(buf[:0], 2, protowire.BytesType) // Profile.sample
		buf = protowire.AppendBytes(buf, msg)
		_, err = zw.Write(buf)
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// countStrings counts the string table entries (field 6) of the
// uncompressed profile b.
func countStrings(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, protowire.ParseError(l)
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return 0, protowire.ParseError(l)
		}
		if num == 6 {
			n++
		}
		b = b[l:]
	}
	return n, nil
}

// AddTimes gives each of p's samples (one per event, as Generate makes
// them) a time bucket over p's duration and one of threads thread IDs, as
// the perf.data converter labels them (sampling.TimeLabel, at most
// sampling.MaxTimeBuckets buckets): the benchmark profile of the timeline.
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
