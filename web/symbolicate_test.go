package web_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/webtest"
)

// TestSymbolicateCORS is what a browser does before and when the Firefox
// Profiler's page calls /symbolicate/v5 with JSON: the preflight
// (OPTIONS with Origin, Access-Control-Request-Method and -Headers) is
// answered for https://profiler.firefox.com only, and so is the POST's
// answer; other origins and other routes get no CORS headers.
func TestSymbolicateCORS(t *testing.T) {
	_, base := webtest.SymbolizingServer(t, nil, 1)
	const profiler = "https://profiler.firefox.com"
	do := func(method, path, origin string) *http.Response {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"memoryMap": [], "stacks": []}`)
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, base+path, body)
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Mode", "cors")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	pre := do(http.MethodOptions, "/symbolicate/v5", profiler)
	h := pre.Header
	if pre.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != profiler ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "content-type") || h.Get("Access-Control-Max-Age") == "" {
		t.Errorf("preflight from the profiler: %s %v", pre.Status, h)
	}
	post := do(http.MethodPost, "/symbolicate/v5", profiler)
	if post.StatusCode != 200 || post.Header.Get("Access-Control-Allow-Origin") != profiler || !strings.Contains(strings.Join(post.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("POST from the profiler: %s %v", post.Status, post.Header)
	}
	for _, tc := range []struct{ method, path, origin string }{
		{http.MethodOptions, "/symbolicate/v5", "https://evil.example"},
		{http.MethodPost, "/symbolicate/v5", "https://evil.example"},
		{http.MethodOptions, "/api/profiles", profiler},
		{http.MethodOptions, "/api/symbolize", profiler},
	} {
		if r := do(tc.method, tc.path, tc.origin); r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s from %s: Access-Control-Allow-Origin %q", tc.method, tc.path, tc.origin, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

// v5Answer is a /symbolicate/v5 response, as the Firefox Profiler reads it.
type v5Answer struct {
	Results []struct {
		Stacks [][]struct {
			Frame          int    `json:"frame"`
			ModuleOffset   string `json:"module_offset"`
			Module         string `json:"module"`
			Function       string `json:"function"`
			FunctionOffset string `json:"function_offset"`
			File           string `json:"file"`
			Line           int    `json:"line"`
			Inlines        []struct {
				Function string `json:"function"`
				File     string `json:"file"`
				Line     int    `json:"line"`
			} `json:"inlines"`
		} `json:"stacks"`
		FoundModules map[string]*bool `json:"found_modules"`
	} `json:"results"`
}

// postV5File posts a request file from testdata/firefox-profiler.
func postV5File(t *testing.T, base, name string) v5Answer {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/symbolicate/v5", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans v5Answer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %s, %v", name, resp.Status, err)
	}
	return ans
}

const fixtureDir = "../testdata/firefox-profiler"

// TestSymbolicateFixtures runs /symbolicate/v5 on published requests
// (testdata/firefox-profiler, README there): Mozilla's documented
// example answers in the documented shape, frame by frame (this server
// has no Windows symbols, so both its modules are not found); and the
// ELF modules of samply's symbolication fixtures, named by the breakpad
// IDs samply's tests give them and found in a --debug-dir, get the names
// and lines llvm-symbolizer gives for the same addresses (offsets from
// the image base, the lowest PT_LOAD address of these non-PIE files).
func TestSymbolicateFixtures(t *testing.T) {
	debugDir := t.TempDir()
	bins := map[string]string{} // module name → file
	for _, name := range []string{"example-linux", "firefox"} {
		file, err := filepath.Abs(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		bid, err := debuginfodtest.BuildID(file)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(debugDir, ".build-id", bid[:2])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(file, filepath.Join(dir, bid[2:]+".debug")); err != nil {
			t.Fatal(err)
		}
		bins[name] = file
	}
	_, base := webtest.SymbolizingServer(t, nil, 1, func(c *symbolize.Config) {
		c.DebugDirs = []string{debugDir}
		c.SystemDebugDir = ""
	})

	t.Run("tecken example", func(t *testing.T) {
		got := postV5File(t, base, "tecken-example-request.json")
		wantBody, err := os.ReadFile(filepath.Join(fixtureDir, "tecken-example-response.json"))
		if err != nil {
			t.Fatal(err)
		}
		var want v5Answer
		if err := json.Unmarshal(wantBody, &want); err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != len(want.Results) || len(got.Results[0].Stacks) != len(want.Results[0].Stacks) {
			t.Fatalf("answer %+v, documented %+v", got, want)
		}
		for si, st := range want.Results[0].Stacks {
			for fi, w := range st {
				g := got.Results[0].Stacks[si][fi]
				if g.Frame != w.Frame || g.ModuleOffset != w.ModuleOffset || g.Module != w.Module || g.Function != "" {
					t.Errorf("frame %d: %+v, documented %+v (without its PDB's names)", fi, g, w)
				}
			}
		}
		for k := range want.Results[0].FoundModules {
			if f, ok := got.Results[0].FoundModules[k]; !ok || f == nil || *f {
				t.Errorf("found_modules[%s] = %v, want false (no PDB here)", k, f)
			}
		}
	})

	t.Run("samply ELF fixtures", func(t *testing.T) {
		body, err := os.ReadFile(filepath.Join(fixtureDir, "samply-elf-request.json"))
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			MemoryMap [][]string    `json:"memoryMap"`
			Stacks    [][][2]uint64 `json:"stacks"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		got := postV5File(t, base, "samply-elf-request.json")
		r := got.Results[0]
		for _, m := range req.MemoryMap {
			if f := r.FoundModules[m[0]+"/"+m[1]]; f == nil || !*f {
				t.Errorf("found_modules[%s/%s] = %v, want true", m[0], m[1], f)
			}
		}
		key := func(fn, file string, line int) string {
			if line == 0 {
				file = ""
			}
			return fmt.Sprintf("%s %s:%d", fn, file, line)
		}
		named := map[string]bool{}
		for si, st := range req.Stacks {
			file := bins[req.MemoryMap[st[0][0]][0]]
			imageBase := lowestLoad(t, file)
			addrs := make([]uint64, len(st))
			for i, f := range st {
				addrs[i] = imageBase + f[1]
			}
			want := llvmSymbolize(t, file, addrs)
			for fi := range st {
				var w, g []string
				for _, f := range want[fi] {
					if f.FunctionName != "" && f.FunctionName != "??" {
						w = append(w, key(f.FunctionName, f.FileName, f.Line))
					}
				}
				fr := r.Stacks[si][fi]
				for _, in := range fr.Inlines {
					g = append(g, key(in.Function, in.File, in.Line))
				}
				if fr.Function != "" {
					g = append(g, key(fr.Function, fr.File, fr.Line))
					named[fr.Module+" "+fr.Function] = true
					// The Firefox Profiler names no frame without its
					// function_offset: the address less its symbol's start.
					if start, ok := funcSymbolStart(t, file, addrs[fi]); !ok {
						t.Errorf("%s %s: no function symbol holds %#x", fr.Module, fr.ModuleOffset, addrs[fi])
					} else if want := fmt.Sprintf("%#x", addrs[fi]-start); fr.FunctionOffset != want {
						t.Errorf("%s %s (%s): function_offset %q, want %q (symbol at %#x)", fr.Module, fr.ModuleOffset, fr.Function, fr.FunctionOffset, want, start)
					}
				}
				if strings.Join(g, " < ") != strings.Join(w, " < ") {
					t.Errorf("%s %s: %q, llvm-symbolizer at %#x: %q", fr.Module, fr.ModuleOffset, g, addrs[fi], w)
				}
			}
		}
		// What samply's own tests expect these offsets to be.
		for _, want := range []string{"example-linux main", "example-linux f", "firefox main", "firefox _start"} {
			if !named[want] {
				t.Errorf("no frame named %q; named %v", want, named)
			}
		}
	})
}

// funcSymbolStart is the start of the function symbol of file that holds
// addr: the nearest at or below it, where its size (if any) reaches addr.
func funcSymbolStart(t *testing.T, file string, addr uint64) (uint64, bool) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var best *elf.Symbol
	for i, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value <= addr && (best == nil || s.Value > best.Value) {
			best = &syms[i]
		}
	}
	if best == nil || best.Size > 0 && addr >= best.Value+best.Size {
		return 0, false
	}
	return best.Value, true
}

// lowestLoad is an ELF file's image base: its lowest PT_LOAD address.
func lowestLoad(t *testing.T, file string) uint64 {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := ^uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			base = min(base, p.Vaddr-p.Off)
		}
	}
	return base
}
