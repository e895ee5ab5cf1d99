package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/ingest/pprofwire"
)

// pprofFormat reads pprof protobuf (perftools.profiles.Profile), the format
// of `go tool pprof`, runtime/pprof and most continuous profilers.
var pprofFormat = Format{Name: "pprof", Sniff: sniffPprof, Parse: parsePprof}

// pprofLegacyFormat reads the formats before profile.proto that
// profile.Parse still reads: gperftools and Java CPU profiles (binary), and
// the heap, growth, contention, thread and Go "?debug=1" text profiles.
var pprofLegacyFormat = Format{Name: "legacy pprof", Sniff: sniffPprofLegacy, Parse: parsePprofLegacy}

// legacyTextHeader matches the first line of each legacy text profile
// (profile/legacy_profile.go and legacy_java_profile.go in google/pprof).
var legacyTextHeader = regexp.MustCompile(`^(?:heap profile: *\d+: *\d+ *\[|--- (?:heapz|contentionz|threadz) \d+ ---|--- (?:mutex|contention):|--- Thread [[:xdigit:]]+ \(name: |\S+ profile: total \d+$)`)

// sniffPprofLegacy accepts a gperftools/Java CPU profile header (the words
// 0 and 3, as 32- or 64-bit integers of either byte order) or a text
// profile whose first line that is not blank or a comment is a legacy header.
func sniffPprofLegacy(head []byte) bool {
	for _, w := range []int{4, 8} {
		if len(head) < 2*w {
			continue
		}
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			word := func(i int) uint64 {
				if w == 4 {
					return uint64(order.Uint32(head[i*w:]))
				}
				return order.Uint64(head[i*w:])
			}
			if word(0) == 0 && word(1) == 3 {
				return true
			}
		}
	}
	for _, line := range bytes.Split(head, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return legacyTextHeader.Match(t)
	}
	return false
}

func parsePprofLegacy(data []byte, lim Limits) (*profile.Profile, error) {
	// data is decompressed and failed sniffPprof, so ParseData goes
	// straight to pprof's legacy parsers; it checks the result is valid.
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("not a legacy profile pprof reads: %v", err)
	}
	// pprof's legacy parsers already moved each caller to its call
	// instruction (address - 1): mark it so, or CallSites would move it again.
	if !sampling.HasCallSites(p) {
		p.Comments = append(p.Comments, sampling.CallSiteMark)
	}
	return p, nil
}

// profileWireTypes maps each top-level field number of profile.proto to the
// protobuf wire types it may use (bit 1<<wiretype): messages and strings
// are length-delimited (2), int64s and string-table indices varints (0).
var profileWireTypes = [...]uint8{
	1:  1 << 2,      // sample_type
	2:  1 << 2,      // sample
	3:  1 << 2,      // mapping
	4:  1 << 2,      // location
	5:  1 << 2,      // function
	6:  1 << 2,      // string_table
	7:  1 << 0,      // drop_frames
	8:  1 << 0,      // keep_frames
	9:  1 << 0,      // time_nanos
	10: 1 << 0,      // duration_nanos
	11: 1 << 2,      // period_type
	12: 1 << 0,      // period
	13: 1<<0 | 1<<2, // comment (packed or not)
	14: 1 << 0,      // default_sample_type
	15: 1 << 0,      // doc_url (a string-table index)
}

// sniffPprof walks the protobuf fields in head and accepts it when every
// complete field has a field number and wire type that profile.proto allows.
// Text formats, JSON and perf.data fail within the first few bytes.
func sniffPprof(head []byte) bool {
	if len(head) == 0 {
		return false
	}
	for n := 0; len(head) > 0; n++ {
		tag, k := binary.Uvarint(head)
		if k <= 0 {
			return n > 0 // a tag cut off by the end of head
		}
		head = head[k:]
		field, wt := tag>>3, tag&7
		if field == 0 || field >= uint64(len(profileWireTypes)) || profileWireTypes[field]&(1<<wt) == 0 {
			return false
		}
		switch wt {
		case 0:
			_, k := binary.Uvarint(head)
			if k <= 0 {
				return k == 0 // truncated at the end of head
			}
			head = head[k:]
		case 2:
			l, k := binary.Uvarint(head)
			if k <= 0 {
				return k == 0
			}
			head = head[k:]
			if l >= uint64(len(head)) {
				return true // the field runs past head
			}
			head = head[l:]
		}
	}
	return true
}

func parsePprof(data []byte, lim Limits) (*profile.Profile, error) {
	// data is already decompressed. pprofwire.Decode is the fast path;
	// on input it does not expect, pprof's own decoder decides.
	p, err := pprofwire.Decode(data)
	if err != nil {
		p, err = profile.ParseUncompressed(data)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid pprof protobuf: %v", err)
	}
	if len(p.SampleType) == 0 {
		return nil, fmt.Errorf("the pprof profile has no sample types, so there is nothing to draw")
	}
	// The decoder accepts messages that break the format's own rules (a
	// location with the reserved ID 0, samples pointing at nothing); the
	// rest of the viewer relies on them.
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("invalid pprof profile: %v; was it written by a pprof encoder?", err)
	}
	return p, nil
}
