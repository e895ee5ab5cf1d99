package datatype

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestProfile(t *testing.T) {
	path := filepath.Join(testdataDir, "datatype-dw5-pie")
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := disasm(t, path)
	key := findInsn(t, funcs, "get_key", "0x8(%rdi)")
	y := findInsn(t, funcs, "get_y", "0xc(%rdi)")
	local := findInsn(t, funcs, "use_local", "0xc(%rsp)")
	add := findInsn(t, funcs, "sum_list", "add %rdx,%rax")
	push := findInsn(t, funcs, "make_node", "push %rbx")
	agg := NewAggregator()
	agg.AddDSO(DSO{Name: "datatype", BuildID: "abc", DebugSource: path})
	agg.Add("datatype", b, []Sample{{PC: key, Weight: 3}, {PC: y, Weight: 2}, {PC: local, Weight: 2}, {PC: key, Weight: 2}, {PC: add, Weight: 1}, {PC: push, Weight: 1}, {PC: push, Weight: 0}})
	agg.AddDSO(DSO{Name: "libmissing.so", Error: "no debug info found for build ID ff00"})
	agg.Add("libmissing.so", nil, []Sample{{PC: 0x1234, Weight: 3}})
	p := agg.Profile()

	if p.Total != 14 {
		t.Errorf("Total = %d, want 14", p.Total)
	}
	byName := map[string]TypeStat{}
	var order []string
	for _, ts := range p.Types {
		byName[ts.DSO+":"+ts.Name] = ts
		order = append(order, ts.DSO+":"+ts.Name)
	}
	wantOrder := []string{"datatype:struct node", "datatype:struct outer", "libmissing.so:(unknown)", "datatype:(stack operation)", "datatype:(unknown)"}
	if strings.Join(order, ",") != strings.Join(wantOrder, ",") {
		t.Errorf("type order = %v, want %v", order, wantOrder)
	}
	node := byName["datatype:struct node"]
	if node.Weight != 5 || node.Size != 24 {
		t.Errorf("struct node = weight %d size %d, want 5, 24", node.Weight, node.Size)
	}
	rows := map[string]MemberStat{}
	for _, m := range node.Members {
		rows[m.Name] = m
	}
	if r := rows["key"]; r.Weight != 5 || r.Offset != 8 || r.Size != 8 || r.Type != "long int" {
		t.Errorf("struct node layout row key = %+v, want weight 5 at offset 8 size 8 of long int", r)
	}
	if r := rows[""]; r.Total != 5 || r.Type != "struct node" {
		t.Errorf("struct node whole-type row = %+v, want total 5", r)
	}
	if _, ok := rows["val"]; !ok {
		t.Errorf("layout of struct node lacks the unaccessed member val: %+v", node.Members)
	}
	if len(node.Funcs) != 1 || node.Funcs[0].Name != "get_key" || node.Funcs[0].Weight != 5 {
		t.Errorf("struct node funcs = %+v, want get_key 5", node.Funcs)
	}
	outer := byName["datatype:struct outer"]
	orows := map[string]MemberStat{}
	for _, m := range outer.Members {
		orows[m.Name] = m
	}
	if orows["in.y"].Weight != 4 || orows["in"].Total != 4 || orows["in"].Weight != 0 || orows["in.y"].Depth != 2 {
		t.Errorf("struct outer rows in=%+v in.y=%+v, want in.y weight 4 depth 2, in total 4", orows["in"], orows["in.y"])
	}
	if len(outer.Funcs) != 2 || outer.Funcs[0].Weight != 2 || outer.Funcs[1].Weight != 2 {
		t.Errorf("struct outer funcs = %+v, want get_y and use_local with 2 each", outer.Funcs)
	}
	var reasons []string
	for _, r := range p.Unknown {
		reasons = append(reasons, r.Reason)
	}
	if len(p.Unknown) != 2 || p.Unknown[0].Weight != 3 || !strings.Contains(p.Unknown[0].Reason, "no debug info found") ||
		!strings.Contains(p.Unknown[1].Reason, "no memory operand") || p.Unknown[1].Func != "sum_list" {
		t.Errorf("unknown reasons = %+v", p.Unknown)
	}
	if len(p.DSOs) != 2 || p.DSOs[0].Samples != 11 || p.DSOs[0].BuildID != "abc" || p.DSOs[1].Samples != 3 || p.DSOs[1].Error == "" {
		t.Errorf("DSOs = %+v", p.DSOs)
	}
}
