package ingest

import (
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"
)

// AppendPprof appends p to b as an uncompressed pprof Profile message,
// which profile.Parse reads back equal to what p.WriteUncompressed
// writes. It is the OTLP intake's encoder: FromOTLP's samples share their
// label maps (one per distinct set of attributes), so each shared set is
// sorted, interned and encoded once, where pprof's encoder does that and
// allocates for every sample; that was the largest share of the intake's
// CPU after the conversion itself.
func AppendPprof(b []byte, p *profile.Profile) []byte {
	e := pprofEncoder{strs: map[string]uint64{"": 0}, table: []string{""}, labels: map[labelKey][]byte{}}
	for _, st := range p.SampleType {
		b = e.appendValueType(b, 1, st)
	}
	for _, s := range p.Sample {
		b = e.appendSample(b, s)
	}
	for _, m := range p.Mapping {
		e.tmp = e.tmp[:0]
		e.tmp = appendOpt(e.tmp, 1, m.ID)
		e.tmp = appendOpt(e.tmp, 2, m.Start)
		e.tmp = appendOpt(e.tmp, 3, m.Limit)
		e.tmp = appendOpt(e.tmp, 4, m.Offset)
		e.tmp = appendOpt(e.tmp, 5, e.str(m.File))
		e.tmp = appendOpt(e.tmp, 6, e.str(m.BuildID))
		e.tmp = appendBool(e.tmp, 7, m.HasFunctions)
		e.tmp = appendBool(e.tmp, 8, m.HasFilenames)
		e.tmp = appendBool(e.tmp, 9, m.HasLineNumbers)
		e.tmp = appendBool(e.tmp, 10, m.HasInlineFrames)
		b = appendMessage(b, 3, e.tmp)
	}
	for _, l := range p.Location {
		e.tmp = e.tmp[:0]
		e.tmp = appendOpt(e.tmp, 1, l.ID)
		if l.Mapping != nil {
			e.tmp = appendOpt(e.tmp, 2, l.Mapping.ID)
		}
		e.tmp = appendOpt(e.tmp, 3, l.Address)
		for _, ln := range l.Line {
			var fid uint64
			if ln.Function != nil {
				fid = ln.Function.ID
			}
			n := optSize(1, fid) + optSize(2, uint64(ln.Line)) + optSize(3, uint64(ln.Column))
			e.tmp = protowire.AppendTag(e.tmp, 4, protowire.BytesType)
			e.tmp = protowire.AppendVarint(e.tmp, uint64(n))
			e.tmp = appendOpt(e.tmp, 1, fid)
			e.tmp = appendOpt(e.tmp, 2, uint64(ln.Line))
			e.tmp = appendOpt(e.tmp, 3, uint64(ln.Column))
		}
		e.tmp = appendBool(e.tmp, 5, l.IsFolded)
		b = appendMessage(b, 4, e.tmp)
	}
	for _, f := range p.Function {
		e.tmp = e.tmp[:0]
		e.tmp = appendOpt(e.tmp, 1, f.ID)
		e.tmp = appendOpt(e.tmp, 2, e.str(f.Name))
		e.tmp = appendOpt(e.tmp, 3, e.str(f.SystemName))
		e.tmp = appendOpt(e.tmp, 4, e.str(f.Filename))
		e.tmp = appendOpt(e.tmp, 5, uint64(f.StartLine))
		b = appendMessage(b, 5, e.tmp)
	}
	b = appendOpt(b, 7, e.str(p.DropFrames))
	b = appendOpt(b, 8, e.str(p.KeepFrames))
	b = appendOpt(b, 9, uint64(p.TimeNanos))
	b = appendOpt(b, 10, uint64(p.DurationNanos))
	if pt := p.PeriodType; pt != nil && (pt.Type != "" || pt.Unit != "") {
		b = e.appendValueType(b, 11, pt)
	}
	b = appendOpt(b, 12, uint64(p.Period))
	for _, c := range p.Comments {
		b = protowire.AppendTag(b, 13, protowire.VarintType)
		b = protowire.AppendVarint(b, e.str(c))
	}
	b = appendOpt(b, 14, e.str(p.DefaultSampleType))
	b = appendOpt(b, 15, e.str(p.DocURL))
	// The string table last: only now is every string interned.
	for _, s := range e.table {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

// pprofEncoder is AppendPprof's state: the string table, and the encoded
// labels of each label map seen.
type pprofEncoder struct {
	strs   map[string]uint64
	table  []string
	labels map[labelKey][]byte
	tmp    []byte
}

// labelKey names a sample's label maps by identity: samples that share
// them share their encoding.
type labelKey struct{ str, num, unit unsafe.Pointer }

// str is s's index in the string table, added the first time.
func (e *pprofEncoder) str(s string) uint64 {
	if i, ok := e.strs[s]; ok {
		return i
	}
	i := uint64(len(e.table))
	e.strs[s] = i
	e.table = append(e.table, s)
	return i
}

func (e *pprofEncoder) appendValueType(b []byte, num protowire.Number, vt *profile.ValueType) []byte {
	t, u := e.str(vt.Type), e.str(vt.Unit)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(optSize(1, t)+optSize(2, u)))
	b = appendOpt(b, 1, t)
	return appendOpt(b, 2, u)
}

func (e *pprofEncoder) appendSample(b []byte, s *profile.Sample) []byte {
	labels := e.sampleLabels(s)
	locs, vals := 0, 0
	for _, l := range s.Location {
		locs += protowire.SizeVarint(l.ID)
	}
	for _, v := range s.Value {
		vals += protowire.SizeVarint(uint64(v))
	}
	n := packedSize(len(s.Location), locs) + packedSize(len(s.Value), vals) + len(labels)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	if len(s.Location) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(locs))
		for _, l := range s.Location {
			b = protowire.AppendVarint(b, l.ID)
		}
	}
	if len(s.Value) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(vals))
		for _, v := range s.Value {
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	return append(b, labels...)
}

// sampleLabels is the encoding of s's labels (Sample field 3), string
// labels then numeric ones, each by sorted key as pprof writes them;
// worked out once per set of label maps.
func (e *pprofEncoder) sampleLabels(s *profile.Sample) []byte {
	if len(s.Label) == 0 && len(s.NumLabel) == 0 {
		return nil
	}
	k := labelKey{mapPointer(s.Label), mapPointer(s.NumLabel), mapPointer(s.NumUnit)}
	if b, ok := e.labels[k]; ok {
		return b
	}
	var b []byte
	label := func(key, str, num, unit uint64) {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(optSize(1, key)+optSize(2, str)+optSize(3, num)+optSize(4, unit)))
		b = appendOpt(b, 1, key)
		b = appendOpt(b, 2, str)
		b = appendOpt(b, 3, num)
		b = appendOpt(b, 4, unit)
	}
	for _, key := range slices.Sorted(maps.Keys(s.Label)) {
		kx := e.str(key)
		for _, v := range s.Label[key] {
			label(kx, e.str(v), 0, 0)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(s.NumLabel)) {
		kx := e.str(key)
		units := s.NumUnit[key]
		for i, v := range s.NumLabel[key] {
			var ux uint64
			if i < len(units) {
				ux = e.str(units[i])
			}
			label(kx, 0, uint64(v), ux)
		}
	}
	e.labels[k] = b
	return b
}

// mapPointer is a map's identity (nil for a nil map).
func mapPointer[M ~map[K]V, K comparable, V any](m M) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

// appendOpt appends a varint field unless it is zero, the proto3 default
// pprof's encoder leaves out.
func appendOpt(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendOpt(b, num, 1)
}

// optSize is the size appendOpt appends.
func optSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// packedSize is the size of a packed repeated field of n values taking
// size bytes (nothing when n is 0).
func packedSize(n, size int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(1) + protowire.SizeVarint(uint64(size)) + size
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
