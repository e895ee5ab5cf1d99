package datatype

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// gdbField is one member line of gdb's `ptype/o`: its offset and size in
// bytes, its name and, for an array, its element count.
type gdbField struct {
	off, size int64
	name      string
	count     int64
}

// gdbLayout runs `gdb -batch -ex 'ptype/o TYPE'` on bin: the layout as the
// debugger reads it from DWARF, independent of this package.
func gdbLayout(t *testing.T, bin, typ string) []gdbField {
	t.Helper()
	out := gdb(t, bin, "ptype/o "+typ)
	row := regexp.MustCompile(`^/\*\s+([0-9]+)\s+\|\s+([0-9]+) \*/\s+.*?([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9]+)\])?;$`)
	var fs []gdbField
	for _, l := range strings.Split(out, "\n") {
		if m := row.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			off, _ := strconv.ParseInt(m[1], 10, 64)
			size, _ := strconv.ParseInt(m[2], 10, 64)
			count, _ := strconv.ParseInt(m[4], 10, 64)
			fs = append(fs, gdbField{off, size, m[3], count})
		}
	}
	if len(fs) == 0 {
		t.Fatalf("gdb ptype/o %s printed no members:\n%s", typ, out)
	}
	return fs
}

func gdb(t *testing.T, bin string, cmds ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Fatal("gdb is required (package gdb): run make deps")
	}
	args := []string{"-nx", "-batch"}
	for _, c := range cmds {
		args = append(args, "-ex", c)
	}
	out, err := exec.Command("gdb", append(args, bin)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb %v: %v\n%s", cmds, err, out)
	}
	return string(out)
}

// memOperand parses objdump's AT&T memory operand "disp(base,index,scale)"
// in text: its displacement and whether an index register is added.
func memOperand(t *testing.T, text string) (disp int64, indexed bool) {
	t.Helper()
	m := regexp.MustCompile(`(-?0x[0-9a-f]+|-?[0-9]+)?\((%[a-z0-9]+)?(?:,(%[a-z0-9]+)(?:,[1248])?)?\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no memory operand in %q", text)
	}
	if m[1] != "" {
		d, err := strconv.ParseInt(strings.Replace(m[1], "0x", "", 1), 16, 64)
		if !strings.HasPrefix(strings.TrimPrefix(m[1], "-"), "0x") {
			d, err = strconv.ParseInt(m[1], 10, 64)
		}
		if err != nil {
			t.Fatalf("displacement %q: %v", m[1], err)
		}
		disp = d
	}
	return disp, m[3] != ""
}

func insnText(t *testing.T, funcs map[string][]insn, fn string, pattern ...string) (uint64, string) {
	t.Helper()
	pc := findInsn(t, funcs, fn, pattern...)
	for _, in := range funcs[fn] {
		if in.addr == pc {
			return pc, in.text
		}
	}
	return pc, ""
}

// TestAttributeArrayIndex: an access whose address adds an index register
// reaches an element of the array that only the run knows, so it is named
// "load[]" and not element [0]; a constant index keeps its element. The
// expected name is worked out from objdump (the displacement, and whether
// an index register is added) and gdb's ptype/o (where each member lies),
// as a user checking the data-type page against those tools would.
func TestAttributeArrayIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gdb and objdump on each binary: skipped with -short")
	}
	for _, bin := range []string{"index", "index-nopie"} {
		t.Run(bin, func(t *testing.T) {
			path := filepath.Join(testdataDir, bin)
			b, err := Open(path, path)
			if err != nil {
				t.Fatal(err)
			}
			funcs := disasm(t, path)
			sensor := gdbLayout(t, path, "struct sensor")
			slot := gdbLayout(t, path, "struct slot")
			// expect names the member at byte off of struct sensor as gdb
			// lays it out, with "[]" for the element when indexed.
			expect := func(off int64, indexed bool) string {
				for _, f := range sensor {
					if off < f.off || off >= f.off+f.size {
						continue
					}
					if f.count == 0 {
						return f.name
					}
					es := f.size / f.count
					el := "[" + strconv.FormatInt((off-f.off)/es, 10) + "]"
					if indexed {
						el = "[]"
					}
					if f.name != "slots" {
						return f.name + el
					}
					for _, sf := range slot {
						if (off-f.off)%es == sf.off {
							return f.name + el + "." + sf.name
						}
					}
				}
				t.Fatalf("offset %d is in no member of struct sensor per gdb: %v", off, sensor)
				return ""
			}
			for _, c := range []struct{ fn, pattern string }{
				{"load_at", "mov 0x8("},
				{"load_third", "mov 0x14("},
				{"slot_hi", "mov 0x4c("},
				{"slot2_lo", "mov 0x58("},
			} {
				t.Run(c.fn, func(t *testing.T) {
					pc, text := insnText(t, funcs, c.fn, c.pattern)
					disp, indexed := memOperand(t, text)
					if indexed != (c.fn == "load_at" || c.fn == "slot_hi") {
						t.Fatalf("%s: %q: the variable index should be an index register", c.fn, text)
					}
					want := expect(disp, indexed)
					got := b.Attribute(pc)
					if got.Type != "struct sensor" || got.Member != want || got.Var != "s" {
						t.Errorf("%s: %q attributed to %s %q (var %q), want struct sensor %q (var s)", c.fn, text, got.Type, got.Member, got.Var, want)
					}
				})
			}

			// The global int table[32]: gdb says where it is and its
			// element size; objdump where each access points.
			addrOut := gdb(t, path, "print/x (long)&table", "print sizeof(table[0])", "print sizeof(table)")
			vals := regexp.MustCompile(`\$[0-9]+ = (\S+)`).FindAllStringSubmatch(addrOut, -1)
			if len(vals) != 3 {
				t.Fatalf("gdb printed %q", addrOut)
			}
			tableAddr, _ := strconv.ParseUint(strings.TrimPrefix(vals[0][1], "0x"), 16, 64)
			es, _ := strconv.ParseInt(vals[1][1], 10, 64)
			size, _ := strconv.ParseInt(vals[2][1], 10, 64)
			wantType := "int[" + strconv.FormatInt(size/es, 10) + "]"
			for _, fn := range []string{"table_at", "table_fifth"} {
				insns := funcs[fn]
				if len(insns) == 0 {
					t.Fatalf("%s not in the disassembly", fn)
				}
				// The access is the instruction that reads memory into eax.
				pc, text := insnText(t, funcs, fn, ",%eax")
				var addr uint64
				_, indexed := memOperand(t, text)
				switch {
				case strings.Contains(text, "(%rip)"):
					// objdump resolves the target: the next instruction + disp.
					var next uint64
					for i, in := range insns {
						if in.addr == pc && i+1 < len(insns) {
							next = insns[i+1].addr
						}
					}
					disp, _ := memOperand(t, text)
					addr = next + uint64(disp)
				case strings.HasPrefix(text, "mov (%rax,"):
					// lea table(%rip),%rax before it: the base is &table.
					addr = tableAddr
				default:
					disp, _ := memOperand(t, text)
					addr = uint64(disp)
				}
				off := int64(addr - tableAddr)
				want := "[" + strconv.FormatInt(off/es, 10) + "]"
				if indexed {
					want = "[]"
				}
				if indexed != (fn == "table_at") {
					t.Fatalf("%s: %q: the variable index should be an index register", fn, text)
				}
				got := b.Attribute(pc)
				if got.Type != wantType || got.Member != want || got.Kind != KindGlobal && !strings.Contains(got.Reason, "table") {
					t.Errorf("%s: %q attributed to %s %q (%s: %s), want %s %q", fn, text, got.Type, got.Member, got.Kind, got.Reason, wantType, want)
				}
			}
		})
	}
}

// TestProfileArrayIndex: on the data-type page (and types.json), samples on
// a variable-index access count on a "load[]" row under load, element
// [0] gets none, and a constant index's samples stay on their element.
func TestProfileArrayIndex(t *testing.T) {
	path := filepath.Join(testdataDir, "index")
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := disasm(t, path)
	variable := findInsn(t, funcs, "load_at", "(%rdi,%rsi,4)")
	constant := findInsn(t, funcs, "load_third", "(%rdi)")
	agg := NewAggregator()
	agg.AddDSO(DSO{Name: "index", DebugSource: path})
	agg.Add("index", b, []Sample{{PC: variable, Weight: 47}, {PC: constant, Weight: 3}})
	p := agg.Profile()
	rows := map[string]MemberStat{}
	for _, ts := range p.Types {
		if ts.Name == "struct sensor" {
			for _, m := range ts.Members {
				rows[m.Name] = m
			}
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no struct sensor in %+v", p.Types)
	}
	if r, ok := rows["load[]"]; !ok || r.Weight != 47 || r.Depth != rows["load[0]"].Depth {
		t.Errorf("load[] row = %+v (present %v), want weight 47 at load[0]'s depth %d", r, ok, rows["load[0]"].Depth)
	}
	if r := rows["load[0]"]; r.Weight != 0 || r.Total != 0 {
		t.Errorf("load[0] = %+v, want no samples: the index is not known", r)
	}
	if r := rows["load[3]"]; r.Weight != 3 {
		t.Errorf("load[3] = %+v, want the constant index's 3", r)
	}
	if r := rows["load"]; r.Total != 50 || r.Offset != rows["load[]"].Offset {
		t.Errorf("load = %+v, want total 50 at load[]'s offset %d", r, rows["load[]"].Offset)
	}
}
