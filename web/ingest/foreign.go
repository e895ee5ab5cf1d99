package ingest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// readable lists what Parse reads, for the errors about what it does not.
const readable = "viewer reads pprof, perf.data, perf script, folded stacks, perf JSON, speedscope JSON, V8 CPU and heap profiles, node --prof logs, trace events, Firefox Profiler profiles, callgrind, Java Flight Recorder, pmcstat callgraphs, Instruments deep copies and stackprof"

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
	{"a GHC profile (Haskell .prof JSON)",
		"Fold it with ghc-prof-flamegraph and upload the folded stacks, or open it in speedscope.",
		jsonKeys("program", "rts_arguments")},
	{"a GHC profile (Haskell .prof)",
		"Fold it with ghc-prof-flamegraph and upload the folded stacks, or open it in speedscope.",
		func(head, _ []byte) bool {
			return bytes.Contains(firstLines(head, 3), []byte("Time and Allocation Profiling Report"))
		}},
	{"a Papyrus script profile (Skyrim, Fallout 4)",
		"Open it in speedscope.",
		func(head, _ []byte) bool { return bytes.Contains(firstLines(head, 1), []byte(" log opened (")) }},
	{"a Safari timeline recording (Web Inspector export)",
		"Open it in Safari's Web Inspector (Timelines, Import) or in speedscope.",
		jsonKeys("version", "recording")},
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

// jsonKeys returns a sniff for a JSON object that has all of keys at its
// top level, judged from the tokens in head (which may be cut short).
func jsonKeys(keys ...string) func(head, _ []byte) bool {
	return func(head, _ []byte) bool {
		found := topLevelKeys(head)
		for _, k := range keys {
			if !found[k] {
				return false
			}
		}
		return true
	}
}

// topLevelKeys returns the keys of the JSON object head starts with, as
// far as head goes.
func topLevelKeys(head []byte) map[string]bool {
	keys := map[string]bool{}
	d := json.NewDecoder(bytes.NewReader(head))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	depth := 1
	expectKey := true
	for {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return keys
				}
			}
			if depth == 1 {
				expectKey = true
			}
			continue
		case string:
			if depth == 1 && expectKey {
				keys[v] = true
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
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

// firstLines returns the first n lines of head.
func firstLines(head []byte, n int) []byte {
	end := 0
	for ; n > 0 && end < len(head); n-- {
		i := bytes.IndexByte(head[end:], '\n')
		if i < 0 {
			return head
		}
		end += i + 1
	}
	return head[:end]
}
