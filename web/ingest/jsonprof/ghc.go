package jsonprof

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"

	"github.com/google/pprof/profile"
)

// SniffGHC reports whether head starts a GHC JSON profile (a Haskell
// program run with +RTS -pj): an object with GHC's run-time-system keys,
// as speedscope tells it.
func SniffGHC(head []byte) bool {
	n := topNames(head)
	return n["rts_arguments"] && n["initial_capabilities"]
}

// ghcSrcLoc is where a cost centre's src_loc names its file and first
// line: "Main.hs:12:1-20", "Main.hs:(12,1)-(14,30)".
var ghcSrcLoc = regexp.MustCompile(`^(.+?):\(?(\d+)[,:](\d+)`)

// ParseGHC reads a GHC JSON profile from data (ReadGHC).
func ParseGHC(data []byte, opt Options) (*profile.Profile, error) {
	return ReadGHC(bytes.NewReader(data), opt)
}

// ReadGHC reads a GHC JSON profile (.prof written by +RTS -pj: see GHC's
// users guide, "JSON profile format") as speedscope reads it: the cost
// centre tree is the stacks, a node's ticks its own time (each tick
// tick_interval µs) and its alloc its own allocation in bytes, two sample
// types. A cost centre is named MODULE.LABEL; its src_loc, unless a
// <placeholder>, gives the frame's file and line. The profile has no
// times: GHC sums them per cost centre stack. The input is read as a
// stream: it keeps the cost centres and the tree's stacks, and a node's
// values only when tick_interval comes after the tree (GHC writes it
// before).
func ReadGHC(r io.Reader, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	d := newDecoder(r)
	timeType := b.valueType("time", "nanoseconds")
	allocType := b.valueType("alloc", "bytes")
	b.defType = timeType
	th := b.thread(Thread{Pid: -1, Tid: -1})
	tickNanos := 1e6 // GHC's default tick, 1 ms, when the file has none
	// ccFrame is the frame of each cost centre id, the tree's or the
	// table's, whichever names it first; named marks the ones the
	// table describes.
	ccFrame := map[int64]int32{}
	named := map[int64]bool{}
	frameOf := func(id int64) int32 {
		if f, ok := ccFrame[id]; ok {
			return f
		}
		f := int32(len(b.frames))
		b.frames = append(b.frames, Frame{Name: "cost centre " + strconv.FormatInt(id, 10), Line: -1, Col: -1})
		ccFrame[id] = f
		return f
	}
	// Each node's own ticks and bytes, added once the tick is known.
	type nodeValue struct {
		stack        int32
		ticks, alloc int64
	}
	var values []nodeValue
	// tickKnown says tick_interval was read: a node's values are added
	// as it ends from then on.
	tickKnown := false
	add := func(v nodeValue) error {
		if err := b.add(v.stack, th, timeType, int64(math.Round(float64(v.ticks)*tickNanos)), noTime, false); err != nil {
			return err
		}
		return b.add(v.stack, th, allocType, v.alloc, noTime, false)
	}
	var readNode func(parent int32) error
	readNode = func(parent int32) error {
		var id int64 = -1
		stack := int32(-1)
		var ticks, alloc int64
		err := d.object(func(name string) error {
			var err error
			switch name {
			case "id":
				id, err = d.int()
			case "ticks":
				ticks, err = d.int()
			case "alloc":
				alloc, err = d.int()
			case "children":
				if id < 0 {
					return fmt.Errorf("at byte %d: a profile node's children come before its id", d.InputOffset())
				}
				stack = b.push(parent, frameOf(id))
				err = d.array(func() error { return readNode(stack) })
			default:
				err = d.SkipValue()
			}
			return err
		})
		if err != nil {
			return err
		}
		if id < 0 {
			return fmt.Errorf("at byte %d: a profile node has no id", d.InputOffset())
		}
		if stack < 0 {
			stack = b.push(parent, frameOf(id))
		}
		if err := b.keep(nodeMemory); err != nil {
			return err
		}
		if ticks < 0 || alloc < 0 {
			b.skip(fmt.Sprintf("cost centre %d has %d ticks and %d bytes", id, ticks, alloc))
			return nil
		}
		if tickKnown {
			return add(nodeValue{stack, ticks, alloc})
		}
		values = append(values, nodeValue{stack, ticks, alloc})
		return b.keep(24)
	}
	sawTree := false
	err := d.object(func(name string) error {
		switch name {
		case "tick_interval":
			us, err := d.number()
			if err == nil && us > 0 && us < 1e9 {
				tickNanos = us * 1e3
			}
			tickKnown = !sawTree
			return err
		case "cost_centres":
			return d.array(func() error {
				var cc struct {
					ID     int64  `json:"id"`
					Label  string `json:"label"`
					Module string `json:"module"`
					SrcLoc string `json:"src_loc"`
				}
				if err := d.value(&cc); err != nil {
					return err
				}
				f := frameOf(cc.ID)
				fr := Frame{Name: cc.Module + "." + cc.Label, Line: -1, Col: -1}
				if cc.SrcLoc != "" && cc.SrcLoc[0] != '<' {
					fr.File = cc.SrcLoc
					if m := ghcSrcLoc.FindStringSubmatch(cc.SrcLoc); m != nil {
						fr.File = m[1]
						fr.Line, _ = strconv.ParseInt(m[2], 10, 64)
						fr.Col, _ = strconv.ParseInt(m[3], 10, 64)
					}
				}
				b.frames[f] = fr
				named[cc.ID] = true
				return b.keep(nodeMemory + int64(len(fr.Name)+len(fr.File)))
			})
		case "profile":
			sawTree = true
			return readNode(-1)
		}
		return d.SkipValue()
	})
	if err != nil {
		return nil, fmt.Errorf("GHC profile: %w", d.errAt(err))
	}
	if !sawTree {
		return nil, fmt.Errorf(`GHC profile: the file has no "profile" tree (is it cut short?)`)
	}
	for id := range ccFrame {
		if !named[id] {
			b.skip(fmt.Sprintf("cost centre %d is not in cost_centres", id))
		}
	}
	for _, v := range values {
		if err := add(v); err != nil {
			return nil, err
		}
	}
	return b.finish("GHC profile")
}
