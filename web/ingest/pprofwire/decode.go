// Package pprofwire is the viewer's pprof protobuf decoder: a fork of
// github.com/google/pprof/profile's decoding, with its allocations
// batched and sample records of the same stack and labels merged as they
// are read (Decode), and a Stream that decodes a profile while its gzip
// input inflates. Both build the same profile.Profile that
// profile.ParseUncompressed does, up to the merged records, and refuse
// what they do not expect: the caller (web/ingest) then falls back to
// pprof's own decoder, whose result or error stands.
//
// It knows nothing of ingest's formats, limits or budget: what it needs
// of them comes in as plain values (Limits, StreamConfig) and a small
// interface (Budget).
package pprofwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"viewer/web/hashindex"
	"viewer/web/prefault"
)

// Decode decodes an uncompressed profile.proto message into the same
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
func Decode(data []byte) (*profile.Profile, error) {
	var d pprofDecoder
	if err := d.split(data); err != nil {
		return nil, err
	}
	return d.decode()
}

// Tables is the size of a profile's tables on the wire, as web/ingest's
// pre-scan and a Stream count them.
type Tables struct {
	Strings, StringBytes int64 // string table entries, and their bytes
	Locations, Lines     int64 // locations, and their lines (all locations')
	Functions, Mappings  int64
	Other                int64 // bytes of the remaining fields (comments, sample types)
}

// Memory is what Decode allocates for the tables (strings, locations,
// functions, mappings) and the remaining fields: the sizes are those of
// pprof's structs and slices on 64-bit Go with room to spare, doubled
// where append growth can leave up to half a slice unused.
func (t Tables) Memory() int64 {
	return 2*t.StringBytes + 2*16*t.Strings + // string table: copies and headers
		t.Locations*(104+8+8) + 2*56*t.Lines +
		t.Functions*(96+8+8) + t.Mappings*(176+8+8) + t.Other
}

// errWire is a wire format Decode does not read.
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
		var b []byte
		var v uint64
		switch typ {
		case protowire.BytesType:
			b, n = protowire.ConsumeBytes(data)
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(data)
		default:
			return errWire
		}
		if n < 0 {
			return errWire
		}
		data = data[n:]
		if err := d.field(num, typ, v, b); err != nil {
			return err
		}
	}
	return nil
}

// appendField appends a table's message to fs. A full array is doubled
// with its pages mapped in (prefault.Grow) before fs is copied into it:
// append's copy into an unmapped array faulted once per page, 2% of the
// server's CPU on a profile of 800k locations.
func appendField(fs [][]byte, b []byte) [][]byte {
	if len(fs) == cap(fs) {
		fs = prefault.Grow(fs, max(len(fs), 64))
	}
	return append(fs, b)
}

// field keeps one top-level field: for a varint field v is its value, for
// a length-delimited one b is its bytes.
func (d *pprofDecoder) field(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
	if typ == protowire.BytesType {
		switch num {
		case 1:
			d.sampleTypes = appendField(d.sampleTypes, b)
		case 2:
			d.samples = appendField(d.samples, b)
		case 3:
			d.mappings = appendField(d.mappings, b)
		case 4:
			d.locations = appendField(d.locations, b)
		case 5:
			d.functions = appendField(d.functions, b)
		case 6:
			d.strs = appendField(d.strs, b)
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
		return nil
	}
	if typ != protowire.VarintType {
		return errWire
	}
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

// functionIndex looks functions up by ID: in a slice when the IDs are
// dense enough (they are 1..n in what pprof and Go write), else in a
// map; of equal IDs the last wins, as in pprof. The slice spares a map
// insert per function and a map lookup per location line (8 a function
// in the 2M-sample "locs" shape).
type functionIndex struct {
	dense []*profile.Function
	byID  map[uint64]*profile.Function
}

func newFunctionIndex(fns []*profile.Function) functionIndex {
	var maxID uint64
	for _, f := range fns {
		maxID = max(maxID, f.ID)
	}
	if maxID > uint64(4*len(fns)+1024) {
		byID := make(map[uint64]*profile.Function, len(fns))
		for _, f := range fns {
			byID[f.ID] = f
		}
		return functionIndex{byID: byID}
	}
	dense := make([]*profile.Function, maxID+1)
	for _, f := range fns {
		dense[f.ID] = f
	}
	return functionIndex{dense: dense}
}

func (x functionIndex) get(id uint64) *profile.Function {
	if x.byID != nil {
		return x.byID[id]
	}
	if id < uint64(len(x.dense)) {
		return x.dense[id]
	}
	return nil
}

func (d *pprofDecoder) decode() (*profile.Profile, error) {
	p, s, locs, err := d.tables()
	if err != nil {
		return nil, err
	}
	if err := d.decodeSamples(p, s, locs); err != nil {
		return nil, err
	}
	return p, s.err
}

// tables decodes all but the samples: the string table, the profile's own
// fields, mappings, functions and locations, with the index that finds
// locations by ID.
func (d *pprofDecoder) tables() (*profile.Profile, *strs, locIndex, error) {
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
		return nil, nil, locIndex{}, errWire
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
		return nil, nil, locIndex{}, err
	}
	for _, b := range d.sampleTypes {
		vt, err := valueType(b)
		if err != nil {
			return nil, nil, locIndex{}, err
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
			return nil, nil, locIndex{}, err
		}
		m.File, m.BuildID = s.get(file), s.get(buildID)
		if rest, ok := strings.CutPrefix(m.File, "[kernel.kallsyms]"); ok {
			m.KernelRelocationSymbol = rest
		}
		mapByID[m.ID] = m // the last of equal IDs wins, as in pprof
		p.Mapping[i] = m
	}

	functions := make([]profile.Function, len(d.functions))
	prefault.Slice(functions) // as locations and lines below: written once, page by page
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
			return nil, nil, locIndex{}, err
		}
		f.Name, f.SystemName, f.Filename = s.get(name), s.get(sys), s.get(file)
		p.Function[i] = f
	}
	fnByID := newFunctionIndex(p.Function)

	locations := make([]profile.Location, len(d.locations))
	prefault.Slice(locations)
	locByID := make(map[uint64]*profile.Location, len(locations))
	p.Location = make([]*profile.Location, len(locations))
	// Sized first: grown as they came, the lines (pointers) were copied
	// and cleared over and over, half of this loop at 800k locations.
	nlines := 0
	for _, b := range d.locations {
		nlines += locationLines(b)
	}
	lines := make([]profile.Line, 0, nlines)
	prefault.Slice(lines)
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
							ln.Function = fnByID.get(v)
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
			case packed, num == 4: // a line that is not a message: pprof's "type mismatch"
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
			return nil, nil, locIndex{}, err
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
		return nil, nil, locIndex{}, s.err
	}
	return p, s, newLocIndex(locations, p.Location, locByID), nil
}

// decodeSamples decodes the samples, merging records with the same
// location IDs, label bytes and number of values (sampleMerger), then
// builds them (sampleMerger.build).
//
// Many records are merged on two goroutines, each merging its half of
// them, and the second half's distinct samples are then merged into the
// first's: merging was a fifth of a 2M-record upload, most of it in cache
// misses that two cores wait on side by side, and each record is read
// once.
func (d *pprofDecoder) decodeSamples(p *profile.Profile, s *strs, locs locIndex) error {
	seed := maphash.MakeSeed()
	first := newSampleMerger(seed, len(d.samples)/4)
	if len(d.samples) < parallelMergeMin {
		if err := first.addAll(d.samples); err != nil {
			return err
		}
	} else {
		half := len(d.samples) / 2
		second := newSampleMerger(seed, (len(d.samples)-half)/4)
		var err2 error
		done := make(chan struct{})
		go func() {
			defer close(done)
			err2 = second.addAll(d.samples[half:])
		}()
		err := first.addAll(d.samples[:half])
		<-done
		if err == nil {
			err = err2
		}
		if err != nil {
			return err
		}
		first.absorb(second)
	}
	return first.build(d, p, s, locs)
}

// parallelMergeMin is the fewest sample records decodeSamples merges on
// two goroutines (a variable for the tests).
var parallelMergeMin = 1 << 16

// buildBlock is how many location pointers build allocates at a time (a
// 512 KiB block), and sixteen times how many samples.
const buildBlock = 1 << 16

// locBlock is a block of samples' location pointers that the collector
// does not scan: its pointers are stored as integers, and keep, the start
// of the one array that every location of the profile lies in, keeps them
// all alive while any sample's slice points into the block. Scanned, the
// 45M pointers of the 2M deep profile made its upload's collections take
// 0.95-2.1 s of CPU (0.55 s now), and every collection while the profile
// is in memory would scan them again; a write during one cost as much.
// Only pointers into that array may be stored in a block: nothing writes
// into a sample's location slice after build (pprof's library and
// viewer's code give a changed sample a fresh slice, and cap = len keeps
// an append from writing in place).
type locBlock struct {
	keep *profile.Location
	ptrs [buildBlock]uintptr
}

// mergedSample is a distinct sample: its location IDs, packed, as a
// sub-slice of the input, where its summed values are in its merger's
// array, its label set, and its hash. Only locs is a pointer, so the
// merger's slice of them is small and quick for the collector to scan;
// its labels are its label set's, so that labels cost a sample nothing
// but the set's number.
type mergedSample struct {
	locs    []byte
	hash    uint64 // of its locations, labels and number of values
	value   int    // values[value : value+nvalues]
	nvalues int32
	n       int32 // how many location IDs
	set     int32 // its label set (sampleMerger.setLabels), -1 without labels
}

// sampleMerger merges sample records as they are added, keeping the
// distinct samples in the order of their first records.
type sampleMerger struct {
	seed   maphash.Seed
	us     []mergedSample
	table  hashindex.Table
	values []int64
	// The distinct label sets: a record's label fields as written (tags,
	// lengths and messages, in order), byte for byte, setLabels, found
	// by their hash (setHash) in sets; setFirst is the first sample of
	// each, whose label maps build makes and the others of the set
	// share, and nlabels the label messages of all sets, what the maps
	// hold. A record's labels are one slice, not one per label: one hash
	// and one lookup in a table that is small (a converted perf.data has
	// a set per thread and time bucket, a Go profile one per distinct
	// goroutine labels) whatever the samples.
	sets      hashindex.Table
	setLabels [][]byte
	setHash   []uint64
	setFirst  []int32
	nlabels   int64

	vals    []int64  // a batch's values
	recs    []record // and records
	homes   []int32  // and the merged sample in each record's home slot (hashindex.Table.Home), -1 if none
	scratch []byte   // location IDs sent unpacked, packed again
	sink    uint64   // what addBatch loaded ahead, so that it is loaded
	// frames is the location IDs of the distinct samples: the location
	// pointers build makes, and what --max-frames bounds.
	frames int64

	// keys, when set, holds copies of the distinct samples' location IDs
	// and label sets, which otherwise stay sub-slices of the records:
	// the Stream hands its chunks back once merged.
	keys *arena

	// samplesValid is set by build when the samples it built pass
	// CheckValid's checks of samples (each has a value per sample type
	// and no nil location), so that checkValid need not walk them again.
	samplesValid bool
}

// newSampleMerger is a merger sized for about n distinct samples.
func newSampleMerger(seed maphash.Seed, n int) *sampleMerger {
	m := &sampleMerger{seed: seed}
	m.table.Init(n + 1)
	m.sets.Init(64)
	m.us = make([]mergedSample, 0, n+1)
	m.values = make([]int64, 0, n+1)
	return m
}

func (m *sampleMerger) addAll(records [][]byte) error {
	for len(records) > 0 {
		k := min(len(records), mergeBatch)
		if _, _, _, err := m.addBatch(records[:k]); err != nil {
			return err
		}
		records = records[k:]
	}
	return nil
}

// sameSample reports whether merged sample u has these location IDs,
// label set and number of values.
func (m *sampleMerger) sameSample(u *mergedSample, locIDs []byte, set int32, values int) bool {
	return string(u.locs) == string(locIDs) && int(u.nvalues) == values && u.set == set
}

// mergeBatch is how many records addBatch reads before it merges them.
const mergeBatch = 32

// record is a sample record read by addBatch, not merged yet: its values
// are vals[v0:v1] of its merger.
type record struct {
	locs   []byte
	h      uint64
	v0, v1 int32
	set    int32 // its label set, -1 without labels
}

// addBatch merges the sample records bs (mergeBatch or fewer), and
// returns how many location IDs, values and labels they have. It reads
// them all, then loads the table slots and samples their hashes point to,
// then merges them: each record's loads miss the cache (the table and the
// samples are far larger than it), and loads of records that do not
// depend on each other overlap, where one record after another waits for
// each in turn.
func (m *sampleMerger) addBatch(bs [][]byte) (ids, values, labels int, err error) {
	m.vals, m.recs = m.vals[:0], m.recs[:0]
	for _, b := range bs {
		v0 := len(m.vals)
		locIDs, fieldsSeen, unpacked, lbs, nl, scattered, err := sampleFields(b, &m.vals)
		if err != nil {
			return 0, 0, 0, err
		}
		labels += nl
		if scattered {
			// Rare: other fields between the labels; gather them.
			lbs = gatherLabels(b)
		}
		if unpacked || fieldsSeen > 1 {
			// Rare: gather the IDs in order into one packed run.
			m.scratch = m.scratch[:0]
			err := fields(b, func(num protowire.Number, v uint64, fb []byte, packed bool) error {
				switch {
				case num == 1 && packed:
					m.scratch = append(m.scratch, fb...)
				case num == 1:
					m.scratch = protowire.AppendVarint(m.scratch, v)
				}
				return nil
			})
			if err != nil {
				return 0, 0, 0, err
			}
			locIDs = slices.Clone(m.scratch)
		}
		h := maphash.Bytes(m.seed, locIDs)
		set := int32(-1)
		if len(lbs) > 0 {
			lh := maphash.Bytes(m.seed, lbs)
			set = m.labelSet(lbs, lh)
			h = h*31 + lh
		}
		h ^= uint64(len(m.vals)-v0) << 56
		m.recs = append(m.recs, record{locs: locIDs, h: h, v0: int32(v0), v1: int32(len(m.vals)), set: set})
	}
	// Load what the merge will read, records side by side.
	var x uint64
	homes := m.homes[:0]
	for i := range m.recs {
		homes = append(homes, m.table.Home(m.recs[i].h))
	}
	m.homes = homes
	for _, k := range homes {
		if k >= 0 {
			u := &m.us[k]
			if len(u.locs) > 0 {
				x += uint64(u.locs[0])
			}
			if u.nvalues > 0 {
				x += uint64(m.values[u.value])
			}
		}
	}
	m.sink += x
	for i := range m.recs {
		r := &m.recs[i]
		n := m.put(r.h, r.locs, -1, m.vals[r.v0:r.v1], r.set)
		if n < 0 {
			return 0, 0, 0, errWire
		}
		ids += n
	}
	return ids, len(m.vals), labels, nil
}

// gatherLabels is the label fields of sample message b, in order, packed
// into one slice of their own.
func gatherLabels(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return out // sampleFields read it whole: not reached
		}
		if num == 3 && typ == protowire.BytesType {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// put sums vals into the merged sample of these location IDs and labels,
// or appends a new one, and returns how many location IDs it has: n, or
// when n is -1 their count (packedLen, only for a new sample: a merged
// record has the bytes of one counted already), -1 when they are not
// packed varints.
func (m *sampleMerger) put(h uint64, locIDs []byte, n int, vals []int64, set int32) int {
	slot, found := m.table.Find(h, func(i int32) bool { return m.sameSample(&m.us[i], locIDs, set, len(vals)) })
	if found >= 0 {
		u := &m.us[found]
		v := m.values[u.value : u.value+int(u.nvalues)]
		for k, x := range vals {
			v[k] += x
		}
		return int(u.n)
	}
	if n < 0 {
		if n = packedLen(locIDs); n < 0 {
			return -1
		}
	}
	if m.keys != nil {
		locIDs = m.keys.copy(locIDs)
	}
	m.table.Insert(slot, h, int32(len(m.us)))
	// Doubled when full: append grows a large slice by a quarter, which
	// for the stream's merger (sized for 4096 samples, then 500k at 2M)
	// allocated and copied its arrays five times over. The new arrays'
	// pages are mapped in before the copy (prefault).
	if len(m.us) == cap(m.us) {
		m.us = prefault.Grow(m.us, len(m.us))
	}
	if cap(m.values)-len(m.values) < len(vals) {
		m.values = prefault.Grow(m.values, max(len(m.values), len(vals)))
	}
	if set >= 0 && m.setFirst[set] < 0 {
		m.setFirst[set] = int32(len(m.us))
	}
	m.us = append(m.us, mergedSample{locs: locIDs, hash: h, value: len(m.values), nvalues: int32(len(vals)),
		n: int32(n), set: set})
	m.values = append(m.values, vals...)
	m.frames += int64(n)
	return n
}

// labelSet is the label set of these label fields, of hash h: an
// existing one, or a new one, whose first sample put sets.
func (m *sampleMerger) labelSet(labels []byte, h uint64) int32 {
	slot, found := m.sets.Find(h, func(i int32) bool { return string(m.setLabels[i]) == string(labels) })
	if found >= 0 {
		return found
	}
	set := int32(len(m.setLabels))
	m.sets.Insert(slot, h, set)
	if m.keys != nil {
		labels = m.keys.copy(labels)
	}
	m.setLabels = append(m.setLabels, labels)
	m.setHash = append(m.setHash, h)
	m.setFirst = append(m.setFirst, -1)
	for b := labels; len(b) > 0; {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			break
		}
		m.nlabels++
		b = b[n:]
	}
	return set
}

// memory bounds what the merger holds and what build will allocate for
// its samples so far, until it grows again: its arrays as allocated, the
// next doubling of each (put and the tables double them when full, the
// old array live while it is copied), the samples' structs and pointers
// (120+8), a location pointer per frame, and the label maps of each
// label set, which its samples share (labelSetMemory, labelMemory): not
// of each sample's labels, which counted the 2M-sample profile with five
// labels a sample over its 1,000 label sets 200 MB of maps it never made
// and, with its array of label slices, sent it over the default budget
// to the slower spooled parse.
func (m *sampleMerger) memory() int64 {
	arrays := int64(cap(m.us))*int64(unsafe.Sizeof(mergedSample{})) + int64(m.table.Slots())*8 +
		int64(cap(m.values))*8 + int64(m.sets.Slots())*8 + int64(cap(m.setLabels))*(24+8+4)
	return 3*arrays + int64(len(m.us))*(120+8) + 8*m.frames +
		int64(len(m.setLabels))*labelSetMemory + m.nlabels*labelMemory
}

// arena holds copies of byte slices, a block of them at a time: what a
// decoder keeps of input it does not keep (a Stream's chunks), without
// an allocation per slice.
type arena struct {
	block []byte
	size  int64 // bytes allocated
}

// arenaBlock is the size of an arena's blocks; a slice of more than a
// quarter of it is copied on its own.
const arenaBlock = 1 << 20

// copy is a copy of b in a (b itself when a is nil).
func (a *arena) copy(b []byte) []byte {
	if a == nil {
		return b
	}
	if len(b) > cap(a.block)-len(a.block) {
		if len(b) > arenaBlock/4 {
			a.size += int64(len(b))
			return append(make([]byte, 0, len(b)), b...)
		}
		a.block = make([]byte, 0, arenaBlock)
		prefault.Slice(a.block) // filled at once: a fault per page otherwise
		a.size += arenaBlock
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}

// labelSetMemory and labelMemory bound the label maps of one label set
// (sampleLabels): its three maps' headers and first groups (Go's maps of
// up to 8 keys), and, for each label, its value slice and its share of a
// larger map's groups as they grow (measured: 416 bytes for one label,
// 872 for five, 12.7 kB for 100, 207 kB for 1,000, garbage of the growth
// included).
const (
	labelSetMemory = 3 * 400
	labelMemory    = 256
)

// absorb merges o's samples, all of records after m's, into m: summed
// into the same sample of m, else appended (so the order stays that of
// first records).
func (m *sampleMerger) absorb(o *sampleMerger) {
	for i := range o.us {
		u := &o.us[i]
		set := u.set
		if set >= 0 {
			set = m.labelSet(o.setLabels[set], o.setHash[set])
		}
		m.put(u.hash, u.locs, int(u.n), o.values[u.value:u.value+int(u.nvalues)], set)
	}
}

// build sets p's samples from the merged ones. A sample's location IDs
// stay in the input, packed, until the merged samples are known; then
// they are decoded once, into arrays of location pointers: on two
// goroutines, each its half of the samples, when they are many.
//
// The samples and their location pointers are allocated in blocks as they
// are filled (buildBlock), each block's pages mapped in at once
// (prefault), not in one array each: an array of all the
// frames (140 MB at 2M samples) allocated at once started a collection
// that scanned it while it was still unwritten, mapping the kernel's zero
// page into every page of it, and each page written then faulted again
// to be copied, with a TLB flush on every core: about a tenth of an
// upload's server CPU, at any profile shape. A block is written as soon
// as it is allocated; a full block of pointers is a locBlock, which no
// collection scans.
func (m *sampleMerger) build(d *pprofDecoder, p *profile.Profile, s *strs, locs locIndex) error {
	k, half := len(m.us), len(m.us)
	if k >= parallelMergeMin/4 {
		half = k / 2
	}
	p.Sample = make([]*profile.Sample, k)
	// valid is, per half, whether its samples pass CheckValid's checks
	// of samples (samplesValid).
	var valid [2]bool
	locate := func(lo, hi int, valid *bool) {
		ok := true
		var all []*profile.Location
		hidden := false // all is cut from a locBlock
		var samples []profile.Sample
		left := 0 // location IDs of samples lo..hi not given a block yet
		for i := lo; i < hi; i++ {
			left += int(m.us[i].n)
		}
		for i := lo; i < hi; i++ {
			u := &m.us[i]
			if len(samples) == 0 {
				samples = make([]profile.Sample, min(buildBlock/16, hi-i))
				prefault.Slice(samples)
			}
			sm := &samples[0]
			samples = samples[1:]
			p.Sample[i] = sm
			if u.nvalues > 0 {
				sm.Value = m.values[u.value : u.value+int(u.nvalues) : u.value+int(u.nvalues)]
			}
			ok = ok && int(u.nvalues) == len(p.SampleType)
			c := int(u.n)
			if len(all) < c {
				// A block, or what is left when less: a small profile's
				// load allocated 512 KiB for a few hundred pointers.
				if n := max(min(buildBlock, left), c); n == buildBlock && len(locs.home) > 0 {
					b := new(locBlock)
					b.keep = &locs.home[0]
					prefault.Slice(b.ptrs[:])
					all, hidden = unsafe.Slice((**profile.Location)(unsafe.Pointer(&b.ptrs[0])), buildBlock), true
				} else {
					all, hidden = make([]*profile.Location, n), false
					prefault.Slice(all)
				}
				left -= len(all)
			}
			sm.Location = all[:c:c]
			all = all[c:]
			ids := u.locs
			// In a locBlock, a pointer is stored as the integer it is:
			// no write barrier, nothing for the collector to scan.
			var raw []uintptr
			if hidden {
				raw = unsafe.Slice((*uintptr)(unsafe.Pointer(unsafe.SliceData(sm.Location))), c)
			}
			for j := range c {
				var id uint64
				if c := ids[0]; c < 0x80 {
					id, ids = uint64(c), ids[1:]
				} else {
					var n int
					id, n = protowire.ConsumeVarint(ids)
					ids = ids[n:]
				}
				l := locs.get(id)
				ok = ok && l != nil
				if hidden {
					raw[j] = uintptr(unsafe.Pointer(l))
				} else {
					sm.Location[j] = l
				}
			}
		}
		*valid = ok
	}
	if half < k {
		done := make(chan struct{})
		go func() {
			defer close(done)
			locate(half, k, &valid[1])
		}()
		locate(0, half, &valid[0])
		<-done
	} else {
		locate(0, k, &valid[0])
		valid[1] = true
	}
	m.samplesValid = valid[0] && valid[1] && (len(p.SampleType) > 0 || k == 0)
	// Samples with the same label messages (a label set) share their
	// label maps (read only once parsed, as perf.data's converter shares
	// them): a converted perf.data has a sample per thread, time and
	// stack, and a map set per sample made its 428k samples 650 MB
	// instead of 135. The first sample of a set comes first.
	for i := range m.us {
		u := &m.us[i]
		if u.set < 0 {
			continue
		}
		sm := p.Sample[i]
		if first := m.setFirst[u.set]; int(first) != i {
			o := p.Sample[first]
			sm.Label, sm.NumLabel, sm.NumUnit = o.Label, o.NumLabel, o.NumUnit
		} else if err := d.sampleLabels(sm, s, m.setLabels[u.set]); err != nil {
			return err
		}
	}
	return nil
}

// sampleFields reads a sample message b: its values are appended to
// vals; locs is its last packed run of location IDs, fieldsSeen how many
// packed runs it has, unpacked whether it has any location ID outside
// one; labels is its label fields (tags, lengths and messages), nlabels
// how many, and scattered says other fields come between them, so that
// labels is not all of them (gatherLabels).
func sampleFields(b []byte, vals *[]int64) (locs []byte, fieldsSeen int, unpacked bool, labels []byte, nlabels int, scattered bool, err error) {
	whole := b
	lstart, lend := 0, 0
	for len(b) > 0 {
		at := len(whole) - len(b)
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, 0, false, nil, 0, false, errWire
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, 0, false, nil, 0, false, errWire
			}
			b = b[n:]
			switch num {
			case 1:
				unpacked = true
			case 2:
				*vals = append(*vals, int64(v))
			case 3:
				return nil, 0, false, nil, 0, false, errWire
			}
		case protowire.BytesType:
			fb, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, 0, false, nil, 0, false, errWire
			}
			b = b[n:]
			switch num {
			case 1:
				locs = fb
				fieldsSeen++
			case 2:
				for len(fb) > 0 {
					x, n := protowire.ConsumeVarint(fb)
					if n < 0 {
						return nil, 0, false, nil, 0, false, errWire
					}
					*vals = append(*vals, int64(x))
					fb = fb[n:]
				}
			case 3:
				if nlabels == 0 {
					lstart = at
				} else if at != lend {
					scattered = true
				}
				lend = len(whole) - len(b)
				nlabels++
			}
		default:
			return nil, 0, false, nil, 0, false, errWire
		}
	}
	if nlabels > 0 {
		labels = whole[lstart:lend:lend]
	}
	return locs, fieldsSeen, unpacked, labels, nlabels, scattered, nil
}

// packedLen is the number of varints packed in b, -1 when b does not end
// at the end of one or a varint is not one protowire reads (longer than
// ten bytes, or ten whose last is over 1: past 64 bits), so that build
// can read every ID it counted. It reads eight bytes at a time (a varint
// ends at each byte under 0x80), a third of the time of a byte at a time
// (BenchmarkPackedLen).
func packedLen(b []byte) int {
	n, run := 0, 0 // run: the bytes of the varint not ended yet
	for ; len(b) >= 8; b = b[8:] {
		ends := ^binary.LittleEndian.Uint64(b) & 0x8080808080808080
		if ends == 0 {
			if run += 8; run >= 10 {
				return -1
			}
			continue
		}
		// Only the first varint ending in these 8 bytes can have 10.
		first := bits.TrailingZeros64(ends) / 8
		if !lastVarintByte(run+first+1, b[first]) {
			return -1
		}
		n += bits.OnesCount64(ends)
		run = bits.LeadingZeros64(ends) / 8 // the bytes after the last end
	}
	for _, c := range b {
		run++
		if c >= 0x80 {
			if run == 10 {
				return -1
			}
			continue
		}
		if !lastVarintByte(run, c) {
			return -1
		}
		n++
		run = 0
	}
	if run != 0 {
		return -1
	}
	return n
}

// lastVarintByte says whether c may end a varint of k bytes.
func lastVarintByte(k int, c byte) bool {
	return k < 10 || k == 10 && c <= 1
}

// sampleLabels sets a sample's Label, NumLabel and NumUnit from its label
// fields (sampleFields' labels), as pprof's postDecode does.
func (d *pprofDecoder) sampleLabels(sm *profile.Sample, s *strs, labels []byte) error {
	var str map[string][]string
	var num map[string][]int64
	var units map[string][]string
	for len(labels) > 0 {
		_, _, n := protowire.ConsumeTag(labels)
		if n < 0 {
			return errWire
		}
		b, m := protowire.ConsumeBytes(labels[n:])
		if m < 0 {
			return errWire
		}
		labels = labels[n+m:]
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

// locIndex looks locations up by ID: as an offset in the array of them
// when their IDs are 1..n in order (what pprof and Go write), else in a
// slice when the IDs are dense enough, else in byID. The offset costs
// no load: looking each frame's pointer up in a slice missed the cache
// for two fifths of build's time on the 2M-sample deep profile's 45M
// frames.
type locIndex struct {
	ordered []profile.Location
	dense   []*profile.Location
	byID    map[uint64]*profile.Location
	home    []profile.Location // the one array every location lies in (locBlock.keep)
}

// newLocIndex indexes locs, the profile's locations, which lie in array
// in the same order.
func newLocIndex(array []profile.Location, locs []*profile.Location, byID map[uint64]*profile.Location) locIndex {
	ordered := len(array) == len(locs)
	var maxID uint64
	for i, l := range locs {
		maxID = max(maxID, l.ID)
		ordered = ordered && l.ID == uint64(i+1) && l == &array[i]
	}
	if ordered {
		return locIndex{ordered: array, home: array}
	}
	if maxID > uint64(4*len(locs)+1024) {
		return locIndex{byID: byID, home: array}
	}
	dense := make([]*profile.Location, maxID+1)
	for id, l := range byID {
		dense[id] = l
	}
	return locIndex{dense: dense, home: array}
}

func (x locIndex) get(id uint64) *profile.Location {
	if x.ordered != nil {
		if id-1 < uint64(len(x.ordered)) { // id 0 wraps around
			return &x.ordered[id-1]
		}
		return nil
	}
	if x.byID != nil {
		return x.byID[id]
	}
	if id < uint64(len(x.dense)) {
		return x.dense[id]
	}
	return nil
}
