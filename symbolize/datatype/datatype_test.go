package datatype

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const testdataDir = "../../testdata/datatype"

// variant is one build of testdata/datatype/datatype.c (see build.sh).
type variant struct {
	name        string
	exec, debug string
}

var variants = []variant{
	{"dwarf5-pie", "datatype-dw5-pie", "datatype-dw5-pie"},
	{"dwarf5-nopie", "datatype-dw5-nopie", "datatype-dw5-nopie"},
	{"dwarf4-pie", "datatype-dw4-pie", "datatype-dw4-pie"},
	{"dwarf4-nopie", "datatype-dw4-nopie", "datatype-dw4-nopie"},
	{"dwarf5-pie-separate-debug", "datatype-dw5-pie.stripped", "datatype-dw5-pie.debug"},
}

// insn is one line of `objdump -d`.
type insn struct {
	addr uint64
	text string // e.g. "mov    0x8(%rdi),%rax"
}

var (
	disasmMu    sync.Mutex
	disasmCache = map[string]map[string][]insn{}
)

// disasm runs objdump on path and returns each function's instructions.
// The test's expected addresses come from here, independent of the engine.
func disasm(t testing.TB, path string) map[string][]insn {
	return disasmWith(t, "objdump", "#", path)
}

// disasmWith is disasm with another objdump (aarch64-linux-gnu-objdump),
// whose comments start with comment.
func disasmWith(t testing.TB, objdump, comment, path string) map[string][]insn {
	t.Helper()
	disasmMu.Lock()
	defer disasmMu.Unlock()
	if m, ok := disasmCache[path]; ok {
		return m
	}
	if _, err := exec.LookPath(objdump); err != nil {
		t.Fatalf("%s (binutils) is required: run make deps", objdump)
	}
	out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", path, err)
	}
	funcs := map[string][]insn{}
	head := regexp.MustCompile(`^[0-9a-f]+ <([^>]+)>:$`)
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if m := head.FindStringSubmatch(l); m != nil {
			cur = m[1]
			continue
		}
		if m := line.FindStringSubmatch(l); m != nil && cur != "" {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			text := m[2]
			if i := strings.Index(text, comment); i >= 0 {
				text = text[:i]
			}
			funcs[cur] = append(funcs[cur], insn{a, strings.Join(strings.Fields(text), " ")})
		}
	}
	disasmCache[path] = funcs
	return funcs
}

// findInsn returns the address of the first instruction in fn whose text
// contains all of the given substrings (objdump AT&T syntax, single spaces).
func findInsn(t testing.TB, funcs map[string][]insn, fn string, pattern ...string) uint64 {
	t.Helper()
	insns, ok := funcs[fn]
	if !ok {
		t.Fatalf("function %s not in the disassembly", fn)
	}
next:
	for _, in := range insns {
		for _, p := range pattern {
			if !strings.Contains(in.text, p) {
				continue next
			}
		}
		return in.addr
	}
	t.Fatalf("no instruction matching %q in %s; disassembly:\n%v", pattern, fn, insns)
	return 0
}

type want struct {
	typ, member, kind, varName, fn string
	size                           int64
	reason                         string // substring of Reason
}

var cases = []struct {
	name    string
	fn      string
	pattern []string
	want    want
}{
	{"pointer parameter n->key", "get_key", []string{"mov 0x8(%rdi),%rax"},
		want{typ: "struct node", size: 24, member: "key", kind: KindMember, varName: "n", fn: "get_key"}},
	{"linked-list loop n->val", "sum_list", []string{"movslq 0x10(%rdi)"},
		want{typ: "struct node", size: 24, member: "val", kind: KindMember, varName: "n"}},
	{"linked-list loop n = n->next", "sum_list", []string{"mov (%rdi),%rdi"},
		want{typ: "struct node", size: 24, member: "next", kind: KindMember, varName: "n"}},
	{"nested struct member", "get_y", []string{"0xc(%rdi)"},
		want{typ: "struct outer", size: 32, member: "in.y", kind: KindMember, varName: "o"}},
	{"array member", "get_name3", []string{"0x13(%rdi)"},
		want{typ: "struct outer", size: 32, member: "name[3]", kind: KindMember, varName: "o"}},
	{"union member", "get_d", []string{"movsd 0x8(%rdi)"},
		want{typ: "struct tagged", size: 16, member: "v.d", kind: KindMember, varName: "t"}},
	{"bitfield", "get_mode", []string{"(%rdi)"},
		want{typ: "struct flags", size: 8, member: "mode:3", kind: KindMember, varName: "f"}},
	{"typedef'd struct", "get_area", []string{"0x8(%rdi)"},
		want{typ: "rect_t", size: 16, member: "area", kind: KindMember, varName: "r"}},
	{"global via RIP", "count_miss", []string{"(%rip)"},
		want{typ: "struct counters", size: 48, member: "misses", kind: KindGlobal, varName: "stats"}},
	{"global array element via RIP", "count_table", []string{"(%rip)"},
		want{typ: "struct counters", size: 48, member: "table[2]", kind: KindGlobal, varName: "stats"}},
	{"stack-local struct via fbreg", "use_local", []string{"0xc(%rsp)"},
		want{typ: "struct outer", size: 32, member: "in.y", kind: KindMember, varName: "o"}},
	{"stack-local struct first member", "use_local", []string{"imul (%rsp)"},
		want{typ: "struct outer", size: 32, member: "a", kind: KindMember, varName: "o"}},
	{"inlined function's parameter", "inl_keys", []string{"xor 0x8(%rdx),%rax"},
		want{typ: "struct node", size: 24, member: "key", kind: KindMember, varName: "n", fn: "list_keys"}},
	{"inlined function's loop n = n->next", "inl_keys", []string{"mov (%rdx),%rdx"},
		want{typ: "struct node", size: 24, member: "next", kind: KindMember, varName: "n", fn: "list_keys"}},
	{"caller's parameter outside the inlined code", "inl_keys", []string{"0x18(%rdi)"},
		want{typ: "struct outer", size: 32, member: "head", kind: KindMember, varName: "o", fn: "inl_keys"}},
	{"push", "make_node", []string{"push %rbx"},
		want{typ: "(stack operation)", kind: KindStackOp}},
	{"ret", "get_key", []string{"ret"},
		want{typ: "(stack operation)", kind: KindStackOp}},
	{"call", "new_val", []string{"call"},
		want{typ: "(stack operation)", kind: KindStackOp}},
	{"add without memory operand", "sum_list", []string{"add %rdx,%rax"},
		want{typ: "(unknown)", kind: KindUnknown, reason: "no memory operand"}},
	{"offset past the type", "past_end", []string{"0x10(%rdi)"},
		want{typ: "(unknown)", kind: KindUnknown, reason: "outside struct small (size 8)"}},
	{"tracked: pointer loaded from a member", "head_key", []string{"0x8(%rax)"},
		want{typ: "struct node", size: 24, member: "key", kind: KindMember, reason: "register tracking: o->head"}},
	{"tracked: call's return value", "new_val", []string{"0x10(%rax)"},
		want{typ: "struct node", size: 24, member: "val", kind: KindMember, reason: "make_node()"}},
}

func TestAttribute(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b, err := Open(filepath.Join(testdataDir, v.exec), filepath.Join(testdataDir, v.debug))
			if err != nil {
				t.Fatal(err)
			}
			// The stripped executable has no symbols: disassemble the full one.
			funcs := disasm(t, filepath.Join(testdataDir, strings.Replace(v.exec, ".stripped", "", 1)))
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					pc := findInsn(t, funcs, c.fn, c.pattern...)
					got := b.Attribute(pc)
					w := c.want
					if got.Type != w.typ || got.Kind != w.kind || got.Member != w.member ||
						(w.size != 0 && got.TypeSize != w.size) || (w.varName != "" && got.Var != w.varName) ||
						(w.fn != "" && got.Func != w.fn) || !strings.Contains(got.Reason, w.reason) {
						t.Errorf("Attribute(%#x) in %s = %+v\nwant %+v", pc, c.fn, got, w)
					}
				})
			}
		})
	}
}

// TestAttributeO0 covers unoptimized code with a frame pointer: variables
// live in the frame (DW_OP_fbreg with an rbp-based CFA) and pointers are
// reloaded from it before each use, so member accesses need the second
// phase (register tracking) to follow the reload.
func TestAttributeO0(t *testing.T) {
	path := filepath.Join(testdataDir, "datatype-dw5-O0")
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := disasm(t, path)
	for _, c := range []struct {
		name    string
		fn      string
		pattern []string
		want    want
	}{
		{"the pointer parameter in the frame", "get_key", []string{"mov -0x8(%rbp),%rax"},
			want{typ: "struct node *", size: 8, member: "", kind: KindMember, varName: "n"}},
		{"n->key after reloading n", "get_key", []string{"mov 0x8(%rax),%rax"},
			want{typ: "struct node", size: 24, member: "key", kind: KindMember, reason: "register tracking: n"}},
		{"o->in.y after reloading o", "get_y", []string{"0xc(%rax)"},
			want{typ: "struct outer", size: 32, member: "in.y", kind: KindMember, reason: "register tracking: o"}},
		{"global via RIP", "count_miss", []string{"mov", "(%rip),%rax"},
			want{typ: "struct counters", size: 48, member: "misses", kind: KindGlobal, varName: "stats"}},
		{"stack-local struct member", "use_local", []string{"mov -0x14(%rbp),%eax"},
			want{typ: "struct outer", size: 32, member: "in.y", kind: KindMember, varName: "o"}},
		{"stack-local struct first member", "use_local", []string{"mov -0x20(%rbp),%rax"},
			want{typ: "struct outer", size: 32, member: "a", kind: KindMember, varName: "o"}},
		{"call's return value", "new_val", []string{"0x10(%rax)"},
			want{typ: "struct node", size: 24, member: "val", kind: KindMember, reason: "make_node()"}},
		{"leave", "use_local", []string{"leave"},
			want{typ: "(stack operation)", kind: KindStackOp}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := findInsn(t, funcs, c.fn, c.pattern...)
			got := b.Attribute(pc)
			w := c.want
			if got.Type != w.typ || got.Kind != w.kind || got.Member != w.member ||
				(w.size != 0 && got.TypeSize != w.size) || (w.varName != "" && got.Var != w.varName) ||
				!strings.Contains(got.Reason, w.reason) {
				t.Errorf("Attribute(%#x) in %s = %+v\nwant %+v", pc, c.fn, got, w)
			}
		})
	}
}

// TestAttributeSharedLibrary: position-independent code reaches an exported
// global through its GOT slot; the load of the slot is not data, the access
// through the loaded address is the global's member.
func TestAttributeSharedLibrary(t *testing.T) {
	path := filepath.Join(testdataDir, "libdatatype.so")
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := disasm(t, path)
	for _, c := range []struct {
		name    string
		fn      string
		pattern []string
		want    want
	}{
		{"the GOT load", "lib_limit2", []string{"(%rip),%rax"},
			want{typ: "(unknown)", kind: KindUnknown, reason: "GOT slot (the address of lib_config)"}},
		{"array member through the GOT", "lib_limit2", []string{"0x14(%rax)"},
			want{typ: "struct config", size: 32, member: "limits[2]", kind: KindMember, reason: "&lib_config (GOT)"}},
		{"first member through the GOT", "lib_version", []string{"mov (%rax),%rax"},
			want{typ: "struct config", size: 32, member: "version", kind: KindMember, reason: "&lib_config (GOT)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := findInsn(t, funcs, c.fn, c.pattern...)
			got := b.Attribute(pc)
			w := c.want
			if got.Type != w.typ || got.Kind != w.kind || got.Member != w.member ||
				(w.size != 0 && got.TypeSize != w.size) || !strings.Contains(got.Reason, w.reason) {
				t.Errorf("Attribute(%#x) in %s = %+v\nwant %+v", pc, c.fn, got, w)
			}
		})
	}
}
