package ingest

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func zipOf(t *testing.T, names ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		// Stored, not deflated: a deflate writer per entry made the
		// 70,000-entry zips take 96 s under -race.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
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

// zipNamesOracle is what sniffInstrumentsZip decided before it read the
// directory itself: archive/zip's reading of the first 100 names.
func zipNamesOracle(data []byte) bool {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	for i, f := range zr.File {
		if i == 100 {
			break
		}
		top, _, _ := strings.Cut(f.Name, "/")
		if strings.HasSuffix(top, ".trace") {
			return true
		}
	}
	return false
}

// TestInstrumentsZipLayouts checks the zip sniff names an Instruments
// trace exactly when archive/zip finds a "*.trace/" entry among the first
// 100: with an archive comment, bytes prepended (a self-extracting
// archive), a zip64 end record (65,535 entries or more), and the trace
// entry first, 100th or 101st.
func TestInstrumentsZipLayouts(t *testing.T) {
	names := func(n, at int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("d/%d.txt", i)
		}
		if at >= 0 {
			s[at] = "Run.trace/form.template"
		}
		return s
	}
	withComment := func(names ...string) []byte {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		zw.SetComment("packed by hand")
		for _, n := range names {
			zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		}
		zw.Close()
		return b.Bytes()
	}
	big := zipOf(t, names(70000, 3)...)
	for _, tc := range []struct {
		name  string
		data  []byte
		trace bool
	}{
		{"first", zipOf(t, names(5, 0)...), true},
		{"100th", zipOf(t, names(150, 99)...), true},
		{"101st", zipOf(t, names(150, 100)...), false},
		{"none", zipOf(t, names(5, -1)...), false},
		{"top not a bundle", zipOf(t, "x/Run.trace/form.template"), false},
		{"comment", withComment(names(5, 2)...), true},
		{"prepended", append([]byte("PK\x03\x04#!/bin/sh\nexit 0\n"), zipOf(t, names(5, 2)...)...), true},
		{"zip64", big, true},
		{"cut short", zipOf(t, names(5, 2)...)[:200], false},
		{"local header only", append([]byte("PK\x03\x04"), make([]byte, 4096)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sniffInstrumentsZip(tc.data[:min(len(tc.data), sniffLen)], tc.data); got != tc.trace {
				t.Errorf("named an Instruments trace: %v; want %v", got, tc.trace)
			}
			if want := zipNamesOracle(tc.data); want != tc.trace {
				t.Errorf("archive/zip finds a trace: %v; the case expects %v", want, tc.trace)
			}
		})
	}
}

// TestInstrumentsZipBounded checks the zip sniff reads a fixed number of
// directory entries whatever the directory holds: a zip of 70,000 entries
// costs it no allocation per entry (archive/zip's reader took about 200
// bytes an entry, 1.4 GB for an upload of 7.3M).
func TestInstrumentsZipBounded(t *testing.T) {
	names := make([]string, 70000)
	for i := range names {
		names[i] = fmt.Sprintf("d/%d.txt", i)
	}
	data := zipOf(t, names...)
	allocs := testing.AllocsPerRun(3, func() {
		if sniffInstrumentsZip(data[:sniffLen], data) {
			t.Fatal("named an Instruments trace")
		}
	})
	if allocs > 10 {
		t.Errorf("%v allocations sniffing a zip of %d entries; want at most 10", allocs, len(names))
	}
}
