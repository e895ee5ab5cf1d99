package web

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"viewer/views"
	"viewer/web/manual"
)

// docsHTML is a served page's anchors (every id) and links (every href).
func docsHTML(t *testing.T, body string) (ids, hrefs []string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		for _, a := range n.Attr {
			switch a.Key {
			case "id":
				ids = append(ids, a.Val)
			case "href":
				hrefs = append(hrefs, a.Val)
			}
		}
	}
	return ids, hrefs
}

// getDocs fetches a path of the test server, following no redirect.
func getDocs(t *testing.T, base, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := noRedirect.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestDocsPagesRender: every page of the manual is served at /docs/… in the
// site's layout (its header, the manual's menu with the page marked, the
// page's title), with every heading's anchor; /docs, the file names GitHub
// links (/docs/inputs.md) and the old /README.md lead to it; an unknown page
// is a 404 that says where the pages are listed.
func TestDocsPagesRender(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	m, err := manual.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Pages {
		code, hdr, body := getDocs(t, ts.URL, p.URL())
		if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s, want 200 HTML", p.URL(), code, hdr.Get("Content-Type"))
			continue
		}
		for _, want := range []string{`<header class="site">`, `class="docs-menu"`, `id="docs-body"`,
			"<title>" + html.EscapeString(p.Title) + " · viewer</title>",
			`href="` + p.URL() + `" class="active"`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the page lacks %s", p.URL(), want)
			}
		}
		ids, _ := docsHTML(t, body)
		for _, id := range p.IDs {
			if !slices.Contains(ids, id) {
				t.Errorf("%s: no element with the heading's id %q", p.URL(), id)
			}
		}
		if !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", p.URL(), hdr.Get("Content-Security-Policy"))
		}
	}
	for path, want := range map[string]string{
		"/docs":           "/docs/",
		"/docs/inputs.md": "/docs/inputs",
		"/docs/README.md": "/docs/",
		"/docs/README":    "/docs/",
		"/README.md":      "/docs/",
	} {
		code, hdr, _ := getDocs(t, ts.URL, path)
		if code != http.StatusMovedPermanently || hdr.Get("Location") != want {
			t.Errorf("%s: %d to %q, want 301 to %s", path, code, hdr.Get("Location"), want)
		}
	}
	code, _, body := getDocs(t, ts.URL, "/docs/no-such-page")
	if code != http.StatusNotFound || !strings.Contains(body, "/docs/") {
		t.Errorf("/docs/no-such-page: %d, want 404 naming where the pages are listed:\n%s", code, body)
	}
}

// appDocsLink is a link into the manual as the app's sources write it.
var appDocsLink = regexp.MustCompile(`/docs/[A-Za-z0-9_-]*(#[A-Za-z0-9_-]+)?`)

// TestDocsLinksFromApp: every link into /docs/ that the app writes (its
// views, scripts and handlers, and the upload page as served) names a page
// that exists and, with an anchor, a heading of that page.
func TestDocsLinksFromApp(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	var links []string
	for _, pattern := range []string{"../views/*.templ", "../views/*.go", "../static/*.js", "../web/*.go", "../cmd/viewer/*.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "_templ.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range appDocsLink.FindAllString(string(b), -1) {
				links = append(links, l)
			}
		}
	}
	_, _, index := getDocs(t, ts.URL, "/")
	_, hrefs := docsHTML(t, index)
	for _, h := range hrefs {
		if strings.HasPrefix(h, "/docs/") {
			links = append(links, h)
		}
	}
	if !slices.Contains(links, views.HelpURL) || !slices.Contains(links, "/docs/inputs#formats") {
		t.Fatalf("links found %q: want the symbolization panel's (%s) and the upload page's", links, views.HelpURL)
	}
	checkDocsLinks(t, ts.URL, "the app", links)
}

// TestDocsServedLinksResolve: the links between the served pages of the
// manual (rewritten from their markdown file names) reach a page and a
// heading.
func TestDocsServedLinksResolve(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	m, err := manual.Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range m.Pages {
		_, _, body := getDocs(t, ts.URL, p.URL())
		_, hrefs := docsHTML(t, body)
		var links []string
		for _, h := range hrefs {
			if strings.HasPrefix(h, "/docs/") {
				links = append(links, h)
			} else if strings.HasPrefix(h, "#") {
				links = append(links, p.URL()+h)
			} else if u, err := url.Parse(h); err != nil || (u.Scheme == "" && !strings.HasPrefix(h, "/")) {
				t.Errorf("%s: relative link %q, which the server does not resolve", p.URL(), h)
			}
		}
		n += len(links)
		checkDocsLinks(t, ts.URL, p.URL(), links)
	}
	if n < 20 {
		t.Errorf("only %d links between the manual's pages", n)
	}
}

// checkDocsLinks fetches each link's page once and looks for its anchor.
func checkDocsLinks(t *testing.T, base, from string, links []string) {
	t.Helper()
	pages := map[string][]string{}
	for _, l := range links {
		path, anchor, _ := strings.Cut(l, "#")
		ids, ok := pages[path]
		if !ok {
			code, _, body := getDocs(t, base, path)
			if code != http.StatusOK {
				t.Errorf("%s links %s: %d", from, l, code)
				pages[path] = nil
				continue
			}
			ids, _ = docsHTML(t, body)
			pages[path] = ids
		}
		if anchor != "" && ids != nil && !slices.Contains(ids, anchor) {
			t.Errorf("%s links %s: the page has no element with id %q", from, l, anchor)
		}
	}
}
