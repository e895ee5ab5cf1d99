// Package static holds the browser-side assets (vanilla JS modules and CSS),
// embedded so the viewer binary is self-contained.
package static

import "embed"

// FS is served under /static/.
//
//go:embed *.js *.css *.svg
var FS embed.FS
