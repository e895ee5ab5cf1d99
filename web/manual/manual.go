// Package manual renders viewer's manual, the markdown pages embedded from
// static/docs, to HTML for the server's /docs/ pages. The pages are written
// for GitHub as much as for the server: they link each other by relative
// file names (symbolization.md#where-debug-info-comes-from) and headings get
// GitHub's anchors, so a link works on both. Rendering rewrites a link to
// another page into its /docs/ route and turns a link to a repository file
// outside the manual (BENCHMARKS.md) into its text, which the server does
// not serve.
package manual

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"sync"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"viewer/static"
)

// Root is the route the manual is served under; the index is Root itself
// and a page NAME.md is Root+NAME.
const Root = "/docs/"

// indexFile is the manual's index: GitHub shows a folder's README.md.
const indexFile = "README.md"

// Page is one rendered page of the manual.
type Page struct {
	Name  string // the route's last element: "" for the index, else the file name without .md
	File  string // the markdown file under static/docs
	Label string // the index's link text for it, the manual's menu entry
	Title string // its first heading
	HTML  string // the rendered body
	// IDs are the anchors its headings get, GitHub's: a link to
	// Root+Name+"#"+id resolves when id is among them.
	IDs []string
}

// URL is the page's route.
func (p *Page) URL() string { return Root + p.Name }

// Manual is every page, the index first, then in the order the index
// links them (pages it does not link follow by file name).
type Manual struct {
	Pages  []*Page
	byName map[string]*Page
}

// Page returns the page served at Root+name ("" or "README" for the index).
func (m *Manual) Page(name string) (*Page, bool) {
	if name == "README" {
		name = ""
	}
	p, ok := m.byName[name]
	return p, ok
}

// Load renders the embedded manual once; the pages are immutable after.
var Load = sync.OnceValues(func() (*Manual, error) { return Render(static.Docs, "docs") })

// Render renders every markdown file of dir in fsys.
func Render(fsys fs.FS, dir string) (*Manual, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	m := &Manual{byName: map[string]*Page{}}
	src := map[string][]byte{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		file := path.Base(f)
		src[file] = b
		m.byName[pageName(file)] = &Page{Name: pageName(file), File: file}
	}
	index, ok := m.byName[""]
	if !ok {
		return nil, fmt.Errorf("manual: %s has no %s (the index)", dir, indexFile)
	}
	index.Label = "Manual"
	m.Pages = append(m.Pages, index)
	for _, file := range files {
		p := m.byName[pageName(path.Base(file))]
		var err error
		p.HTML, p.Title, p.IDs, err = render(src[p.File], func(file, label string) {
			q, ok := m.byName[pageName(file)]
			if p == index && ok && q.Label == "" {
				q.Label = label
				m.Pages = append(m.Pages, q)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("manual: %s: %w", p.File, err)
		}
	}
	for _, file := range files {
		if p := m.byName[pageName(path.Base(file))]; p.Label == "" {
			p.Label = p.Title
			m.Pages = append(m.Pages, p)
		}
	}
	return m, nil
}

// pageName is the route name of a markdown file of the manual.
func pageName(file string) string {
	if file == indexFile {
		return ""
	}
	return strings.TrimSuffix(file, ".md")
}

var markdown = goldmark.New(
	goldmark.WithExtensions(
		// Alignment as an attribute: the site's Content-Security-Policy
		// allows no inline style.
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
	),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
)

// render converts one page, calling linked for each link to another page
// of the manual (its file and link text), and returns its HTML, its first
// heading and its headings' anchors.
func render(src []byte, linked func(file, label string)) (html, title string, ids []string, err error) {
	slugs := &Slugs{}
	doc := markdown.Parser().Parse(text.NewReader(src), parser.WithContext(parser.NewContext(parser.WithIDs(slugs))))
	var unlink []*ast.Link
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if title == "" {
				title = plainText(n, src)
			}
		case *ast.Link:
			dest, file, local := Target(string(n.Destination))
			switch {
			case !local:
			case file == "":
				unlink = append(unlink, n) // a repository file the server does not serve
			default:
				n.Destination = []byte(dest)
				linked(file, plainText(n, src))
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return "", "", nil, err
	}
	for _, l := range unlink {
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
	var buf bytes.Buffer
	if err := markdown.Renderer().Render(&buf, src, doc); err != nil {
		return "", "", nil, err
	}
	return buf.String(), title, slugs.used, nil
}

// Target resolves a link written in a page of the manual: local is false
// for a link that leaves the repository (a URL with a scheme or host) or
// stays on the page (only a fragment). For a local link, file is the
// manual's page it names ("" when it names another file of the repository)
// and dest its route with the fragment kept.
func Target(link string) (dest, file string, local bool) {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path == "" {
		return link, "", false
	}
	p := path.Clean(path.Join("static/docs", u.Path))
	if path.Dir(p) != "static/docs" || !strings.HasSuffix(p, ".md") {
		return "", "", true
	}
	file = path.Base(p)
	dest = Root + pageName(file)
	if u.Fragment != "" {
		dest += "#" + u.Fragment
	}
	return dest, file, true
}

// plainText is a node's text as GitHub reads it for an anchor or a title:
// the text of its inline children, code spans included.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// Slugs gives headings GitHub's anchors, so that a link to a section works
// on GitHub and on the served page alike: the heading's text lowercased,
// every character but letters, digits, spaces, hyphens and underscores
// dropped, spaces made hyphens; a repeated anchor gets -1, -2, ….
// It implements goldmark's parser.IDs.
type Slugs struct {
	used []string
	seen map[string]bool
}

// Slug is GitHub's anchor of a heading's text, before repeats are told apart.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Generate is goldmark's call for a heading, with its markdown source line:
// the markup it holds (backticks, asterisks) is punctuation the slug drops.
func (s *Slugs) Generate(value []byte, kind ast.NodeKind) []byte {
	base := Slug(strings.TrimSpace(string(value)))
	id := base
	for i := 1; s.seen[id]; i++ {
		id = fmt.Sprintf("%s-%d", base, i)
	}
	s.Put([]byte(id))
	return []byte(id)
}

// Put records an anchor as taken.
func (s *Slugs) Put(value []byte) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[string(value)] = true
	s.used = append(s.used, string(value))
}
