package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const deepPath = "../../testdata/perf/deep"

// libcPath is the system's libc, whose .eh_frame has thousands of FDEs of
// hand-written assembly and GCC output alike.
const libcPath = "/lib/x86_64-linux-gnu/libc.so.6"

var dwarfNames = [NumRegs]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra"}

// render prints a rule as readelf --debug-dump=frames-interp does.
func render(r Rule) string {
	switch r.Kind {
	case Unspecified, Undefined:
		return "u"
	case SameValue:
		return "s"
	case Offset:
		return fmt.Sprintf("c%+d", r.Off)
	case ValOffset:
		return fmt.Sprintf("v%+d", r.Off)
	case Register:
		if int(r.Reg) < NumRegs {
			return dwarfNames[r.Reg]
		}
		return fmt.Sprintf("r%d", r.Reg)
	case Expression:
		return "exp"
	case ValExpression:
		return "vexp"
	case RegOffset:
		if int(r.Reg) < NumRegs {
			return fmt.Sprintf("%s%+d", dwarfNames[r.Reg], r.Off)
		}
	case CFAExpression:
		return "exp"
	}
	return "?"
}

var regByNumber = regexp.MustCompile(`\br\d+ \((\w+)\)`)

// readelfRow is one row of readelf's interpreted CFI table.
type readelfRow struct {
	lo, hi uint64 // the pcs the row covers
	cols   map[string]string
}

// readelfFrames runs binutils' readelf on path and returns the rows of its
// table for section (.eh_frame or .debug_frame), each with the pc range it covers.
func readelfFrames(t *testing.T, path, section string) []readelfRow {
	t.Helper()
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Fatal("readelf is not installed (package binutils): run make deps")
	}
	// readelf exits 1 on libc without saying why, after printing the table.
	out, err := exec.Command(readelf, "--debug-dump=frames-interp", path).Output()
	if err != nil && !bytes.Contains(out, []byte("Contents of the "+section+" section")) {
		t.Fatalf("readelf --debug-dump=frames-interp %s: %v", path, err)
	}
	var rows []readelfRow
	var names []string
	var fdeHi uint64
	inFDE, inEH := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// "r1 (rdx)": a register rule names the register twice.
		line := regByNumber.ReplaceAllString(sc.Text(), "$1")
		fs := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Contents of the "):
			inEH = strings.Contains(line, section+" section")
		case !inEH || len(fs) == 0:
		case len(fs) >= 4 && fs[3] == "FDE":
			inFDE = true
			pcs := strings.TrimPrefix(fs[len(fs)-1], "pc=")
			_, hi, _ := strings.Cut(pcs, "..")
			fdeHi, err = strconv.ParseUint(hi, 16, 64)
			if err != nil {
				t.Fatalf("readelf FDE line %q", line)
			}
		case len(fs) >= 4 && fs[3] == "CIE", strings.Contains(line, "ZERO terminator"):
			inFDE = false
		case fs[0] == "LOC":
			names = fs
		case inFDE && len(fs) == len(names):
			lo, err := strconv.ParseUint(fs[0], 16, 64)
			if err != nil {
				continue
			}
			if n := len(rows); n > 0 && rows[n-1].hi == fdeHi && rows[n-1].lo < lo {
				rows[n-1].hi = lo // the previous row of this FDE ends here
			}
			r := readelfRow{lo: lo, hi: fdeHi, cols: map[string]string{}}
			for i, n := range names[1:] {
				r.cols[n] = fs[i+1]
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// TestRowsAgainstReadelf evaluates the CFI of the checked-in deep and of the
// system libc at the first and last pc of every row readelf prints and
// compares the CFA and register rules column by column.
func TestRowsAgainstReadelf(t *testing.T) {
	for _, path := range []string{deepPath, libcPath} {
		t.Run(path, func(t *testing.T) {
			ef, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			s := ef.Section(".eh_frame")
			d, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			compareReadelf(t, NewTable(d, s.Addr, true), readelfFrames(t, path, ".eh_frame"))
		})
	}
}

// compareReadelf evaluates tab at the first and last pc of each of readelf's rows.
func compareReadelf(t *testing.T, tab *Table, rows []readelfRow) {
	t.Helper()
	if len(rows) < 10 {
		t.Fatalf("readelf printed %d rows", len(rows))
	}
	checked, bad := 0, 0
	for _, want := range rows {
		for _, pc := range []uint64{want.lo, want.hi - 1} {
			if pc < want.lo {
				continue
			}
			got, err := tab.Row(pc)
			if err != nil {
				t.Errorf("pc %#x (row %#x..%#x): %v", pc, want.lo, want.hi, err)
				bad++
				continue
			}
			for name, w := range want.cols {
				var g string
				switch name {
				case "LOC":
					continue
				case "CFA":
					g = render(got.CFA)
				default:
					i := -1
					for j, n := range dwarfNames {
						if n == name {
							i = j
						}
					}
					if i < 0 {
						continue // a register the unwinder does not track
					}
					g = render(got.Regs[i])
				}
				if g != w {
					bad++
					if bad < 10 {
						t.Errorf("pc %#x %s: got %s, readelf says %s", pc, name, g, w)
					}
				}
			}
			checked++
		}
	}
	t.Logf("%d pcs checked", checked)
	if checked < 20 {
		t.Errorf("only %d pcs checked", checked)
	}
}

// TestDebugFrameFallback reads testdata/unwind/frames, built without unwind
// tables: its functions are described only by the .debug_frame that
// build.sh moved to frames.debug. The Object finds them through the debug
// file, with the rules readelf prints, and not without it.
func TestDebugFrameFallback(t *testing.T) {
	exe, err := elf.Open("../../testdata/unwind/frames")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	dbg, err := elf.Open("../../testdata/unwind/frames.debug")
	if err != nil {
		t.Fatal(err)
	}
	defer dbg.Close()
	rows := readelfFrames(t, "../../testdata/unwind/frames.debug", ".debug_frame")
	if len(rows) < 10 {
		t.Fatalf("readelf printed %d .debug_frame rows", len(rows))
	}
	alone, err := NewObject(exe, nil)
	if err != nil {
		t.Fatal(err) // crt's .eh_frame describes _start
	}
	if _, err := alone.Row(rows[0].lo); err != ErrNoFDE {
		t.Errorf("without the debug file, pc %#x: %v, want ErrNoFDE", rows[0].lo, err)
	}
	o, err := NewObject(exe, dbg)
	if err != nil {
		t.Fatal(err)
	}
	compareReadelf(t, o.debug, rows)
	for _, r := range rows {
		if _, err := o.Row(r.lo); err != nil {
			t.Errorf("pc %#x through the debug file: %v", r.lo, err)
		}
	}
}
