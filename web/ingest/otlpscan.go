package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	jsoniter "github.com/json-iterator/go"
)

// DefaultMaxOTLPProfiles bounds the profiles of one OTLP request
// (--max-otlp-profiles): each is stored as a profile of its own. An
// exporter sends one per resource and sample type it saw in its interval
// (the eBPF profiler: per process), and a collector batch of 8,192
// samples holds no more profiles than samples.
const DefaultMaxOTLPProfiles = 10_000

// otlpCounts is what an OTLP profiles request holds, counted from its
// protobuf wire format or its JSON without decoding it (prescanOTLP):
// pdata allocates a struct for each entry of each table, 40 to 140 bytes
// for an entry of 2 bytes on the wire, so a request's tables are counted
// against the limits before it is decoded.
type otlpCounts struct {
	profiles, samples                                     int64
	strings, attributes, stacks, links                    int64
	locations, lines, functions, mappings, stackLocations int64
	// frames are the frames the request's samples name in all: each
	// sample's stack's locations, a location's lines each (limitFrames'
	// count), as the conversion makes them.
	frames int64
}

// otlpEntryMemory is what pdata allocates for each entry of a table as it
// decodes an OTLP request (measured, append growth included), beyond the
// entry's bytes: mapping, location, line, function, link, string,
// attribute, stack, stack location, profile and sample.
const (
	otlpMappingMemory   = 112
	otlpLocationMemory  = 112
	otlpLineMemory      = 40
	otlpFunctionMemory  = 72
	otlpLinkMemory      = 72
	otlpStringMemory    = 88
	otlpAttributeMemory = 72
	otlpStackMemory     = 72
	otlpStackLocMemory  = 8
	otlpProfileMemory   = 128
	otlpSampleMemory    = 48
)

// memory bounds what decoding (pdata) and converting (FromOTLP) a request
// of size bytes with these counts allocates, the request itself included:
// the decoded tables, 8 bytes per byte of the packed arrays of varints
// (values, indices, timestamps), the conversion's index of each table, and
// the pprof profiles made: per frame a location pointer and at most one
// location with its line, and per sample its record and value.
func (c otlpCounts) memory(size int64) int64 {
	decode := otlpMappingMemory*c.mappings + otlpLocationMemory*c.locations + otlpLineMemory*c.lines +
		otlpFunctionMemory*c.functions + otlpLinkMemory*c.links + otlpStringMemory*c.strings +
		otlpAttributeMemory*c.attributes + otlpStackMemory*c.stacks + otlpStackLocMemory*c.stackLocations +
		otlpProfileMemory*c.profiles + otlpSampleMemory*c.samples + otlpMemoryFactor*size
	index := 8*(c.locations+c.functions+c.mappings) + 8*c.attributes
	made := 8*c.frames + (120+56)*min(c.frames, c.profiles*c.locations) +
		112*min(c.frames, c.profiles*c.functions) + 192*min(c.frames, c.profiles*c.mappings) +
		(120+8)*c.samples
	return size + decode + index + made
}

// check fails with ErrTooLarge naming the first count over lim and the
// flag that raises it. Each sample names one stack and at most one link,
// so a table of more stacks or links than --max-samples allows samples
// is refused as samples are; attributes count with strings (each has a
// key), and a stack's locations and a location's lines are frames.
func (c otlpCounts) check(lim Limits) error {
	for _, x := range []struct {
		what, flag string
		n          int64
		max        int
	}{
		{"profiles", "--max-otlp-profiles", c.profiles, lim.MaxOTLPProfiles},
		{"samples", "--max-samples", c.samples, lim.MaxSamples},
		{"strings", "--max-strings", c.strings, lim.MaxStrings},
		{"attributes", "--max-strings", c.attributes, lim.MaxStrings},
		{"locations", "--max-locations", c.locations, lim.MaxLocations},
		{"functions", "--max-functions", c.functions, lim.MaxFunctions},
		{"mappings", "--max-mappings", c.mappings, lim.MaxMappings},
		{"stacks", "--max-samples", c.stacks, lim.MaxSamples},
		{"links", "--max-samples", c.links, lim.MaxSamples},
		{"stack locations", "--max-frames", c.stackLocations, lim.MaxFrames},
		{"location lines", "--max-frames", c.lines, lim.MaxFrames},
		{"frames", "--max-frames", c.frames, lim.MaxFrames},
	} {
		if x.max > 0 && x.n > int64(x.max) {
			return fmt.Errorf("%w: the OTLP request holds more than %d %s (restart the server with a larger %s to accept it, or send fewer per request)",
				ErrTooLarge, x.max, x.what, x.flag)
		}
	}
	return nil
}

// errOTLPWire is an OTLP request whose bytes are not the message they
// claim to be.
func errOTLPWire(what string) error {
	return fmt.Errorf("%w: not a valid OTLP profiles message (%s)", ErrCorrupt, what)
}

// otlpWireError turns the pprof pre-scan's reading errors (readVarint…)
// into OTLP's; other errors (the input's own) stay.
func otlpWireError(err error) error {
	var we errPprofWire
	switch {
	case errors.As(err, &we):
		return errOTLPWire(string(we))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errOTLPWire("cut short")
	}
	return err
}

// prescanOTLP counts what an OTLP request in data (protobuf, or OTLP JSON
// when json is set) holds, in passes over it that allocate nothing per
// field: the tables and samples, checked against lim as they are counted;
// then, unless a bound of the frames is within --max-frames (and stands
// for them), each location's lines and each stack's frames (4 and 8
// bytes an entry, within the limits just checked), and the frames the
// samples name, checked against --max-frames.
func prescanOTLP(data []byte, json bool, lim Limits) (otlpCounts, error) {
	s := otlpScan{lim: lim}
	for s.pass = 0; s.pass < 4; s.pass++ {
		switch s.pass {
		case 1:
			// Every sample naming the longest stack of the locations
			// with the most lines bounds the frames: when that is within
			// --max-frames, it stands for them (the estimate's), and
			// the passes that count them exactly are not made (an
			// exporter's request: 3 of the pre-scan's 4 passes).
			bound := satMul(satMul(s.c.samples, s.longest), max(1, s.maxLines))
			if lim.MaxFrames <= 0 || bound <= int64(lim.MaxFrames) {
				s.c.frames = bound
				return s.c, nil
			}
			s.locLines = make([]int32, 0, s.c.locations)
		case 2:
			s.stackFrames = make([]int64, 0, s.c.stacks)
		}
		if err := s.walk(bytes.NewReader(data), json); err != nil {
			return s.c, err
		}
		if err := s.c.check(lim); err != nil {
			return s.c, err
		}
	}
	return s.c, nil
}

// countOTLP is prescanOTLP's first pass over a stream (an inflating
// request, inflateFile): it fails at the first count over lim, having
// read only that far.
func countOTLP(r io.Reader, json bool, lim Limits) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(sniffLen)
	if isGzip(head) || json != isJSON(head) {
		return nil // another gzip layer, or the wrong encoding: ParseOTLP says which
	}
	s := otlpScan{lim: lim}
	if err := s.walk(br, json); err != nil {
		return err
	}
	return s.c.check(lim)
}

// otlpScan is prescanOTLP's state: the pass, its counts and what the
// earlier passes found.
type otlpScan struct {
	pass  int
	lim   Limits
	c     otlpCounts
	ticks int
	// longest and maxLines are the most locations of a stack and the most
	// lines of a location (pass 0).
	longest, maxLines int64
	locLines          []int32 // pass 1: lines of each location
	stackFrames       []int64 // pass 2: frames of each stack
}

func (s *otlpScan) walk(r io.Reader, json bool) error {
	if json {
		return walkOTLPJSON(r, s)
	}
	return walkOTLPProto(&protoStream{r: bufio.NewReaderSize(r, 64<<10)}, s)
}

// satMul is a × b for counts (not negative), at most math.MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// counted is called after each entry the first pass counts: every 4096th
// it checks the counts, so that a stream over a limit stops soon after.
func (s *otlpScan) counted() error {
	if s.ticks++; s.ticks&4095 != 0 {
		return nil
	}
	return s.c.check(s.lim)
}

// location is called for each location of the dictionary with its lines.
func (s *otlpScan) location(lines int64) error {
	switch s.pass {
	case 0:
		s.c.locations++
		s.c.lines += lines
		s.maxLines = max(s.maxLines, lines)
		return s.counted()
	case 1:
		s.locLines = append(s.locLines, int32(min(lines, 1<<31-1)))
	}
	return nil
}

// stackFrame is what one location index of a stack adds to its frames
// (pass 2): the location's lines, at least one.
func (s *otlpScan) stackFrame(i int64) int64 {
	if i >= 0 && i < int64(len(s.locLines)) {
		return max(1, int64(s.locLines[i]))
	}
	return 1
}

// stack is called for each stack of the dictionary with its location
// indices' count (pass 0) or its frames (pass 2).
func (s *otlpScan) stack(n int64) error {
	switch s.pass {
	case 0:
		s.c.stacks++
		s.c.stackLocations += n
		s.longest = max(s.longest, n)
		return s.counted()
	case 2:
		s.stackFrames = append(s.stackFrames, n)
	}
	return nil
}

// sample is called for each sample with its stack index.
func (s *otlpScan) sample(stack int64) error {
	switch s.pass {
	case 0:
		s.c.samples++
		return s.counted()
	case 3:
		if stack >= 0 && stack < int64(len(s.stackFrames)) {
			s.c.frames += s.stackFrames[stack]
		}
	}
	return nil
}

// entry counts one entry of a table the first pass counts (n).
func (s *otlpScan) entry(n *int64) error {
	if s.pass != 0 {
		return nil
	}
	*n++
	return s.counted()
}

// protoStream reads a protobuf message as a stream, its position counted
// so that nested messages end where their length says.
type protoStream struct {
	r   *bufio.Reader
	pos int64
}

func (p *protoStream) ReadByte() (byte, error) {
	b, err := p.r.ReadByte()
	if err == nil {
		p.pos++
	}
	return b, err
}

// fields calls f with each field of the message in the next n bytes (up
// to the end of the stream when n < 0): its number and wire type, and a
// varint's value or a length-delimited field's size. f may read the
// field's bytes (fields, packed), or not: what it leaves is skipped.
func (p *protoStream) fields(n int64, f func(num, wt, x uint64, size int64) error) error {
	end := p.pos + n
	for n < 0 || p.pos < end {
		num, wt, err := readTag(p)
		if n < 0 && err == io.EOF {
			return nil
		}
		if err != nil {
			return otlpWireError(err)
		}
		var (
			x    uint64
			size int64
		)
		switch wt {
		case 0:
			x, err = readVarint(p)
		case 2:
			size, err = readLen(p)
			if err == nil && n >= 0 && size > end-p.pos {
				err = errPprofWire("a field longer than its message")
			}
		case 3:
			err = p.skipGroup()
		default:
			err = skipField(p, wt)
		}
		if err != nil {
			return otlpWireError(err)
		}
		start := p.pos
		if err := f(num, wt, x, size); err != nil {
			return err
		}
		if wt == 2 && start+size > p.pos {
			k := start + size - p.pos
			p.pos += k
			if err := discard(p.r, k); err != nil {
				return otlpWireError(err)
			}
		}
	}
	if p.pos != end {
		return errOTLPWire("a field runs past its message")
	}
	return nil
}

// skipGroup skips an (obsolete) group as pdata's decoder does
// (ConsumeUnknown): nested start tags and end tags up to the group's end,
// or the first field of another wire type, which ends it too.
func (p *protoStream) skipGroup() error {
	for depth := 1; ; {
		_, wt, err := readTag(p)
		if err != nil {
			return err
		}
		switch wt {
		case 3:
			depth++
			continue
		case 4:
			if depth--; depth == 0 {
				return nil
			}
			continue
		case 2:
			k, err := readLen(p)
			if err != nil {
				return err
			}
			p.pos += k
			return discard(p.r, k)
		}
		return skipField(p, wt)
	}
}

// packed calls f with each varint packed in the next n bytes.
func (p *protoStream) packed(n int64, f func(uint64)) error {
	end := p.pos + n
	for p.pos < end {
		v, err := readVarint(p)
		if err != nil {
			return otlpWireError(err)
		}
		f(v)
	}
	if p.pos != end {
		return errOTLPWire("a packed array runs past its field")
	}
	return nil
}

// walkOTLPProto walks an ExportProfilesServiceRequest (or ProfilesData,
// the same fields): resource_profiles (1) > scope_profiles (2) >
// profiles (2) > samples (2, stack_index 1), and the dictionary (2):
// mappings (1), locations (2, lines 3), functions (3), links (4),
// strings (5), attributes (6) and stacks (7, location_indices 1).
func walkOTLPProto(p *protoStream, s *otlpScan) error {
	const bytesType = 2
	// within calls f for each length-delimited field num of a message.
	within := func(num uint64, f func(size int64) error) func(int64) error {
		return func(n int64) error {
			return p.fields(n, func(m, wt, _ uint64, size int64) error {
				if m == num && wt == bytesType {
					return f(size)
				}
				return nil
			})
		}
	}
	sample := func(n int64) error {
		var stack int64
		err := p.fields(n, func(num, wt, x uint64, _ int64) error {
			if num == 1 && wt == 0 {
				stack = int64(int32(x))
			}
			return nil
		})
		if err != nil {
			return err
		}
		return s.sample(stack)
	}
	profile := func(n int64) error {
		if s.pass == 0 {
			s.c.profiles++
			if err := s.counted(); err != nil {
				return err
			}
		} else if s.pass != 3 {
			return nil // skipped
		}
		return within(2, sample)(n)
	}
	location := func(n int64) error {
		var lines int64
		err := p.fields(n, func(num, wt, _ uint64, _ int64) error {
			if num == 3 && wt == bytesType {
				lines++
			}
			return nil
		})
		if err != nil {
			return err
		}
		return s.location(lines)
	}
	stack := func(n int64) error {
		var k int64
		err := p.fields(n, func(num, wt, x uint64, size int64) error {
			if num != 1 {
				return nil
			}
			add := func(i uint64) {
				if s.pass == 2 {
					k += s.stackFrame(int64(int32(i)))
				} else {
					k++
				}
			}
			switch wt {
			case 0:
				add(x)
			case bytesType:
				return p.packed(size, add)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return s.stack(k)
	}
	dictionary := func(n int64) error {
		if s.pass == 3 {
			return nil
		}
		return p.fields(n, func(num, wt, _ uint64, size int64) error {
			if wt != bytesType {
				return nil
			}
			switch num {
			case 1:
				return s.entry(&s.c.mappings)
			case 2:
				if s.pass <= 1 {
					return location(size)
				}
			case 3:
				return s.entry(&s.c.functions)
			case 4:
				return s.entry(&s.c.links)
			case 5:
				return s.entry(&s.c.strings)
			case 6:
				return s.entry(&s.c.attributes)
			case 7:
				if s.pass == 0 || s.pass == 2 {
					return stack(size)
				}
			}
			return nil
		})
	}
	resource := within(2, within(2, profile))
	return p.fields(-1, func(num, wt, _ uint64, size int64) error {
		if wt != bytesType {
			return nil
		}
		switch num {
		case 1:
			if s.pass == 0 || s.pass == 3 {
				return resource(size)
			}
		case 2:
			return dictionary(size)
		}
		return nil
	})
}

// walkOTLPJSON walks an OTLP JSON request as walkOTLPProto walks protobuf,
// with the field names pdata reads (lowerCamelCase or the proto's own).
// A value of another type than expected is skipped: pdata reports it.
func walkOTLPJSON(r io.Reader, s *otlpScan) error {
	it := jsoniter.Parse(jsoniter.ConfigFastest, r, 64<<10)
	var failed error
	fail := func(err error) bool {
		if err != nil && failed == nil {
			failed = err
		}
		return failed == nil
	}
	// pdata's decoder reads a field with an empty name as its object's
	// end and goes on reading the value after it as the fields or
	// elements of the object or array around it, where this walk would
	// count none of them: such a request is refused, wherever it has
	// one (an exporter never writes it).
	emptyName := func() bool {
		return fail(errOTLPWire("JSON: an object has a field with an empty name"))
	}
	// skip passes over a value this walk does not count, refusing a
	// field with an empty name in it.
	var skip func(it *jsoniter.Iterator)
	skip = func(it *jsoniter.Iterator) {
		switch it.WhatIsNext() {
		case jsoniter.ObjectValue:
			it.ReadObjectCB(func(it *jsoniter.Iterator, f string) bool {
				if f == "" {
					return emptyName()
				}
				skip(it)
				return failed == nil && it.Error == nil
			})
		case jsoniter.ArrayValue:
			it.ReadArrayCB(func(it *jsoniter.Iterator) bool { skip(it); return failed == nil && it.Error == nil })
		default:
			it.Skip()
		}
	}
	array := func(it *jsoniter.Iterator, f func(*jsoniter.Iterator) error) {
		if it.WhatIsNext() != jsoniter.ArrayValue {
			skip(it)
			return
		}
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool { return fail(f(it)) && it.Error == nil })
	}
	object := func(it *jsoniter.Iterator, f func(it *jsoniter.Iterator, field string)) {
		if it.WhatIsNext() != jsoniter.ObjectValue {
			skip(it)
			return
		}
		it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
			if field == "" {
				return emptyName()
			}
			f(it, field)
			return failed == nil && it.Error == nil
		})
	}
	// An int32 index, as a number or a decimal string.
	index := func(it *jsoniter.Iterator) int64 {
		switch it.WhatIsNext() {
		case jsoniter.NumberValue:
			return int64(int32(it.ReadInt64()))
		case jsoniter.StringValue:
			v, _ := strconv.ParseInt(it.ReadString(), 10, 32)
			return v
		}
		skip(it)
		return 0
	}
	field := func(f, camel, snake string) bool { return f == camel || f == snake }
	sample := func(it *jsoniter.Iterator) error {
		var stack int64
		object(it, func(it *jsoniter.Iterator, f string) {
			if field(f, "stackIndex", "stack_index") {
				stack = index(it)
				return
			}
			skip(it)
		})
		return s.sample(stack)
	}
	profile := func(it *jsoniter.Iterator) error {
		if s.pass == 0 {
			s.c.profiles++
			if err := s.counted(); err != nil {
				return err
			}
		}
		object(it, func(it *jsoniter.Iterator, f string) {
			if f == "samples" {
				array(it, sample)
				return
			}
			skip(it)
		})
		return nil
	}
	scope := func(it *jsoniter.Iterator) error {
		object(it, func(it *jsoniter.Iterator, f string) {
			if f == "profiles" {
				array(it, profile)
				return
			}
			skip(it)
		})
		return nil
	}
	resource := func(it *jsoniter.Iterator) error {
		object(it, func(it *jsoniter.Iterator, f string) {
			if field(f, "scopeProfiles", "scope_profiles") {
				array(it, scope)
				return
			}
			skip(it)
		})
		return nil
	}
	count := func(n *int64) func(*jsoniter.Iterator) error {
		return func(it *jsoniter.Iterator) error {
			skip(it)
			return s.entry(n)
		}
	}
	location := func(it *jsoniter.Iterator) error {
		var lines int64
		object(it, func(it *jsoniter.Iterator, f string) {
			if f == "lines" {
				array(it, func(it *jsoniter.Iterator) error { lines++; skip(it); return nil })
				return
			}
			skip(it)
		})
		return s.location(lines)
	}
	stack := func(it *jsoniter.Iterator) error {
		var k int64
		object(it, func(it *jsoniter.Iterator, f string) {
			if field(f, "locationIndices", "location_indices") {
				array(it, func(it *jsoniter.Iterator) error {
					if s.pass == 2 {
						k += s.stackFrame(index(it))
					} else {
						k++
						skip(it)
					}
					return nil
				})
				return
			}
			skip(it)
		})
		return s.stack(k)
	}
	dictionary := func(it *jsoniter.Iterator) {
		object(it, func(it *jsoniter.Iterator, f string) {
			switch {
			case field(f, "mappingTable", "mapping_table"):
				array(it, count(&s.c.mappings))
			case field(f, "locationTable", "location_table") && s.pass <= 1:
				array(it, location)
			case field(f, "functionTable", "function_table"):
				array(it, count(&s.c.functions))
			case field(f, "linkTable", "link_table"):
				array(it, count(&s.c.links))
			case field(f, "stringTable", "string_table"):
				array(it, count(&s.c.strings))
			case field(f, "attributeTable", "attribute_table"):
				array(it, count(&s.c.attributes))
			case field(f, "stackTable", "stack_table") && (s.pass == 0 || s.pass == 2):
				array(it, stack)
			default:
				skip(it)
			}
		})
	}
	object(it, func(it *jsoniter.Iterator, f string) {
		switch {
		case field(f, "resourceProfiles", "resource_profiles") && (s.pass == 0 || s.pass == 3):
			array(it, resource)
		case f == "dictionary" && s.pass != 3:
			dictionary(it)
		default:
			skip(it)
		}
	})
	if failed != nil {
		return failed
	}
	if it.Error != nil && it.Error != io.EOF {
		return errOTLPWire(fmt.Sprintf("JSON: %v", it.Error))
	}
	return nil
}

// isJSON says whether data starts (after white space) with '{', as OTLP
// JSON does.
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
