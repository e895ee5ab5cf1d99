package manual

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocsRelativeLinks: every relative link of the manual's pages, and of
// the README that links into them, names a file of the repository, and a
// link to a section of a markdown file names one of its headings: the
// manual reads on GitHub as files. (The served pages' links are checked
// by web's TestDocsServedLinksResolve.)
func TestDocsRelativeLinks(t *testing.T) {
	files, err := filepath.Glob("../../static/docs/*.md")
	if err != nil || len(files) < 2 {
		t.Fatalf("the manual's pages: %v %v", files, err)
	}
	files = append(files, "../../README.md")
	ids := map[string][]string{} // cleaned path → anchors
	links := map[string][]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ids[filepath.Clean(f)], links[f] = Outline(src)
	}
	anchorsOf := func(f string) []string {
		f = filepath.Clean(f)
		if a, ok := ids[f]; ok {
			return a
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		a, _ := Outline(src)
		ids[f] = a
		return a
	}
	checked := 0
	for _, f := range files {
		for _, l := range links[f] {
			u, err := url.Parse(l)
			if err != nil {
				t.Errorf("%s: link %q: %v", f, l, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/") {
				continue // not a file of the repository
			}
			target := filepath.Clean(f)
			if u.Path != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(u.Path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %q: no file %s", f, l, target)
					continue
				}
			}
			checked++
			if u.Fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s: link %q: an anchor in a file that is not markdown", f, l)
				continue
			}
			if !slices.Contains(anchorsOf(target), u.Fragment) {
				t.Errorf("%s: link %q: %s has no heading with the anchor %q (it has %q)", f, l, target, u.Fragment, anchorsOf(target))
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links checked: the manual's pages should link each other", checked)
	}
}

// TestSlugIsGitHubs: headings get the anchors GitHub gives them, so that
// a link to a section works on GitHub and on the served page alike.
func TestSlugIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Where debug info comes from":                      "where-debug-info-comes-from",
		"perf.data recorded with `--call-graph=dwarf`":     "perfdata-recorded-with---call-graphdwarf",
		"Caller addresses: call sites, pprof's convention": "caller-addresses-call-sites-pprofs-convention",
		"Files a profile names; multi-user hosts":          "files-a-profile-names-multi-user-hosts",
		"debuginfod: what leaves the machine":              "debuginfod-what-leaves-the-machine",
		"Issue 33, clients on a default server":            "issue-33-clients-on-a-default-server",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want GitHub's %q", heading, got, want)
		}
	}
	ids, _ := Outline([]byte("# A\n\n## Notes\n\n## Notes\n\n## Notes\n"))
	if want := []string{"a", "notes", "notes-1", "notes-2"}; !slices.Equal(ids, want) {
		t.Errorf("repeated headings get %q, want GitHub's %q", ids, want)
	}
}

// TestManualRendersEveryPage: every page renders with a title, the index
// first and every page in the menu once, links between pages rewritten to
// their routes and links to files the server does not serve left as text.
func TestManualRendersEveryPage(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../static/docs/*.md")
	if len(m.Pages) != len(files) || m.Pages[0].Name != "" {
		t.Fatalf("%d pages (first %q), want the %d files, the index first", len(m.Pages), m.Pages[0].Name, len(files))
	}
	for _, p := range m.Pages {
		if p.Title == "" || p.Label == "" || !strings.Contains(p.HTML, "<h1") {
			t.Errorf("%s: title %q, label %q, or no heading", p.File, p.Title, p.Label)
		}
		if strings.Contains(p.HTML, `.md"`) || strings.Contains(p.HTML, `.md#`) {
			t.Errorf("%s: a link still names a markdown file: %s", p.File, p.HTML[max(0, strings.Index(p.HTML, ".md")-80):][:120])
		}
		if strings.Contains(p.HTML, " style=") {
			t.Errorf("%s: an inline style, which the Content-Security-Policy forbids", p.File)
		}
	}
}
