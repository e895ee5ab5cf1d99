package views

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	scriptTag   = regexp.MustCompile(`<script\b[^>]*>`)
	inlineStyle = regexp.MustCompile(`\sstyle=`)
	handlerAttr = regexp.MustCompile(`\son[a-z]+=`)
)

// checkCSPReady fails when a page would break under a Content-Security-Policy
// without 'unsafe-inline': inline scripts, event-handler or style attributes.
func checkCSPReady(t *testing.T, page, html string) {
	t.Helper()
	for _, tag := range scriptTag.FindAllString(html, -1) {
		if !strings.Contains(tag, ` src="`) && !strings.Contains(tag, `type="application/json"`) {
			t.Errorf("%s: inline script %s", page, tag)
		}
	}
	if inlineStyle.MatchString(html) {
		t.Errorf("%s: has a style attribute", page)
	}
	if m := handlerAttr.FindString(html); m != "" {
		t.Errorf("%s: has an event-handler attribute %q", page, m)
	}
}

func flamePage() FlamePage {
	return FlamePage{
		Page:        Page{Title: "cpu.pb.gz", Nav: []NavLink{{Label: "Flame graph", Href: "/p/abc", Active: true}, {Label: "Top", Href: "/p/abc/top"}}},
		ID:          "abc",
		Name:        "cpu.pb.gz",
		SampleTypes: []SampleType{{Index: 0, Name: "samples", Unit: "count"}, {Index: 1, Name: "cpu", Unit: "nanoseconds", Selected: true}},
		SI:          "cpu",
		DataURL:     "/p/abc/flame.json?si=cpu",
		SVGURL:      "/p/abc/flame.svg?si=cpu",
		PprofURL:    "/p/abc/profile.pb.gz",
		TopURL:      "/p/abc/top?si=cpu",
		Stats:       []Stat{{"Samples", "9"}},
	}
}

func TestFlamePage(t *testing.T) {
	m := flamePage()
	html := render(t, Flame(m))
	checkCSPReady(t, "flame", html)
	for _, want := range []string{
		`<canvas id="flame"`, `id="search"`, `id="mode-flame"`, `id="reset"`, `id="top-table"`,
		`<option value="cpu" selected>`, `href="/p/abc/flame.svg?si=cpu"`, `href="/p/abc/profile.pb.gz"`,
		`<script type="module" src="/static/page.js"></script>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("flame page lacks %s", want)
		}
	}
	// The script's configuration is JSON the page can parse.
	cfg := regexp.MustCompile(`(?s)<script id="flame-config" type="application/json">(.*?)</script>`).FindStringSubmatch(html)
	if cfg == nil {
		t.Fatalf("no flame-config JSON in\n%s", html)
	}
	var got struct {
		DataURL     string `json:"dataURL"`
		SI          string `json:"si"`
		SampleTypes []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(cfg[1]), &got); err != nil {
		t.Fatalf("flame-config: %v\n%s", err, cfg[1])
	}
	if got.DataURL != m.DataURL || got.SI != "cpu" || len(got.SampleTypes) != 2 {
		t.Errorf("flame-config = %+v", got)
	}
	// No binaries: the symbolization panel is there for live updates, hidden.
	if !strings.Contains(html, `id="symbolization" hidden`) {
		t.Errorf("symbolization panel is not hidden without binaries")
	}
}

func TestFlamePageBinaries(t *testing.T) {
	m := flamePage()
	m.Binaries = []Binary{
		{File: "/usr/lib/libc.so.6", BuildID: "4f1bd6d3f9b2a6a0f3e18d6b1d0a9e9b2c3d4e5f", State: "symbolized", Source: "/usr/lib/debug"},
		{File: "/usr/bin/app", BuildID: "aa11", State: "not found", Detail: "no server has it"},
	}
	html := render(t, Flame(m))
	if strings.Contains(html, `id="symbolization" hidden`) {
		t.Errorf("symbolization panel hidden with binaries")
	}
	for _, want := range []string{
		`data-build-id="4f1bd6d3f9b2a6a0f3e18d6b1d0a9e9b2c3d4e5f"`, `4f1bd6d3f9b2…`, `state-not-found`,
		`1 of 2 symbolized`, `no server has it`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("symbolization panel lacks %s", want)
		}
	}
}

// Names and messages are escaped, also inside the JSON for the script.
func TestEscaping(t *testing.T) {
	m := flamePage()
	m.Name = `<img src=x onerror=alert(1)>`
	m.DataURL = `/p/abc/flame.json?si=</script><script>alert(1)</script>`
	html := render(t, Flame(m))
	if strings.Contains(html, "<img src=x") || strings.Contains(html, "</script><script>alert") {
		t.Errorf("unescaped input in\n%s", html)
	}
	e := render(t, Error(ErrorPage{Status: 400, Message: `bad <b>gzip</b>`}))
	if strings.Contains(e, "<b>gzip") || !strings.Contains(e, "That upload could not be read") {
		t.Errorf("error page:\n%s", e)
	}
}

func TestOtherPagesCSPReady(t *testing.T) {
	pages := map[string]templ.Component{
		"index": Index(IndexPage{MaxUpload: "512 MiB", DebuginfodServers: []string{"https://debuginfod.debian.net"}}),
		"top": Top(TopPage{ID: "abc", SampleTypes: []SampleType{{Name: "cpu", Selected: true}}, Total: "1 s", FlameURL: "/p/abc",
			Rows: []TopRow{{Name: "main.main", Flat: "1 s", FlatPct: "100%", Cum: "1 s", CumPct: "100%", FlatFrac: 1, CumFrac: 1}}}),
		"error": Error(ErrorPage{Status: 404, Message: "no such profile"}),
	}
	for name, c := range pages {
		checkCSPReady(t, name, render(t, c))
	}
	idx := render(t, pages["index"])
	for _, want := range []string{`name="file"`, `action="/upload"`, `enctype="multipart/form-data"`, "512 MiB", "https://debuginfod.debian.net"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index lacks %s", want)
		}
	}
	if off := render(t, Index(IndexPage{MaxUpload: "1 MiB"})); !strings.Contains(off, "no debuginfod server is asked") {
		t.Errorf("index without servers does not say debuginfod is off")
	}
	if top := render(t, pages["top"]); !strings.Contains(top, `<rect width="100"`) {
		t.Errorf("top page bar for 100%% is not full width")
	}
}
