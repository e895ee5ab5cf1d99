package dwarfbuf

// Encoding is what a unit's header says about the size of its attribute
// values: the DWARF version (DW_FORM_ref_addr is address-sized before
// DWARF 3), the size of an address, and whether section offsets are 8
// bytes (the 64-bit DWARF format) or 4.
type Encoding struct {
	Version  uint16
	AddrSize uint8
	Dwarf64  bool
}

// OffsetSize is the size of a section offset: 8 in 64-bit DWARF, else 4.
func (e Encoding) OffsetSize() int {
	if e.Dwarf64 {
		return 8
	}
	return 4
}

// The attribute forms (DWARF 5, section 7.5.6) and the GNU ones of DWARF 4
// split DWARF and dwz.
const (
	FormAddr          = 0x01
	FormBlock2        = 0x03
	FormBlock4        = 0x04
	FormData2         = 0x05
	FormData4         = 0x06
	FormData8         = 0x07
	FormString        = 0x08
	FormBlock         = 0x09
	FormBlock1        = 0x0a
	FormData1         = 0x0b
	FormFlag          = 0x0c
	FormSdata         = 0x0d
	FormStrp          = 0x0e
	FormUdata         = 0x0f
	FormRefAddr       = 0x10
	FormRef1          = 0x11
	FormRef2          = 0x12
	FormRef4          = 0x13
	FormRef8          = 0x14
	FormRefUdata      = 0x15
	FormIndirect      = 0x16
	FormSecOffset     = 0x17
	FormExprloc       = 0x18
	FormFlagPresent   = 0x19
	FormStrx          = 0x1a
	FormAddrx         = 0x1b
	FormRefSup4       = 0x1c
	FormStrpSup       = 0x1d
	FormData16        = 0x1e
	FormLineStrp      = 0x1f
	FormRefSig8       = 0x20
	FormImplicitConst = 0x21
	FormLoclistx      = 0x22
	FormRnglistx      = 0x23
	FormRefSup8       = 0x24
	FormStrx1         = 0x25
	FormStrx2         = 0x26
	FormStrx3         = 0x27
	FormStrx4         = 0x28
	FormAddrx1        = 0x29
	FormAddrx2        = 0x2a
	FormAddrx3        = 0x2b
	FormAddrx4        = 0x2c
	FormGNUAddrIndex  = 0x1f01
	FormGNUStrIndex   = 0x1f02
	FormGNURefAlt     = 0x1f20
	FormGNUStrpAlt    = 0x1f21
)

// FormSize is the size in bytes of a value of form, or -1 when it is not
// fixed (LEB128 numbers, strings, blocks, DW_FORM_indirect) or the form is
// unknown.
func (e Encoding) FormSize(form uint32) int {
	switch form {
	case FormAddr:
		return int(e.AddrSize)
	case FormData1, FormRef1, FormStrx1, FormAddrx1, FormFlag:
		return 1
	case FormData2, FormRef2, FormStrx2, FormAddrx2:
		return 2
	case FormStrx3, FormAddrx3:
		return 3
	case FormData4, FormRef4, FormStrx4, FormAddrx4, FormRefSup4:
		return 4
	case FormData8, FormRef8, FormRefSig8, FormRefSup8:
		return 8
	case FormData16:
		return 16
	case FormStrp, FormSecOffset, FormLineStrp, FormStrpSup, FormGNURefAlt, FormGNUStrpAlt:
		return e.OffsetSize()
	case FormRefAddr:
		if e.Version <= 2 {
			return int(e.AddrSize)
		}
		return e.OffsetSize()
	case FormFlagPresent, FormImplicitConst:
		return 0
	}
	return -1
}

// SkipForm moves past one value of form. It reports false, moving
// nowhere, for a form it does not know; a value running past the end sets
// Err. (One switch, not FormSize's and then another: this is the inner
// loop of skipping a DIE.)
func (r *Reader) SkipForm(form uint32, e Encoding) bool {
	n := 0
	switch form {
	case FormFlagPresent, FormImplicitConst:
		return true
	case FormData1, FormRef1, FormStrx1, FormAddrx1, FormFlag:
		n = 1
	case FormData2, FormRef2, FormStrx2, FormAddrx2:
		n = 2
	case FormStrx3, FormAddrx3:
		n = 3
	case FormData4, FormRef4, FormStrx4, FormAddrx4, FormRefSup4:
		n = 4
	case FormData8, FormRef8, FormRefSig8, FormRefSup8:
		n = 8
	case FormData16:
		n = 16
	case FormAddr:
		n = int(e.AddrSize)
	case FormStrp, FormSecOffset, FormLineStrp, FormStrpSup, FormGNURefAlt, FormGNUStrpAlt:
		n = e.OffsetSize()
	case FormRefAddr:
		n = e.FormSize(form)
	case FormSdata, FormUdata, FormRefUdata, FormStrx, FormAddrx, FormLoclistx, FormRnglistx, FormGNUAddrIndex, FormGNUStrIndex:
		r.Uleb()
		return true
	case FormString:
		r.SkipCStr()
		return true
	case FormBlock, FormExprloc:
		n = int(r.Uleb())
	case FormBlock1:
		n = int(r.U8())
	case FormBlock2:
		n = int(r.U16())
	case FormBlock4:
		n = int(r.U32())
	case FormIndirect:
		f := r.Uleb()
		if r.Err {
			return true
		}
		return r.SkipForm(uint32(f), e)
	default:
		return false
	}
	r.Skip(n)
	return true
}

// FormUint reads a value of form that is a number: a constant (implicit is
// DW_FORM_implicit_const's, from the abbreviation), an address, a
// reference (unit-relative ones as stored), a section offset, a flag or an
// index into .debug_addr, .debug_str_offsets, .debug_loclists or
// .debug_rnglists. DW_FORM_sdata comes back as its two's complement. It
// reports false, moving nowhere, for any other form (strings, blocks,
// 16-byte data, signatures, references to supplementary files) and for an
// unknown one: skip those with SkipForm.
func (r *Reader) FormUint(form uint32, implicit int64, e Encoding) (uint64, bool) {
	switch form {
	case FormData1, FormRef1, FormStrx1, FormAddrx1, FormFlag:
		return uint64(r.U8()), true
	case FormData2, FormRef2, FormStrx2, FormAddrx2:
		return uint64(r.U16()), true
	case FormStrx3, FormAddrx3:
		return r.Uint(3), true
	case FormData4, FormRef4, FormStrx4, FormAddrx4:
		return uint64(r.U32()), true
	case FormData8, FormRef8:
		return r.U64(), true
	case FormUdata, FormRefUdata, FormStrx, FormAddrx, FormLoclistx, FormRnglistx, FormGNUAddrIndex, FormGNUStrIndex:
		return r.Uleb(), true
	case FormSdata:
		return uint64(r.Sleb()), true
	case FormImplicitConst:
		return uint64(implicit), true
	case FormFlagPresent:
		return 1, true
	case FormAddr, FormStrp, FormSecOffset, FormLineStrp, FormRefAddr:
		return r.Uint(e.FormSize(form)), true
	}
	return 0, false
}
