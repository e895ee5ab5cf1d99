package jsonprof

import (
	"bytes"
	"fmt"
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

// cpuProfile is a V8 CPU profile (the JSON node --cpu-prof writes, and
// what DevTools' trace events carry in Profile and ProfileChunk events):
// the call tree's nodes, the node each sample hit, and the time (µs)
// from one sample to the next, the first from startTime.
type cpuProfile struct {
	nodes      []v8Node
	samples    []int64
	timeDeltas []int64
	startTime  float64
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
	d := newDecoder(data)
	var cp cpuProfile
	var timestamps []int64
	var old bool
	err := d.object(func(name string) error {
		var err error
		switch name {
		case "nodes":
			err = d.array(func() error {
				var n v8Node
				err := d.value(&n)
				cp.nodes = append(cp.nodes, n)
				return err
			})
		case "head":
			old = true
			err = readOldV8Tree(d, &cp.nodes)
		case "samples":
			cp.samples, err = d.ints(nil)
		case "timeDeltas":
			cp.timeDeltas, err = d.ints(nil)
		case "timestamps":
			timestamps, err = d.ints(nil)
		case "startTime":
			cp.startTime, err = d.number()
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
		cp.startTime *= 1e6
		cp.timeDeltas = make([]int64, len(timestamps))
		last := int64(math.Round(cp.startTime))
		for i, ts := range timestamps {
			cp.timeDeltas[i] = ts - last
			last = ts
		}
	}
	b := newBuilder(opt)
	typ := b.valueType("cpu", "nanoseconds")
	b.defType = typ
	if err := cp.read(b, b.thread(Thread{Pid: -1, Tid: -1}), typ); err != nil {
		return nil, fmt.Errorf("V8 CPU profile: %w", err)
	}
	return b.finish("V8 CPU profile")
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

// read adds the profile's samples to b, in thread th as sample type typ
// (nanoseconds), as speedscope's importFromChromeCPUProfile reads them:
// a sample weighs the time to the next sample with another node; (root)
// and (idle) are not frames; (program) and (garbage collector) are put
// on top of the stack before them.
func (cp *cpuProfile) read(b *builder, th int32, typ int) error {
	if len(cp.samples) == 0 {
		return nil
	}
	if len(cp.timeDeltas) < len(cp.samples) {
		return fmt.Errorf("%d samples but %d timeDeltas", len(cp.samples), len(cp.timeDeltas))
	}
	index := make(map[int64]int32, len(cp.nodes))
	for i, n := range cp.nodes {
		index[n.ID] = int32(i)
	}
	parent := make([]int32, len(cp.nodes))
	for i := range parent {
		parent[i] = -1
	}
	for i, n := range cp.nodes {
		if n.Parent != nil {
			if p, ok := index[*n.Parent]; ok {
				parent[i] = p
			}
		}
		for _, c := range n.Children {
			if ci, ok := index[c]; ok {
				parent[ci] = int32(i)
			}
		}
	}
	frames := make([]int32, len(cp.nodes))
	ignore := make([]bool, len(cp.nodes))
	onTop := make([]bool, len(cp.nodes))
	for i, n := range cp.nodes {
		frames[i] = b.frame(n.CallFrame.frame(true))
		fn := n.CallFrame.FunctionName
		ignore[i] = fn == "(root)" || fn == "(idle)" || n.CallFrame.URL == "native dummy.js"
		onTop[i] = fn == "(garbage collector)" || fn == "(program)"
	}

	// The samples where the node changes, with their times (µs from the
	// profile's start), made monotonic.
	type change struct {
		node int32 // -1: unknown node
		at   int64
	}
	var changes []change
	elapsed := cp.timeDeltas[0]
	lastValid := elapsed
	clamp := func() int64 {
		if elapsed < lastValid {
			return lastValid
		}
		lastValid = elapsed
		return elapsed
	}
	lookup := func(id int64) int32 {
		if i, ok := index[id]; ok {
			return i
		}
		return -1
	}
	var lastID int64
	haveLast := false
	for i, id := range cp.samples {
		if !haveLast || id != lastID {
			changes = append(changes, change{lookup(id), clamp()})
		}
		if i == len(cp.samples)-1 {
			if haveLast {
				changes = append(changes, change{lookup(lastID), clamp()})
			}
		} else {
			elapsed += cp.timeDeltas[i+1]
			lastID, haveLast = id, true
		}
	}

	start := int64(math.Round(cp.startTime))
	t := b.timeline(th, typ, true)
	var prev []int32 // the open nodes, root first
	open := make([]bool, len(cp.nodes))
	last := func() int32 {
		if len(prev) == 0 {
			return -1
		}
		return prev[len(prev)-1]
	}
	var toOpen []int32
	for _, c := range changes {
		at := (start + c.at) * 1000
		if err := t.advance(at); err != nil {
			return err
		}
		if c.node < 0 {
			continue
		}
		lca := c.node
		for lca >= 0 && !open[lca] {
			if onTop[lca] {
				lca = last()
			} else {
				lca = parent[lca]
			}
		}
		for len(prev) > 0 && last() != lca {
			open[last()] = false
			prev = prev[:len(prev)-1]
			if err := t.close(at); err != nil {
				return err
			}
		}
		toOpen = toOpen[:0]
		for n := c.node; n >= 0 && n != lca && !ignore[n]; {
			toOpen = append(toOpen, n)
			if onTop[n] {
				n = last()
			} else {
				n = parent[n]
			}
		}
		for i := len(toOpen) - 1; i >= 0; i-- {
			n := toOpen[i]
			if open[n] {
				break // a cycle in a malformed tree
			}
			if err := t.open(frames[n], at); err != nil {
				return err
			}
			open[n] = true
			prev = append(prev, n)
		}
	}
	return nil
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
	d := newDecoder(data)
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
	d := newDecoder(head)
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return ""
	}
	t, err := d.ReadToken()
	if err != nil || t.Kind() != '"' {
		return ""
	}
	return t.String()
}
