package datatype

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// dwarfTestFiles lists the executables and debug files the comparisons
// with debug/dwarf read: libc and its debug file (libc6-dbg: a test fails
// without it), the test binaries and, with withGo, a Go program built
// here.
func dwarfTestFiles(t *testing.T, withGo bool) [][2]string {
	libc, libcDebug := libcPaths(t)
	paths := [][2]string{{libc, libcDebug}}
	for _, name := range []string{"datatype-dw5-pie", "datatype-dw4-pie", "datatype-dw4-nopie", "datatype-dw5-nopie", "datatype-dw5-O0",
		"datatype-arm64", "datatype-vmlinux", "index", "index-nopie", "libdatatype.so", "skid", "extern"} {
		p := filepath.Join(testdataDir, name)
		paths = append(paths, [2]string{p, p})
	}
	paths = append(paths, [2]string{filepath.Join(testdataDir, "datatype-dw5-pie.stripped"), filepath.Join(testdataDir, "datatype-dw5-pie.debug")})
	if withGo {
		goprog := filepath.Join(t.TempDir(), "goprog")
		if out, err := exec.Command("go", "build", "-o", goprog, filepath.Join(testdataDir, "..", "symbolize", "goprog", "main.go")).CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		paths = append(paths, [2]string{goprog, goprog})
	}
	return paths
}

// refDWARF is debug/dwarf's reader of path's DWARF, which the tests
// compare this package's reading with.
func refDWARF(t *testing.T, path string) *dwarf.Data {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// isTypeTag reports whether DIEs of tag are types dwarf.Data.Type reads.
func isTypeTag(tag dwarf.Tag) bool {
	switch tag {
	case dwarf.TagArrayType, dwarf.TagBaseType, dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType,
		dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType, dwarf.TagEnumerationType,
		dwarf.TagPointerType, dwarf.TagSubroutineType, dwarf.TagTypedef, dwarf.TagUnspecifiedType:
		return true
	}
	return false
}

// TestTypesAsDebugDWARF decodes every type of libc's debug file and of
// the test binaries (every type DIE, and every DIE a DW_AT_type names)
// with this package's decoder (dwarfbuf) and with dwarf.Data.Type: the
// same Go type, name and size, and for structs and unions every member's
// name, byte offset, bit offset and size and type; for pointers, typedefs,
// qualifiers and arrays what they wrap; for enums their values. A
// declaration reads here as the one complete definition of its name
// (noteDefinition), so the reference's declaration is replaced by that
// definition before comparing, and a named aggregate may equal another
// unit's definition of it, which is read once and shared; function types
// are read without their parameters here (attribution never looks at
// them).
func TestTypesAsDebugDWARF(t *testing.T) {
	for _, c := range dwarfTestFiles(t, false) {
		t.Run(filepath.Base(c[1]), func(t *testing.T) {
			b, err := Open(c[0], c[1])
			if err != nil {
				t.Fatal(err)
			}
			if b.lazy {
				t.Fatal("indexed lazily: the definitions of declarations are not all known")
			}
			ref := refDWARF(t, c[1])
			seen := map[dwarf.Offset]bool{}
			var offs []dwarf.Offset
			named := map[defKey][]dwarf.Offset{} // complete named aggregates, by tag and name
			r := ref.Reader()
			for {
				e, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if e == nil {
					break
				}
				if isTypeTag(e.Tag) && !seen[e.Offset] {
					seen[e.Offset] = true
					offs = append(offs, e.Offset)
				}
				if name, _ := e.Val(dwarf.AttrName).(string); name != "" && e.Val(dwarf.AttrDeclaration) == nil {
					switch e.Tag {
					case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType, dwarf.TagEnumerationType:
						k := defKey{e.Tag, name}
						named[k] = append(named[k], e.Offset)
					}
				}
				if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok && !seen[off] {
					seen[off] = true
					offs = append(offs, off)
				}
			}
			def := func(st *dwarf.StructType) dwarf.Type {
				tag := map[string]dwarf.Tag{"struct": dwarf.TagStructType, "union": dwarf.TagUnionType, "class": dwarf.TagClassType}[st.Kind]
				o, ok := b.defs[defKey{tag, st.StructName}]
				if !ok || o == noDefinition || st.StructName == "" {
					return nil
				}
				d, err := ref.Type(o)
				if err != nil {
					t.Fatalf("dwarf.Data.Type at %#x: %v", o, err)
				}
				return d
			}
			// shared reports whether got, a named aggregate read here, is
			// the one of another unit's definition of the same name: those
			// are read once and shared (readType), and a unit's copy may
			// name its members' types differently (typedefs of another
			// header).
			shared := func(got dwarf.Type, g []string) bool {
				var k defKey
				switch v := got.(type) {
				case *dwarf.StructType:
					tag := map[string]dwarf.Tag{"struct": dwarf.TagStructType, "union": dwarf.TagUnionType, "class": dwarf.TagClassType}[v.Kind]
					k = defKey{tag, v.StructName}
				case *dwarf.EnumType:
					k = defKey{dwarf.TagEnumerationType, v.EnumName}
				default:
					return false
				}
				for _, o := range named[k] {
					if w, err := ref.Type(o); err == nil && slices.Equal(g, typeFacts(w, def, 0)) {
						return true
					}
				}
				return false
			}
			bad, structs, members, sharing := 0, 0, 0, 0
			if raceDetector && len(offs) > 10000 { // libc's
				offs = sample(offs)
			}
			for _, off := range offs {
				want, wantErr := ref.Type(off)
				got, err := b.typ(off)
				if (err != nil) != (wantErr != nil) {
					t.Errorf("type at %#x: error %v, dwarf.Data.Type's %v", off, err, wantErr)
					bad++
				}
				if err != nil || wantErr != nil {
					continue
				}
				g, w := typeFacts(got, nil, 0), typeFacts(want, def, 0)
				if !slices.Equal(g, w) && shared(got, g) {
					sharing++
				} else if !slices.Equal(g, w) {
					if bad++; bad <= 5 {
						i := 0
						for i < len(g) && i < len(w) && g[i] == w[i] {
							i++
						}
						t.Errorf("type at %#x, line %d of %d and %d:\n  read here:\n%s\n  dwarf.Data.Type:\n%s", off, i, len(g), len(w),
							strings.Join(g[max(0, i-2):min(len(g), i+3)], "\n"), strings.Join(w[max(0, i-2):min(len(w), i+3)], "\n"))
					}
				}
				if st, ok := got.(*dwarf.StructType); ok {
					structs++
					members += len(st.Field)
				}
			}
			if bad > 5 {
				t.Errorf("%d types differ in all", bad)
			}
			if structs == 0 || members == 0 {
				t.Errorf("no struct members compared")
			}
			t.Logf("%d types compared (%d structs, unions and classes with %d members); %d named aggregates shared, %d as another unit's definition", len(offs), structs, members, len(b.named), sharing)
		})
	}
}

// sample is every eighth of offs.
func sample(offs []dwarf.Offset) []dwarf.Offset {
	var some []dwarf.Offset
	for i := 0; i < len(offs); i += 8 {
		some = append(some, offs[i])
	}
	return some
}

// typeFacts is what both decoders must agree on of a type, one line per
// type: its Go type, name and sizes; for a struct, union or class at depth
// 0 a line per member; for a type that wraps another, that type's lines,
// up to depth 3. def, when not nil, gives the definition that stands for
// a declaration.
func typeFacts(t dwarf.Type, def func(*dwarf.StructType) dwarf.Type, depth int) []string {
	if st, ok := t.(*dwarf.StructType); ok && st.Incomplete && def != nil {
		if d := def(st); d != nil {
			t = d
		}
	}
	line := fmt.Sprintf("%*s%T %q size %d", 2*depth, "", t, typeName(t), factSize(t, def, 0))
	var inner dwarf.Type
	switch v := t.(type) {
	case *dwarf.PtrType:
		inner = v.Type
	case *dwarf.TypedefType:
		inner = v.Type
	case *dwarf.QualType:
		line += " " + v.Qual
		inner = v.Type
	case *dwarf.ArrayType:
		line += fmt.Sprintf(" count %d stride %d", v.Count, v.StrideBitSize)
		inner = v.Type
	case *dwarf.BasicType, *dwarf.IntType, *dwarf.UintType, *dwarf.CharType, *dwarf.UcharType, *dwarf.FloatType,
		*dwarf.ComplexType, *dwarf.BoolType, *dwarf.AddrType:
		bt := v.(interface{ Basic() *dwarf.BasicType }).Basic()
		line += fmt.Sprintf(" bits %d@%d/%d", bt.BitSize, bt.BitOffset, bt.DataBitOffset)
	case *dwarf.UnsupportedType:
		line += " tag " + v.Tag.String()
	case *dwarf.StructType:
		line += fmt.Sprintf(" %s incomplete %v", v.Kind, v.Incomplete)
	case *dwarf.EnumType:
		if depth == 0 {
			for _, e := range v.Val {
				line += fmt.Sprintf(" %s=%d", e.Name, e.Val)
			}
		}
	}
	out := []string{line}
	if st, ok := t.(*dwarf.StructType); ok && depth == 0 {
		for _, f := range st.Field {
			out = append(out, fmt.Sprintf("  member %q at %d bits %d@%d/%d size %d", f.Name, f.ByteOffset, f.BitSize, f.BitOffset, f.DataBitOffset, f.ByteSize))
			out = append(out, typeFacts(f.Type, def, 2)...)
		}
	}
	if inner != nil && depth < 3 {
		out = append(out, typeFacts(inner, def, depth+1)...)
	}
	return out
}

// factSize is t's size, the definition's for a declaration def replaces.
// (dwarf.Type.Size would read a declaration's, -1.)
func factSize(t dwarf.Type, def func(*dwarf.StructType) dwarf.Type, depth int) int64 {
	if depth > 32 {
		return -2
	}
	switch v := t.(type) {
	case *dwarf.TypedefType:
		return factSize(v.Type, def, depth+1)
	case *dwarf.QualType:
		return factSize(v.Type, def, depth+1)
	case *dwarf.StructType:
		if v.Incomplete && def != nil {
			if d := def(v); d != nil {
				return d.Common().ByteSize
			}
		}
	case nil:
		return -3
	}
	return t.Common().ByteSize
}

// TestDIEsAsDebugDWARF reads every DIE of libc's debug file, the test
// binaries and a Go program with a dieReader and with dwarf.Reader: the
// same entries (offset, tag, children, and every attribute with its value
// and class), and for those with code the same ranges as
// dwarf.Data.Ranges. Then the scope trees of a sample of functions
// (variables and parameters, their types and locations) read through
// either reader are the same.
func TestDIEsAsDebugDWARF(t *testing.T) {
	for _, c := range dwarfTestFiles(t, true) {
		t.Run(filepath.Base(c[1]), func(t *testing.T) {
			b, err := Open(c[0], c[1])
			if err != nil {
				t.Fatal(err)
			}
			ref := refDWARF(t, c[1])
			got, want := b.reader(), ref.Reader()
			n, withRanges, bad := 0, 0, 0
			for {
				g, err := got.Next()
				if err != nil {
					t.Fatal(err)
				}
				w, err := want.Next()
				if err != nil {
					t.Fatal(err)
				}
				if g == nil || w == nil {
					if g != w {
						t.Fatalf("after %d DIEs: read here %v, dwarf.Reader %v", n, g, w)
					}
					break
				}
				n++
				if raceDetector && n > 10000 && n%8 != 0 { // a sample of libc's
					continue
				}
				if !reflect.DeepEqual(g, w) {
					if bad++; bad <= 5 {
						t.Errorf("DIE %d:\n  read here:    %+v\n  dwarf.Reader: %+v", n, g, w)
					}
					continue
				}
				if w.Val(dwarf.AttrRanges) == nil && w.Val(dwarf.AttrHighpc) == nil {
					continue
				}
				withRanges++
				gr, gerr := b.ranges(g)
				wr, werr := ref.Ranges(w)
				if (gerr != nil) != (werr != nil) || !slices.Equal(gr, wr) {
					if bad++; bad <= 5 {
						t.Errorf("ranges of DIE at %#x: %v (%v), dwarf.Data.Ranges: %v (%v)", g.Offset, gr, gerr, wr, werr)
					}
				}
			}
			if bad > 5 {
				t.Errorf("%d differences in all", bad)
			}
			if withRanges == 0 {
				t.Error("no ranges compared")
			}
			step := max(1, len(b.funcs)/300)
			vars := 0
			for i := 0; i < len(b.funcs); i += step {
				f := b.funcs[i]
				r := b.reader()
				r.Seek(f.die)
				g, gerr := b.readFuncScope(r, f)
				rr := ref.Reader()
				rr.Seek(f.die)
				w, werr := b.readFuncScope(rr, f)
				if gerr != nil || werr != nil {
					t.Fatalf("scope of %#x: %v; with dwarf.Reader: %v", f.die, gerr, werr)
				}
				gs, ws := scopeFacts(b, g), scopeFacts(b, w)
				if !slices.Equal(gs, ws) {
					t.Errorf("scope of %s:\n  read here:\n%s\n  with dwarf.Reader:\n%s", g.name, strings.Join(gs, "\n"), strings.Join(ws, "\n"))
				}
				vars += len(gs)
			}
			t.Logf("%d DIEs, %d with code ranges; %d scopes and variables of %d functions compared", n, withRanges, vars, len(b.funcs)/step)
		})
	}
}

// scopeFacts lists a scope tree: each scope's ranges and inlined name,
// each variable's name, type, parameter flag and location (decoded over
// its first range, and as read).
func scopeFacts(b *Binary, fs *funcScope) []string {
	out := []string{fmt.Sprintf("%s frame base %v", fs.name, fs.frameBase.loc)}
	var walk func(s *scope, depth int)
	walk = func(s *scope, depth int) {
		out = append(out, fmt.Sprintf("%*sscope %v %q", 2*depth, "", s.ranges, s.inlined))
		for i := range s.vars {
			v := &s.vars[i]
			pc := uint64(0)
			if len(s.ranges) > 0 {
				pc = s.ranges[0][0]
			}
			out = append(out, fmt.Sprintf("%*s%s type %#x param %v loc %v (%v) at %#x: %v", 2*depth+2, "", v.name, v.typ, v.param, v.loc, v.class, pc, b.varLocation(fs.unit, v, pc)))
		}
		for _, c := range s.children {
			walk(c, depth+1)
		}
	}
	walk(&fs.root, 0)
	return out
}

// TestTypeUnitsFallBack: a type in a type unit (.debug_types, found by
// signature) is read with debug/dwarf's reader, the one use left of it.
func TestTypeUnitsFallBack(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc not found")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "tu.c")
	if err := os.WriteFile(src, []byte("struct pair { long a; int b; };\nstruct pair *p;\nint main(void) { return p ? p->b : 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "tu")
	if out, err := exec.Command("gcc", "-g", "-gdwarf-4", "-fdebug-types-section", "-O1", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	b, err := Open(exe, exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.typeUnits) == 0 {
		t.Fatal("gcc wrote no .debug_types")
	}
	if len(b.globals) == 0 {
		t.Fatal("no global p")
	}
	e, err := b.entry(b.globals[0].die)
	if err != nil {
		t.Fatal(err)
	}
	off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		t.Fatalf("p has no type: %+v", e)
	}
	typ, err := b.typ(off)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pointee(typ)
	if !ok || typeName(p) != "struct pair" || typeSize(p) != 16 || b.sigData == nil {
		t.Errorf("p is %s, pointing to %s of %d bytes; want struct pair of 16, read by debug/dwarf", typeName(typ), typeName(p), typeSize(p))
	}
}
