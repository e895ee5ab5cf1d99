package datatype

import (
	"sort"
)

// cfaTable answers "how is the CFA computed at pc" from call frame
// information (.eh_frame of the executable or .debug_frame of the debug
// file). Data-type attribution needs it because GCC describes stack
// variables relative to DW_OP_call_frame_cfa, while the code addresses them
// relative to %rsp.
type cfaTable struct {
	sec      []byte
	secAddr  uint64 // address of the section (for pc-relative pointers in .eh_frame)
	ehFrame  bool
	fdes     []fde // sorted by lo
	cieCache map[uint64]*cie
}

type fde struct {
	lo, hi  uint64
	cieOff  uint64
	insts   []byte
	ehFrame bool
}

type cie struct {
	codeAlign uint64
	dataAlign int64
	ptrEnc    byte
	insts     []byte
}

// cfaRule is CFA = reg + off.
type cfaRule struct {
	reg int
	off int64
	ok  bool
}

// newCFATable indexes the FDEs of an .eh_frame (ehFrame) or .debug_frame section.
func newCFATable(sec []byte, secAddr uint64, ehFrame bool) *cfaTable {
	t := &cfaTable{sec: sec, secAddr: secAddr, ehFrame: ehFrame, cieCache: map[uint64]*cie{}}
	r := reader{b: sec}
	for !r.done() && !r.err {
		length := uint64(r.u32())
		if length == 0 {
			if t.ehFrame {
				break // terminator
			}
			continue
		}
		if length == 0xffffffff { // 64-bit DWARF: not produced for x86-64 ELF in practice
			break
		}
		body := r.pos
		end := body + int(length)
		if end > len(sec) || end < body {
			break
		}
		id := r.u32()
		isCIE := (ehFrame && id == 0) || (!ehFrame && id == 0xffffffff)
		if !isCIE {
			var cieOff uint64
			if ehFrame {
				cieOff = uint64(body) - uint64(id)
			} else {
				cieOff = uint64(id)
			}
			c := t.cie(cieOff)
			if c != nil {
				lo := t.readPtr(&r, c.ptrEnc)
				n := t.readPtr(&r, c.ptrEnc&0x0f)
				if ehFrame && hasAugData(sec, cieOff) {
					r.bytes(r.uleb())
				}
				if !r.err && r.pos <= end {
					t.fdes = append(t.fdes, fde{lo: lo, hi: lo + n, cieOff: cieOff, insts: sec[r.pos:end]})
				}
			}
		}
		r = reader{b: sec, pos: end}
	}
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].lo < t.fdes[j].lo })
	return t
}

// hasAugData reports whether the CIE at off has a 'z' augmentation.
func hasAugData(sec []byte, off uint64) bool {
	if off+9 >= uint64(len(sec)) {
		return false
	}
	return sec[off+9] == 'z' // length(4) id(4) version(1) augmentation...
}

// cie parses (and caches) the CIE at off.
func (t *cfaTable) cie(off uint64) *cie {
	if c, ok := t.cieCache[off]; ok {
		return c
	}
	t.cieCache[off] = nil
	if off+8 > uint64(len(t.sec)) {
		return nil
	}
	r := reader{b: t.sec, pos: int(off)}
	length := int(r.u32())
	end := r.pos + length
	if end > len(t.sec) || end < r.pos {
		return nil
	}
	r.u32() // id
	version := r.u8()
	var aug []byte
	for !r.err {
		c := r.u8()
		if c == 0 {
			break
		}
		aug = append(aug, c)
	}
	if !t.ehFrame && version >= 4 {
		r.u8() // address_size
		r.u8() // segment_size
	}
	c := &cie{ptrEnc: 0x00}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		r.u8()
	} else {
		r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		n := r.uleb()
		augEnd := r.pos + int(n)
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.ptrEnc = r.u8()
			case 'L':
				r.u8()
			case 'P':
				enc := r.u8()
				t.readPtr(&r, enc)
			}
		}
		r.pos = augEnd
	} else if len(aug) > 0 && string(aug) != "" && t.ehFrame {
		return nil // unknown augmentation without 'z': cannot skip it
	}
	if r.err || r.pos > end {
		return nil
	}
	c.insts = t.sec[r.pos:end]
	t.cieCache[off] = c
	return c
}

// readPtr reads a pointer in the given DW_EH_PE encoding. .debug_frame uses
// absolute 8-byte addresses (encoding 0).
func (t *cfaTable) readPtr(r *reader, enc byte) uint64 {
	if enc == 0xff { // omit
		return 0
	}
	pos := r.pos
	var v uint64
	switch enc & 0x0f {
	case 0x00:
		v = r.u64()
	case 0x01:
		v = r.uleb()
	case 0x02:
		v = uint64(r.u16())
	case 0x03:
		v = uint64(r.u32())
	case 0x04:
		v = r.u64()
	case 0x09:
		v = uint64(r.sleb())
	case 0x0a:
		v = uint64(int64(int16(r.u16())))
	case 0x0b:
		v = uint64(int64(int32(r.u32())))
	case 0x0c:
		v = r.u64()
	default:
		r.err = true
		return 0
	}
	if enc&0x70 == 0x10 { // pcrel
		v += t.secAddr + uint64(pos)
	}
	return v
}

// cfaAt returns the CFA rule in effect at pc.
func (t *cfaTable) cfaAt(pc uint64) cfaRule {
	if t == nil {
		return cfaRule{}
	}
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].lo > pc }) - 1
	if i < 0 || pc >= t.fdes[i].hi {
		return cfaRule{}
	}
	f := &t.fdes[i]
	c := t.cie(f.cieOff)
	if c == nil {
		return cfaRule{}
	}
	var st cfaRule
	var stack []cfaRule
	loc := f.lo
	run := func(insts []byte, initial bool) bool {
		r := reader{b: insts}
		for !r.done() && !r.err {
			op := r.u8()
			switch op >> 6 {
			case 1: // advance_loc
				loc += uint64(op&0x3f) * c.codeAlign
				if !initial && loc > pc {
					return false
				}
				continue
			case 2: // offset
				r.uleb()
				continue
			case 3: // restore
				continue
			}
			switch op {
			case 0x00: // nop
			case 0x01: // set_loc
				loc = t.readPtr(&r, c.ptrEnc)
				if !initial && loc > pc {
					return false
				}
			case 0x02, 0x03, 0x04: // advance_loc1/2/4
				var d uint64
				switch op {
				case 0x02:
					d = uint64(r.u8())
				case 0x03:
					d = uint64(r.u16())
				default:
					d = uint64(r.u32())
				}
				loc += d * c.codeAlign
				if !initial && loc > pc {
					return false
				}
			case 0x05, 0x09, 0x11, 0x14, 0x15, 0x2f: // offset_extended, register, offset_extended_sf, val_offset(_sf), GNU_negative_offset_extended
				r.uleb()
				r.uleb()
			case 0x06, 0x07, 0x08, 0x2e: // restore_extended, undefined, same_value, GNU_args_size
				r.uleb()
			case 0x0a: // remember_state
				stack = append(stack, st)
			case 0x0b: // restore_state
				if n := len(stack); n > 0 {
					st = stack[n-1]
					stack = stack[:n-1]
				}
			case 0x0c: // def_cfa
				st = cfaRule{reg: int(r.uleb()), off: int64(r.uleb()), ok: true}
			case 0x0d: // def_cfa_register
				st.reg = int(r.uleb())
			case 0x0e: // def_cfa_offset
				st.off = int64(r.uleb())
			case 0x0f: // def_cfa_expression: not a simple rule
				r.bytes(r.uleb())
				st = cfaRule{}
			case 0x10, 0x16: // expression, val_expression
				r.uleb()
				r.bytes(r.uleb())
			case 0x12: // def_cfa_sf
				st = cfaRule{reg: int(r.uleb()), ok: true}
				st.off = r.sleb() * c.dataAlign
			case 0x13: // def_cfa_offset_sf
				st.off = r.sleb() * c.dataAlign
			default:
				return false // unknown op: stop here
			}
		}
		return !r.err
	}
	run(c.insts, true)
	loc = f.lo
	run(f.insts, false)
	return st
}
