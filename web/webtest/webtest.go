// Package webtest is what the web package's tests and its browser tests
// (the module viewer/web/browsertest, kept apart for chromedp) share:
// viewers started on loopback, profiles made for the tests, uploads, and
// the paths of the repository's test files. Only tests import it.
package webtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Root is the repository's top directory: the nearest directory above the
// working directory (go test runs a test in its package's directory) whose
// go.mod is module viewer's. It panics when there is none.
func Root() string { return root() }

var root = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module viewer\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			panic("webtest: no go.mod of module viewer above " + dir)
		}
	}
})

// Testdata is the path of elem in the repository's testdata directory.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{Root(), "testdata"}, elem...)...)
}

// Millis is a nanosecond value of a JSON body (a float64) in milliseconds,
// as the shortest decimal that reads back the same.
func Millis(v any) string { return strconv.FormatFloat(v.(float64)/1e6, 'f', -1, 64) }
