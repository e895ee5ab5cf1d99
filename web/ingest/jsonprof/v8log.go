package jsonprof

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/google/pprof/profile"
)

// SniffV8Log reports whether head starts the JSON that `node
// --prof-process --preprocess` makes of a `node --prof` log: an object
// whose first name is "code", a table of code objects with a type.
func SniffV8Log(head []byte) bool {
	return firstName(head) == "code" && bytes.Contains(head, []byte(`"type"`))
}

// v8Code is one entry of a preprocessed V8 log's code table.
type v8Code struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Kind string `json:"kind"`
}

var (
	v8CPPName = regexp.MustCompile(`[tT] ([^(<]*)`)
	v8JSName  = regexp.MustCompile(`([a-zA-Z0-9\._\-$]*) ([a-zA-Z0-9\.\-_/$]*):(\d+):(\d+)`)
)

// frame names a code object as speedscope does: C++ and shared library
// code, IC handlers, stubs and builtins get a prefix; JavaScript code is
// its function, file and line.
func (c *v8Code) frame() Frame {
	if c == nil || c.Type == "" {
		return Frame{Name: "(unknown type)", Line: -1, Col: -1}
	}
	name := c.Name
	switch c.Type {
	case "CPP":
		if m := v8CPPName.FindStringSubmatch(name); m != nil {
			name = "(c++) " + m[1]
		}
	case "SHARED_LIB":
		name = "(LIB) " + name
	case "JS":
		if m := v8JSName.FindStringSubmatch(name); m != nil {
			file := m[2]
			line, _ := strconv.ParseInt(m[3], 10, 64)
			col, _ := strconv.ParseInt(m[4], 10, 64)
			fn := m[1]
			if fn == "" {
				fn = "(anonymous)"
				if file != "" {
					fn = "(anonymous " + file[strings.LastIndexByte(file, '/')+1:] + ":" + m[3] + ")"
				}
			}
			if file == "" {
				file = "(unknown file)"
			}
			return Frame{Name: fn, File: file, Line: line, Col: col}
		}
	case "CODE":
		switch c.Kind {
		case "LoadIC", "StoreIC", "KeyedStoreIC", "KeyedLoadIC", "LoadGlobalIC", "Handler":
			name = "(IC) " + name
		case "BytecodeHandler":
			name = "(bytecode) ~" + name
		case "Stub":
			name = "(stub) " + name
		case "Builtin":
			name = "(builtin) " + name
		case "RegExp":
			name = "(regexp) " + name
		}
	default:
		name = "(" + c.Type + ") " + name
	}
	return Frame{Name: name, Line: -1, Col: -1}
}

// ParseV8Log reads a preprocessed `node --prof` log (`node --prof-process
// --preprocess isolate*.log`): each tick's stack of code objects weighs
// the time since the tick before it, as speedscope reads it; times kept.
func ParseV8Log(data []byte, opt Options) (*profile.Profile, error) {
	return ReadV8Log(bytes.NewReader(data), opt)
}

// v8TickMemory is what a kept tick takes besides its stack's words.
const v8TickMemory = 48

// ReadV8Log is ParseV8Log of the input r gives, read as a stream: it
// keeps the code table and the ticks (put in time order once all are
// read), each taken from opt.Reserve as it is read, not the input; more
// ticks than opt.MaxRecords end the read at once.
func ReadV8Log(r io.Reader, opt Options) (*profile.Profile, error) {
	d := newDecoder(r)
	b := newBuilder(opt)
	var code []v8Code
	type tick struct {
		tm int64
		s  []int64
	}
	var ticks []tick
	err := d.object(func(name string) error {
		switch name {
		case "code":
			return d.array(func() error {
				var c v8Code
				err := d.value(&c)
				code = append(code, c)
				if err == nil {
					err = b.keep(int64(unsafe.Sizeof(c)) + int64(len(c.Name)+len(c.Type)+len(c.Kind)))
				}
				return err
			})
		case "ticks":
			return d.array(func() error {
				if opt.MaxRecords > 0 && len(ticks) >= opt.MaxRecords {
					return fmt.Errorf("%w: more than %d ticks (restart the server with a larger --max-records to accept it)", ErrLimit, opt.MaxRecords)
				}
				var t tick
				err := d.object(func(name string) error {
					var err error
					switch name {
					case "tm":
						t.tm, err = d.int()
					case "s":
						t.s, err = d.ints(nil)
					default:
						err = d.SkipValue()
					}
					return err
				})
				ticks = append(ticks, t)
				if err == nil {
					err = b.keep(v8TickMemory + 8*int64(cap(t.s)))
				}
				return err
			})
		}
		return d.SkipValue()
	})
	if err != nil {
		return nil, fmt.Errorf("node --prof log: %w", d.errAt(err))
	}
	typ := b.valueType("cpu", "nanoseconds")
	b.defType = typ
	th := b.thread(Thread{Pid: -1, Tid: -1})
	sort.SliceStable(ticks, func(i, j int) bool { return ticks[i].tm < ticks[j].tm })
	frames := map[int64]int32{}
	frameOf := func(id int64) int32 {
		if f, ok := frames[id]; ok {
			return f
		}
		var f int32
		switch {
		case id > int64(len(code)):
			f = b.frame(Frame{Name: "0x" + strconv.FormatInt(id, 16), Line: -1, Col: -1})
		case id == int64(len(code)):
			f = b.frame((*v8Code)(nil).frame())
		default:
			f = b.frame(code[id].frame())
		}
		frames[id] = f
		return f
	}
	var last int64
	for _, t := range ticks {
		stack := int32(-1)
		for i := len(t.s) - 2; i >= 0; i -= 2 {
			id := t.s[i]
			if id < 0 {
				continue
			}
			stack = b.push(stack, frameOf(id))
		}
		if err := b.add(stack, th, typ, (t.tm-last)*1000, last*1000, true); err != nil {
			return nil, err
		}
		last = t.tm
	}
	return b.finish("node --prof log")
}
