package dwarfbuf

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// AttrSibling is DW_AT_sibling: the offset of the DIE after a DIE's
// children, which lets a reader jump over them.
const AttrSibling = 0x01

// ErrTruncated is the error of a read past the end of a unit.
var ErrTruncated = errors.New("DWARF data cut short")

// ErrUnknownForm is the error of an attribute form this package does not
// know (a vendor extension), whose value it cannot step over.
var ErrUnknownForm = errors.New("unknown DWARF attribute form")

// Entries is a cursor over the DIEs of one unit. Next reads a DIE's
// abbreviation and leaves its attributes, in the abbreviation's order, to
// the caller: it reads the few it wants (FormUint, Ref, CStr...) and skips
// the others (SkipValue), or skips them all and the DIE's children
// (SkipAttrs, SkipChildren). Decoding only what is asked for is what
// makes it fast where debug/dwarf decodes every attribute of every DIE.
type Entries struct {
	Reader  // over .debug_info[Unit.DIEOff:Unit.End]
	Unit    *Unit
	Abbrevs *Abbrevs
}

// NewEntries is a cursor at the first DIE of unit u, whose abbreviations
// are t; info is .debug_info up to at least the unit's end.
func NewEntries(info []byte, u *Unit, t *Abbrevs, order binary.ByteOrder) Entries {
	return Entries{Reader: Reader{B: info[u.DIEOff:u.End], Order: order}, Unit: u, Abbrevs: t}
}

// Offset is the .debug_info offset of the cursor.
func (d *Entries) Offset() uint64 { return d.Unit.DIEOff + uint64(d.Pos) }

// Seek moves to .debug_info offset off, which must be among the unit's
// DIEs; it reports false, moving nowhere, if it is not.
func (d *Entries) Seek(off uint64) bool {
	if off < d.Unit.DIEOff || off >= d.Unit.End {
		return false
	}
	d.Pos = int(off - d.Unit.DIEOff)
	return true
}

// Error is ErrTruncated once a read went past the unit's end, else nil.
func (d *Entries) Error() error {
	if d.Err {
		return ErrTruncated
	}
	return nil
}

// Next reads the abbreviation code of the DIE at the cursor and returns
// its abbreviation, nil for a null entry (the end of a list of children).
// A code the unit's table lacks is an error.
func (d *Entries) Next() (*Abbrev, error) {
	off := d.Offset()
	code := d.Uleb()
	if d.Err {
		return nil, ErrTruncated
	}
	if code == 0 {
		return nil, nil
	}
	a := d.Abbrevs.Get(code)
	if a == nil {
		return nil, fmt.Errorf(".debug_info: unknown abbreviation %d at %#x", code, off)
	}
	return a, nil
}

// SkipValue moves past one value of form, as SkipForm, with an error for a
// form it does not know or a read past the end.
func (d *Entries) SkipValue(form uint32) error {
	if !d.SkipForm(form, d.Unit.Encoding) {
		return fmt.Errorf("%w %#x", ErrUnknownForm, form)
	}
	return d.Error()
}

// Ref reads a reference attribute as a .debug_info offset (those relative
// to the unit made absolute). A reference into another file
// (DW_FORM_GNU_ref_alt, ref_sup, ref_sig8) or a value of another class is
// skipped and reads as 0.
func (d *Entries) Ref(a *AttrSpec) (uint64, error) {
	switch a.Form {
	case FormRef1, FormRef2, FormRef4, FormRef8, FormRefUdata:
		v, _ := d.FormUint(a.Form, 0, d.Unit.Encoding)
		return d.Unit.Off + v, d.Error()
	case FormRefAddr:
		v, _ := d.FormUint(a.Form, 0, d.Unit.Encoding)
		return v, d.Error()
	}
	return 0, d.SkipValue(a.Form)
}

// SkipAttrs moves past the attributes of a DIE of abbreviation a whose
// code was just read, returning its DW_AT_sibling link when it has
// children (0: none). A DIE without children whose forms all have a
// fixed size is one step.
func (d *Entries) SkipAttrs(a *Abbrev) (sibling uint64, err error) {
	if a.Fixed >= 0 && !a.Children {
		d.Reader.Skip(a.Fixed)
		return 0, d.Error()
	}
	for i := range a.Attrs {
		s := &a.Attrs[i]
		if s.Attr == AttrSibling && a.Children {
			if sibling, err = d.Ref(s); err != nil {
				return 0, err
			}
			continue
		}
		if err := d.SkipValue(s.Form); err != nil {
			return 0, err
		}
	}
	return sibling, nil
}

// SkipChildren moves past the children of the DIE whose attributes were
// just read: to sibling, its DW_AT_sibling link, when that lies ahead in
// the unit, else DIE by DIE to the null entry that ends them (or to the
// unit's end, if the unit ends first).
func (d *Entries) SkipChildren(sibling uint64) error {
	if sibling >= d.Offset() && sibling <= d.Unit.End {
		d.Pos = int(sibling - d.Unit.DIEOff)
		return nil
	}
	for depth := 1; depth > 0 && !d.Done(); {
		a, err := d.Next()
		if err != nil {
			return err
		}
		if a == nil {
			depth--
			continue
		}
		sib, err := d.SkipAttrs(a)
		if err != nil {
			return err
		}
		if a.Children {
			if sib >= d.Offset() && sib <= d.Unit.End {
				d.Pos = int(sib - d.Unit.DIEOff)
			} else {
				depth++
			}
		}
	}
	return nil
}
