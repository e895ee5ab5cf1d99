package ingest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
)

// readable lists what Parse reads, for the errors about what it does not.
const readable = "viewer reads pprof, perf.data, perf script, folded stacks, perf JSON, speedscope JSON, V8 CPU and heap profiles, node --prof logs, trace events, Firefox Profiler profiles, callgrind, Java Flight Recorder, pmcstat callgraphs, Instruments deep copies, stackprof, GHC profiles (text and JSON), Papyrus profiles and Safari timeline recordings"

// ForeignFormatError is what Parse returns for a profile or trace in a
// format viewer does not read: it names what the bytes look like and what
// to do instead. It matches ErrUnknownFormat.
type ForeignFormatError struct {
	// What the bytes are, with its article: "a Chrome .cpuprofile".
	What string
	// Do says how to get something viewer reads, or where to open it.
	Do string
}

func (e *ForeignFormatError) Error() string {
	return fmt.Sprintf("This is %s; %s. %s", e.What, readable, e.Do)
}

// Unwrap makes a ForeignFormatError match ErrUnknownFormat (HTTP 400).
func (e *ForeignFormatError) Unwrap() error { return ErrUnknownFormat }

// foreignFormat is one format viewer recognises but does not read.
type foreignFormat struct {
	what, do string
	// sniff is given the first sniffLen bytes and all of data.
	sniff func(head, data []byte) bool
}

// foreignFormats are tried in order once no format has read the input.
var foreignFormats = []foreignFormat{
	{"an Instruments trace (a zipped .trace bundle)",
		"Viewer cannot read Instruments data; open it in Instruments, or export its call tree as text and fold it with FlameGraph's stackcollapse-instruments.pl.",
		sniffInstrumentsZip},
	{"an Instruments export (xctrace export XML)",
		"Viewer cannot read Instruments data; open the .trace in Instruments, or export its call tree as text and fold it with FlameGraph's stackcollapse-instruments.pl.",
		func(head, _ []byte) bool {
			return bytes.HasPrefix(bytes.TrimSpace(head), []byte("<?xml")) &&
				(bytes.Contains(head, []byte("<trace-query-result")) || bytes.Contains(head, []byte("<trace-toc")))
		}},
	{"an ELF executable or library, not a profile",
		"Record it with `perf record -g ./program` and upload the perf.data.",
		func(head, _ []byte) bool { return bytes.HasPrefix(head, []byte("\x7fELF")) }},
	{"a zip archive",
		"Unpack it and upload the profile inside.",
		func(head, _ []byte) bool { return bytes.HasPrefix(head, []byte("PK\x03\x04")) }},
}

// foreign returns the error for a format viewer recognises but does not
// read, or nil.
func foreign(head, data []byte) error {
	for _, f := range foreignFormats {
		if f.sniff(head, data) {
			return &ForeignFormatError{What: f.what, Do: f.do}
		}
	}
	return nil
}

// sniffInstrumentsZip accepts a zip whose entries sit in a "*.trace/"
// bundle, as Finder or `zip -r` packs an Instruments trace.
func sniffInstrumentsZip(head, data []byte) bool {
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return false
	}
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
