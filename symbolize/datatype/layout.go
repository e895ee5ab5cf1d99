package datatype

import (
	"debug/dwarf"
	"strings"
)

// strip removes typedefs and qualifiers: the layout of a type is that of
// what it names.
func strip(t dwarf.Type) dwarf.Type {
	for i := 0; i < 32 && t != nil; i++ {
		switch v := t.(type) {
		case *dwarf.TypedefType:
			t = v.Type
		case *dwarf.QualType:
			t = v.Type
		default:
			return t
		}
	}
	return t
}

// stripQual removes qualifiers only, keeping typedef names (rect_t stays
// rect_t: that is the name the programmer wrote).
func stripQual(t dwarf.Type) dwarf.Type {
	for i := 0; i < 32 && t != nil; i++ {
		q, ok := t.(*dwarf.QualType)
		if !ok {
			return t
		}
		t = q.Type
	}
	return t
}

// typeName renders t in C syntax as perf does: "struct node", "rect_t",
// "long int *", "char[8]".
func typeName(t dwarf.Type) string { return typeNameDepth(t, 0) }

// typeNameDepth bounds the recursion: damaged DWARF can make a pointer
// type point to itself.
func typeNameDepth(t dwarf.Type, depth int) string {
	if depth > 16 {
		return "?"
	}
	t = stripQual(t)
	switch v := t.(type) {
	case nil:
		return "void"
	case *dwarf.StructType:
		if v.StructName != "" {
			return v.Kind + " " + v.StructName
		}
		return v.Kind + " (anon)"
	case *dwarf.EnumType:
		if v.EnumName != "" {
			return "enum " + v.EnumName
		}
		return "enum (anon)"
	case *dwarf.PtrType:
		return typeNameDepth(v.Type, depth+1) + " *"
	case *dwarf.ArrayType:
		if v.Count < 0 {
			return typeNameDepth(v.Type, depth+1) + "[]"
		}
		return typeNameDepth(v.Type, depth+1) + "[" + itoa(v.Count) + "]"
	case *dwarf.VoidType:
		return "void"
	case *dwarf.FuncType:
		return "func"
	}
	if n := t.Common().Name; n != "" {
		return n
	}
	return "(unnamed type)"
}

// typeSize is t's size in bytes, or 0 when unknown (incomplete types).
// It does not use dwarf.Type.Size, which recurses without bound on the
// cyclic types damaged DWARF can produce.
func typeSize(t dwarf.Type) int64 { return typeSizeDepth(t, 0) }

func typeSizeDepth(t dwarf.Type, depth int) int64 {
	if t == nil || depth > 32 {
		return 0
	}
	switch v := t.(type) {
	case *dwarf.TypedefType:
		return typeSizeDepth(v.Type, depth+1)
	case *dwarf.QualType:
		return typeSizeDepth(v.Type, depth+1)
	case *dwarf.ArrayType:
		if v.ByteSize > 0 {
			return v.ByteSize
		}
		if v.Count <= 0 {
			return 0
		}
		return v.Count * typeSizeDepth(v.Type, depth+1)
	}
	if n := t.Common().ByteSize; n > 0 {
		return n
	}
	return 0
}

// pointee returns what a pointer type points to, or nil if t is not a pointer.
func pointee(t dwarf.Type) (dwarf.Type, bool) {
	p, ok := strip(t).(*dwarf.PtrType)
	if !ok {
		return nil, false
	}
	return p.Type, true
}

// member names the member of t at byte offset off for an access of size
// bytes (0 if unknown): a dotted path with array indexes and bitfields
// ("in.y", "name[3]", "mode:3"), with the member's offset, size and type.
// It returns an empty path when off is in padding.
//
// scale > 0 says the access adds an index register times scale to off, so
// which element of an array it reaches is not known: every array on the
// path whose element size is a multiple of scale is named with an empty
// index ("load[]", "slots[].hi") and placed at the array's start; only a
// constant index keeps its element ("load[3]"). An array whose element
// size is not a multiple of scale cannot be stepped through by the index
// and keeps the element off falls in.
func member(t dwarf.Type, off int64, h accessHint, scale int64) (path string, moff, msize int64, mt dwarf.Type) {
	var sb strings.Builder
	base := int64(0)
	mt = t
	msize = typeSize(t)
	for depth := 0; depth < 64; depth++ {
		switch v := strip(t).(type) {
		case *dwarf.StructType:
			f, fo, fs, bits := pickField(v, off, h)
			if f == nil {
				return sb.String(), base + off, 0, nil
			}
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			name := f.Name
			if name == "" {
				name = "(anon)"
			}
			sb.WriteString(name)
			if bits > 0 {
				sb.WriteString(":" + itoa(bits))
				return sb.String(), base + fo, fs, f.Type
			}
			base += fo
			off -= fo
			t, mt, msize = f.Type, f.Type, fs
			if typeSize(f.Type) == 0 {
				return sb.String(), base, fs, mt
			}
		case *dwarf.ArrayType:
			es := typeSize(v.Type)
			if es <= 0 {
				return sb.String(), base, msize, mt
			}
			i := off / es
			if scale > 0 && es%scale == 0 {
				sb.WriteString("[]") // the element is base + the index register's value
			} else {
				sb.WriteString("[" + itoa(i) + "]")
				base += i * es
			}
			off -= i * es
			t, mt, msize = v.Type, v.Type, es
		default:
			return sb.String(), base, msize, mt
		}
	}
	return sb.String(), base, msize, mt
}

// pickField chooses the field of s covering byte off: for a union the first
// member whose size equals the access size, else the first covering it; for
// bitfields the first whose bits touch the byte. It returns the field, its
// byte offset and size, and its bit width for bitfields.
func pickField(s *dwarf.StructType, off int64, h accessHint) (f *dwarf.StructField, fo, fs, bits int64) {
	type cand struct {
		f               *dwarf.StructField
		o, sz, bs, rank int64
	}
	var best cand
	hs, hw, hDone := int64(-1), int64(0), false
	for _, c := range s.Field {
		o, sz, bs := fieldExtent(c)
		if off < o || off >= o+sz {
			continue
		}
		rank := int64(1)
		switch {
		case bs > 0:
			// Bitfield: prefer the one whose bits the instruction uses.
			start := bitStart(c) - off*8
			if !hDone {
				hs, hw, hDone = h.bitRange()
			}
			if hs >= 0 && start == hs {
				rank = 3
				if hw == bs {
					rank = 4
				}
			} else if hs >= 0 && start < hs+max(hw, 1) && hs < start+bs {
				rank = 2
			}
		case s.Kind == "union" && off == o:
			if h.size > 0 && sz == h.size {
				rank = 2
				if isFloat(c.Type) == h.float {
					rank = 3
				}
			}
		case s.Kind != "union":
			return c, o, sz, bs
		}
		if best.f == nil || rank > best.rank {
			best = cand{c, o, sz, bs, rank}
		}
	}
	return best.f, best.o, best.sz, best.bs
}

// bitStart is the first bit of a bitfield counted from the struct start.
func bitStart(f *dwarf.StructField) int64 {
	if f.ByteSize > 0 {
		return f.ByteOffset*8 + f.ByteSize*8 - f.BitOffset - f.BitSize
	}
	return f.ByteOffset*8 + f.DataBitOffset
}

// fieldExtent returns the bytes a field occupies: for bitfields, the bytes
// its bits touch (DWARF 4 DW_AT_bit_offset counts from the storage unit's
// most significant bit; DWARF 5 DW_AT_data_bit_offset from the struct start).
func fieldExtent(f *dwarf.StructField) (off, size, bits int64) {
	if f.BitSize <= 0 {
		return f.ByteOffset, typeSize(f.Type), 0
	}
	start := bitStart(f)
	first := start / 8
	last := (start + f.BitSize - 1) / 8
	return first, last - first + 1, f.BitSize
}

// LayoutRow is one line of a type's member layout, like
// `perf annotate --data-type`: nested members are indented by Depth.
type LayoutRow struct {
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Name   string `json:"name"` // member path, "" for the type itself
	Field  string `json:"field"`
	Type   string `json:"type"`
	Depth  int    `json:"depth"`
}

// layout flattens t into rows: the type itself, then every member, nested
// members after their parent. Arrays of aggregates list element 0 only
// (and large arrays are not expanded) to keep layouts readable.
func layout(t dwarf.Type) []LayoutRow {
	rows := []LayoutRow{{Offset: 0, Size: typeSize(t), Type: typeName(t)}}
	var walk func(t dwarf.Type, base int64, prefix string, depth int)
	walk = func(t dwarf.Type, base int64, prefix string, depth int) {
		if depth > 8 || len(rows) > 4096 {
			return
		}
		switch v := strip(t).(type) {
		case *dwarf.StructType:
			for _, f := range v.Field {
				o, sz, bits := fieldExtent(f)
				name := f.Name
				if name == "" {
					name = "(anon)"
				}
				field := name
				if bits > 0 {
					field += ":" + itoa(bits)
				}
				path := field
				if prefix != "" {
					path = prefix + "." + field
				}
				rows = append(rows, LayoutRow{Offset: base + o, Size: sz, Name: path, Field: field, Type: typeName(f.Type), Depth: depth})
				if bits == 0 {
					walk(f.Type, base+o, path, depth+1)
				}
			}
		case *dwarf.ArrayType:
			es := typeSize(v.Type)
			if es <= 0 || v.Count <= 0 {
				return
			}
			if _, agg := strip(v.Type).(*dwarf.StructType); !agg && v.Count > 64 {
				return
			}
			n := v.Count
			if _, agg := strip(v.Type).(*dwarf.StructType); agg {
				n = 1
			}
			for i := int64(0); i < n; i++ {
				field := "[" + itoa(i) + "]"
				rows = append(rows, LayoutRow{Offset: base + i*es, Size: es, Name: prefix + field, Field: field, Type: typeName(v.Type), Depth: depth})
				walk(v.Type, base+i*es, prefix+field, depth+1)
			}
		}
	}
	walk(t, 0, "", 1)
	return rows
}
