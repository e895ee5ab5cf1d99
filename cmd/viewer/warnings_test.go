package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIPrintsWarnings checks that viewer serve FILE and viewer upload
// print a profile's warnings as the server lists them: folded stacks with
// a bad line, and a perf.data whose dummy event was dropped (which
// viewer upload sends as it is, so the warning is the server's).
func TestCLIPrintsWarnings(t *testing.T) {
	tmp := t.TempDir()
	folded := filepath.Join(tmp, "bad.folded")
	var b strings.Builder
	for i := range 20 {
		b.WriteString("main;work;leaf" + string(rune('a'+i)) + " 10\n")
	}
	b.WriteString("main;work;broken many\n")
	if err := os.WriteFile(folded, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const skipped = `warning: skipped 1 unreadable line: line 21: not "frame;frame;... count": "main;work;broken many"`

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(tmp, "data"), folded}, stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	base := waitForOutput(t, out, regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/`))[1]
	waitForOutput(t, out, regexp.MustCompile(regexp.QuoteMeta(folded)))
	waitForOutput(t, errOut, regexp.MustCompile(regexp.QuoteMeta("viewer: "+folded+": "+skipped)))

	for file, want := range map[string]string{
		folded:                            skipped,
		"../../testdata/perf/system.data": "warning: dropped 2 sample type(s) with no samples (every value zero): dummy:HG_count, dummy:HG",
	} {
		var stdout, stderr bytes.Buffer
		if err := runUpload(ctx, []string{file, "--server", base}, stdio{out: &stdout, err: &stderr}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), want+"\n") {
			t.Errorf("viewer upload %s printed %q on stderr, want the line %q", file, stderr.String(), want)
		}
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/p/[a-z2-7]{20}\n$`).MatchString(stdout.String()) {
			t.Errorf("viewer upload %s printed %q on stdout, want the link alone", file, stdout.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
