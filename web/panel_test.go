package web_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/views"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// goLikeProfile is a named Go program with the pseudo mappings every Go
// profile has ([vdso], [vsyscall]) plus others perf records (the heap,
// memfd code, //anon, [stack]), each holding a sampled raw address. (A
// JIT's perf map is no longer among them: its names are read from it,
// TestPerfMapRecording.)
func goLikeProfile(t *testing.T, comment string) []byte {
	t.Helper()
	app := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/usr/local/bin/app", BuildID: "0123456789abcdef0123456789abcdef01234567", HasFunctions: true}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Mapping: []*profile.Mapping{app}}
	fMain := &profile.Function{ID: 1, Name: "main.main"}
	p.Function = []*profile.Function{fMain}
	lMain := &profile.Location{ID: 1, Mapping: app, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	p.Location = []*profile.Location{lMain}
	p.Sample = []*profile.Sample{{Location: []*profile.Location{lMain}, Value: []int64{10}}}
	for i, file := range []string{"[vdso]", "[vsyscall]", "[heap]", "/memfd:jit-cache (deleted)", "//anon", "[stack]"} {
		base := uint64(0x7f0000000000 + i*0x100000)
		m := &profile.Mapping{ID: uint64(2 + i), Start: base, Limit: base + 0x1000, File: file}
		l := &profile.Location{ID: uint64(2 + i), Mapping: m, Address: base + 0x10}
		p.Mapping, p.Location = append(p.Mapping, m), append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l, lMain}, Value: []int64{1}})
	}
	p.Comments = []string{comment}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPanelPseudoMappingsAreNeutral: a Go profile whose only unnamed
// mappings are pseudo ones reads "1 of 1 symbolized", lists them as
// pseudo, queues no symbolization, and its diff carries no warning.
func TestPanelPseudoMappingsAreNeutral(t *testing.T) {
	_, base := webtest.SymbolizingServer(t, nil, 1)
	id := webtest.UploadAPI(t, base, "", goLikeProfile(t, "new"))
	code, _, body := fetch(t, base+"/p/"+id)
	page := string(body)
	if code != 200 {
		t.Fatalf("page: %d", code)
	}
	if !strings.Contains(page, "1 of 1 symbolized") {
		t.Errorf("the panel's header does not read 1 of 1 symbolized (pseudo mappings are no binaries):\n%s", between(page, `id="symbolization"`, "</section>"))
	}
	if n := strings.Count(page, `data-state="`+views.StatePseudo+`"`); n != 6 {
		t.Errorf("%d rows in the pseudo state, want 6 ([vdso], [vsyscall], [heap], memfd, //anon, [stack])", n)
	}
	for _, bad := range []string{`data-state="unsymbolized"`, `data-state="no symbols"`, `data-state="error"`, "/p/" + id + "/events"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q: a pseudo mapping counted as missing", bad)
		}
	}
	var st ondemand.Status
	_, _, sb := fetch(t, base+"/p/"+id+"/symbolization")
	if err := json.Unmarshal(sb, &st); err != nil || st.State != "none" {
		t.Errorf("symbolization status %s (%v): want none, there is nothing to symbolize", sb, err)
	}
	old := webtest.UploadAPI(t, base, "", goLikeProfile(t, "old"))
	code, _, body = fetch(t, base+"/p/"+old+"/diff/"+id)
	if code != 200 || strings.Contains(string(body), "have no names") || strings.Contains(string(body), "being symbolized") {
		t.Errorf("diff of two Go profiles: %d, with a warning about names:\n%s", code, between(string(body), "<main", "<canvas"))
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// TestPanelNoSymbolsSaysWhatToDo: a stripped binary with no debug info on
// the machine and no debuginfod ends as "no symbols" (not an error), its
// detail says what was checked and the next step, and the row links to the
// manual's section the server serves.
func TestPanelNoSymbolsSaysWhatToDo(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	abs, err := filepath.Abs(exe)
	if err != nil {
		t.Fatal(err)
	}
	_, base := webtest.SymbolizingServer(t, nil, 1)
	// The mapping names the stripped executable itself: found, but it has
	// no symbols for any sampled address.
	id := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, abs, 1))
	st, _ := finalEvent(t, base, id)
	if len(st.Binaries) != 1 {
		t.Fatalf("final event binaries %+v, want the one executable", st.Binaries)
	}
	b := st.Binaries[0]
	if b.State != symbolize.StateNotFound || string(b.State) != views.StateNoSymbols {
		t.Errorf("state %q, want %q", b.State, views.StateNoSymbols)
	}
	if !strings.Contains(b.Reason, abs) || !strings.Contains(b.Reason, "stripped") {
		t.Errorf("reason %q does not say which file was checked and that it is stripped", b.Reason)
	}
	for _, want := range []string{"-dbgsym", "DEBUGINFOD_URLS", "--debug-dir"} {
		if !strings.Contains(b.Help, want) {
			t.Errorf("help %q does not mention %s", b.Help, want)
		}
	}
	_, _, body := fetch(t, base+"/p/"+id)
	row := between(string(body), `data-state="no symbols"`, "</tr>")
	if row == "" {
		t.Fatalf("no row in the no-symbols state:\n%s", between(string(body), `id="symbolization"`, "</section>"))
	}
	if !strings.Contains(row, `href="`+views.HelpURL+`"`) || !strings.Contains(row, "-dbgsym") {
		t.Errorf("the no-symbols row lacks the next step or the link to %s:\n%s", views.HelpURL, row)
	}
	if !strings.Contains(string(body), "0 of 1 symbolized") {
		t.Errorf("the header does not count the binary: %s", between(string(body), `id="symbolization-summary"`, "</span>"))
	}
	page, anchor, _ := strings.Cut(views.HelpURL, "#")
	code, hdr, doc := fetch(t, base+page)
	if code != 200 || !strings.Contains(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(doc), `id="`+anchor+`">Where debug info comes from<`) {
		t.Errorf("%s: %d %q, want the manual's page with its section on debug info sources", views.HelpURL, code, hdr.Get("Content-Type"))
	}
}
