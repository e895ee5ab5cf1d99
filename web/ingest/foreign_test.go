package ingest

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func zipOf(t *testing.T, names ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("x"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestForeignFormats uploads a small input of each format viewer knows but
// does not read (speedscope's corpus has one of each in
// TestSpeedscopeCorpus), plain and gzipped, and checks the error names it and says
// what viewer reads; anything else keeps the generic message.
func TestForeignFormats(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		data       []byte
	}{
		{"instruments zip", "an Instruments trace", zipOf(t, "Run.trace/form.template", "Run.trace/instrument_data/x/run_data/1.run.zip")},
		{"instruments xml", "an Instruments export", []byte(`<?xml version="1.0"?>` + "\n" + `<trace-query-result><node xpath='//trace-toc[1]/run[1]/data[1]/table[1]'><schema name="time-profile"></schema></node></trace-query-result>`)},
		{"elf", "an ELF executable", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...)},
		{"zip", "a zip archive", zipOf(t, "profile/cpu.pb.gz")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range [][]byte{tc.data, gzipped(tc.data)} {
				_, _, err := Parse(in, Limits{MaxBytes: 1 << 20})
				var fe *ForeignFormatError
				if !errors.As(err, &fe) || !errors.Is(err, ErrUnknownFormat) {
					t.Fatalf("error %v; want a *ForeignFormatError matching ErrUnknownFormat", err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "This is "+tc.what) || !strings.Contains(msg, "; "+readable+". ") || fe.Do == "" {
					t.Errorf("message %q; want it to name %q, what viewer reads and what to do", msg, tc.what)
				}
			}
		})
	}
	for _, in := range []string{"just some text\nnothing more\n", `{"hello":"world"}`, "\x00\x01\x02\x03garbage"} {
		_, _, err := Parse([]byte(in), Limits{})
		var fe *ForeignFormatError
		if errors.As(err, &fe) || !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "not a recognised profile") {
			t.Errorf("%q: error %v; want the generic message", in, err)
		}
	}
}
