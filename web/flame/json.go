package flame

import (
	"encoding/json"
	"strconv"
)

// JSONVersion is the "version" field of flame.json; bump it on any
// incompatible change to the format documented in the manual (static/docs/api.md).
const JSONVersion = 1

// JSONRevision counts compatible additions to flame.json within
// JSONVersion (2: "counts" and "countType"). It is not in the document,
// which old clients read as before; it is in the ETag, so that a browser's
// cached tree of an older revision is fetched again.
const JSONRevision = 2

// AppendJSON appends the flame.json encoding of t to b:
//
//	{"version":1,"sampleType":"cpu","unit":"nanoseconds","total":N,
//	 "minTotal":N,"zoom":["main.main",...],
//	 "names":["root",...],"mapping":[-1,...],"mappings":[...],
//	 "files":[...],"src":[fileIdx,line, ...],"inlined":[0,...],
//	 "countType":"samples","counts":"total,self,..." (or "valuePerSample":R),
//	 "nodes":[nameIdx,depth,total,self, ...]}
//
// nodes is flat, four integers per node, in pre-order. zoom is present
// only in a zoomed tree. src (two integers per name: an index into files,
// -1 for none, and the function's line) and inlined (per name: 0 never,
// 1 always, 2 at some call sites) are what the tooltip shows; they are
// absent when the tree has no such information. counts is a string of
// two integers per node, comma-separated (read when a tooltip needs it,
// not parsed with the tree), its total and self number of samples, as countType's values
// ("" when the profile has no sample type that counts samples: each
// sample record is one); absent when the tree has none, or when the
// sample type counts samples itself (then they are total and self).
// valuePerSample R replaces counts when every node's values are R times
// its counts (a Go CPU profile's cpu, samples × its period).
func (t *Tree) AppendJSON(b []byte) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, JSONVersion, 10)
	b = append(b, `,"sampleType":`...)
	b = appendString(b, t.SampleType)
	b = append(b, `,"unit":`...)
	b = appendString(b, t.Unit)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, t.Total(), 10)
	b = append(b, `,"minTotal":`...)
	b = strconv.AppendInt(b, t.MinTotal, 10)
	if len(t.Zoom) > 0 {
		b = append(b, `,"zoom":[`...)
		for i, z := range t.Zoom {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, z)
		}
		b = append(b, ']')
	}
	b = append(b, `,"names":[`...)
	for i, n := range t.Names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, n)
	}
	b = append(b, `],"mapping":[`...)
	for i, m := range t.Mapping {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(m), 10)
	}
	b = append(b, `],"mappings":[`...)
	for i, m := range t.Mappings {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m)
	}
	b = append(b, ']')
	b = t.appendSource(b)
	b = t.appendCompaction(b) // budget.go
	if len(t.Samples) == 2*len(t.Nodes) && t.CountType != t.SampleType {
		b = append(b, `,"countType":`...)
		b = appendString(b, t.CountType)
		if r := t.valuePerSample(); r > 0 {
			b = append(b, `,"valuePerSample":`...)
			b = strconv.AppendInt(b, r, 10)
		} else {
			// A string, not an array: the page parses it when a tooltip
			// first needs it, not on the way to the first drawing.
			b = append(b, `,"counts":"`...)
			for i, n := range t.Samples {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, n, 10)
			}
			b = append(b, '"')
		}
	}
	b = append(b, `,"nodes":[`...)
	for i, n := range t.Nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n.Name), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n.Depth), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, n.Total, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, n.Self, 10)
	}
	return append(b, "]}\n"...)
}

// valuePerSample is R when every node's total and self are R times its
// sample counts (a Go CPU profile: cpu = samples × the period), so that
// flame.json says R instead of the counts; 0 when they are not.
func (t *Tree) valuePerSample() int64 {
	if len(t.Nodes) == 0 || t.Samples[0] <= 0 || t.Nodes[0].Total%t.Samples[0] != 0 {
		return 0
	}
	r := t.Nodes[0].Total / t.Samples[0]
	if r <= 0 {
		return 0
	}
	for i, n := range t.Nodes {
		if n.Total != r*t.Samples[2*i] || n.Self != r*t.Samples[2*i+1] {
			return 0
		}
	}
	return r
}

// JSON returns the flame.json encoding of t.
func (t *Tree) JSON() []byte {
	return t.AppendJSON(make([]byte, 0, 64+len(t.Names)*24+len(t.Nodes)*20+len(t.Samples)*5))
}

// appendString appends s as a JSON string. Plain ASCII names (the common
// case) are copied directly; anything else goes through encoding/json so
// quotes, control characters and invalid UTF-8 are escaped correctly.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendSource appends the "files", "src" and "inlined" members, when t
// has one entry per name.
func (t *Tree) appendSource(b []byte) []byte {
	s := &t.Source
	if len(s.File) != len(t.Names) {
		return b
	}
	b = append(b, `,"files":[`...)
	for i, f := range s.Files {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f)
	}
	b = append(b, `],"src":[`...)
	for i := range s.File {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s.File[i]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s.Line[i]), 10)
	}
	b = append(b, `],"inlined":[`...)
	for i, in := range s.Inlined {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(in), 10)
	}
	return append(b, ']')
}
