package profiles

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"
)

// WriteGzipped writes p to w as gzipped pprof, the encoding of every copy
// of a profile viewer stores (converted, symbolized, an OTLP request's),
// compressed by klauspost/compress at its fastest level: profile.Write's
// standard-library gzip at the default level took a quarter of a
// 200k-sample upload's CPU time, and 3.6 times as long as this for a copy
// only 8% smaller. An encoding of over a megabyte is compressed as gzip
// members on the other cores while it is encoded (memberWriter). The gzip
// writers are pooled: a new one allocates and clears its window, which an
// OTLP intake of many small profiles felt.
func WriteGzipped(w io.Writer, p *profile.Profile) error {
	zw := newMemberWriter(w)
	err := writeUncompressed(zw, p)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("encoding the converted profile: %w", err)
	}
	return nil
}

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// bufWriters are writeUncompressed's buffers, pooled with the gzip writers.
var bufWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// writeUncompressed writes p to w as profile.WriteUncompressed does, byte
// for byte, but message by message through a small buffer: pprof's encoder
// builds the whole encoding in one growing slice (a 428k-sample perf.data
// profile's is over 100 MB, twice that while it grows) and leaves a label
// and a location-ID slice on every sample for as long as the profile lives.
// Samples that share their label maps (the OTLP intake's of one set of
// attributes, the pprof decoder's of equal label messages) share their
// labels' encoding: each set is sorted, interned and encoded once, where
// pprof's encoder does that for every sample. It does not change p.
func writeUncompressed(w io.Writer, p *profile.Profile) error {
	bw := bufWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		bufWriters.Put(bw)
	}()
	e := &pprofEncoder{bw: bw, strs: map[string]int64{}, labels: map[labelKey]labelRun{}, ids: newLocationIDs(p.Location)}
	e.tableOf(p)
	for _, x := range p.SampleType {
		e.valueType(1, x)
	}
	for _, s := range p.Sample {
		e.sample(s)
	}
	for _, m := range p.Mapping {
		e.mapping(m)
	}
	for _, l := range p.Location {
		e.location(l)
	}
	for _, f := range p.Function {
		e.function(f)
	}
	for _, s := range e.table {
		e.b = protowire.AppendTag(e.b, 6, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
		e.flush()
	}
	e.b = appendInt64Opt(e.b, 7, e.str(p.DropFrames))
	e.b = appendInt64Opt(e.b, 8, e.str(p.KeepFrames))
	e.b = appendInt64Opt(e.b, 9, p.TimeNanos)
	e.b = appendInt64Opt(e.b, 10, p.DurationNanos)
	if pt := p.PeriodType; pt != nil && (e.str(pt.Type) != 0 || e.str(pt.Unit) != 0) {
		e.valueType(11, pt)
	}
	e.b = appendInt64Opt(e.b, 12, p.Period)
	var comments []int64
	for _, c := range p.Comments {
		comments = append(comments, e.str(c))
	}
	e.b = appendInt64s(e.b, 13, comments)
	e.b = protowire.AppendTag(e.b, 14, protowire.VarintType) // not optional in pprof's encoder
	e.b = protowire.AppendVarint(e.b, uint64(e.str(p.DefaultSampleType)))
	e.b = appendInt64Opt(e.b, 15, e.str(p.DocURL))
	e.flush()
	if e.err != nil {
		return e.err
	}
	return e.bw.Flush()
}

// pprofEncoder is writeUncompressed's state: the string table, the
// encoded labels of each set of label maps, and the message being encoded
// (b, with m and l for the messages nested in it).
type pprofEncoder struct {
	bw    *bufio.Writer
	err   error
	strs  map[string]int64
	table []string
	keys  []string
	// labels are the encoded labels (Sample field 3) of each set of label
	// maps, at most maxLabelSets of them, as runs of labelBytes.
	labels     map[labelKey]labelRun
	labelBytes []byte
	ids        locationIDs
	b          []byte // the top-level field being encoded
	m          []byte // a message's body
	l          []byte // a nested message's body
}

// labelKey names a sample's label maps by identity: samples that share
// them share their encoding.
type labelKey struct{ str, num, unit unsafe.Pointer }

// labelRun is where a set's encoded labels are in labelBytes.
type labelRun struct{ from, to int }

// maxLabelSets bounds the encoded label sets kept: a perf.data profile's
// samples each have label maps of their own (their time), and keeping
// those would cost memory in proportion to the samples for nothing.
const maxLabelSets = 4096

func labelKeyOf(s *profile.Sample) labelKey {
	return labelKey{mapPointer(s.Label), mapPointer(s.NumLabel), mapPointer(s.NumUnit)}
}

// mapPointer is a map's identity (nil for a nil map).
func mapPointer[M ~map[K]V, K comparable, V any](m M) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

// add gives s its string table index, in the order preEncode does.
func (e *pprofEncoder) add(s string) {
	if _, ok := e.strs[s]; !ok {
		e.strs[s] = int64(len(e.table))
		e.table = append(e.table, s)
	}
}

func (e *pprofEncoder) str(s string) int64 { return e.strs[s] }

// tableOf numbers p's strings as pprof's preEncode does: its string table
// is written after the samples, so it is built in a pass of its own. A
// set of label maps seen before adds no string, so it is skipped; its
// encoding, final once its strings are numbered, is kept for sample.
func (e *pprofEncoder) tableOf(p *profile.Profile) {
	e.add("")
	for _, st := range p.SampleType {
		e.add(st.Type)
		e.add(st.Unit)
	}
	for _, s := range p.Sample {
		if len(s.Label) == 0 && len(s.NumLabel) == 0 {
			continue
		}
		k := labelKeyOf(s)
		if _, ok := e.labels[k]; ok {
			continue
		}
		for _, k := range sortedKeys(&e.keys, s.Label) {
			e.add(k)
			for _, v := range s.Label[k] {
				e.add(v)
			}
		}
		for _, k := range sortedKeys(&e.keys, s.NumLabel) {
			e.add(k)
			units := s.NumUnit[k]
			for i := range s.NumLabel[k] {
				if len(units) != 0 {
					e.add(unitAt(units, i))
				}
			}
		}
		if len(e.labels) < maxLabelSets {
			from := len(e.labelBytes)
			e.labelBytes = e.appendLabels(e.labelBytes, s)
			e.labels[k] = labelRun{from, len(e.labelBytes)}
		}
	}
	for _, m := range p.Mapping {
		e.add(m.File)
		e.add(m.BuildID)
	}
	for _, f := range p.Function {
		e.add(f.Name)
		e.add(f.SystemName)
		e.add(f.Filename)
	}
	e.add(p.DropFrames)
	e.add(p.KeepFrames)
	if pt := p.PeriodType; pt != nil {
		e.add(pt.Type)
		e.add(pt.Unit)
	}
	for _, c := range p.Comments {
		e.add(c)
	}
	e.add(p.DefaultSampleType)
	e.add(p.DocURL)
}

// unitAt is units[i], or "" where pprof's encoder would index past them.
func unitAt(units []string, i int) string {
	if i < len(units) {
		return units[i]
	}
	return ""
}

// sortedKeys is m's keys in order, in buf's storage (the encoder's
// scratch slice, reused for every label set).
func sortedKeys[V any](buf *[]string, m map[string]V) []string {
	*buf = (*buf)[:0]
	for k := range m {
		*buf = append(*buf, k)
	}
	slices.Sort(*buf)
	return *buf
}

// flush writes the field encoded in b to the buffered writer.
func (e *pprofEncoder) flush() {
	if e.err == nil {
		_, e.err = e.bw.Write(e.b)
	}
	e.b = e.b[:0]
}

// field writes body as field num of the top-level message: its tag and
// length, then body itself, not copied behind them first.
func (e *pprofEncoder) field(num protowire.Number, body []byte) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendVarint(e.b, uint64(len(body)))
	e.flush()
	if e.err == nil {
		_, e.err = e.bw.Write(body)
	}
}

func (e *pprofEncoder) valueType(num protowire.Number, v *profile.ValueType) {
	m := appendInt64Opt(e.m[:0], 1, e.str(v.Type))
	m = appendInt64Opt(m, 2, e.str(v.Unit))
	e.m = m
	e.field(num, m)
}

func (e *pprofEncoder) sample(s *profile.Sample) {
	m := e.m[:0]
	if len(s.Location) > 2 {
		ids := e.ids.append(e.l[:0], s.Location)
		e.l = ids
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendBytes(m, ids)
	} else {
		for _, l := range s.Location {
			m = protowire.AppendTag(m, 1, protowire.VarintType)
			m = e.ids.append(m, []*profile.Location{l})
		}
	}
	m = appendInt64s(m, 2, s.Value)
	if len(s.Label) != 0 || len(s.NumLabel) != 0 {
		if r, ok := e.labels[labelKeyOf(s)]; ok {
			m = append(m, e.labelBytes[r.from:r.to]...)
		} else {
			m = e.appendLabels(m, s)
		}
	}
	e.m = m
	e.field(2, m)
}

// locationIDs encodes a sample's location IDs without loading each
// Location: the IDs of the locations that lie in one array (what
// web/ingest's decoder makes of p.Location) are encoded once, as varints
// of up to three bytes packed with their length, and found from a
// pointer's offset in the array. Loading every sample's Locations' IDs
// instead cost a cache miss per frame, most of the 2M-sample profile's
// sample encoding. Other locations' IDs are read from them.
type locationIDs struct {
	base    uintptr
	span    uintptr  // the array's size in bytes
	varints []uint32 // per location in the array: varint bytes, length in the top byte; 0 when longer
}

// locationSize is the size of a profile.Location, the stride of an array
// of them.
const locationSize = unsafe.Sizeof(profile.Location{})

func newLocationIDs(locs []*profile.Location) locationIDs {
	if len(locs) == 0 {
		return locationIDs{}
	}
	t := locationIDs{base: uintptr(unsafe.Pointer(locs[0]))}
	n := 0
	for n < len(locs) && uintptr(unsafe.Pointer(locs[n])) == t.base+uintptr(n)*locationSize {
		n++
	}
	t.span = uintptr(n) * locationSize
	t.varints = make([]uint32, n)
	for i, l := range locs[:n] {
		if l.ID < 1<<21 {
			var v uint32
			b := protowire.AppendVarint(make([]byte, 0, 3), l.ID)
			for j, c := range b {
				v |= uint32(c) << (8 * j)
			}
			t.varints[i] = v | uint32(len(b))<<24
		}
	}
	return t
}

// append appends the varints of locs' IDs to b.
func (t *locationIDs) append(b []byte, locs []*profile.Location) []byte {
	for _, l := range locs {
		if d := uintptr(unsafe.Pointer(l)) - t.base; d < t.span {
			if v := t.varints[d/locationSize]; v != 0 {
				b = append(b, byte(v), byte(v>>8), byte(v>>16))
				b = b[:len(b)-3+int(v>>24)]
				continue
			}
		}
		b = protowire.AppendVarint(b, l.ID)
	}
	return b
}

// appendLabels appends s's labels (Sample field 3) to m as pprof encodes
// them: string labels then numeric ones, each by sorted key. Every string
// must be numbered.
func (e *pprofEncoder) appendLabels(m []byte, s *profile.Sample) []byte {
	label := func(key, str, num, unit int64) {
		l := appendInt64Opt(e.l[:0], 1, key)
		l = appendInt64Opt(l, 2, str)
		l = appendInt64Opt(l, 3, num)
		l = appendInt64Opt(l, 4, unit)
		e.l = l
		m = protowire.AppendTag(m, 3, protowire.BytesType)
		m = protowire.AppendBytes(m, l)
	}
	for _, k := range sortedKeys(&e.keys, s.Label) {
		for _, v := range s.Label[k] {
			label(e.str(k), e.str(v), 0, 0)
		}
	}
	for _, k := range sortedKeys(&e.keys, s.NumLabel) {
		units := s.NumUnit[k]
		for i, v := range s.NumLabel[k] {
			var unit int64
			if len(units) != 0 {
				unit = e.str(unitAt(units, i))
			}
			label(e.str(k), 0, v, unit)
		}
	}
	return m
}

func (e *pprofEncoder) mapping(x *profile.Mapping) {
	m := appendUint64Opt(e.m[:0], 1, x.ID)
	m = appendUint64Opt(m, 2, x.Start)
	m = appendUint64Opt(m, 3, x.Limit)
	m = appendUint64Opt(m, 4, x.Offset)
	m = appendInt64Opt(m, 5, e.str(x.File))
	m = appendInt64Opt(m, 6, e.str(x.BuildID))
	m = appendBoolOpt(m, 7, x.HasFunctions)
	m = appendBoolOpt(m, 8, x.HasFilenames)
	m = appendBoolOpt(m, 9, x.HasLineNumbers)
	m = appendBoolOpt(m, 10, x.HasInlineFrames)
	e.m = m
	e.field(3, m)
}

func (e *pprofEncoder) location(x *profile.Location) {
	m := appendUint64Opt(e.m[:0], 1, x.ID)
	if x.Mapping != nil {
		m = appendUint64Opt(m, 2, x.Mapping.ID)
	}
	m = appendUint64Opt(m, 3, x.Address)
	for _, ln := range x.Line {
		var fn uint64
		if ln.Function != nil {
			fn = ln.Function.ID
		}
		l := appendUint64Opt(e.l[:0], 1, fn)
		l = appendInt64Opt(l, 2, ln.Line)
		l = appendInt64Opt(l, 3, ln.Column)
		e.l = l
		m = protowire.AppendTag(m, 4, protowire.BytesType)
		m = protowire.AppendBytes(m, l)
	}
	m = appendBoolOpt(m, 5, x.IsFolded)
	e.m = m
	e.field(4, m)
}

func (e *pprofEncoder) function(x *profile.Function) {
	m := appendUint64Opt(e.m[:0], 1, x.ID)
	m = appendInt64Opt(m, 2, e.str(x.Name))
	m = appendInt64Opt(m, 3, e.str(x.SystemName))
	m = appendInt64Opt(m, 4, e.str(x.Filename))
	m = appendInt64Opt(m, 5, x.StartLine)
	e.m = m
	e.field(5, m)
}

// The appenders below encode as pprof's encoder does: optional fields
// only when not zero, int64 as an unsigned varint, and repeated numbers
// packed only when there are more than two.

func appendUint64Opt(b []byte, num protowire.Number, x uint64) []byte {
	if x == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, x)
}

func appendInt64Opt(b []byte, num protowire.Number, x int64) []byte {
	return appendUint64Opt(b, num, uint64(x))
}

func appendBoolOpt(b []byte, num protowire.Number, x bool) []byte {
	if !x {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

func appendInt64s(b []byte, num protowire.Number, xs []int64) []byte {
	if len(xs) > 2 {
		n := 0
		for _, x := range xs {
			n += protowire.SizeVarint(uint64(x))
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		for _, x := range xs {
			b = protowire.AppendVarint(b, uint64(x))
		}
		return b
	}
	for _, x := range xs {
		b = protowire.AppendTag(b, num, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(x))
	}
	return b
}
