package datatype

import (
	"debug/dwarf"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTypesAsDebugDWARF: every type a variable, parameter or member refers
// to reads the same through the DIE-at-a-time reader, which shares named
// aggregates across units, as through dwarf.Data.Type: the same name, size,
// pointee and member layout (names, offsets, sizes, bitfields, nesting).
// On the test binaries (DWARF 4 and 5, a union, bitfields, arrays, a
// flexible array) and on libc's separate debug file.
func TestTypesAsDebugDWARF(t *testing.T) {
	exe, debug := libcPaths(t)
	cases := [][2]string{{exe, debug}}
	for _, v := range variants {
		cases = append(cases, [2]string{filepath.Join(testdataDir, v.exec), filepath.Join(testdataDir, v.debug)})
	}
	for _, c := range cases {
		t.Run(filepath.Base(c[1]), func(t *testing.T) {
			b, err := Open(c[0], c[1])
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Open(c[0], c[1]) // a second copy, read by dwarf.Data.Type
			if err != nil {
				t.Fatal(err)
			}
			seen := map[dwarf.Offset]bool{}
			var offs []dwarf.Offset
			r := b.dw.Reader()
			for {
				e, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if e == nil {
					break
				}
				switch e.Tag {
				case dwarf.TagVariable, dwarf.TagFormalParameter, dwarf.TagMember:
					if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok && !seen[off] {
						seen[off] = true
						offs = append(offs, off)
					}
				}
			}
			if len(offs) > 4000 { // libc: a spread sample keeps the test short
				step := len(offs) / 4000
				var some []dwarf.Offset
				for i := 0; i < len(offs); i += step {
					some = append(some, offs[i])
				}
				offs = some
			}
			bad := 0
			for _, off := range offs {
				got, err := b.typ(off)
				if err != nil {
					t.Errorf("type at %#x: %v", off, err)
					bad++
					continue
				}
				want, err := ref.dw.Type(off)
				if err != nil {
					t.Fatalf("dwarf.Data.Type at %#x: %v", off, err)
				}
				// A declaration reads as the one complete definition of
				// its name (noteDefinition), where debug/dwarf leaves it
				// incomplete.
				var def dwarf.Type
				inner := want
				if p, ok := pointee(want); ok {
					inner = p
				}
				if st, ok := strip(inner).(*dwarf.StructType); ok && st.Incomplete {
					tag := map[string]dwarf.Tag{"struct": dwarf.TagStructType, "union": dwarf.TagUnionType, "class": dwarf.TagClassType}[st.Kind]
					if o, ok := ref.defs[defKey{tag, st.StructName}]; ok && o != noDefinition {
						if def, err = ref.dw.Type(o); err != nil {
							t.Fatal(err)
						}
					}
				}
				g, w := describe(got, nil), describe(want, def)
				if !reflect.DeepEqual(g, w) && bad < 5 {
					bad++
					t.Errorf("type at %#x:\n  read here:      %v\n  dwarf.Data.Type: %v", off, g, w)
				}
			}
			t.Logf("%d types compared; %d named aggregates shared", len(offs), len(b.named))
		})
	}
}

// describe is what attribution reads of a type: its name and size, what
// a pointer points to, and the member layout of the type or its pointee;
// def, when not nil, stands for that pointee or type (a definition of a
// declaration).
func describe(t, def dwarf.Type) []string {
	d := []string{typeName(t), fmt.Sprint(typeSize(t))}
	p, isPtr := pointee(t)
	if def != nil {
		if !isPtr {
			t = def
			d = []string{typeName(t), fmt.Sprint(typeSize(t))}
		}
		p = def
	}
	if isPtr {
		t = p
		d = append(d, "-> "+typeName(p), fmt.Sprint(typeSize(p)))
	}
	for _, r := range layout(t) {
		d = append(d, fmt.Sprintf("%d+%d %s %s %s %d", r.Offset, r.Size, r.Name, r.Field, r.Type, r.Depth))
	}
	return d
}
