package browsertest_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserSymbolizationOffAsksNothing: on a server that does not
// symbolize, the flame page of a profile with binaries lists them but
// requests no symbolization status (which would be a 404 in the console).
func TestBrowserSymbolizationOffAsksNothing(t *testing.T) {
	base := webtest.StartServer(t) // no Symbolization config
	p, err := profile.ParseData(webtest.BrowserProfile(t))
	if err != nil {
		t.Fatal(err)
	}
	named := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/usr/bin/app", BuildID: "0123456789abcdef0123456789abcdef01234567", HasFunctions: true}
	raw := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/usr/lib/libraw.so", BuildID: "89abcdef0123456789abcdef0123456789abcdef"}
	p.Mapping = []*profile.Mapping{named, raw}
	for _, l := range p.Location {
		l.Mapping = named
	}
	l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: raw, Address: 0x7f0000000420}
	p.Location = append(p.Location, l)
	p.Sample = append(p.Sample, &profile.Sample{Location: append([]*profile.Location{l}, p.Sample[0].Location...), Value: []int64{1, 10_000_000}})
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	id := webtest.UploadAPI(t, base, "", buf.Bytes())

	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; page problems: %q", err, b.Problems())
	}
	// symbolize.js ran: it adds its controls to the panel.
	waitForJS(t, b, "the symbolization panel's script", `document.getElementById('symbolize-note')`)
	if got := text(t, b, "#binaries"); !strings.Contains(got, "libraw.so") {
		t.Errorf("the panel does not list the unsymbolized binary: %q", got)
	}
	// Give a request the page would make time to finish and be logged.
	time.Sleep(500 * time.Millisecond)
	asked := eval[[]string](t, b, `performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.includes('/symbolization'))`)
	if len(asked) > 0 {
		t.Errorf("the page requested %v from a server that does not symbolize", asked)
	}
	noProblems(t, b)
}
