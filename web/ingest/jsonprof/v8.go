package jsonprof

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// v8CallFrame is where a V8 profile node runs.
type v8CallFrame struct {
	FunctionName string     `json:"functionName"`
	URL          string     `json:"url"`
	LineNumber   *float64   `json:"lineNumber"`
	ColumnNumber *float64   `json:"columnNumber"`
	ScriptID     flexNumber `json:"scriptId"`
}

// frame names a call frame as DevTools and speedscope do: an unnamed
// function is "(anonymous FILE:LINE)". oneBased says the profile's lines
// count from 0 and are shown from 1 (CPU profiles; heap profiles show
// them as they are).
func (c v8CallFrame) frame(oneBased bool) Frame {
	line, col := int64(-1), int64(-1)
	if c.LineNumber != nil {
		line = int64(*c.LineNumber)
		if oneBased {
			line++
		}
	}
	if c.ColumnNumber != nil {
		col = int64(*c.ColumnNumber)
		if oneBased {
			col++
		}
	}
	name := c.FunctionName
	if name == "" {
		name = "(anonymous)"
		if c.URL != "" {
			l := "undefined"
			if c.LineNumber != nil {
				l = strconv.FormatInt(line, 10)
			}
			name = "(anonymous " + c.URL[strings.LastIndexByte(c.URL, '/')+1:] + ":" + l + ")"
		}
	}
	return Frame{Name: name, File: c.URL, Line: line, Col: col}
}

// v8Node is one node of a V8 CPU profile's tree.
type v8Node struct {
	ID        int64       `json:"id"`
	CallFrame v8CallFrame `json:"callFrame"`
	Children  []int64     `json:"children"`
	Parent    *int64      `json:"parent"`
}

// SniffCPUProfile reports whether head starts a V8 CPU profile: an
// object whose first name is "nodes" and whose nodes have a callFrame,
// or the old format's "head" tree of function names.
func SniffCPUProfile(head []byte) bool {
	first := firstName(head)
	return first == "nodes" && bytes.Contains(head, []byte(`"callFrame"`)) ||
		first == "head" && !bytes.Contains(head[:min(len(head), 200)], []byte(`"callFrame"`)) && bytes.Contains(head, []byte(`"functionName"`))
}

// ParseCPUProfile reads a V8 CPU profile (.cpuprofile: node --cpu-prof,
// DevTools' "Save profile", and the old format of v8-profiler's head
// tree and timestamps). A sample weighs the time to the next sample, and
// (idle) and (root) are not frames, as in DevTools and speedscope.
func ParseCPUProfile(data []byte, opt Options) (*profile.Profile, error) {
	return ReadCPUProfile(bytes.NewReader(data), opt)
}

// ReadCPUProfile is ParseCPUProfile of the input r gives, read as a
// stream: it keeps the profile's nodes and, until their time deltas
// arrive, its samples run-length encoded (node --cpu-prof and DevTools
// write all samples, then all deltas), not the input.
func ReadCPUProfile(r io.Reader, opt Options) (*profile.Profile, error) {
	b, err := readCPUProfile(r, opt)
	if err != nil {
		return nil, err
	}
	return b.finish("V8 CPU profile")
}

// readCPUProfile reads the V8 CPU profile r gives into a builder, for
// ReadCPUProfile.
func readCPUProfile(r io.Reader, opt Options) (*builder, error) {
	d := newDecoder(r)
	b := newBuilder(opt)
	typ := b.valueType("cpu", "nanoseconds")
	b.defType = typ
	p := newV8Profile(b, b.thread(Thread{Pid: -1, Tid: -1}), typ)
	var oldNodes []v8Node
	var timestamps []int64
	var old bool
	var deltas int64
	err := d.object(func(name string) error {
		var err error
		switch name {
		case "nodes":
			var nodes []v8Node
			err = d.array(func() error {
				var n v8Node
				err := d.value(&n)
				nodes = append(nodes, n)
				return err
			})
			if err == nil {
				err = p.addNodes(nodes)
			}
			if err == nil {
				err = p.pump()
			}
		case "head":
			old = true
			err = readOldV8Tree(d, &oldNodes)
		case "samples":
			err = d.array(func() error {
				v, err := d.int()
				if err != nil {
					return err
				}
				return p.samples(v)
			})
		case "timeDeltas":
			err = d.array(func() error {
				v, err := d.int()
				if err != nil {
					return err
				}
				deltas++
				return p.delta(v)
			})
		case "timestamps":
			timestamps, err = d.ints(nil)
		case "startTime":
			p.startTime, err = d.number()
		default:
			err = d.SkipValue()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("V8 CPU profile: %w", d.errAt(err))
	}
	if old {
		// The old format's times are seconds and its samples' times
		// absolute microseconds.
		p.startTime *= 1e6
		if err := p.addNodes(oldNodes); err != nil {
			return nil, fmt.Errorf("V8 CPU profile: %w", err)
		}
		last := int64(math.Round(p.startTime))
		for _, ts := range timestamps {
			deltas++
			if err := p.delta(ts - last); err != nil {
				return nil, fmt.Errorf("V8 CPU profile: %w", err)
			}
			last = ts
		}
	}
	unpaired, err := p.end()
	if err != nil {
		return nil, fmt.Errorf("V8 CPU profile: %w", err)
	}
	if unpaired > 0 {
		return nil, fmt.Errorf("V8 CPU profile: %d samples but %d timeDeltas", int64(deltas)+unpaired, deltas)
	}
	return b, nil
}

// readOldV8Tree reads the old format's tree of nodes into nodes.
func readOldV8Tree(d decoder, nodes *[]v8Node) error {
	var n v8Node
	idx := len(*nodes)
	*nodes = append(*nodes, n)
	err := d.object(func(name string) error {
		var err error
		switch name {
		case "id":
			n.ID, err = d.int()
		case "functionName":
			n.CallFrame.FunctionName, err = d.string()
		case "url":
			n.CallFrame.URL, err = d.string()
		case "lineNumber":
			var l float64
			l, err = d.number()
			n.CallFrame.LineNumber = &l
		case "children":
			err = d.array(func() error {
				child := len(*nodes)
				if err := readOldV8Tree(d, nodes); err != nil {
					return err
				}
				n.Children = append(n.Children, (*nodes)[child].ID)
				return nil
			})
		default:
			err = d.SkipValue()
		}
		return err
	})
	zero := 0.0
	n.CallFrame.ColumnNumber = &zero
	(*nodes)[idx] = n
	return err
}

// SniffHeapProfile reports whether head starts a V8 heap-sampling
// profile (.heapprofile): a "head" node with a callFrame and selfSize.
func SniffHeapProfile(head []byte) bool {
	return firstName(head) == "head" && bytes.Contains(head[:min(len(head), 200)], []byte(`"callFrame"`))
}

// ParseHeapProfile reads a V8 heap-sampling profile (DevTools' "Allocation
// sampling", node --heap-prof): each node's selfSize is the bytes
// allocated on its stack, (root) included, as speedscope reads it.
func ParseHeapProfile(data []byte, opt Options) (*profile.Profile, error) {
	return ReadHeapProfile(bytes.NewReader(data), opt)
}

// ReadHeapProfile is ParseHeapProfile of the input r gives, read as a
// stream: it keeps the builder's stacks and values, not the input.
func ReadHeapProfile(r io.Reader, opt Options) (*profile.Profile, error) {
	d := newDecoder(r)
	b := newBuilder(opt)
	typ := b.valueType("space", "bytes")
	b.defType = typ
	th := b.thread(Thread{Pid: -1, Tid: -1})
	found := false
	var readNode func(parent int32) error
	readNode = func(parent int32) error {
		var cf v8CallFrame
		var self float64
		stack := int32(-1)
		err := d.object(func(name string) error {
			switch name {
			case "callFrame":
				if err := d.value(&cf); err != nil {
					return err
				}
				stack = b.push(parent, b.frame(cf.frame(false)))
				return nil
			case "selfSize":
				var err error
				self, err = d.number()
				return err
			case "children":
				if stack < 0 {
					return fmt.Errorf("a node's children come before its callFrame")
				}
				return d.array(func() error { return readNode(stack) })
			}
			return d.SkipValue()
		})
		if err != nil {
			return err
		}
		if stack < 0 {
			return fmt.Errorf("a node has no callFrame")
		}
		return b.add(stack, th, typ, int64(math.Round(self)), noTime, false)
	}
	err := d.object(func(name string) error {
		if name == "head" {
			found = true
			return readNode(-1)
		}
		return d.SkipValue()
	})
	if err != nil {
		return nil, fmt.Errorf("V8 heap profile: %w", d.errAt(err))
	}
	if !found {
		return nil, fmt.Errorf("V8 heap profile: no head node")
	}
	return b.finish("V8 heap profile")
}

// firstName returns the first name of the JSON object head starts with.
func firstName(head []byte) string {
	d := newDecoder(bytes.NewReader(head))
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return ""
	}
	t, err := d.ReadToken()
	if err != nil || t.Kind() != '"' {
		return ""
	}
	return t.String()
}
