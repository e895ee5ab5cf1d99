package browsertest_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// systemLibc is Debian's libc; libc6-dbg installs its debug file under
// /usr/lib/debug/.build-id (.ci/deps).
const systemLibc = "/lib/x86_64-linux-gnu/libc.so.6"

// textMapping is the executable segment of the ELF file at path, mapped so
// that its address 0 is at base, and the address inside each named symbol.
func textMapping(t *testing.T, id uint64, path, symbolsFrom, file string, base uint64, names ...string) (*profile.Mapping, map[string]uint64) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var text *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p
		}
	}
	bid, err := debuginfodtest.BuildID(path)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := elf.Open(symbolsFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	syms, _ := sf.Symbols()
	dyn, _ := sf.DynamicSymbols()
	addr := map[string]uint64{}
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && addr[s.Name] == 0 {
			addr[s.Name] = base + s.Value + 4
		}
	}
	for _, n := range names {
		if addr[n] == 0 {
			t.Fatalf("%s has no function %s", symbolsFrom, n)
		}
	}
	m := &profile.Mapping{ID: id, Start: base + text.Vaddr&^0xfff, Limit: base + (text.Vaddr+text.Memsz+0xfff)&^0xfff,
		Offset: text.Off &^ 0xfff, File: file, BuildID: bid}
	return m, addr
}

// libcAndMainProfile: the stripped test program calling into libc's
// getenv, addresses only:
//
//	main > ondemand_run_workload > ondemand_hash_block > getenv   6
//	main > ondemand_parse_input                                   4
func libcAndMainProfile(t *testing.T, exe, debugFile string) []byte {
	t.Helper()
	app, appAddr := textMapping(t, 1, exe, debugFile, "/opt/ondemand/bin/ondemand", webtest.PIEBase, "main", "ondemand_run_workload", "ondemand_hash_block", "ondemand_parse_input")
	libc, libcAddr := textMapping(t, 2, systemLibc, systemLibc, systemLibc, 0x7f3a00000000, "getenv")
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{app, libc},
	}
	locs := map[uint64]*profile.Location{}
	loc := func(m *profile.Mapping, a uint64) *profile.Location {
		if l := locs[a]; l != nil {
			return l
		}
		l := &profile.Location{ID: uint64(len(locs) + 1), Mapping: m, Address: a}
		locs[a] = l
		p.Location = append(p.Location, l)
		return l
	}
	p.Sample = []*profile.Sample{
		{Value: []int64{6}, Location: []*profile.Location{loc(libc, libcAddr["getenv"]), loc(app, appAddr["ondemand_hash_block"]), loc(app, appAddr["ondemand_run_workload"]), loc(app, appAddr["main"])}},
		{Value: []int64{4}, Location: []*profile.Location{loc(app, appAddr["ondemand_parse_input"]), loc(app, appAddr["main"])}},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// etagLog records the ETag of every flame.json response, in order.
type etagLog struct {
	mu    sync.Mutex
	etags []string // "STATUS ETAG"
}

type etagWriter struct {
	http.ResponseWriter
	log  *etagLog
	done bool
}

func (w *etagWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		w.log.mu.Lock()
		w.log.etags = append(w.log.etags, fmt.Sprintf("%d %s", code, w.Header().Get("ETag")))
		w.log.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *etagWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *etagWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (l *etagLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/flame.json") {
			w = &etagWriter{ResponseWriter: w, log: l}
		}
		next.ServeHTTP(w, r)
	})
}

func (l *etagLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.etags...)
}

// TestBrowserNamesArriveInTwoPasses: libc resolves from this machine's
// libc6-dbg at once, the main binary comes later and slowly from Debian's
// real debuginfod. The open page ends showing the main binary's function
// names without a reload; a reload in the same browser profile shows them
// too; and flame.json's ETag changed between the two passes (so the
// browser's revalidation got the second tree, not a 304).
func TestBrowserNamesArriveInTwoPasses(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	if _, err := os.Stat(systemLibc); err != nil {
		t.Fatalf("%v: this test needs Debian's libc6 and libc6-dbg", err)
	}
	lbid, err := debuginfodtest.BuildID(systemLibc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/usr/lib/debug/.build-id", lbid[:2], lbid[2:]+".debug")); err != nil {
		t.Fatalf("libc's debug file is not installed (%v): apt install libc6-dbg (.ci/deps)", err)
	}
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 768<<10))
	dsrv.SetRate(256 << 10) // about 3 s for the main binary's debug file
	// The download is also held after its first 64 KiB until the page
	// shows the first pass, so that the second arrives with the page open.
	held := holdDownloads(t, dsrv.URL)
	held.Allow(64 << 10)
	s, _ := webtest.SymbolizingServer(t, []string{held.URL}, 2, func(c *symbolize.Config) { c.SystemDebugDir = "/usr/lib/debug" })
	el := &etagLog{}
	ts := webtest.LoopbackServer(t, el.wrap(s.Handler()))
	ts.Start()
	t.Cleanup(ts.Close)
	base := ts.URL
	id := webtest.UploadAPI(t, base, "", libcAndMainProfile(t, exe, debugFile))

	b := browsertest.Start(t, browsertest.Options{})
	odDo(t, b, "open the profile", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; problems %q", err, b.Problems())
	}
	odEval[bool](t, b, `window.__samePage = true`)
	names := `JSON.stringify(Array.from(window.viewer.tree.name, (n) => window.viewer.tree.names[n]))`
	// First pass: libc named from this machine while main is still fetched.
	waitForJS(t, b, "getenv named while the main binary is fetched", `window.viewer.tree && `+names+`.includes('"getenv"')`)
	b.Screenshot(t, "two-passes-libc")
	held.Allow(math.MaxInt64)
	// Second pass: the main binary's names, in the same page.
	waitForJS(t, b, "the main binary's names in the open page", names+`.includes('"ondemand_hash_block"') && document.getElementById('symbolization').dataset.job === 'done'`)
	if !odEval[bool](t, b, `window.__samePage === true`) {
		t.Error("the page was reloaded; want the names drawn in place")
	}
	if r := odEval[any](t, b, `window.viewer.frameRect(["main","ondemand_run_workload","ondemand_hash_block","getenv"])`); r == nil {
		t.Error("main > ondemand_run_workload > ondemand_hash_block > getenv is not drawn")
	}
	b.Screenshot(t, "two-passes-done")

	// A reload in the same browser profile (its HTTP cache holds the
	// earlier flame.json bodies) shows the names too.
	odDo(t, b, "reload", chromedp.Reload())
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatalf("reloaded page never drew: %v", err)
	}
	waitForJS(t, b, "the names after the reload", `window.viewer.tree && `+names+`.includes('"ondemand_hash_block"') && `+names+`.includes('"getenv"')`)
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}

	// The ETags: a new one for each pass (the first may be served before
	// the libc pass is stored, or after).
	seen := el.list()
	var distinct []string
	for _, e := range seen {
		st, etag, _ := strings.Cut(e, " ")
		if st == "200" && (len(distinct) == 0 || distinct[len(distinct)-1] != etag) {
			distinct = append(distinct, etag)
		}
	}
	if len(distinct) < 2 || !strings.Contains(distinct[len(distinct)-1], "symbolized-") || !strings.Contains(distinct[len(distinct)-2], "symbolized-") {
		t.Errorf("flame.json ETags %v: want the original's, then a new one for each symbolization pass", seen)
	}
	if last := seen[len(seen)-1]; !strings.HasSuffix(last, distinct[len(distinct)-1]) {
		t.Errorf("after the reload flame.json answered %q, want the last pass's ETag %s", last, distinct[len(distinct)-1])
	}
	if n := dsrv.Requests(lbid); n != 0 {
		t.Errorf("libc was asked of debuginfod %d times; want it resolved locally", n)
	}
}
