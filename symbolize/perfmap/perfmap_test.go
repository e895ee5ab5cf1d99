package perfmap

import (
	"errors"
	"strings"
	"testing"
)

// TestParseOddLines: perf's rules on the lines a JIT or a hand may write:
// 0x prefixes and blanks are taken, junk, a missing size or name, a name
// under three characters and a range past 2^64 are skipped and counted,
// a later line wins where it overlaps an earlier one, and the rest of a
// line, spaces included, is the name.
func TestParseOddLines(t *testing.T) {
	text := strings.Join([]string{
		"1000 100 JS:*rec hot.js:3:13",   // 1: plain
		"0x2000 0x10 with 0x prefix",     // 2
		"  3000 10 leading blanks",       // 3
		"this is junk",                   // 4: bad
		"4000",                           // 5: bad, no size
		"4000 20",                        // 6: bad, no name
		"5000 10 ab",                     // 7: bad, a name perf does not take
		"ffffffffffffff00 200 wraps",     // 8: bad, past 2^64
		"",                               // 9: bad
		"6000 100 old",                   // 10
		"6080 10 new inside old",         // 11: wins over old at 6080-608f
		"6000 40 newer head",             // 12: wins over old at 6000-603f
		"7000 0 zero size",               // 13: covers 7000 only
		"8000 10 name\twith  tabs  ",     // 14
		"10000000000000000 10 too large", // 15: bad, start over 64 bits
	}, "\n") + "\n"
	m := Parse(text)
	if m.Lines != 15 || m.Bad != 7 || m.Symbols != 8 || m.FirstBad != 4 {
		t.Errorf("lines %d, bad %d, symbols %d, first bad %d; want 15, 7, 8, 4", m.Lines, m.Bad, m.Symbols, m.FirstBad)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xfff, ""},
		{0x1000, "JS:*rec hot.js:3:13"}, {0x10ff, "JS:*rec hot.js:3:13"}, {0x1100, ""},
		{0x2008, "with 0x prefix"},
		{0x3000, "leading blanks"},
		{0x4010, ""}, {0x5000, ""},
		{0x6000, "newer head"}, {0x603f, "newer head"}, {0x6040, "old"}, {0x607f, "old"},
		{0x6080, "new inside old"}, {0x608f, "new inside old"}, {0x6090, "old"}, {0x60ff, "old"}, {0x6100, ""},
		{0x7000, "zero size"}, {0x7001, ""},
		{0x8000, "name\twith  tabs  "},
		{0xffffffffffffff80, ""},
	} {
		got, ok := m.Lookup(c.addr)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", c.addr, got, ok, c.want)
		}
	}
	if n := m.Len(); n != 9 {
		t.Errorf("%d ranges, want 9 (old split in three around the newer lines)", n)
	}
}

// TestParseOverlapsInAnyOrder: whatever the order of starts, each address
// is the last covering line's (checked against a plain scan).
func TestParseOverlapsInAnyOrder(t *testing.T) {
	lines := []string{
		"100 300 a-first", "50 100 b-second", "200 20 c-third", "0 1000 d-fourth-all",
		"180 100 e-fifth", "210 5 f-sixth", "2000 10 g-alone", "2005 10 h-overlapping-g",
	}
	m := Parse(strings.Join(lines, "\n"))
	type ln struct {
		start, end uint64
		name       string
	}
	var ls []ln
	for _, l := range lines {
		e, ok := parseLine(l)
		if !ok {
			t.Fatalf("line %q not taken", l)
		}
		ls = append(ls, ln{e.start, e.end, e.name})
	}
	for a := uint64(0); a < 0x2100; a++ {
		want := ""
		for _, l := range ls {
			if l.start <= a && a < l.end {
				want = l.name
			}
		}
		if got, _ := m.Lookup(a); got != want {
			t.Fatalf("Lookup(%#x) = %q, want %q", a, got, want)
		}
	}
}

// TestReadRefusesHugeMap: a map over the bound is refused whole, never
// cut to a prefix that would name some frames and not others.
func TestReadRefusesHugeMap(t *testing.T) {
	line := "7f0000001000 40 JS:*f x.js:1:1\n"
	text := strings.Repeat(line, 1000)
	if _, err := Read(strings.NewReader(text), int64(len(text)-1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a map one byte over its bound: %v, want ErrTooLarge", err)
	}
	m, err := Read(strings.NewReader(text), int64(len(text)))
	if err != nil || m.Symbols != 1000 || m.Len() != 1 {
		t.Errorf("a map at its bound: %v, %+v", err, m)
	}
}

// TestPID: only /tmp/perf-<digits>.map, exactly as perf spells it, is a
// perf map's path.
func TestPID(t *testing.T) {
	for path, want := range map[string]int{
		"/tmp/perf-4242.map": 4242, "/tmp/perf-1.map": 1,
		"/tmp/perf-.map": 0, "/tmp/perf-04242.map": 0, "/tmp/perf-42a.map": 0, "/tmp/perf--1.map": 0,
		"/tmp/perf-4242.map.bak": 0, "/tmp/../etc/perf-1.map": 0, "/tmp/x/perf-1.map": 0, "tmp/perf-1.map": 0,
		"/tmp/perf-1/../../etc/passwd.map": 0, "/tmp/perf-99999999999.map": 0, "//tmp/perf-1.map": 0,
	} {
		got, ok := PID(path)
		if got != want || ok != (want != 0) {
			t.Errorf("PID(%q) = %d, %v; want %d", path, got, ok, want)
		}
	}
	if p := Path(4242); p != "/tmp/perf-4242.map" {
		t.Errorf("Path(4242) = %q", p)
	}
}
