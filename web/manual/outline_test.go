package manual

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Outline is what a markdown file (a page of the manual, or any of the
// repository's) offers and asks of others: its headings' anchors, as
// GitHub and the server give them, and the destinations of its links and
// images as written.
func Outline(src []byte) (ids, links []string) {
	slugs := &Slugs{}
	doc := markdown.Parser().Parse(text.NewReader(src), parser.WithContext(parser.NewContext(parser.WithIDs(slugs))))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.Link:
				links = append(links, string(n.Destination))
			case *ast.Image:
				links = append(links, string(n.Destination))
			}
		}
		return ast.WalkContinue, nil
	})
	return slugs.used, links
}
