package views

// DocsPage is a page of the manual at /docs/….
type DocsPage struct {
	Page
	// Menu lists the manual's pages, the one shown Active.
	Menu []NavLink
	// Body is the page's HTML, rendered from the manual's own markdown
	// (embedded in the binary, never from a request).
	Body string
}
