package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: viewer --version names the build and its Go release.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out bytes.Buffer
		if err := runWith(context.Background(), []string{arg}, stdio{in: strings.NewReader(""), out: &out, err: &bytes.Buffer{}}); err != nil {
			t.Fatalf("viewer %s: %v", arg, err)
		}
		if s := out.String(); !strings.HasPrefix(s, "viewer ") || !strings.Contains(s, runtime.Version()) {
			t.Errorf("viewer %s printed %q: want viewer VERSION … %s", arg, s, runtime.Version())
		}
	}
}

// TestHelpSizes: every subcommand's -h prints sizes one way, with binary
// units (1GiB), never as a byte count.
func TestHelpSizes(t *testing.T) {
	byteCount := regexp.MustCompile(`\(default \d{4,}\)|BYTES`)
	sizeFlag := regexp.MustCompile(`-(max-line|render-bytes|symbol-cache-size|max-upload|ingest-memory|upload-min-rate|max-debug-size)\b`)
	for name := range commands {
		var errb bytes.Buffer
		runWith(context.Background(), []string{name, "-h"}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb})
		lines := strings.Split(errb.String(), "\n")
		for i, l := range lines {
			if !sizeFlag.MatchString(l) || i+1 >= len(lines) {
				continue
			}
			flagLine := l + " " + lines[i+1] // flag prints its usage on the next line
			if byteCount.MatchString(flagLine) {
				t.Errorf("viewer %s -h: %q prints a size in bytes; want 1GiB-style units", name, strings.TrimSpace(flagLine))
			}
		}
	}
}
