// Package static holds the browser-side assets (vanilla JS modules and CSS),
// embedded so the viewer binary is self-contained, and the manual's
// markdown pages (docs/), which package manual renders at /docs/.
package static

import "embed"

// FS is served under /static/.
//
//go:embed *.js *.css *.svg
var FS embed.FS

// Docs holds the manual: docs/README.md (its index) and one markdown page
// per subject, linked to each other by relative links so that they read on
// GitHub as files too. It is not served under /static/.
//
//go:embed docs/*.md
var Docs embed.FS
