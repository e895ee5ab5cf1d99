package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestConvertProgress: viewer convert --progress reports the phases of a
// perf.data's conversion on stderr, each to 100% of the bytes and records
// it has; without the flag, a stderr that is no terminal gets none.
func TestConvertProgress(t *testing.T) {
	in := "../../testdata/perf/system.data"
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		var stderr bytes.Buffer
		out := filepath.Join(t.TempDir(), "p.pb.gz")
		if err := runWith(context.Background(), append([]string{"convert", in, "-o", out}, args...), stdio{out: &bytes.Buffer{}, err: &stderr}); err != nil {
			t.Fatal(err, stderr.String())
		}
		return stderr.String()
	}
	got := run("--progress")
	read := regexp.MustCompile(`(?m)^reading records: ([0-9.]+) MB of ([0-9.]+) MB \(100%\)$`).FindStringSubmatch(got)
	if read == nil || read[1] != read[2] {
		t.Fatalf("--progress: no \"reading records: N MB of N MB (100%%)\" line:\n%s", got)
	}
	if n, _ := strconv.ParseFloat(read[2], 64); n <= 0 || n*1e6 > float64(st.Size())+1e5 {
		t.Errorf("read %s MB of records from a %s file", read[2], mb(st.Size()))
	}
	agg := regexp.MustCompile(`(?m)^aggregating stacks: (\d+) of (\d+) \(100%\)$`).FindStringSubmatch(got)
	if agg == nil || agg[1] != agg[2] || agg[1] == "0" {
		t.Errorf("--progress: no \"aggregating stacks: N of N (100%%)\" line:\n%s", got)
	}
	if i, j := strings.Index(got, "reading records"), strings.Index(got, "aggregating stacks"); i > j {
		t.Errorf("phases out of order:\n%s", got)
	}
	for _, args := range [][]string{nil, {"--progress=false"}} {
		if got := run(args...); strings.Contains(got, "reading records") || strings.Contains(got, "%)") {
			t.Errorf("convert %v printed progress to a stderr that is not a terminal:\n%s", args, got)
		}
	}
}

// TestUploadProgress: viewer upload --progress shows the bytes sent, to
// the file's size, then that the server converts them; upload-debuginfo
// shows its bytes sent through the same helper. Quiet without the flag.
func TestUploadProgress(t *testing.T) {
	base, _, _ := startServe(t, "--data", t.TempDir())
	in := "../../testdata/perf/fp.data"
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := runWith(context.Background(), []string{"upload", "--server", base, "--progress", in}, stdio{out: &stdout, err: &stderr}); err != nil {
		t.Fatal(err, stderr.String())
	}
	want := "sending: " + mb(st.Size()) + " of " + mb(st.Size()) + " (100%)\n"
	if got := stderr.String(); !strings.Contains(got, want) || !strings.Contains(got, "sent; the server is converting it") {
		t.Errorf("upload --progress printed\n%s\nwant a line %q, then that the server converts it", got, want)
	}
	if !strings.Contains(stdout.String(), base+"/p/") {
		t.Errorf("upload printed %q, not the profile's link", stdout.String())
	}
	stderr.Reset()
	debug := "../../testdata/debuginfo/prog.debug"
	if st, err = os.Stat(debug); err != nil {
		t.Fatal(err)
	}
	if err := runWith(context.Background(), []string{"upload-debuginfo", "--server", base, "--progress", debug}, stdio{out: &bytes.Buffer{}, err: &stderr}); err != nil {
		t.Fatal(err, stderr.String())
	}
	if want := "sending: " + mb(st.Size()) + " of " + mb(st.Size()) + " (100%)\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("upload-debuginfo --progress printed\n%s\nwant a line %q", stderr.String(), want)
	}
	stderr.Reset()
	if err := runWith(context.Background(), []string{"upload", "--server", base, in}, stdio{out: &bytes.Buffer{}, err: &stderr}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "sending") {
		t.Errorf("upload without --progress, stderr no terminal, printed %q", stderr.String())
	}
}
