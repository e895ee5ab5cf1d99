package datatype

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheLines groups a real layout by cache line: struct outer (32
// bytes: a at 0, in at 8 (x at 8, y at 12), name at 16, head at 24, from
// readelf --debug-dump=info) in 12-byte lines [0,12) [12,24) [24,32): in.y
// (12) and name[3] (19) share line 1, head is line 2, and in (8..15)
// crosses from line 0 into line 1.
func TestCacheLines(t *testing.T) {
	path := filepath.Join(testdataDir, "datatype-dw5-pie")
	funcs := disasm(t, path)
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	agg := NewAggregator()
	var samples []Sample
	for fn, w := range map[string]int64{"get_y": 3, "get_name3": 5, "head_key": 7} {
		for _, in := range funcs[fn] {
			if strings.Contains(in.text, "(%rdi)") && !strings.HasPrefix(in.text, "ret") {
				samples = append(samples, Sample{PC: in.addr, Weight: w})
				break
			}
		}
	}
	agg.Add("app", b, samples)
	p := agg.Profile()
	var outer *TypeStat
	for i := range p.Types {
		if p.Types[i].Name == "struct outer" {
			outer = &p.Types[i]
		}
	}
	if outer == nil || outer.Size != 32 {
		t.Fatalf("no 32-byte struct outer in %+v", p.Types)
	}
	lines := outer.CacheLines(12) // in (8..15) crosses 12; name (16..23) crosses 24
	if len(lines) != 3 {
		t.Fatalf("%d lines of 12 bytes, want 3: %+v", len(lines), lines)
	}
	var sum int64
	for _, l := range lines {
		sum += l.Weight
	}
	if sum != 15 || lines[0].Weight != 0 || lines[1].Weight != 3+5 || lines[2].Weight != 7 {
		t.Errorf("line weights %+v, want 0, 8 (in.y, name[3]), 7 (head)", lines)
	}
	if got := strings.Join(lines[1].Members, ","); got != "in.y,name[3]" {
		t.Errorf("line 1 members %q, want in.y,name[3]", got)
	}
	if got := strings.Join(lines[0].Crossing, ","); got != "in" || len(lines[1].Crossing)+len(lines[2].Crossing) != 0 {
		t.Errorf("crossing members %+v, want only in, from line 0", lines)
	}
	if got := outer.CacheLines(DefaultCacheLine); len(got) != 1 || got[0].Weight != 15 {
		t.Errorf("64-byte lines: %+v, want the whole struct in one line", got)
	}
}
