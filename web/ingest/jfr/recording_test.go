package jfr

import (
	"encoding/binary"
	"strconv"
	"testing"
	"unicode/utf16"
)

// A small JFR recording written from the format (the chunk header, the
// metadata event's element tree, constant pools, events): FuzzJFR's seed.
// A JDK's recording is hundreds of kilobytes (its metadata alone 103 KB),
// each execution of it with the fuzzer's instrumentation a tenth of a
// second; this one is 2 KB a chunk and goes through what the JDK's does in the
// reader, and a few paths more (every string encoding, an inline stack
// trace, fixed-width integers, a second chunk).

// recWriter appends JFR integers: LEB128 (at most 9 bytes, the 9th of 8
// bits) when compressed, else big-endian of their width.
type recWriter struct {
	b   []byte
	cmp bool
}

func (w *recWriter) long(n int, v int64) {
	if !w.cmp {
		for i := n - 1; i >= 0; i-- {
			w.b = append(w.b, byte(uint64(v)>>(8*i)))
		}
		return
	}
	u := uint64(v)
	for range 8 {
		if u < 0x80 {
			w.b = append(w.b, byte(u))
			return
		}
		w.b = append(w.b, byte(u&0x7f|0x80))
		u >>= 7
	}
	w.b = append(w.b, byte(u))
}

// size4 is an event's size in 4 bytes: padded LEB128 when compressed.
func (w *recWriter) size4(n int) {
	if !w.cmp {
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(n))
		return
	}
	w.b = append(w.b, byte(n&0x7f|0x80), byte(n>>7&0x7f|0x80), byte(n>>14&0x7f|0x80), byte(n>>21&0x7f))
}

// String encodings: null, empty, a reference to the string pool,
// UTF-8, UTF-16 chars, Latin-1.
const (
	strNull = iota
	strEmpty
	strRef
	strUTF8
	strUTF16
	strLatin1
)

func (w *recWriter) str(enc byte, s string) {
	w.b = append(w.b, enc)
	switch enc {
	case strRef:
		n, _ := strconv.Atoi(s)
		w.long(8, int64(n))
	case strUTF8:
		w.long(4, int64(len(s)))
		w.b = append(w.b, s...)
	case strUTF16:
		u := utf16.Encode([]rune(s))
		w.long(4, int64(len(u)))
		for _, c := range u {
			w.long(2, int64(c))
		}
	case strLatin1:
		rs := []rune(s)
		w.long(4, int64(len(rs)))
		for _, r := range rs {
			w.b = append(w.b, byte(r))
		}
	}
}

// event appends an event of type typ (0 the metadata, 1 a constant pool)
// whose payload body writes.
func (w *recWriter) event(typ int64, body func(e *recWriter)) {
	e := &recWriter{cmp: w.cmp}
	e.long(8, typ)
	body(e)
	w.size4(4 + len(e.b))
	w.b = append(w.b, e.b...)
}

// recField and recClass are the metadata's classes.
type recField struct {
	name  string
	class int64
	pool  bool
	array bool
}

type recClass struct {
	id     int64
	name   string
	fields []recField
}

// Class IDs of the recording.
const (
	idLong, idInt, idBoolean, idByte, idShort, idChar, idFloat, idDouble, idString = 20, 21, 22, 23, 24, 25, 26, 27, 28
	idSymbol, idClass, idMethod, idFrame, idStack, idThread                        = 30, 31, 32, 33, 34, 35
	idExec, idNative, idAllocSample, idTLAB, idOutsideTLAB                         = 101, 102, 103, 104, 105
	idMonitorEnter, idMonitorWait, idPark, idCPULoad                               = 106, 107, 108, 109
	idRatio                                                                        = 36
)

// recClasses are the recording's classes; noTID leaves javaThreadId out
// of java.lang.Thread (a chunk whose threads have no Java ID).
func recClasses(noTID bool) []recClass {
	start := recField{"startTime", idLong, false, false}
	thread := func(name string) recField { return recField{name, idThread, true, false} }
	stack := recField{"stackTrace", idStack, true, false}
	class := func(name string) recField { return recField{name, idClass, true, false} }
	long := func(name string) recField { return recField{name, idLong, false, false} }
	cs := []recClass{
		{idLong, "long", nil}, {idInt, "int", nil}, {idBoolean, "boolean", nil}, {idByte, "byte", nil},
		{idShort, "short", nil}, {idChar, "char", nil}, {idFloat, "float", nil}, {idDouble, "double", nil},
		{idString, "java.lang.String", nil},
		{idSymbol, "jdk.types.Symbol", []recField{{"string", idString, false, false}}},
		{idClass, "java.lang.Class", []recField{{"name", idSymbol, true, false}}},
		{idMethod, "jdk.types.Method", []recField{{"type", idClass, true, false}, {"name", idSymbol, true, false}, {"modifiers", idInt, false, false}, {"hidden", idBoolean, false, false}}},
		{idFrame, "jdk.types.StackFrame", []recField{{"method", idMethod, true, false}, {"lineNumber", idInt, false, false}, {"type", idChar, false, false}}},
		{idStack, "jdk.types.StackTrace", []recField{{"truncated", idBoolean, false, false}, {"frames", idFrame, false, true}}},
		// A pooled class of every other width, for the reader to pass over.
		{idRatio, "jdk.types.Ratio", []recField{{"f", idFloat, false, false}, {"d", idDouble, false, false}, {"s", idShort, false, false}, {"b", idByte, false, false}}},
		{idThread, "java.lang.Thread", []recField{{"osName", idString, false, false}, long("osThreadId"), {"javaName", idString, false, false}, long("javaThreadId")}},
		{idExec, "jdk.ExecutionSample", []recField{start, thread("sampledThread"), stack, {"state", idByte, false, false}}},
		// An inline stack trace: the reader takes it as the JDK's pooled ones.
		{idNative, "jdk.NativeMethodSample", []recField{start, thread("sampledThread"), {"stackTrace", idStack, false, false}, {"state", idShort, false, false}}},
		{idAllocSample, "jdk.ObjectAllocationSample", []recField{start, thread("eventThread"), stack, class("objectClass"), long("weight")}},
		{idTLAB, "jdk.ObjectAllocationInNewTLAB", []recField{start, thread("eventThread"), stack, class("objectClass"), long("allocationSize"), long("tlabSize")}},
		{idOutsideTLAB, "jdk.ObjectAllocationOutsideTLAB", []recField{start, thread("eventThread"), stack, class("objectClass"), long("allocationSize")}},
		{idMonitorEnter, "jdk.JavaMonitorEnter", []recField{start, long("duration"), thread("eventThread"), stack, class("monitorClass"), thread("previousOwner"), long("address")}},
		{idMonitorWait, "jdk.JavaMonitorWait", []recField{start, long("duration"), thread("eventThread"), stack, class("monitorClass"), long("timeout"), {"timedOut", idBoolean, false, false}}},
		{idPark, "jdk.ThreadPark", []recField{start, long("duration"), thread("eventThread"), stack, class("parkedClass"), long("timeout")}},
		{idCPULoad, "jdk.CPULoad", []recField{start, {"jvmUser", idFloat, false, false}, {"machineTotal", idDouble, false, false}}},
	}
	if noTID {
		for i := range cs {
			if cs[i].id == idThread {
				cs[i].fields = cs[i].fields[:3]
			}
		}
	}
	return cs
}

// metadata appends the metadata event: its strings, then the element
// tree root > metadata > class > field.
func (w *recWriter) metadata(cs []recClass) {
	type element struct {
		name     string
		attrs    [][2]string
		children []element
	}
	meta := element{name: "metadata"}
	for _, c := range cs {
		ce := element{name: "class", attrs: [][2]string{{"id", strconv.FormatInt(c.id, 10)}, {"name", c.name}}}
		if c.fields == nil && c.id < idSymbol {
			ce.attrs = append(ce.attrs, [2]string{"simpleType", "false"})
		}
		if c.id >= idExec { // events carry annotations (their labels) beside their fields
			ce.children = append(ce.children, element{name: "annotation", attrs: [][2]string{{"class", "200"}, {"value", c.name}}})
		}
		for _, f := range c.fields {
			fe := element{name: "field", attrs: [][2]string{{"name", f.name}, {"class", strconv.FormatInt(f.class, 10)}}}
			if f.pool {
				fe.attrs = append(fe.attrs, [2]string{"constantPool", "true"})
			}
			if f.array {
				fe.attrs = append(fe.attrs, [2]string{"dimension", "1"})
			}
			ce.children = append(ce.children, fe)
		}
		meta.children = append(meta.children, ce)
	}
	root := element{name: "root", children: []element{meta, {name: "region", attrs: [][2]string{{"locale", "en_US"}}}}}
	var strs []string
	index := map[string]int64{}
	intern := func(s string) int64 {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = int64(len(strs))
		strs = append(strs, s)
		return index[s]
	}
	var collect func(e element)
	collect = func(e element) {
		intern(e.name)
		for _, a := range e.attrs {
			intern(a[0])
			intern(a[1])
		}
		for _, c := range e.children {
			collect(c)
		}
	}
	collect(root)
	w.event(0, func(e *recWriter) {
		e.long(8, 0) // start
		e.long(8, 0) // duration
		e.long(8, 1) // metadata ID
		e.long(4, int64(len(strs)))
		for _, s := range strs {
			e.str(strUTF8, s)
		}
		var write func(el element)
		write = func(el element) {
			e.long(4, index[el.name])
			e.long(4, int64(len(el.attrs)))
			for _, a := range el.attrs {
				e.long(4, index[a[0]])
				e.long(4, index[a[1]])
			}
			e.long(4, int64(len(el.children)))
			for _, c := range el.children {
				write(c)
			}
		}
		write(root)
	})
}

// frame is an inline jdk.types.StackFrame of method m.
func (w *recWriter) frame(m int64, line int64) {
	w.long(8, m)    // method (pool)
	w.long(4, line) // lineNumber
	w.long(2, 'J')  // type (a char)
}

// stackTrace is an inline jdk.types.StackTrace of methods, leaf first.
func (w *recWriter) stackTrace(methods ...int64) {
	w.b = append(w.b, 0) // truncated
	w.long(4, int64(len(methods)))
	for i, m := range methods {
		w.frame(m, int64(10+i))
	}
}

// testRecording is a recording of threads main and worker running
// Main.work under Main.run and ArrayList.<init> under them, allocating,
// waiting on monitors and parking; compressed integers (JFR 2) or fixed
// ones (JFR 1 without the compressed-integers feature). chunks chunks
// each hold all of it, those after the first without Java thread IDs.
func testRecording(v2 bool, chunks int) []byte {
	var out []byte
	for k := range chunks {
		noTID := k > 0
		w := &recWriter{cmp: v2}
		w.b = make([]byte, headerSize)
		w.metadata(recClasses(noTID))
		cp := len(w.b)
		w.event(1, func(e *recWriter) {
			e.long(8, 0) // start
			e.long(8, 0) // duration
			e.long(8, 0) // delta to the previous pool
			e.b = append(e.b, 1)
			pools := []struct {
				class int64
				n     int
				entry func(i int)
			}{
				{idString, 1, func(int) { e.long(8, 1); e.str(strUTF8, "main") }},
				{idSymbol, 5, func(i int) {
					e.long(8, int64(i+1))
					switch i {
					case 0:
						e.str(strUTF8, "Main")
					case 1:
						e.str(strUTF16, "run")
					case 2:
						e.str(strLatin1, "wörk")
					case 3:
						e.str(strUTF8, "java/util/ArrayList")
					case 4:
						e.str(strRef, "1") // "main", from the string pool
					}
				}},
				{idClass, 2, func(i int) { e.long(8, int64(i+1)); e.long(8, []int64{1, 4}[i]) }},
				{idMethod, 3, func(i int) {
					e.long(8, int64(i+1))
					e.long(8, []int64{1, 1, 2}[i]) // type
					e.long(8, []int64{2, 3, 5}[i]) // name
					e.long(4, 1)                   // modifiers
					e.b = append(e.b, 0)           // hidden
				}},
				{idStack, 3, func(i int) {
					e.long(8, int64(i+1))
					switch i {
					case 0:
						e.stackTrace(2, 1) // work < run
					case 1:
						e.stackTrace(3, 2, 1) // <init> < work < run
					case 2:
						e.stackTrace() // no frames
					}
				}},
				{idRatio, 1, func(int) {
					e.long(8, 1)
					e.b = append(e.b, 0x3f, 0x80, 0, 0) // 1.0f
					e.b = append(e.b, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0)
					e.long(2, -1)
					e.b = append(e.b, 7)
				}},
				{idThread, 2, func(i int) {
					e.long(8, int64(i+1))
					if i == 0 {
						e.str(strUTF8, "main")
						e.long(8, 4000)
						e.str(strUTF8, "main")
					} else {
						e.str(strLatin1, "worker")
						e.long(8, 4001)
						e.str(strNull, "")
					}
					if !noTID {
						e.long(8, int64(i+1))
					}
				}},
			}
			e.long(4, int64(len(pools)))
			for _, p := range pools {
				e.long(8, p.class)
				e.long(4, int64(p.n))
				for i := range p.n {
					p.entry(i)
				}
			}
		})
		at := int64(1_000_000)
		ev := func(typ int64, body func(e *recWriter)) {
			w.event(typ, func(e *recWriter) { e.long(8, at); body(e) })
			at += 10_000_000
		}
		for i, st := range []int64{1, 2, 1, 3} { // the last has no frames
			ev(idExec, func(e *recWriter) { e.long(8, int64(i%2+1)); e.long(8, st); e.b = append(e.b, 0) })
		}
		ev(idNative, func(e *recWriter) { e.long(8, 2); e.stackTrace(1); e.long(2, 3) })
		ev(idAllocSample, func(e *recWriter) { e.long(8, 1); e.long(8, 2); e.long(8, 2); e.long(8, 4096) })
		ev(idTLAB, func(e *recWriter) { e.long(8, 1); e.long(8, 2); e.long(8, 2); e.long(8, 100); e.long(8, 65536) })
		ev(idOutsideTLAB, func(e *recWriter) { e.long(8, 2); e.long(8, 2); e.long(8, 2); e.long(8, 1000) })
		ev(idMonitorEnter, func(e *recWriter) {
			e.long(8, 5_000_000)
			e.long(8, 1)
			e.long(8, 1)
			e.long(8, 1)
			e.long(8, 2)
			e.long(8, 0xdead)
		})
		ev(idMonitorWait, func(e *recWriter) {
			e.long(8, 7_000_000)
			e.long(8, 2)
			e.long(8, 1)
			e.long(8, 1)
			e.long(8, 0)
			e.b = append(e.b, 1)
		})
		ev(idPark, func(e *recWriter) {
			e.long(8, 30_000_000)
			e.long(8, 2)
			e.long(8, 1)
			e.long(8, 2)
			e.long(8, 30_000_000)
		})
		ev(idCPULoad, func(e *recWriter) { e.b = append(e.b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) })

		h := w.b[:headerSize]
		copy(h, "FLR\x00")
		major := uint16(1)
		if v2 {
			major = 2
		}
		binary.BigEndian.PutUint16(h[4:], major)
		binary.BigEndian.PutUint64(h[8:], uint64(len(w.b)))
		binary.BigEndian.PutUint64(h[16:], uint64(cp))
		binary.BigEndian.PutUint64(h[24:], headerSize)
		binary.BigEndian.PutUint64(h[32:], 1_700_000_000_000_000_000) // start, ns
		binary.BigEndian.PutUint64(h[40:], uint64(at))                // duration
		binary.BigEndian.PutUint64(h[48:], 0)                         // start ticks
		binary.BigEndian.PutUint64(h[56:], 1_000_000_000)             // ticks a second
		out = append(out, w.b...)
	}
	return out
}

// TestTestRecording: the recording FuzzJFR starts from is read whole, in
// both integer encodings: its samples, allocations and waits by stack,
// the thread names from each string encoding, and the event without
// frames under a frame saying so.
func TestTestRecording(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		rec := testRecording(v2, 2)
		p, err := Parse(rec, Options{})
		if err != nil {
			t.Fatalf("JFR %v: %v", v2, err)
		}
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
		got := map[string][4]int64{}
		threads := map[string]bool{}
		for _, s := range p.Sample {
			var names []string
			for _, l := range s.Location {
				names = append(names, l.Line[0].Function.Name)
			}
			k := ""
			for i := len(names) - 1; i >= 0; i-- {
				k += names[i] + ";"
			}
			v := got[k]
			for i := range v {
				v[i] += s.Value[i]
			}
			got[k] = v
			threads[s.Label["comm"][0]] = true
		}
		want := map[string][4]int64{
			"Main.run;Main.wörk;":                          {2 * 2, 2 * 2, 0, 2 * (5 + 7 + 30) * 1_000_000},
			"Main.run;Main.wörk;java.util.ArrayList.main;": {2 * 1, 2 * 1, 2 * (4096 + 65536 + 1000), 0},
			"Main.run;":         {0, 2 * 1, 0, 0},
			"(no stack trace);": {2 * 1, 2 * 1, 0, 0},
		}
		if len(got) != len(want) {
			t.Errorf("JFR %v: stacks %v; want %v", v2, got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("JFR %v: %s has %v; want %v", v2, k, got[k], w)
			}
		}
		if !threads["main"] || !threads["worker"] {
			t.Errorf("JFR %v: threads %v; want main and worker", v2, threads)
		}
		t.Logf("JFR %v: %d bytes, %v", v2, len(rec), p.Comments)
	}
}
