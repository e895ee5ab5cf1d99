package ingest

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodePprof decodes an uncompressed profile.proto message into the same
// profile.Profile that profile.ParseUncompressed builds, except that
// sample records with the same locations, labels and number of values are
// merged into one, their values summed: what every view, filter and
// `go tool pprof` computes is unchanged, and a profile of 2M records over
// 500k distinct stacks keeps 500k samples.
//
// It is pprof's decoder with its per-message allocations batched: the
// messages of each kind are decoded into one slice of structs, and samples'
// location pointers and values share a few large arrays, so a large
// profile costs a fraction of the allocations and garbage-collector work.
// It reports an error on anything it does not expect; the caller then
// falls back to profile.ParseUncompressed, whose error (or result) stands.
func decodePprof(data []byte) (*profile.Profile, error) {
	var d pprofDecoder
	if err := d.split(data); err != nil {
		return nil, err
	}
	return d.decode()
}

// errWire is a wire format decodePprof does not read.
var errWire = errors.New("unexpected pprof wire format")

// pprofDecoder holds the top-level fields of one profile by kind, as
// sub-slices of the input, until they are decoded in dependency order.
type pprofDecoder struct {
	sampleTypes, samples, mappings, locations, functions, strs [][]byte
	periodType                                                 []byte
	dropFrames, keepFrames, timeNanos, durationNanos, period   uint64
	defaultSampleType, docURL                                  uint64
	comments                                                   []uint64
	timeSet                                                    bool

	st []string
}

// split walks the top-level fields of data.
func (d *pprofDecoder) split(data []byte) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return errWire
		}
		data = data[n:]
		if typ == protowire.BytesType {
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return errWire
			}
			data = data[n:]
			switch num {
			case 1:
				d.sampleTypes = append(d.sampleTypes, b)
			case 2:
				d.samples = append(d.samples, b)
			case 3:
				d.mappings = append(d.mappings, b)
			case 4:
				d.locations = append(d.locations, b)
			case 5:
				d.functions = append(d.functions, b)
			case 6:
				d.strs = append(d.strs, b)
			case 11:
				d.periodType = b
			case 13:
				var err error
				if d.comments, err = appendPacked(d.comments, b); err != nil {
					return err
				}
			default:
				return errWire
			}
			continue
		}
		if typ != protowire.VarintType {
			return errWire
		}
		v, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return errWire
		}
		data = data[n:]
		switch num {
		case 7:
			d.dropFrames = v
		case 8:
			d.keepFrames = v
		case 9:
			if d.timeSet {
				return errWire // concatenated profiles: pprof's own error
			}
			d.timeNanos, d.timeSet = v, true
		case 10:
			d.durationNanos = v
		case 12:
			d.period = v
		case 13:
			d.comments = append(d.comments, v)
		case 14:
			d.defaultSampleType = v
		case 15:
			d.docURL = v
		default:
			return errWire
		}
	}
	return nil
}

// appendPacked appends the packed varints of b to out.
func appendPacked(out []uint64, b []byte) ([]uint64, error) {
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, errWire
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

// fields calls f with each field of message b: for a varint field v is
// its value, for a length-delimited one b is its bytes.
func fields(b []byte, f func(num protowire.Number, v uint64, b []byte, packed bool) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errWire
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errWire
			}
			b = b[n:]
			if err := f(num, v, nil, false); err != nil {
				return err
			}
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errWire
			}
			b = b[n:]
			if err := f(num, 0, v, true); err != nil {
				return err
			}
		default:
			return errWire
		}
	}
	return nil
}

func (d *pprofDecoder) str(i uint64) (string, error) {
	if i >= uint64(len(d.st)) {
		return "", fmt.Errorf("%w: string index %d out of range", errWire, i)
	}
	return d.st[i], nil
}

// strs resolves string indices, stopping at the first bad one.
type strs struct {
	d   *pprofDecoder
	err error
}

func (s *strs) get(i uint64) string {
	v, err := s.d.str(i)
	if s.err == nil {
		s.err = err
	}
	return v
}

func (d *pprofDecoder) decode() (*profile.Profile, error) {
	// The string table, copied into one string so the input can go.
	size := 0
	for _, b := range d.strs {
		size += len(b)
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, b := range d.strs {
		sb.Write(b)
	}
	all := sb.String()
	d.st = make([]string, len(d.strs))
	off := 0
	for i, b := range d.strs {
		d.st[i] = all[off : off+len(b)]
		off += len(b)
	}
	if len(d.st) == 0 || d.st[0] != "" {
		return nil, errWire
	}
	s := &strs{d: d}
	p := &profile.Profile{
		DropFrames: s.get(d.dropFrames), KeepFrames: s.get(d.keepFrames),
		TimeNanos: int64(d.timeNanos), DurationNanos: int64(d.durationNanos), Period: int64(d.period),
		DefaultSampleType: s.get(d.defaultSampleType), DocURL: s.get(d.docURL),
	}
	for _, c := range d.comments {
		p.Comments = append(p.Comments, s.get(c))
	}
	valueType := func(b []byte) (*profile.ValueType, error) {
		var t, u uint64
		err := fields(b, func(num protowire.Number, v uint64, _ []byte, packed bool) error {
			if packed {
				return errWire
			}
			switch num {
			case 1:
				t = v
			case 2:
				u = v
			}
			return nil
		})
		return &profile.ValueType{Type: s.get(t), Unit: s.get(u)}, err
	}
	var err error
	p.PeriodType, err = valueType(d.periodType)
	if err != nil {
		return nil, err
	}
	for _, b := range d.sampleTypes {
		vt, err := valueType(b)
		if err != nil {
			return nil, err
		}
		p.SampleType = append(p.SampleType, vt)
	}

	mappings := make([]profile.Mapping, len(d.mappings))
	mapByID := make(map[uint64]*profile.Mapping, len(mappings))
	p.Mapping = make([]*profile.Mapping, len(mappings))
	for i, b := range d.mappings {
		m := &mappings[i]
		var file, buildID uint64
		err := fields(b, func(num protowire.Number, v uint64, _ []byte, packed bool) error {
			if packed {
				return errWire
			}
			switch num {
			case 1:
				m.ID = v
			case 2:
				m.Start = v
			case 3:
				m.Limit = v
			case 4:
				m.Offset = v
			case 5:
				file = v
			case 6:
				buildID = v
			case 7:
				m.HasFunctions = v != 0
			case 8:
				m.HasFilenames = v != 0
			case 9:
				m.HasLineNumbers = v != 0
			case 10:
				m.HasInlineFrames = v != 0
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		m.File, m.BuildID = s.get(file), s.get(buildID)
		if rest, ok := strings.CutPrefix(m.File, "[kernel.kallsyms]"); ok {
			m.KernelRelocationSymbol = rest
		}
		mapByID[m.ID] = m // the last of equal IDs wins, as in pprof
		p.Mapping[i] = m
	}

	functions := make([]profile.Function, len(d.functions))
	fnByID := make(map[uint64]*profile.Function, len(functions))
	p.Function = make([]*profile.Function, len(functions))
	for i, b := range d.functions {
		f := &functions[i]
		var name, sys, file uint64
		err := fields(b, func(num protowire.Number, v uint64, _ []byte, packed bool) error {
			if packed {
				return errWire
			}
			switch num {
			case 1:
				f.ID = v
			case 2:
				name = v
			case 3:
				sys = v
			case 4:
				file = v
			case 5:
				f.StartLine = int64(v)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		f.Name, f.SystemName, f.Filename = s.get(name), s.get(sys), s.get(file)
		fnByID[f.ID] = f // the last of equal IDs wins, as in pprof
		p.Function[i] = f
	}

	locations := make([]profile.Location, len(d.locations))
	locByID := make(map[uint64]*profile.Location, len(locations))
	p.Location = make([]*profile.Location, len(locations))
	var lines []profile.Line
	for i, b := range d.locations {
		l := &locations[i]
		start := len(lines)
		err := fields(b, func(num protowire.Number, v uint64, lb []byte, packed bool) error {
			switch {
			case num == 4 && packed:
				var ln profile.Line
				err := fields(lb, func(num protowire.Number, v uint64, _ []byte, packed bool) error {
					if packed {
						return errWire
					}
					switch num {
					case 1:
						if v != 0 {
							ln.Function = fnByID[v]
						}
					case 2:
						ln.Line = int64(v)
					case 3:
						ln.Column = int64(v)
					}
					return nil
				})
				lines = append(lines, ln)
				return err
			case packed:
				return errWire
			case num == 1:
				l.ID = v
			case num == 2:
				l.Mapping = mapByID[v]
			case num == 3:
				l.Address = v
			case num == 5:
				l.IsFolded = v != 0
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Offsets now; the lines array may still move.
		l.Line = lines[start:len(lines):len(lines)]
		locByID[l.ID] = l // the last of equal IDs wins, as in pprof
		p.Location[i] = l
	}
	// Point each location's lines into the final array.
	off = 0
	for i := range locations {
		n := len(locations[i].Line)
		if n == 0 {
			locations[i].Line = nil
		} else {
			locations[i].Line = lines[off : off+n : off+n]
		}
		off += n
	}
	if s.err != nil {
		return nil, s.err
	}
	if err := d.decodeSamples(p, s, newLocIndex(p.Location, locByID)); err != nil {
		return nil, err
	}
	return p, s.err
}

// decodeSamples decodes the samples, merging records with the same
// location IDs, label bytes and number of values. A sample's location IDs
// stay in the input, packed, until the merged samples are known; then
// they are decoded once, into one array of location pointers.
func (d *pprofDecoder) decodeSamples(p *profile.Profile, s *strs, locByID func(uint64) *profile.Location) error {
	var vals []int64
	var labels [][]byte
	var scratch []byte // location IDs sent unpacked, packed again
	type uniq struct {
		locs   []byte // the location IDs, packed
		labels [][]byte
		next   int32 // the next sample with the same hash, -1 none
	}
	var us []uniq
	seed := maphash.MakeSeed()
	byHash := make(map[uint64]int32, len(d.samples)/4+1)
	samples := make([]profile.Sample, 0, len(d.samples)/4+1)
	var values []int64
	for _, b := range d.samples {
		vals, labels = vals[:0], labels[:0]
		var locs []byte
		fieldsSeen, unpacked := 0, false
		err := fields(b, func(num protowire.Number, v uint64, fb []byte, packed bool) error {
			switch {
			case num == 1 && packed:
				locs = fb
				fieldsSeen++
			case num == 1:
				unpacked = true
			case num == 2 && packed:
				for len(fb) > 0 {
					x, n := protowire.ConsumeVarint(fb)
					if n < 0 {
						return errWire
					}
					vals = append(vals, int64(x))
					fb = fb[n:]
				}
			case num == 2:
				vals = append(vals, int64(v))
			case num == 3 && packed:
				labels = append(labels, fb)
			case num == 3:
				return errWire
			}
			return nil
		})
		if err != nil {
			return err
		}
		if unpacked || fieldsSeen > 1 {
			// Rare: gather the IDs in order into one packed run.
			scratch = scratch[:0]
			err := fields(b, func(num protowire.Number, v uint64, fb []byte, packed bool) error {
				switch {
				case num == 1 && packed:
					scratch = append(scratch, fb...)
				case num == 1:
					scratch = protowire.AppendVarint(scratch, v)
				}
				return nil
			})
			if err != nil {
				return err
			}
			locs = slices.Clone(scratch)
		}
		if packedLen(locs) < 0 {
			return errWire
		}
		h := maphash.Bytes(seed, locs)
		for _, lb := range labels {
			h = h*31 + maphash.Bytes(seed, lb)
		}
		h ^= uint64(len(vals)) << 56
		first, seen := byHash[h]
		found := int32(-1)
		for i := first; seen && i >= 0; i = us[i].next {
			u := &us[i]
			if string(u.locs) == string(locs) && len(samples[i].Value) == len(vals) &&
				slices.EqualFunc(u.labels, labels, func(a, b []byte) bool { return string(a) == string(b) }) {
				found = i
				break
			}
		}
		if found >= 0 {
			v := samples[found].Value
			for k, x := range vals {
				v[k] += x
			}
			continue
		}
		i := int32(len(us))
		next := int32(-1)
		if seen {
			next = first
		}
		byHash[h] = i
		if cap(values)-len(values) < len(vals) {
			values = make([]int64, 0, max(len(vals), 1<<16))
		}
		vs := len(values)
		values = append(values, vals...)
		var ls [][]byte
		if len(labels) > 0 {
			ls = slices.Clone(labels)
		}
		us = append(us, uniq{locs: locs, labels: ls, next: next})
		samples = append(samples, profile.Sample{Value: values[vs:len(values):len(values)]})
	}
	n := 0
	for _, u := range us {
		n += packedLen(u.locs)
	}
	locs := make([]*profile.Location, n)
	p.Sample = make([]*profile.Sample, len(samples))
	// Samples with the same label messages share their label maps (read
	// only once parsed, as perf.data's converter shares them): a converted
	// perf.data has a sample per thread, time and stack, and a map set per
	// sample made its 428k samples 650 MB instead of 135.
	sameLabels := map[string]*profile.Sample{}
	var labelKey []byte
	for i := range samples {
		sm := &samples[i]
		u := &us[i]
		k := packedLen(u.locs)
		sm.Location = locs[:k:k]
		locs = locs[k:]
		b := u.locs
		for j := range sm.Location {
			id, n := protowire.ConsumeVarint(b)
			sm.Location[j] = locByID(id)
			b = b[n:]
		}
		if len(sm.Value) == 0 {
			sm.Value = nil
		}
		if len(u.labels) > 0 {
			labelKey = labelKey[:0]
			for _, lb := range u.labels {
				labelKey = protowire.AppendBytes(labelKey, lb)
			}
			if o := sameLabels[string(labelKey)]; o != nil {
				sm.Label, sm.NumLabel, sm.NumUnit = o.Label, o.NumLabel, o.NumUnit
			} else {
				if err := d.sampleLabels(sm, s, u.labels); err != nil {
					return err
				}
				sameLabels[string(labelKey)] = sm
			}
		}
		p.Sample[i] = sm
	}
	return nil
}

// packedLen is the number of varints packed in b, -1 when b does not end
// at the end of one or a varint is longer than ten bytes.
func packedLen(b []byte) int {
	n, run := 0, 0
	for _, c := range b {
		run++
		if c < 0x80 {
			n++
			run = 0
		} else if run == 10 {
			return -1
		}
	}
	if run != 0 {
		return -1
	}
	return n
}

// sampleLabels sets a sample's Label, NumLabel and NumUnit from its label
// messages, as pprof's postDecode does.
func (d *pprofDecoder) sampleLabels(sm *profile.Sample, s *strs, labels [][]byte) error {
	var str map[string][]string
	var num map[string][]int64
	var units map[string][]string
	for _, b := range labels {
		var key, sx, nx, ux uint64
		err := fields(b, func(f protowire.Number, v uint64, _ []byte, packed bool) error {
			if packed {
				return errWire
			}
			switch f {
			case 1:
				key = v
			case 2:
				sx = v
			case 3:
				nx = v
			case 4:
				ux = v
			}
			return nil
		})
		if err != nil {
			return err
		}
		k := s.get(key)
		switch {
		case sx != 0:
			if str == nil {
				str = map[string][]string{}
			}
			str[k] = append(str[k], s.get(sx))
		case nx != 0 || ux != 0:
			if num == nil {
				num = map[string][]int64{}
			}
			if ux != 0 {
				if units == nil {
					units = map[string][]string{}
				}
				us := units[k]
				if len(us) < len(num[k]) {
					us = append(us, make([]string, len(num[k])-len(us))...)
				}
				units[k] = append(us, s.get(ux))
			}
			num[k] = append(num[k], int64(nx))
		}
	}
	if len(str) > 0 {
		sm.Label = str
	}
	if len(num) > 0 {
		sm.NumLabel = num
		if len(units) > 0 {
			for k, us := range units {
				if len(us) > 0 && len(us) < len(num[k]) {
					units[k] = append(us, make([]string, len(num[k])-len(us))...)
				}
			}
			sm.NumUnit = units
		}
	}
	return nil
}

// newLocIndex looks locations up by ID: in a slice when the IDs are
// dense enough (they are 1..n in what pprof and Go write), else in byID.
func newLocIndex(locs []*profile.Location, byID map[uint64]*profile.Location) func(uint64) *profile.Location {
	var maxID uint64
	for _, l := range locs {
		maxID = max(maxID, l.ID)
	}
	if maxID > uint64(4*len(locs)+1024) {
		return func(id uint64) *profile.Location { return byID[id] }
	}
	dense := make([]*profile.Location, maxID+1)
	for id, l := range byID {
		dense[id] = l
	}
	return func(id uint64) *profile.Location {
		if id < uint64(len(dense)) {
			return dense[id]
		}
		return nil
	}
}
