package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
// bundle, as Finder or `zip -r` packs an Instruments trace. It reads only
// the end record and the first sniffZipEntries directory entries, in
// place: zip.NewReader would parse the whole central directory (a 343 MB
// upload of 7.3M entries took 1.4 GB more than its bytes).
func sniffInstrumentsZip(head, data []byte) bool {
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return false
	}
	dir, ok := zipDirectory(data)
	if !ok {
		return false
	}
	for range sniffZipEntries {
		name, rest, ok := zipEntryName(dir)
		if !ok {
			return false
		}
		top, _, _ := bytes.Cut(name, []byte("/"))
		if bytes.HasSuffix(top, []byte(".trace")) {
			return true
		}
		dir = rest
	}
	return false
}

// sniffZipEntries is how many central directory entries
// sniffInstrumentsZip looks at.
const sniffZipEntries = 100

// Zip record signatures and fixed lengths (APPNOTE.TXT 4.3).
const (
	zipDirEndSig    = 0x06054b50
	zipDirEndLen    = 22
	zipDir64LocSig  = 0x07064b50
	zipDir64LocLen  = 20
	zipDir64EndSig  = 0x06064b50
	zipDir64EndLen  = 56
	zipDirHeaderSig = 0x02014b50
	zipDirHeaderLen = 46
)

// zipDirectory returns data from the start of the zip's central directory
// on, found as archive/zip finds it: the end record in the last 1 KiB,
// else 65 KiB, the zip64 end record when the end record says so, and the
// directory offset taken from the archive's start unless that offset
// misses a directory header and the end record's position implies
// prepended bytes.
func zipDirectory(data []byte) ([]byte, bool) {
	size := int64(len(data))
	end := int64(-1)
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		if p := findZipDirEnd(data[size-n:]); p >= 0 {
			end = size - n + int64(p)
			break
		}
		if n == size {
			break
		}
	}
	if end < 0 {
		return nil, false
	}
	le := binary.LittleEndian
	b := data[end:]
	records, dirSize, dirOff := uint64(le.Uint16(b[10:])), uint64(le.Uint32(b[12:])), uint64(le.Uint32(b[16:]))
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		if loc := end - zipDir64LocLen; loc >= 0 {
			l := data[loc:]
			if le.Uint32(l) == zipDir64LocSig && le.Uint32(l[4:]) == 0 && le.Uint32(l[16:]) == 1 {
				p := le.Uint64(l[8:])
				if size < zipDir64EndLen || p > uint64(size-zipDir64EndLen) || le.Uint32(data[p:]) != zipDir64EndSig {
					return nil, false
				}
				end = int64(p)
				dirSize, dirOff = le.Uint64(data[p+40:]), le.Uint64(data[p+48:])
			}
		}
	}
	if dirSize > 1<<62 || dirOff > 1<<62 {
		return nil, false
	}
	base := end - int64(dirSize) - int64(dirOff)
	if o := base + int64(dirOff); o < 0 || o >= size {
		return nil, false
	}
	if base > 0 {
		if _, _, ok := zipEntryName(data[dirOff:]); ok {
			base = 0
		}
	}
	return data[base+int64(dirOff):], true
}

// findZipDirEnd returns the offset of the last end-of-central-directory
// record in b whose comment fits in b, or -1.
func findZipDirEnd(b []byte) int {
	for i := len(b) - zipDirEndLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(b[i:]) == zipDirEndSig {
			if n := int(binary.LittleEndian.Uint16(b[i+zipDirEndLen-2:])); i+zipDirEndLen+n > len(b) {
				return -1 // a truncated comment, as archive/zip takes it
			}
			return i
		}
	}
	return -1
}

// zipEntryName returns the name of the central directory entry at the
// start of dir and the bytes after the entry, or false if none is there.
func zipEntryName(dir []byte) (name, rest []byte, ok bool) {
	if len(dir) < zipDirHeaderLen || binary.LittleEndian.Uint32(dir) != zipDirHeaderSig {
		return nil, nil, false
	}
	le := binary.LittleEndian
	nameLen := int(le.Uint16(dir[28:]))
	n := zipDirHeaderLen + nameLen + int(le.Uint16(dir[30:])) + int(le.Uint16(dir[32:]))
	if n > len(dir) {
		return nil, nil, false
	}
	return dir[zipDirHeaderLen : zipDirHeaderLen+nameLen], dir[n:], true
}
