package web_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/webtest"
)

// llvmFrame is one frame of llvm-symbolizer's JSON output.
type llvmFrame struct {
	FunctionName, FileName string
	Line                   int
}

// llvmSymbolize runs llvm-symbolizer on obj for addrs and returns each
// address's frames, innermost first.
func llvmSymbolize(t *testing.T, obj string, addrs []uint64) [][]llvmFrame {
	t.Helper()
	tool := debuginfodtest.NeedTool(t, "llvm-symbolizer", "llvm")
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "%#x\n", a)
	}
	cmd := exec.Command(tool, "--output-style=JSON", "--obj="+obj)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	var res [][]llvmFrame
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct{ Symbol []llvmFrame }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("llvm-symbolizer output %q: %v", sc.Text(), err)
		}
		res = append(res, row.Symbol)
	}
	if len(res) != len(addrs) {
		t.Fatalf("llvm-symbolizer answered %d of %d addresses", len(res), len(addrs))
	}
	return res
}

// textAddrs are every step-th address of obj's .text.
func textAddrs(t testing.TB, obj string, step uint64) []uint64 {
	t.Helper()
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	if text == nil {
		t.Fatalf("%s has no .text", obj)
	}
	var out []uint64
	for a := text.Addr; a < text.Addr+text.Size; a += step {
		out = append(out, a)
	}
	return out
}

// postJSON posts v as JSON and decodes the answer into out.
func postJSON(t *testing.T, url string, v, out any) int {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("answer %q: %v", body, err)
		}
	} else if err := json.Unmarshal(body, out); err != nil {
		t.Logf("answer %s: %s", resp.Status, body)
	}
	return resp.StatusCode
}

type apiAnswer struct {
	Binaries []struct {
		BuildID, State, Source, Reason string
		Addresses                      []struct {
			Address string
			Frames  []struct {
				Function, File string
				Line           int
				Inlined        bool
			}
		}
	}
}

// TestSymbolizeAPIMatchesLLVMSymbolizer asks /api/symbolize for addresses
// across the .text of the ondemand program, whose debug info only the real
// debuginfod server has, and of libc, whose debug file libc6-dbg installs;
// each address's frames, inline chain included, are llvm-symbolizer's on
// the same debug files. Then /symbolicate/v5, the Firefox Profiler's API,
// answers the same for the same addresses named by breakpad and code IDs.
func TestSymbolizeAPIMatchesLLVMSymbolizer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's debuginfod and llvm-symbolizer")
	}
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	_, base := webtest.SymbolizingServerWith(t, []string{dsrv.URL}, 2, web.Config{}, func(c *symbolize.Config) { c.SystemDebugDir = "" })
	odID, _ := debuginfodtest.BuildID(exe)
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	libcID, err := debuginfodtest.BuildID(libc)
	if err != nil {
		t.Fatal(err)
	}
	libcDebug := filepath.Join("/usr/lib/debug/.build-id", libcID[:2], libcID[2:]+".debug")
	if _, err := os.Stat(libcDebug); err != nil {
		t.Fatalf("libc's debug file: %v (install libc6-dbg)", err)
	}
	bins := []struct {
		id, file, debug string
		addrs           []uint64
	}{
		{odID, "/opt/ondemand/bin/ondemand", debugFile, textAddrs(t, exe, 3)},
		{libcID, libc, libcDebug, textAddrs(t, libc, 997)},
	}
	var req struct {
		Binaries []map[string]any `json:"binaries"`
	}
	for _, b := range bins {
		hexes := make([]string, len(b.addrs))
		for i, a := range b.addrs {
			hexes[i] = fmt.Sprintf("%#x", a)
		}
		req.Binaries = append(req.Binaries, map[string]any{"build_id": b.id, "file": b.file, "addresses": hexes})
	}
	var ans apiAnswer
	if st := postJSON(t, base+"/api/symbolize", req, &ans); st != 200 {
		t.Fatalf("/api/symbolize: %d", st)
	}
	for bi, b := range bins {
		got := ans.Binaries[bi]
		if got.State != string(symbolize.StateSymbolized) {
			t.Fatalf("%s: %s (%s)", b.file, got.State, got.Reason)
		}
		want := llvmSymbolize(t, b.debug, b.addrs)
		// Compared as viewer's own llvm-symbolizer test does: symbol
		// versions (fnmatch@@GLIBC_2.2.5) are dropped on purpose, and a
		// frame known only from the symbol table (line 0) has no file.
		key := func(fn, file string, line int) string {
			fn, _, _ = strings.Cut(fn, "@")
			if line == 0 {
				file = ""
			}
			return fmt.Sprintf("%s %s:%d", fn, file, line)
		}
		bad := 0
		for i := range b.addrs {
			var w, g []string
			for _, f := range want[i] {
				if f.FunctionName != "" && f.FunctionName != "??" {
					w = append(w, key(f.FunctionName, f.FileName, f.Line))
				}
			}
			for _, f := range got.Addresses[i].Frames {
				if f.Function != "" {
					g = append(g, key(f.Function, f.File, f.Line))
				}
			}
			if strings.Join(w, " < ") != strings.Join(g, " < ") {
				if bad++; bad <= 5 {
					t.Errorf("%s %#x: %q, llvm-symbolizer %q", b.file, b.addrs[i], g, w)
				}
			}
		}
		t.Logf("%s: %d of %d addresses as llvm-symbolizer names them", b.file, len(b.addrs)-bad, len(b.addrs))
		if bad > 0 {
			t.Errorf("%s: %d of %d addresses differ from llvm-symbolizer", b.file, bad, len(b.addrs))
		}
	}

	// The Firefox Profiler's API, with libc by its breakpad ID (completed
	// from the local debug file) and ondemand by its code ID.
	v5 := map[string]any{
		"memoryMap": [][]string{{"ondemand", odID}, {"libc.so.6", web.BreakpadID(libcID)}, {"missing.so", "00112233445566778899AABBCCDDEEFF0"}},
		"stacks":    [][][2]int64{{{0, int64(bins[0].addrs[10])}, {1, int64(bins[1].addrs[100])}, {2, 0x1000}, {-1, 0x42}}},
	}
	var v5ans struct {
		Results []struct {
			Stacks [][]struct {
				Frame          int
				Module         string
				ModuleOffset   string `json:"module_offset"`
				Function, File string
				Line           int
				Inlines        []struct{ Function string }
			}
			FoundModules map[string]bool `json:"found_modules"`
		}
	}
	if st := postJSON(t, base+"/symbolicate/v5", v5, &v5ans); st != 200 || len(v5ans.Results) != 1 {
		t.Fatalf("/symbolicate/v5: %d %+v", st, v5ans)
	}
	r := v5ans.Results[0]
	if !r.FoundModules["ondemand/"+odID] || !r.FoundModules["libc.so.6/"+web.BreakpadID(libcID)] || r.FoundModules["missing.so/00112233445566778899AABBCCDDEEFF0"] {
		t.Errorf("found_modules %v", r.FoundModules)
	}
	for k, wantAt := range []int{10, 100} {
		f := r.Stacks[0][k]
		frames := ans.Binaries[k].Addresses[wantAt].Frames
		outer := frames[len(frames)-1]
		if f.Function != outer.Function || f.Line != outer.Line || len(f.Inlines) != len(frames)-1 {
			t.Errorf("v5 frame %d: %s line %d with %d inlines; /api/symbolize says %s line %d with %d", k, f.Function, f.Line, len(f.Inlines), outer.Function, outer.Line, len(frames)-1)
		}
	}
	if f := r.Stacks[0][2]; f.Function != "" || f.Module != "missing.so" {
		t.Errorf("a frame of a module not found: %+v", f)
	}
}

// TestSymbolizeAPIErrors: bad requests are 400 naming the field.
func TestSymbolizeAPIErrors(t *testing.T) {
	_, base := webtest.SymbolizingServer(t, nil, 1)
	for _, tc := range []struct {
		body string
		says string
	}{
		{`{}`, "names no binaries"},
		{`{"binaries": [{"build_id": "xyz", "addresses": ["0x1"]}]}`, "binaries[0]"},
		{`{"binaries": [{"build_id": "0011223344556677", "addresses": ["zz"]}]}`, "addresses[0]"},
		{`not json`, "not the JSON"},
	} {
		resp, err := http.Post(base+"/api/symbolize", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), tc.says) {
			t.Errorf("%s: %s %s; want 400 naming %q", tc.body, resp.Status, b, tc.says)
		}
	}
}
