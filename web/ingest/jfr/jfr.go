// Package jfr reads Java Flight Recorder recordings (JDK 11+ and
// async-profiler's .jfr) into a pprof profile: jdk.ExecutionSample events
// as cpu samples, jdk.NativeMethodSample as native samples, frames named
// pkg.Class.method. It is written from the format (chunk header, metadata
// event, constant pools, LEB128 integers); every count is checked against
// the bytes left before anything is allocated for it.
package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/google/pprof/profile"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound a read; zero fields mean no limit.
type Options struct {
	MaxSamples int // distinct stacks per thread
}

// Sniff accepts a JFR chunk header.
func Sniff(head []byte) bool { return len(head) >= 4 && string(head[:4]) == "FLR\x00" }

const headerSize = 68

// maxNesting bounds how deep metadata elements and inline values nest.
const maxNesting = 32

var errShort = errors.New("cut short")

// buf reads big-endian and LEB128 values from a byte slice.
type buf struct {
	b          []byte
	off        int
	compressed bool
}

func (r *buf) left() int { return len(r.b) - r.off }

func (r *buf) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// long reads a JFR integer: LEB128 of at most 9 bytes (the 9th holds 8
// bits) when compressed, else n big-endian bytes.
func (r *buf) long(n int) (int64, error) {
	if !r.compressed {
		if r.left() < n {
			return 0, errShort
		}
		var v uint64
		for i := 0; i < n; i++ {
			v = v<<8 | uint64(r.b[r.off+i])
		}
		r.off += n
		return int64(v), nil
	}
	var v uint64
	for i := 0; i < 9; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if i == 8 {
			return int64(v | uint64(c)<<56), nil
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			break
		}
	}
	return int64(v), nil
}

// count reads a count of items each at least min bytes long, checked
// against the bytes left.
func (r *buf) count(minBytes int) (int, error) {
	n, err := r.long(4)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > int64(r.left()/max(minBytes, 1)) {
		return 0, fmt.Errorf("a count of %d at offset %d is more than the %d bytes left hold", n, r.off, r.left())
	}
	return int(n), nil
}

// str reads a JFR string: null, empty, a constant pool reference, UTF-8,
// UTF-16 chars or Latin-1. A reference is returned as ref >= 0.
func (r *buf) str() (s string, ref int64, err error) {
	enc, err := r.byte()
	if err != nil {
		return "", -1, err
	}
	switch enc {
	case 0, 1:
		return "", -1, nil
	case 2:
		ref, err = r.long(8)
		return "", ref, err
	case 3, 5:
		n, err := r.count(1)
		if err != nil {
			return "", -1, err
		}
		b := r.b[r.off : r.off+n]
		r.off += n
		if enc == 5 {
			rs := make([]rune, n)
			for i, c := range b {
				rs[i] = rune(c)
			}
			return string(rs), -1, nil
		}
		return string(b), -1, nil
	case 4:
		n, err := r.count(1)
		if err != nil {
			return "", -1, err
		}
		u := make([]uint16, n)
		for i := range u {
			c, err := r.long(2)
			if err != nil {
				return "", -1, err
			}
			u[i] = uint16(c)
		}
		return string(utf16.Decode(u)), -1, nil
	}
	return "", -1, fmt.Errorf("string encoding %d at offset %d", enc, r.off-1)
}

// field is one field of a class in the metadata.
type field struct {
	name  string
	class int64
	pool  bool
	array bool
}

// class is one type in the metadata.
type class struct {
	id     int64
	name   string
	simple bool
	fields []field
}

// value is a decoded field value: a number, a string (or a reference to
// the string pool), a constant pool reference, an inline object or an
// array.
type value struct {
	n      int64
	s      string
	pool   int64 // class of the constant pool n indexes, 0 if none
	fields []value
}

// chunk is the state of one chunk being read.
type chunk struct {
	data    []byte
	cmp     bool
	classes map[int64]*class
	byName  map[string]*class
	pools   map[int64]map[int64]value // class -> index -> value
	start   int64                     // chunk start, ns since the epoch
	ticks0  int64
	tickHz  int64
	// work counts the values decoded, bounded by workPerByte per byte of
	// the chunk: a class without fields takes no bytes, so an array of
	// them would otherwise cost work its bytes do not bound.
	work int
	// stacks caches the frame names of the stack traces samples refer to.
	stacks map[int64][]string
}

const workPerByte = 4

// Parse reads every chunk of a recording.
func Parse(data []byte, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	for off := 0; off < len(data); {
		if len(data)-off < headerSize || !Sniff(data[off:]) {
			if off == 0 {
				return nil, errors.New("no JFR chunk header (FLR\\0)")
			}
			b.warn("bytes after the last chunk ignored")
			break
		}
		size := int64(binary.BigEndian.Uint64(data[off+8:]))
		if size < headerSize || size > int64(len(data)-off) {
			b.warn(fmt.Sprintf("chunk at offset %d claims %d bytes, %d are left: read what is there", off, size, len(data)-off))
			size = int64(len(data) - off)
		}
		if err := b.chunk(data[off : off+int(size)]); err != nil {
			if off == 0 {
				return nil, err
			}
			b.warn(fmt.Sprintf("chunk at offset %d: %v", off, err))
		}
		off += int(size)
	}
	return b.finish()
}

func (b *builder) chunk(data []byte) error {
	h := data[:headerSize]
	major := binary.BigEndian.Uint16(h[4:])
	if major < 1 || major > 2 {
		return fmt.Errorf("JFR version %d.%d; viewer reads versions 1 and 2 (JDK 9 and later)", major, binary.BigEndian.Uint16(h[6:]))
	}
	c := &chunk{
		data:    data,
		classes: map[int64]*class{},
		byName:  map[string]*class{},
		pools:   map[int64]map[int64]value{},
		start:   int64(binary.BigEndian.Uint64(h[32:])),
		ticks0:  int64(binary.BigEndian.Uint64(h[48:])),
		tickHz:  int64(binary.BigEndian.Uint64(h[56:])),
	}
	c.cmp = major >= 2 || binary.BigEndian.Uint32(h[64:])&1 != 0
	meta := int64(binary.BigEndian.Uint64(h[24:]))
	if meta < headerSize || meta >= int64(len(data)) {
		return fmt.Errorf("metadata offset %d is outside the chunk of %d bytes", meta, len(data))
	}
	if err := c.metadata(int(meta)); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	// Constant pools first, then events, which refer to them.
	for pass := 0; pass < 2; pass++ {
		for off := headerSize; off < len(data); {
			r := &buf{b: data, off: off, compressed: c.cmp}
			size, err := r.long(4)
			if err != nil || size <= 0 || size > int64(len(data)-off) {
				return fmt.Errorf("event at offset %d has a bad size", off)
			}
			r.b = data[:off+int(size)]
			typ, err := r.long(8)
			if err != nil {
				return fmt.Errorf("event at offset %d: %v", off, err)
			}
			switch {
			case pass == 0 && typ == 1:
				if err := c.constantPool(r); err != nil {
					b.warn(fmt.Sprintf("constant pool at offset %d: %v", off, err))
				}
			case pass == 1 && typ > 1:
				if err := b.event(c, r, typ); err != nil {
					b.skip(fmt.Sprintf("event at offset %d: %v", off, err))
				}
			}
			off += int(size)
		}
	}
	return nil
}

// element is one node of the metadata's element tree.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
}

func (c *chunk) metadata(off int) error {
	r := &buf{b: c.data, off: off, compressed: c.cmp}
	size, err := r.long(4)
	if err != nil || size <= 0 || size > int64(len(c.data)-off) {
		return errors.New("bad event size")
	}
	r.b = c.data[:off+int(size)]
	for range 4 { // type, start, duration, metadata id
		if _, err := r.long(8); err != nil {
			return err
		}
	}
	n, err := r.count(1)
	if err != nil {
		return err
	}
	strs := make([]string, n)
	for i := range strs {
		if strs[i], _, err = r.str(); err != nil {
			return err
		}
	}
	var read func(depth int) (*element, error)
	read = func(depth int) (*element, error) {
		if depth > maxNesting {
			return nil, errors.New("elements nest too deep")
		}
		str := func() (string, error) {
			i, err := r.long(4)
			if err != nil {
				return "", err
			}
			if i < 0 || i >= int64(len(strs)) {
				return "", fmt.Errorf("string %d of %d", i, len(strs))
			}
			return strs[i], nil
		}
		e := &element{attrs: map[string]string{}}
		if e.name, err = str(); err != nil {
			return nil, err
		}
		na, err := r.count(2)
		if err != nil {
			return nil, err
		}
		for range na {
			k, err := str()
			if err != nil {
				return nil, err
			}
			v, err := str()
			if err != nil {
				return nil, err
			}
			e.attrs[k] = v
		}
		nc, err := r.count(3)
		if err != nil {
			return nil, err
		}
		for range nc {
			ch, err := read(depth + 1)
			if err != nil {
				return nil, err
			}
			e.children = append(e.children, ch)
		}
		return e, nil
	}
	root, err := read(0)
	if err != nil {
		return err
	}
	var walk func(e *element, depth int)
	walk = func(e *element, depth int) {
		if e.name == "class" {
			cl := &class{name: e.attrs["name"], simple: e.attrs["simpleType"] == "true"}
			cl.id, _ = strconv.ParseInt(e.attrs["id"], 10, 64)
			for _, f := range e.children {
				if f.name != "field" {
					continue
				}
				fd := field{name: f.attrs["name"], pool: f.attrs["constantPool"] == "true", array: f.attrs["dimension"] == "1"}
				fd.class, _ = strconv.ParseInt(f.attrs["class"], 10, 64)
				cl.fields = append(cl.fields, fd)
			}
			c.classes[cl.id] = cl
			c.byName[cl.name] = cl
			return
		}
		for _, ch := range e.children {
			walk(ch, depth+1)
		}
	}
	walk(root, 0)
	return nil
}

// read decodes one value of class id.
func (c *chunk) read(r *buf, id int64, depth int) (value, error) {
	if depth > maxNesting {
		return value{}, errors.New("values nest too deep")
	}
	if c.work++; c.work > workPerByte*len(c.data)+1024 {
		return value{}, fmt.Errorf("more than %d values in a chunk of %d bytes", workPerByte*len(c.data)+1024, len(c.data))
	}
	cl := c.classes[id]
	if cl == nil {
		return value{}, fmt.Errorf("class %d is not in the metadata", id)
	}
	switch cl.name {
	case "boolean", "byte":
		v, err := r.byte()
		return value{n: int64(v)}, err
	case "short", "char":
		v, err := r.long(2)
		return value{n: v}, err
	case "int":
		v, err := r.long(4)
		return value{n: v}, err
	case "long":
		v, err := r.long(8)
		return value{n: v}, err
	case "float":
		if r.left() < 4 {
			return value{}, errShort
		}
		r.off += 4
		return value{}, nil
	case "double":
		if r.left() < 8 {
			return value{}, errShort
		}
		r.off += 8
		return value{}, nil
	case "java.lang.String":
		s, ref, err := r.str()
		if ref >= 0 {
			return value{n: ref, pool: id}, err
		}
		return value{s: s}, err
	}
	v := value{fields: make([]value, 0, len(cl.fields))}
	for _, f := range cl.fields {
		fv, err := c.fieldValue(r, f, depth)
		if err != nil {
			return value{}, err
		}
		v.fields = append(v.fields, fv)
	}
	return v, nil
}

func (c *chunk) fieldValue(r *buf, f field, depth int) (value, error) {
	one := func() (value, error) {
		if f.pool {
			if c.work++; c.work > workPerByte*len(c.data)+1024 {
				return value{}, fmt.Errorf("more than %d values in a chunk of %d bytes", workPerByte*len(c.data)+1024, len(c.data))
			}
			n, err := r.long(8)
			return value{n: n, pool: f.class}, err
		}
		return c.read(r, f.class, depth+1)
	}
	if !f.array {
		return one()
	}
	n, err := r.count(1)
	if err != nil {
		return value{}, err
	}
	a := value{fields: make([]value, 0, min(n, 1024))}
	for range n {
		v, err := one()
		if err != nil {
			return value{}, err
		}
		a.fields = append(a.fields, v)
	}
	return a, nil
}

func (c *chunk) constantPool(r *buf) error {
	for range 3 { // start, duration, delta
		if _, err := r.long(8); err != nil {
			return err
		}
	}
	if _, err := r.byte(); err != nil { // flush
		return err
	}
	np, err := r.count(2)
	if err != nil {
		return err
	}
	for range np {
		id, err := r.long(8)
		if err != nil {
			return err
		}
		n, err := r.count(2)
		if err != nil {
			return err
		}
		pool := c.pools[id]
		if pool == nil {
			pool = map[int64]value{}
			c.pools[id] = pool
		}
		for range n {
			idx, err := r.long(8)
			if err != nil {
				return err
			}
			v, err := c.read(r, id, 0)
			if err != nil {
				return err
			}
			pool[idx] = v
		}
	}
	return nil
}

// resolve follows a constant pool reference (and chains of them).
func (c *chunk) resolve(v value) value {
	for i := 0; v.pool != 0 && i < 8; i++ {
		v = c.pools[v.pool][v.n]
	}
	return v
}

// fieldOf returns the field name of an object of class cl.
func (c *chunk) fieldOf(cl *class, v value, name string) value {
	v = c.resolve(v)
	if cl == nil {
		return value{}
	}
	for i, f := range cl.fields {
		if f.name == name && i < len(v.fields) {
			return v.fields[i]
		}
	}
	return value{}
}

func (c *chunk) classOf(cl *class, name string) *class {
	if cl == nil {
		return nil
	}
	for _, f := range cl.fields {
		if f.name == name {
			return c.classes[f.class]
		}
	}
	return nil
}

// symbol is the text of a Symbol or String value.
func (c *chunk) symbol(v value) string {
	v = c.resolve(v)
	if len(v.fields) > 0 { // jdk.types.Symbol{string}
		v = c.resolve(v.fields[0])
	}
	return v.s
}

var errNoStack = errors.New("no stack trace")

// noStackTrace is the one frame of an event recorded without frames.
var noStackTrace = []string{"(no stack trace)"}

// frames returns the names of a stack trace's frames, leaf first.
func (c *chunk) frames(st value, stClass *class) ([]string, error) {
	fr := c.fieldOf(stClass, st, "frames")
	frameClass := c.classOf(stClass, "frames")
	methodClass := c.classOf(frameClass, "method")
	typeClass := c.classOf(methodClass, "type")
	if frameClass == nil || methodClass == nil {
		return nil, errNoStack
	}
	names := make([]string, 0, len(fr.fields))
	for _, f := range fr.fields {
		m := c.fieldOf(frameClass, f, "method")
		name := c.symbol(c.fieldOf(methodClass, m, "name"))
		cls := strings.ReplaceAll(c.symbol(c.fieldOf(typeClass, c.fieldOf(methodClass, m, "type"), "name")), "/", ".")
		if cls != "" {
			name = cls + "." + name
		}
		if name == "" {
			name = "(unknown)"
		}
		names = append(names, name)
	}
	return names, nil
}

// eventKinds are the events read, each with the sample type it adds to
// and the field its value is in ("" for a count of one).
var eventKinds = map[string]struct {
	kind  int
	value string
}{
	"jdk.ExecutionSample":             {kindCPU, ""},
	"jdk.NativeMethodSample":          {kindNative, ""},
	"jdk.ObjectAllocationSample":      {kindAlloc, "weight"},
	"jdk.ObjectAllocationInNewTLAB":   {kindAlloc, "tlabSize"},
	"jdk.ObjectAllocationOutsideTLAB": {kindAlloc, "allocationSize"},
	"jdk.JavaMonitorEnter":            {kindLock, "duration"},
	"jdk.JavaMonitorWait":             {kindLock, "duration"},
	"jdk.ThreadPark":                  {kindLock, "duration"},
}

func (b *builder) event(c *chunk, r *buf, typ int64) error {
	cl := c.classes[typ]
	if cl == nil {
		return nil
	}
	ek, ok := eventKinds[cl.name]
	if !ok {
		return nil
	}
	v, err := c.read(r, typ, 0)
	if err != nil {
		return err
	}
	var at int64 = math.MinInt64
	thread := ""
	var tid int64 = -1
	var stack []string
	weight := int64(1)
	for i, f := range cl.fields {
		fv := v.fields[i]
		switch f.name {
		case "startTime":
			if c.tickHz > 0 {
				at = c.start + int64(float64(fv.n-c.ticks0)*1e9/float64(c.tickHz))
			}
		case "sampledThread", "eventThread":
			tc := c.classes[f.class]
			thread = c.symbol(c.fieldOf(tc, fv, "javaName"))
			if thread == "" {
				thread = c.symbol(c.fieldOf(tc, fv, "osName"))
			}
			tid = c.fieldOf(tc, fv, "javaThreadId").n
		case "stackTrace":
			if st, ok := c.stacks[fv.n]; ok && fv.pool != 0 {
				stack = st
				break
			}
			if stack, err = c.frames(fv, c.classes[f.class]); err != nil {
				return err
			}
			if fv.pool != 0 {
				if c.stacks == nil {
					c.stacks = map[int64][]string{}
				}
				c.stacks[fv.n] = stack
			}
		}
		if f.name == ek.value {
			weight = fv.n
			if ek.kind == kindLock && c.tickHz > 0 {
				weight = int64(float64(fv.n) * 1e9 / float64(c.tickHz))
			}
		}
	}
	if len(stack) == 0 {
		// An event without frames (jfr print's "stackTrace = null": an
		// allocation on a compiler thread) keeps its weight, as the
		// recording's totals count it.
		stack = noStackTrace
	}
	if weight <= 0 {
		return nil
	}
	return b.add(ek.kind, weight, stack, thread, tid, at)
}
