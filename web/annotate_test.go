package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/datatype"
)

// perfAnnotate runs `perf annotate --stdio -n` on the recording for fn and
// returns each instruction's sample count and text by address. The
// binary is put where perf recorded it under a --symfs directory, so that
// perf finds it on any checkout.
func perfAnnotate(t *testing.T, data, exe, fn string) (map[uint64]int64, map[uint64]string, []uint64) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Fatal("perf (linux-perf) is required: run make deps")
	}
	out, err := exec.Command("perf", "buildid-list", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf buildid-list: %v", err)
	}
	id := fileBuildID(t, exe)
	recorded := ""
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == id {
			recorded = f[1]
		}
	}
	if recorded == "" {
		t.Fatalf("perf.data names no binary with build ID %s:\n%s", id, out)
	}
	symfs := t.TempDir()
	dst := filepath.Join(symfs, recorded)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(exe)
	if err := os.Symlink(abs, dst); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("perf", "annotate", "--stdio", "-n", "--no-source", "--symfs", symfs, "-i", data, fn)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no build-ID cache of this machine
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("perf annotate: %v", err)
	}
	counts, texts := map[uint64]int64{}, map[uint64]string{}
	var order []uint64
	line := regexp.MustCompile(`^\s*(\d+)\s*:\s+([0-9a-f]+):\s+(.*)$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		a, _ := strconv.ParseUint(m[2], 16, 64)
		counts[a], texts[a] = n, m[3]
		order = append(order, a)
	}
	if len(order) == 0 {
		t.Fatalf("perf annotate listed no instructions of %s:\n%s", fn, out)
	}
	return counts, texts, order
}

type annotateResponse struct {
	Symbol string `json:"symbol"`
	Arch   string `json:"arch"`
	Total  int64  `json:"total"`
	Insns  []struct {
		Addr        uint64 `json:"addr"`
		Text        string `json:"text"`
		TargetLabel string `json:"targetLabel"`
		Self        int64  `json:"self"`
		SkidFrom    uint64 `json:"skidFrom"`
		Label       string `json:"label"`
		Kind        string `json:"kind"`
		Symbol      string `json:"symbol"`
		Source      []struct {
			Func string `json:"func"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"source"`
	} `json:"insns"`
	Hottest      []uint64 `json:"hottest"`
	InlinedIn    []string `json:"inlinedIn"`
	Copies       []string `json:"copies"`
	Inline       string   `json:"inline"`
	ProfileTotal int64    `json:"profileTotal"`
}

func getAnnotate(t *testing.T, u string) annotateResponse {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	var r annotateResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("annotate.json: %v", err)
	}
	return r
}

// TestAnnotateAgainstPerf uploads the data-type test recording and checks
// the annotate view of its two hot functions against `perf annotate
// --stdio -n` on the same perf.data: the same instructions at the same
// addresses with the same text (perf prints objdump's) and the same sample
// count on each. perf 6.1 has no --data-type, so the labels are checked
// against the DWARF by hand (readelf --debug-dump=info: struct node's next
// at 0, val at 0x10) and objdump's operands.
func TestAnnotateAgainstPerf(t *testing.T) {
	data := filepath.Join(typesTestdata, "datatype-dw5-pie.perf.data")
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(typesTestdata, "datatype-dw5-pie")
	s, ts := newTestServer(t, Config{})
	s.SetDataTypeEngine(testdataEngine(symbolize.Config{}))
	pid := upload(t, ts.URL, raw)
	for _, fn := range []string{"sum_list", "inl_keys"} {
		counts, texts, order := perfAnnotate(t, data, exe, fn)
		r := getAnnotate(t, ts.URL+"/p/"+pid+"/annotate.json?si=cpu-clock_count&fn="+fn+"&skid=0")
		if r.Symbol != fn || r.Arch != "x86-64" {
			t.Errorf("%s: symbol %q arch %q", fn, r.Symbol, r.Arch)
		}
		if len(r.Insns) != len(order) {
			t.Fatalf("%s: %d instructions, perf annotate lists %d", fn, len(r.Insns), len(order))
		}
		var total int64
		for i, in := range r.Insns {
			if in.Addr != order[i] {
				t.Errorf("%s: instruction %d at %#x, perf annotate %#x", fn, i, in.Addr, order[i])
				continue
			}
			if got, want := datatype.NormalizeAsm(in.Text), datatype.NormalizeAsm(texts[in.Addr]); got != want {
				t.Errorf("%s %#x: %q, perf annotate %q", fn, in.Addr, got, want)
			}
			if in.Self != counts[in.Addr] {
				t.Errorf("%s %#x: %d samples, perf annotate %d", fn, in.Addr, in.Self, counts[in.Addr])
			}
			total += counts[in.Addr]
		}
		if r.Total != total || total == 0 {
			t.Errorf("%s: total %d, perf annotate's %d", fn, r.Total, total)
		}
		best := order[0]
		for _, a := range order {
			if counts[a] > counts[best] {
				best = a
			}
		}
		if len(r.Hottest) == 0 || r.Hottest[0] != best {
			t.Errorf("%s: hottest %x, perf annotate's %#x", fn, r.Hottest, best)
		}
	}
	// Labels, sources and targets of sum_list's loop (objdump: the load
	// of n->val is movslq 0x10(%rdi), n = n->next is mov (%rdi),%rdi).
	r := getAnnotate(t, ts.URL+"/p/"+pid+"/annotate.json?fn=sum_list")
	var sawVal, sawNext, sawTarget, sawSkid bool
	for _, in := range r.Insns {
		switch {
		case strings.HasPrefix(in.Text, "movslq 0x10(%rdi)"):
			sawVal = in.Label == "struct node +0x10 val"
		case strings.HasPrefix(in.Text, "mov (%rdi),%rdi"):
			sawNext = in.Label == "struct node +0x0 next"
		case strings.HasPrefix(in.Text, "jne"):
			sawTarget = in.TargetLabel == "sum_list+0x10"
		}
		if in.SkidFrom != 0 && in.Self > 0 {
			sawSkid = true
		}
		if len(in.Source) == 0 || !strings.HasSuffix(in.Source[0].File, "datatype.c") || in.Source[0].Line == 0 {
			t.Errorf("%#x %s: source %+v, want a line of datatype.c", in.Addr, in.Text, in.Source)
		}
	}
	if !sawVal || !sawNext || !sawTarget || !sawSkid {
		t.Errorf("sum_list: val label %v, next label %v, jne target %v, a skid note %v: %+v", sawVal, sawNext, sawTarget, sawSkid, r.Insns)
	}
	// inl_keys holds list_keys inlined: its rows name both.
	r = getAnnotate(t, ts.URL+"/p/"+pid+"/annotate.json?fn=list_keys")
	if r.Symbol != "inl_keys" {
		t.Errorf("fn=list_keys lists %q, want inl_keys, where it is inlined", r.Symbol)
	}
	inlined := false
	for _, in := range r.Insns {
		if len(in.Source) >= 2 && in.Source[0].Func == "list_keys" && in.Source[len(in.Source)-1].Func == "inl_keys" {
			inlined = true
		}
	}
	if !inlined {
		t.Error("no instruction of inl_keys is marked as inlined list_keys")
	}
	// A function that is not there is a 404 naming it.
	resp, err := http.Get(ts.URL + "/p/" + pid + "/annotate?fn=no_such_fn")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no_such_fn") {
		t.Errorf("fn=no_such_fn: %d %.300s", resp.StatusCode, body)
	}
	// The page renders the listing with the hottest row highlighted.
	page := getPage(t, ts.URL+"/p/"+pid+"/annotate?fn=sum_list")
	if !strings.Contains(page, `class="insn hot"`) || !strings.Contains(page, "struct node +0x0 next") {
		t.Errorf("annotate page lacks a hot row or the next label:\n%.2000s", page)
	}
}

// TestTypesTypeStatAndCacheLine checks the data-type page's type-stat
// table on the test recording: its categories add up to the "(unknown)"
// types' weight in types.json, the line size is the one perf.data's CACHE
// header recorded (64 bytes on the machine build.sh ran on: its
// /sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size), and
// functions link to their annotate view.
func TestTypesTypeStatAndCacheLine(t *testing.T) {
	_, ts, pid := typesServer(t)
	for _, skid := range []string{"", "&skid=0"} {
		r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json?si=cpu-clock_count"+skid)
		var unknown int64
		for _, ty := range r.Types {
			if ty.Name == "(unknown)" {
				unknown += ty.Weight
			}
		}
		var stat int64
		for _, c := range r.TypeStats() {
			stat += c.Weight
			if c.Category == symbolize.DataStatOther {
				t.Errorf("skid %q: unclassified reasons: %+v", skid, r.Unknown)
			}
		}
		if stat != unknown || unknown == 0 {
			t.Errorf("skid %q: type-stat adds up to %d, the unknown types to %d", skid, stat, unknown)
		}
		page := getPage(t, ts.URL+"/p/"+pid+"/types?si=cpu-clock_count"+skid)
		if !strings.Contains(page, `id="type-stat"`) || !strings.Contains(page, "no_mem_ops") && skid != "" {
			t.Errorf("skid %q: the page has no type-stat table with no_mem_ops", skid)
		}
		if !strings.Contains(page, "Cache lines are 64 bytes: the recording machine") {
			t.Errorf("skid %q: the page does not give the recording's cache line size", skid)
		}
		if !strings.Contains(page, "/p/"+pid+"/annotate?fn=sum_list") {
			t.Errorf("skid %q: no annotate link for sum_list", skid)
		}
	}
}

// TestAnnotateARM64 uploads a pprof profile of the arm64 test binary
// (testdata/datatype/datatype-arm64, cross-compiled by build.sh) whose
// samples are on the instructions of sum_list's loop that
// aarch64-linux-gnu-objdump -d shows (ldrsw x2, [x1, #16]: n->val; ldr
// x1, [x1]: n = n->next): the annotate view lists sum_list as objdump
// does, with those labels, and the data-type page attributes the samples
// to struct node's val and next.
func TestAnnotateARM64(t *testing.T) {
	exe := filepath.Join(typesTestdata, "datatype-arm64")
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err != nil {
		t.Fatal("aarch64-linux-gnu-objdump (binutils-aarch64-linux-gnu) is required: run make deps")
	}
	out, err := exec.Command("aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	texts := map[uint64]string{}
	in := false
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasSuffix(l, "<sum_list>:"):
			in = true
		case in && l == "":
			in = false
		case in:
			if m := line.FindStringSubmatch(l); m != nil {
				a, _ := strconv.ParseUint(m[1], 16, 64)
				addrs = append(addrs, a)
				texts[a] = strings.Split(m[2], "//")[0]
			}
		}
	}
	var valPC, nextPC uint64
	for _, a := range addrs {
		switch {
		case strings.HasPrefix(texts[a], "ldrsw\tx2, [x1, #16]"):
			valPC = a
		case strings.HasPrefix(texts[a], "ldr\tx1, [x1]"):
			nextPC = a
		}
	}
	if valPC == 0 || nextPC == 0 {
		t.Fatalf("objdump's sum_list lacks the loop's loads: %v", texts)
	}
	id := fileBuildID(t, exe)
	const base = 0xaaaa_0000_0000 // where the PIE's first segment (vaddr 0, offset 0) is mapped
	m := &profile.Mapping{ID: 1, Start: base, Limit: base + 0x10000, File: "/opt/arm/datatype-arm64", BuildID: id}
	fn := &profile.Function{ID: 1, Name: "sum_list", SystemName: "sum_list"}
	loc := func(id, pc uint64) *profile.Location {
		return &profile.Location{ID: id, Mapping: m, Address: base + pc, Line: []profile.Line{{Function: fn}}}
	}
	lv, ln := loc(1, valPC), loc(2, nextPC)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{m}, Function: []*profile.Function{fn}, Location: []*profile.Location{lv, ln},
		Sample: []*profile.Sample{{Location: []*profile.Location{lv}, Value: []int64{7}}, {Location: []*profile.Location{ln}, Value: []int64{5}}},
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	s, ts := newTestServer(t, Config{})
	s.SetDataTypeEngine(testdataEngine(symbolize.Config{}))
	pid := upload(t, ts.URL, buf.Bytes())

	r := getAnnotate(t, ts.URL+"/p/"+pid+"/annotate.json?fn=sum_list")
	if r.Arch != "arm64" || r.Symbol != "sum_list" || r.Total != 12 || len(r.Insns) != len(addrs) {
		t.Fatalf("arch %q symbol %q total %d, %d instructions (objdump %d)", r.Arch, r.Symbol, r.Total, len(r.Insns), len(addrs))
	}
	for i, in := range r.Insns {
		if in.Addr != addrs[i] || datatype.NormalizeAsm(in.Text) != datatype.NormalizeAsm(texts[addrs[i]]) {
			t.Errorf("%#x %q, objdump %#x %q", in.Addr, in.Text, addrs[i], texts[addrs[i]])
		}
		switch in.Addr {
		case valPC:
			if in.Self != 7 || in.Label != "struct node +0x10 val" {
				t.Errorf("val load: %d samples, %q", in.Self, in.Label)
			}
		case nextPC:
			if in.Self != 5 || in.Label != "struct node +0x0 next" {
				t.Errorf("next load: %d samples, %q", in.Self, in.Label)
			}
		}
	}
	tj := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	if len(tj.Types) == 0 || tj.Types[0].Name != "struct node" || tj.Types[0].Weight != 12 {
		t.Fatalf("types: %+v", tj.Types)
	}
	for _, mem := range tj.Types[0].Members {
		if mem.Name == "val" && mem.Weight != 7 || mem.Name == "next" && mem.Weight != 5 {
			t.Errorf("member %s weight %d", mem.Name, mem.Weight)
		}
	}
}

// inlineProfile is a pprof profile of testdata/annotate/inline (mix
// inlined into first and second), one sample on every instruction of
// first (weight 1) and second (weight 10) but padding, symbolized as
// addr2line -f -i names each address; a second sample type is the first's
// ×1000. It returns the profile, each instruction's addr2line chain
// (innermost first) and each sampled one's weight.
func inlineProfile(t *testing.T) ([]byte, map[uint64][]addr2lineFrame, map[uint64]int64) {
	t.Helper()
	exe := filepath.Join(annotateTestdata, "inline")
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", exe).Output()
	if err != nil {
		t.Fatalf("objdump (binutils, run make deps): %v", err)
	}
	weight := map[uint64]int64{}
	var addrs []string
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	var w int64
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasSuffix(l, "<first>:"):
			w = 1
		case strings.HasSuffix(l, "<second>:"):
			w = 10
		case strings.TrimSpace(l) == "":
			w = 0
		case w > 0:
			if m := line.FindStringSubmatch(l); m != nil {
				a, _ := strconv.ParseUint(m[1], 16, 64)
				if !strings.Contains(m[2], "nop") && !strings.HasPrefix(m[2], "xchg") {
					weight[a] = w // padding is never sampled
				}
				addrs = append(addrs, "0x"+m[1])
			}
		}
	}
	out, err = exec.Command("addr2line", append([]string{"-f", "-i", "-a", "-e", exe}, addrs...)...).Output()
	if err != nil {
		t.Fatalf("addr2line (binutils): %v", err)
	}
	chains := map[uint64][]addr2lineFrame{}
	var cur uint64
	ls := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := 0; i < len(ls); i++ {
		if strings.HasPrefix(ls[i], "0x") {
			cur, _ = strconv.ParseUint(ls[i][2:], 16, 64)
			continue
		}
		file, ln, _ := strings.Cut(ls[i+1], ":")
		n, _ := strconv.Atoi(strings.Fields(ln)[0])
		chains[cur] = append(chains[cur], addr2lineFrame{fn: ls[i], file: file, line: n})
		i++
	}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/opt/inline", BuildID: fileBuildID(t, exe)}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}, Mapping: []*profile.Mapping{m}}
	funcs := map[string]*profile.Function{}
	for a, w := range weight {
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: a}
		for _, f := range chains[a] {
			fn := funcs[f.fn]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(funcs) + 1), Name: f.fn, SystemName: f.fn, Filename: f.file}
				funcs[f.fn] = fn
				p.Function = append(p.Function, fn)
			}
			loc.Line = append(loc.Line, profile.Line{Function: fn, Line: int64(f.line)})
		}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{w, w * 1000}})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), chains, weight
}

type addr2lineFrame struct {
	fn, file string
	line     int
}

const annotateTestdata = "../testdata/annotate"

// TestAnnotateInlineCopies lists mix, inlined into first and second, one
// copy at a time and merged by mix's source lines (?inline=merge): merged,
// each of mix's lines carries the samples of the instructions addr2line -i
// puts on that line of mix, in either copy. It also checks that si and the
// filters select the samples: focus (f) and show (s) keep first's, hide
// (h) of every frame of second's instructions leaves second none.
func TestAnnotateInlineCopies(t *testing.T) {
	raw, chains, weight := inlineProfile(t)
	s, ts := newTestServer(t, Config{})
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{annotateTestdata}}))
	pid := upload(t, ts.URL, raw)
	base := ts.URL + "/p/" + pid + "/annotate.json?si=samples&fn="

	r := getAnnotate(t, base+"mix")
	if r.Symbol != "second" || len(r.InlinedIn) != 1 || r.InlinedIn[0] != "first" || r.Inline != "copy" {
		t.Errorf("fn=mix: symbol %q, other copies %q, inline %q; want second (the hottest), first", r.Symbol, r.InlinedIn, r.Inline)
	}
	if r = getAnnotate(t, base+"mix&in=first"); r.Symbol != "first" {
		t.Errorf("fn=mix&in=first lists %q", r.Symbol)
	}

	// Merged: mix's instructions of both copies, by mix's line.
	want := map[int]int64{}
	wantInsns := 0
	for a, ch := range chains {
		for _, f := range ch[:len(ch)-1] {
			if f.fn == "mix" {
				want[f.line] += weight[a]
				wantInsns++
				break
			}
		}
	}
	r = getAnnotate(t, base+"mix&inline=merge")
	got := map[int]int64{}
	for _, in := range r.Insns {
		if len(in.Source) == 0 || in.Source[len(in.Source)-1].Func != "mix" {
			t.Errorf("merged %#x: source %+v does not end at mix", in.Addr, in.Source)
			continue
		}
		ch := chains[in.Addr]
		if len(ch) == 0 || in.Symbol != ch[len(ch)-1].fn { // addr2line's outermost function
			t.Errorf("merged %#x: symbol %q, addr2line -i %+v", in.Addr, in.Symbol, ch)
		}
		got[in.Source[len(in.Source)-1].Line] += in.Self
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(r.Insns) != wantInsns || fmt.Sprint(r.Copies) != "[second first]" || r.Inline != "merge" {
		t.Errorf("merged by mix's line: %v over %d instructions of %q, addr2line -i gives %v over %d", got, len(r.Insns), r.Copies, want, wantInsns)
	}
	var wantTotal int64
	for _, v := range want {
		wantTotal += v
	}
	if r.Total != wantTotal {
		t.Errorf("merged total %d, want %d", r.Total, wantTotal)
	}
	page := getPage(t, ts.URL+"/p/"+pid+"/annotate?fn=mix&inline=merge")
	if !strings.Contains(page, `id="annotate-merged"`) || !strings.Contains(page, "in second") {
		t.Errorf("the merged page does not say it merges copies:\n%.1500s", page)
	}
	if page = getPage(t, ts.URL+"/p/"+pid+"/annotate?fn=mix"); !strings.Contains(page, `id="annotate-inline"`) || !strings.Contains(page, "inline=merge") {
		t.Errorf("the page has no control to merge the copies:\n%.1500s", page)
	}

	// si and the filters.
	var first, all int64
	for _, w := range weight {
		all += w
		if w == 1 { // first's
			first += w
		}
	}
	if r = getAnnotate(t, ts.URL+"/p/"+pid+"/annotate.json?si=cpu&fn=first"); r.Total != first*1000 || r.ProfileTotal != all*1000 {
		t.Errorf("si=cpu: total %d of %d, want %d of %d", r.Total, r.ProfileTotal, first*1000, all*1000)
	}
	if r = getAnnotate(t, base+"mix&inline=merge&f=%5Efirst%24"); fmt.Sprint(r.Copies) != "[first]" || r.ProfileTotal != first {
		t.Errorf("focus on first: copies %q, profile total %d, want [first] and %d", r.Copies, r.ProfileTotal, first)
	}
	if r = getAnnotate(t, base+"first&s=%5Efirst%24"); r.Total != first {
		t.Errorf("show first: first's total %d, want %d", r.Total, first)
	}
	if r = getAnnotate(t, base+"second&s=%5Efirst%24"); r.Total != 0 || r.ProfileTotal != all {
		t.Errorf("show first: second's total %d of %d, want 0 of %d (its leaves are not drawn)", r.Total, r.ProfileTotal, all)
	}
	if r = getAnnotate(t, base+"second&h=%5E%28second%7Cmix%29%24"); r.Total != 0 || r.Symbol != "second" {
		t.Errorf("hide second and mix: second %q total %d, want 0", r.Symbol, r.Total)
	}
	if r = getAnnotate(t, base+"second&h=%5Emix%24"); r.Total != all-first {
		t.Errorf("hide mix: second total %d, want %d (a leaf with second's frame stays)", r.Total, all-first)
	}
	resp, err := http.Get(base + "mix&inline=bogus")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("inline=bogus: %d, want 400", resp.StatusCode)
	}
}
