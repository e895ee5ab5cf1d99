// Package peers gives tests the peers' public inputs in this folder (see
// README.md for their sources and licences). It is under testdata so that
// only tests import it.
package peers

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/pprof/profile"
)

// dir is this folder, wherever the importing test runs from.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Pprofs returns the pprof inputs (pprof/, every format pprof reads),
// each parsed by pprof and written as uncompressed profile.proto, by file
// name.
func Pprofs(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir(), "pprof", "*"))
	for _, f := range files {
		if filepath.Base(f) == "LICENSE" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(b)
		if err != nil {
			t.Fatal(err)
		}
		var raw bytes.Buffer
		if err := p.WriteUncompressed(&raw); err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = raw.Bytes()
	}
	if len(out) == 0 {
		t.Fatalf("no pprof inputs in %s", filepath.Join(dir(), "pprof"))
	}
	return out
}
