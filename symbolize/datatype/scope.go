package datatype

import "debug/dwarf"

// funcScope is one subprogram's tree of scopes (itself, lexical blocks and
// inlined subroutines) with the variables and parameters each declares.
// It is built on the first sample in the function and cached.
type funcScope struct {
	name      string
	unit      int32
	frameBase variable // DW_AT_frame_base, as a nameless variable
	root      scope
}

type scope struct {
	ranges   [][2]uint64
	inlined  string // name of the inlined function, "" for blocks and the root
	vars     []variable
	children []*scope
}

type variable struct {
	name  string
	typ   dwarf.Offset
	hasT  bool
	loc   any
	class dwarf.Class
	param bool

	decoded bool       // ranges is valid
	ranges  []locRange // the decoded location (list)
}

func (s *scope) contains(pc uint64) bool {
	for _, r := range s.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// funcScope returns the scope tree of the subprogram whose DIE is at off.
func (b *Binary) funcScope(f funcRange) (*funcScope, error) {
	if fs, ok := b.scopes[f.die]; ok {
		return fs, nil
	}
	r := b.reader()
	r.Seek(f.die)
	fs, err := b.readFuncScope(r, f)
	b.scopes[f.die] = fs
	return fs, err
}

// readFuncScope reads the scope tree of f from r, which is at its DIE (a
// dieReader; dwarf.Reader in tests, to compare).
func (b *Binary) readFuncScope(r entryReader, f funcRange) (*funcScope, error) {
	e, err := r.Next()
	if err != nil || e == nil {
		return nil, err
	}
	fs := &funcScope{unit: f.unit}
	if fb := e.AttrField(dwarf.AttrFrameBase); fb != nil {
		fs.frameBase = variable{loc: fb.Val, class: fb.Class}
	}
	fs.name, _ = b.attr(e, dwarf.AttrName).(string)
	fs.root.ranges, _ = b.ranges(e)
	if e.Children {
		if err := b.readScope(r, &fs.root); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// readScope reads the children of the DIE just returned by r into s.
func (b *Binary) readScope(r entryReader, s *scope) error {
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil || e.Tag == 0 {
			return nil
		}
		switch e.Tag {
		case dwarf.TagVariable, dwarf.TagFormalParameter:
			v := variable{param: e.Tag == dwarf.TagFormalParameter}
			if f := e.AttrField(dwarf.AttrLocation); f != nil {
				v.loc, v.class = f.Val, f.Class
			}
			if v.loc != nil {
				v.name, _ = b.attr(e, dwarf.AttrName).(string)
				v.typ, v.hasT = b.attr(e, dwarf.AttrType).(dwarf.Offset)
				if v.hasT {
					s.vars = append(s.vars, v)
				}
			}
			if e.Children {
				r.SkipChildren()
			}
		case dwarf.TagLexDwarfBlock, dwarf.TagInlinedSubroutine:
			c := &scope{}
			c.ranges, _ = b.ranges(e)
			if e.Tag == dwarf.TagInlinedSubroutine {
				c.inlined, _ = b.attr(e, dwarf.AttrName).(string)
				if c.inlined == "" {
					c.inlined = "?"
				}
			}
			if e.Children {
				if err := b.readScope(r, c); err != nil {
					return err
				}
			}
			if len(c.ranges) == 0 && c.inlined == "" {
				// A block without addresses only groups declarations:
				// its variables live in the enclosing scope's ranges.
				s.vars = append(s.vars, c.vars...)
				s.children = append(s.children, c.children...)
				continue
			}
			s.children = append(s.children, c)
		default:
			if e.Children {
				r.SkipChildren()
			}
		}
	}
}

// scopesAt returns the scopes containing pc, innermost first.
func (fs *funcScope) scopesAt(pc uint64) []*scope {
	var chain []*scope
	s := &fs.root
	chain = append(chain, s)
	for {
		var next *scope
		for _, c := range s.children {
			if c.contains(pc) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		chain = append(chain, next)
		s = next
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}
