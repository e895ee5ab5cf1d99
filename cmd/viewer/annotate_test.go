package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
)

const datatypeTestdata = "../../testdata/datatype"

// annotateLine is one instruction line of `viewer annotate` output.
type annotateLine struct {
	pct      float64
	count    int64
	addr     uint64
	text     string
	dataType string
}

var annotateInsn = regexp.MustCompile(`^\s*([0-9.]+)\s+(\d+) :\t\s*([0-9a-f]+):\t(.*?)(?:\t\t# data-type: (.*))?$`)

// runAnnotateCLI runs `viewer annotate -n ARGS` and returns its
// instruction lines in order, and the whole output.
func runAnnotateCLI(t *testing.T, args ...string) ([]annotateLine, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := runWith(context.Background(), append([]string{"annotate", "-n", "--no-debuginfod"}, args...), stdio{out: &out, err: &errb}); err != nil {
		t.Fatalf("viewer annotate %q: %v\n%s", args, err, errb.String())
	}
	var lines []annotateLine
	for _, l := range strings.Split(out.String(), "\n") {
		m := annotateInsn.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		p, _ := strconv.ParseFloat(m[1], 64)
		n, _ := strconv.ParseInt(m[2], 10, 64)
		a, _ := strconv.ParseUint(m[3], 16, 64)
		lines = append(lines, annotateLine{pct: p, count: n, addr: a, text: m[4], dataType: m[5]})
	}
	if len(lines) == 0 {
		t.Fatalf("viewer annotate %q printed no instructions:\n%s", args, out.String())
	}
	return lines, out.String()
}

// objdumpFunc is `OBJDUMP -d` of one function: its instructions' addresses
// and texts (with their "<symbol+off>" targets), in order.
func objdumpFunc(t *testing.T, objdump, path, fn string) ([]uint64, []string) {
	t.Helper()
	if _, err := exec.LookPath(objdump); err != nil {
		t.Fatalf("%s (binutils) is required: run make deps", objdump)
	}
	out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("%s -d %s: %v", objdump, path, err)
	}
	var addrs []uint64
	var texts []string
	in := false
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasSuffix(l, " <"+fn+">:"):
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			if m := line.FindStringSubmatch(l); m != nil {
				a, _ := strconv.ParseUint(m[1], 16, 64)
				text := m[2]
				comment := "#" // objdump's comments; arm64's immediates start with #
				if strings.HasPrefix(objdump, "aarch64") {
					comment = "//"
				}
				if i := strings.Index(text, comment); i >= 0 {
					text = text[:i]
				}
				addrs = append(addrs, a)
				texts = append(texts, text)
			}
		}
	}
	if len(addrs) == 0 {
		t.Fatalf("%s -d %s lists no %s", objdump, path, fn)
	}
	// objdump lists the padding up to the next symbol too; the function
	// ends where its symbol's size says (as perf annotate lists it).
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == fn && s.Size > 0 {
			n := 0
			for n < len(addrs) && addrs[n] < s.Value+s.Size {
				n++
			}
			addrs, texts = addrs[:n], texts[:n]
		}
	}
	return addrs, texts
}

// checkAgainstObjdump compares every instruction line with objdump's, in
// order: same address, same mnemonic and operands after normalizing
// spacing (datatype.NormalizeAsm), the branch target's "<symbol+off>"
// included.
func checkAgainstObjdump(t *testing.T, fn string, got []annotateLine, addrs []uint64, texts []string) {
	t.Helper()
	if len(got) != len(addrs) {
		t.Fatalf("%s: viewer annotate lists %d instructions, objdump %d", fn, len(got), len(addrs))
	}
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, ", ", ",")), " ") }
	for i, g := range got {
		if g.addr != addrs[i] || norm(g.text) != norm(texts[i]) || datatype.NormalizeAsm(g.text) != datatype.NormalizeAsm(texts[i]) {
			t.Errorf("%s: %x %q, objdump %x %q", fn, g.addr, g.text, addrs[i], texts[i])
		}
	}
}

// TestAnnotateCLIAgainstObjdump runs `viewer annotate --data-type` on the
// data-type test recording (perf.data, x86-64) and on a pprof profile of
// the arm64 build of the same program, and compares every instruction of
// the listed functions with objdump -d; the labels of sum_list's loads are
// struct node's members as readelf --debug-dump=info shows them (next at
// 0, val at 0x10), by hand.
func TestAnnotateCLIAgainstObjdump(t *testing.T) {
	data := filepath.Join(datatypeTestdata, "datatype-dw5-pie.perf.data")
	exe := filepath.Join(datatypeTestdata, "datatype-dw5-pie")
	for _, fn := range []string{"sum_list", "inl_keys"} {
		got, _ := runAnnotateCLI(t, data, "-fn", fn, "--debug-dir", datatypeTestdata, "--data-type", "-si", "cpu-clock_count")
		addrs, texts := objdumpFunc(t, "objdump", exe, fn)
		checkAgainstObjdump(t, fn, got, addrs, texts)
		if fn != "sum_list" {
			continue
		}
		labels := map[string]string{}
		for _, g := range got {
			labels[strings.Join(strings.Fields(g.text), " ")] = g.dataType
		}
		if l := labels["movslq 0x10(%rdi),%rdx"]; l != "struct node +0x10 val" {
			t.Errorf("n->val load labelled %q", l)
		}
		if l := labels["mov (%rdi),%rdi"]; !strings.HasPrefix(l, "struct node +0x0 next") {
			t.Errorf("n = n->next load labelled %q", l)
		}
	}

	// arm64: a pprof profile with one sample on each instruction of
	// sum_list, at a PIE's load address.
	arm := filepath.Join(datatypeTestdata, "datatype-arm64")
	addrs, texts := objdumpFunc(t, "aarch64-linux-gnu-objdump", arm, "sum_list")
	ef, err := elfsym.Open(arm)
	if err != nil {
		t.Fatal(err)
	}
	id := ef.BuildID()
	ef.Close()
	const base = 0xaaaa_0000_0000
	m := &profile.Mapping{ID: 1, Start: base, Limit: base + 0x10000, File: "/opt/arm/datatype-arm64", BuildID: id}
	f := &profile.Function{ID: 1, Name: "sum_list", SystemName: "sum_list"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Mapping: []*profile.Mapping{m}, Function: []*profile.Function{f}}
	for i, a := range addrs {
		loc := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: base + a, Line: []profile.Line{{Function: f}}}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{int64(i + 1)}})
	}
	pb := filepath.Join(t.TempDir(), "arm64.pb.gz")
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, out := runAnnotateCLI(t, pb, "-fn", "sum_list", "--debug-dir", datatypeTestdata, "--data-type")
	checkAgainstObjdump(t, "arm64 sum_list", got, addrs, texts)
	if !strings.Contains(out, "(arm64)") {
		t.Errorf("the header does not say arm64:\n%.300s", out)
	}
	for i, g := range got {
		if g.count != int64(i+1) {
			t.Errorf("arm64 %x: %d samples, the profile has %d", g.addr, g.count, i+1)
		}
		switch {
		case strings.HasPrefix(texts[i], "ldrsw\tx2, [x1, #16]") && !strings.HasPrefix(g.dataType, "struct node +0x10 val"),
			strings.HasPrefix(texts[i], "ldr\tx1, [x1]") && !strings.HasPrefix(g.dataType, "struct node +0x0 next"):
			t.Errorf("arm64 %x %q labelled %q", g.addr, texts[i], g.dataType)
		}
	}
}

// TestAnnotateCLIAgainstPerf runs `viewer annotate` on a real recording
// (testdata/perf/flat.data: deep's samples, all in libm's __cos_fma) and
// compares its hottest instruction, and that instruction's sample count,
// with `perf annotate --stdio -n` on the same file.
func TestAnnotateCLIAgainstPerf(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Fatal("perf (linux-perf) is required: run make deps")
	}
	data := "../../testdata/perf/flat.data"
	const fn = "__cos_fma"
	ids, err := exec.Command("perf", "buildid-list", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf buildid-list: %v", err)
	}
	libm := "/usr/lib/x86_64-linux-gnu/libm.so.6"
	ef, err := elfsym.Open(libm)
	if err != nil {
		t.Fatal(err)
	}
	id := ef.BuildID()
	ef.Close()
	if !strings.Contains(string(ids), id) {
		t.Fatalf("flat.data was recorded with another libm than this machine's (build ID %s); rerun testdata/perf/record.sh:\n%s", id, ids)
	}
	cmd := exec.Command("perf", "annotate", "--stdio", "-n", "--no-source", "-i", data, fn)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf annotate: %v", err)
	}
	perfLine := regexp.MustCompile(`^\s*(\d+)\s*:\s+([0-9a-f]+):\s+(.*)$`)
	var hotAddr uint64
	var hotN int64
	var perfTotal int64
	for _, l := range strings.Split(string(out), "\n") {
		if m := perfLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			a, _ := strconv.ParseUint(m[2], 16, 64)
			perfTotal += n
			if n > hotN {
				hotAddr, hotN = a, n
			}
		}
	}
	if hotN == 0 {
		t.Fatalf("perf annotate listed no samples of %s:\n%s", fn, out)
	}
	got, text := runAnnotateCLI(t, data, "-fn", fn, "-si", "cpu-clock_count")
	var best annotateLine
	var total int64
	for _, g := range got {
		total += g.count
		if g.count > best.count {
			best = g
		}
	}
	if best.addr != hotAddr || best.count != hotN || total != perfTotal {
		t.Errorf("hottest %x with %d of %d samples, perf annotate %x with %d of %d\n%s", best.addr, best.count, total, hotAddr, hotN, perfTotal, text)
	}
	if want := fmt.Sprintf("%.2f", 100*float64(hotN)/float64(perfTotal)); best.pct != mustFloat(t, want) {
		t.Errorf("hottest share %.2f%%, perf's %s%%", best.pct, want)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
