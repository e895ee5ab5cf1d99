// Package viewer holds what belongs to the repository as a whole: its
// README, which the server serves at /README.md so that the pages can link
// to the section that explains a state (such as where debug info comes from).
package viewer

import _ "embed"

// README is README.md as built into the binary.
//
//go:embed README.md
var README []byte
