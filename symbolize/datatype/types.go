package datatype

import (
	"debug/dwarf"
	"errors"
	"fmt"
)

// Types are read here one DIE at a time with a dieReader (dwarfbuf), not
// with dwarf.Data.Type, and a named struct, union, class or enum is read
// once per name, size and declaration line, then shared by every compile
// unit that repeats it. dwarf.Data.Type reads the whole type graph a type
// reaches, per unit: the kernel repeats struct task_struct, and all it
// points to, in each of its thousands of units, so attributing a kernel
// profile read gigabytes of duplicate types. The result is the same
// dwarf.Type values (debug/dwarf's exported structs) dwarf.Data.Type
// builds, which the rest of the package reads (TestTypesAsDebugDWARF
// compares them). Only a type that refers into a type unit
// (DW_FORM_ref_sig8: .debug_types, or DWARF 5 type units) or into a dwz
// supplementary file (DW_FORM_GNU_ref_alt, which debug/dwarf reads as
// void) is read with debug/dwarf's reader (typeUnitType), for that file
// alone.

// namedKey identifies one definition of a named aggregate across units.
type namedKey struct {
	tag  dwarf.Tag
	name string
	size int64
	line int64
}

// defKey names an aggregate regardless of its unit.
type defKey struct {
	tag  dwarf.Tag
	name string
}

// noDefinition marks a name with complete definitions of different sizes:
// a declaration of it cannot be told which one it means.
const noDefinition = ^dwarf.Offset(0)

// noteDefinition records, while Open indexes the DWARF, where a named
// struct, union or class is defined in full. A unit that only declares it
// (struct net_device; then a pointer to it) is then read with that
// definition, as a debugger does, instead of an incomplete type whose
// members register tracking cannot follow.
func (b *Binary) noteDefinition(e *dwarf.Entry) {
	if k, size, ok := definitionOf(e); ok {
		b.addDefinition(k, size, e.Offset)
	}
}

// definitionOf returns the key and size of e when it is a complete named
// struct, union or class.
func definitionOf(e *dwarf.Entry) (defKey, int64, bool) {
	switch e.Tag {
	case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType:
	default:
		return defKey{}, 0, false
	}
	name, _ := e.Val(dwarf.AttrName).(string)
	size, ok := e.Val(dwarf.AttrByteSize).(int64)
	if name == "" || !ok || e.Val(dwarf.AttrDeclaration) != nil {
		return defKey{}, 0, false
	}
	return defKey{e.Tag, name}, size, true
}

// addDefinition records the definition of k at off: the first one seen,
// or noDefinition once two differ in size.
func (b *Binary) addDefinition(k defKey, size int64, off dwarf.Offset) {
	prev, seen := b.defs[k]
	switch {
	case !seen:
		b.defs[k] = off
		b.defSize[k] = size
	case prev != noDefinition && b.defSize[k] != size:
		b.defs[k] = noDefinition
	}
}

// typ returns the type whose DIE is at off. Callers hold b.mu.
func (b *Binary) typ(off dwarf.Offset) (t dwarf.Type, err error) {
	if t, ok := b.types[off]; ok {
		return t, nil
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("malformed type at %#x: %v", off, r)
		}
	}()
	t, err = b.readType(off, 0)
	if errors.Is(err, errTypeSignature) {
		t, err = b.typeUnitType(off)
		if err == nil {
			b.types[off] = t
		}
	}
	return t, err
}

// typeUnitType reads the type at off with debug/dwarf's reader, built on
// first use from the sections Open read: the types of type units are found
// by their signatures, which this package does not index. Callers hold b.mu.
func (b *Binary) typeUnitType(off dwarf.Offset) (dwarf.Type, error) {
	if b.sigData == nil {
		d, err := dwarf.New(b.abbrevSec, nil, nil, b.info, nil, nil, b.rangesSec, b.strSec)
		if err != nil {
			return nil, err
		}
		for _, s := range []struct {
			name string
			data []byte
		}{{".debug_addr", b.addrSec}, {".debug_str_offsets", b.strOffsets}, {".debug_rnglists", b.rnglists}, {".debug_line_str", b.lineStrSec}} {
			if s.data != nil {
				if err := d.AddSection(s.name, s.data); err != nil {
					return nil, err
				}
			}
		}
		if b.typeUnits != nil {
			if err := d.AddTypes(".debug_types", b.typeUnits); err != nil {
				return nil, err
			}
		}
		b.sigData = d
	}
	return b.sigData.Type(off)
}

// maxTypeDepth bounds the nesting of types read through one another (a
// member's type's member's type...), against damaged DWARF.
const maxTypeDepth = 512

func (b *Binary) readType(off dwarf.Offset, depth int) (dwarf.Type, error) {
	if t, ok := b.types[off]; ok {
		return t, nil
	}
	if depth > maxTypeDepth {
		return nil, fmt.Errorf("types nested too deep at %#x", off)
	}
	r, e, err := b.readerAt(off)
	if err != nil {
		return nil, err
	}
	name, _ := e.Val(dwarf.AttrName).(string)
	size, hasSize := e.Val(dwarf.AttrByteSize).(int64)
	if !hasSize {
		size = -1
	}
	sub := func(e *dwarf.Entry) (dwarf.Type, error) { return b.subType(e, depth) }
	// done caches t at off; on error the placeholder is taken out again.
	done := func(t dwarf.Type, err error) (dwarf.Type, error) {
		if err != nil {
			delete(b.types, off)
			return nil, err
		}
		b.types[off] = t
		return t, nil
	}

	switch e.Tag {
	case dwarf.TagPointerType:
		t := &dwarf.PtrType{}
		t.ByteSize = size
		if !hasSize {
			t.ByteSize = 8
		}
		b.types[off] = t // a pointer may lead back here
		t.Type, err = sub(e)
		return done(t, err)

	case dwarf.TagTypedef:
		t := &dwarf.TypedefType{}
		t.Name = name
		b.types[off] = t
		t.Type, err = sub(e)
		if err == nil {
			t.ByteSize = typeSize(t.Type)
		}
		return done(t, err)

	case dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType:
		t := &dwarf.QualType{Qual: map[dwarf.Tag]string{dwarf.TagConstType: "const", dwarf.TagVolatileType: "volatile", dwarf.TagRestrictType: "restrict"}[e.Tag]}
		t.ByteSize = size
		b.types[off] = t
		t.Type, err = sub(e)
		return done(t, err)

	case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType:
		incomplete := e.Val(dwarf.AttrDeclaration) != nil
		if def, ok := b.defs[defKey{e.Tag, name}]; incomplete && name != "" && ok && def != noDefinition && def != off {
			t, err := b.readType(def, depth+1)
			return done(t, err)
		}
		line, _ := e.Val(dwarf.AttrDeclLine).(int64)
		key := namedKey{e.Tag, name, size, line}
		if name != "" && !incomplete {
			if t, ok := b.named[key]; ok {
				b.types[off] = t
				return t, nil
			}
		}
		t := &dwarf.StructType{StructName: name, Incomplete: incomplete}
		t.ByteSize = size
		t.Kind = map[dwarf.Tag]string{dwarf.TagStructType: "struct", dwarf.TagUnionType: "union", dwarf.TagClassType: "class"}[e.Tag]
		b.types[off] = t // members may point back to it
		if name != "" && !incomplete {
			b.named[key] = t
		}
		if err := b.readFields(r, e, t, depth); err != nil {
			if name != "" && !incomplete {
				delete(b.named, key)
			}
			return done(nil, err)
		}
		return done(t, nil)

	case dwarf.TagArrayType:
		t := &dwarf.ArrayType{}
		t.ByteSize = size
		t.StrideBitSize, _ = e.Val(dwarf.AttrStrideSize).(int64)
		b.types[off] = t
		elem, err := sub(e)
		if err != nil {
			return done(nil, err)
		}
		var dims []int64
		err = children(r, e, func(kid *dwarf.Entry) error {
			if kid.Tag == dwarf.TagSubrangeType {
				count, ok := kid.Val(dwarf.AttrCount).(int64)
				if !ok {
					if ub, ok := kid.Val(dwarf.AttrUpperBound).(int64); ok {
						count = ub + 1
					} else if len(dims) == 0 {
						count = -1 // x[]
					}
				}
				dims = append(dims, count)
			}
			return nil
		})
		if err != nil {
			return done(nil, err)
		}
		if len(dims) == 0 {
			dims = []int64{-1}
		}
		t.Count = dims[0]
		t.Type = elem
		for i := len(dims) - 1; i >= 1; i-- {
			t.Type = &dwarf.ArrayType{Type: t.Type, Count: dims[i]}
		}
		return done(t, nil)

	case dwarf.TagEnumerationType:
		line, _ := e.Val(dwarf.AttrDeclLine).(int64)
		key := namedKey{e.Tag, name, size, line}
		if name != "" {
			if t, ok := b.named[key]; ok {
				b.types[off] = t
				return t, nil
			}
		}
		t := &dwarf.EnumType{EnumName: name, Val: []*dwarf.EnumValue{}}
		t.ByteSize = size
		err := children(r, e, func(kid *dwarf.Entry) error {
			if kid.Tag == dwarf.TagEnumerator {
				v := &dwarf.EnumValue{}
				v.Name, _ = kid.Val(dwarf.AttrName).(string)
				v.Val, _ = kid.Val(dwarf.AttrConstValue).(int64)
				t.Val = append(t.Val, v)
			}
			return nil
		})
		if err != nil {
			return done(nil, err)
		}
		if name != "" {
			b.named[key] = t
		}
		return done(t, nil)

	case dwarf.TagSubroutineType:
		// Attribution never looks inside function types; their parameter
		// types could reach the whole graph.
		t := &dwarf.FuncType{}
		t.ByteSize = size
		return done(t, nil)
	}
	// Base, unspecified and other types: one DIE, no references.
	return done(otherType(e, name, size))
}

// DWARF base type encodings (DW_ATE_*) debug/dwarf knows.
const (
	ateAddress      = 0x01
	ateBoolean      = 0x02
	ateComplexFloat = 0x03
	ateFloat        = 0x04
	ateSigned       = 0x05
	ateSignedChar   = 0x06
	ateUnsigned     = 0x07
	ateUnsignedChar = 0x08
)

// otherType is the type of a DIE of no other type and no children: a base
// type, an unspecified type, or one debug/dwarf does not model (an
// UnsupportedType of its tag), as dwarf.Data.Type reads them.
func otherType(e *dwarf.Entry, name string, size int64) (dwarf.Type, error) {
	var t dwarf.Type
	switch e.Tag {
	case dwarf.TagBaseType:
		enc, ok := e.Val(dwarf.AttrEncoding).(int64)
		if !ok {
			return nil, fmt.Errorf("base type %q at %#x: no encoding", name, e.Offset)
		}
		switch enc {
		case ateAddress:
			t = &dwarf.AddrType{}
		case ateBoolean:
			t = &dwarf.BoolType{}
		case ateComplexFloat:
			t = &dwarf.ComplexType{}
			if name == "complex" { // clang's; its size tells which
				name = map[int64]string{8: "complex float", 16: "complex double"}[size]
				if name == "" {
					name = "complex"
				}
			}
		case ateFloat:
			t = &dwarf.FloatType{}
		case ateSigned:
			t = &dwarf.IntType{}
		case ateUnsigned:
			t = &dwarf.UintType{}
		case ateSignedChar:
			t = &dwarf.CharType{}
		case ateUnsignedChar:
			t = &dwarf.UcharType{}
		default:
			return nil, fmt.Errorf("base type %q at %#x: unknown encoding %d", name, e.Offset, enc)
		}
		bt := t.(interface{ Basic() *dwarf.BasicType }).Basic()
		bt.Common().Name = name
		bt.BitSize, _ = e.Val(dwarf.AttrBitSize).(int64)
		var hasBit, hasDataBit bool
		bt.BitOffset, hasBit = e.Val(dwarf.AttrBitOffset).(int64)
		bt.DataBitOffset, hasDataBit = e.Val(dwarf.AttrDataBitOffset).(int64)
		if hasBit && hasDataBit {
			return nil, fmt.Errorf("base type %q at %#x: two bit offsets", name, e.Offset)
		}
	case dwarf.TagUnspecifiedType:
		t = &dwarf.UnspecifiedType{}
		t.Common().Name = name
	default:
		t = &dwarf.UnsupportedType{Tag: e.Tag}
		t.Common().Name = name
	}
	t.Common().ByteSize = size
	return t, nil
}

// children calls fn on each child of e, the DIE r just read, skipping
// the children's own children, and stops at fn's first error.
func children(r entryReader, e *dwarf.Entry, fn func(kid *dwarf.Entry) error) error {
	if !e.Children {
		return nil
	}
	for {
		kid, err := r.Next()
		if err != nil {
			return err
		}
		if kid == nil || kid.Tag == 0 {
			return nil
		}
		r.SkipChildren()
		if err := fn(kid); err != nil {
			return err
		}
	}
}

// subType reads the type DIE e refers to: void when it names none.
func (b *Binary) subType(e *dwarf.Entry, depth int) (dwarf.Type, error) {
	switch v := e.Val(dwarf.AttrType).(type) {
	case nil:
		return &dwarf.VoidType{}, nil
	case dwarf.Offset:
		return b.readType(v, depth+1)
	}
	return nil, errTypeSignature
}

// errTypeSignature: a reference into a type unit (.debug_types), which
// only dwarf.Data.Type follows.
var errTypeSignature = errors.New("type unit reference")

// readFields reads the members of the struct, union or class e (just read
// by r) into t, as dwarf.Data.Type does, including its fix for zero-length
// arrays, which DWARF writes as if they had one element.
func (b *Binary) readFields(r entryReader, e *dwarf.Entry, t *dwarf.StructType, depth int) error {
	var last *dwarf.StructField
	var lastBitSize, lastOff int64
	zero := func(f *dwarf.StructField) {
		if a, ok := f.Type.(*dwarf.ArrayType); ok && typeSize(a.Type) != 0 {
			c := *a
			c.Count = 0
			f.Type = &c
		}
	}
	err := children(r, e, func(kid *dwarf.Entry) error {
		if kid.Tag != dwarf.TagMember {
			return nil
		}
		f := &dwarf.StructField{}
		var err error
		if f.Type, err = b.subType(kid, depth); err != nil {
			return err
		}
		switch loc := kid.Val(dwarf.AttrDataMemberLoc).(type) {
		case []byte:
			if len(loc) == 0 || loc[0] != opPlusUconst {
				return fmt.Errorf("member %#x: unexpected location opcode", kid.Offset)
			}
			rd := reader{B: loc, Pos: 1}
			f.ByteOffset = int64(rd.Uleb())
			if rd.Err {
				return fmt.Errorf("member %#x: truncated location", kid.Offset)
			}
		case int64:
			f.ByteOffset = loc
		}
		f.Name, _ = kid.Val(dwarf.AttrName).(string)
		f.ByteSize, _ = kid.Val(dwarf.AttrByteSize).(int64)
		f.BitOffset, _ = kid.Val(dwarf.AttrBitOffset).(int64)
		f.DataBitOffset, _ = kid.Val(dwarf.AttrDataBitOffset).(int64)
		f.BitSize, _ = kid.Val(dwarf.AttrBitSize).(int64)
		t.Field = append(t.Field, f)
		if last != nil && lastBitSize == 0 && lastOff == f.ByteOffset && t.Kind != "union" {
			zero(last)
		}
		last, lastOff, lastBitSize = f, f.ByteOffset, f.BitSize
		return nil
	})
	if err != nil {
		return err
	}
	if last != nil && t.Kind != "union" && t.ByteSize >= 0 && t.ByteSize == lastOff {
		zero(last)
	}
	return nil
}
