// Package perfdata reads the perf.data files Linux perf writes (file and pipe
// mode, either byte order, zstd-compressed records) and converts them to pprof
// profiles that keep raw addresses and the build IDs perf recorded, so the
// viewer's symbolizer, not the recording machine, names the frames.
//
// The layout follows the kernel's tools/perf/Documentation/perf.data-file-format.txt.
package perfdata

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
)

// ErrLimit is wrapped by errors about files over the caller's limits.
var ErrLimit = errors.New("over the limit")

// ErrNotPerfData is returned when the input does not start with perf's magic.
var ErrNotPerfData = errors.New("not a perf.data file: it does not start with the PERFILE2 magic")

const (
	magicLE        = 0x32454c4946524550 // "PERFILE2" read as little-endian
	fileHeaderSize = 104
	pipeHeaderSize = 16
)

// Sniff reports whether head starts like a perf.data file (file or pipe mode,
// either byte order).
func Sniff(head []byte) bool {
	_, ok := byteOrder(head)
	return ok
}

func byteOrder(head []byte) (binary.ByteOrder, bool) {
	if len(head) < 8 {
		return nil, false
	}
	switch {
	case binary.LittleEndian.Uint64(head) == magicLE:
		return binary.LittleEndian, true
	case binary.BigEndian.Uint64(head) == magicLE:
		return binary.BigEndian, true
	}
	return nil, false
}

// The phases Options.Progress is told of. web/ingest reports its other
// readers in the same words, and the upload page names them
// (static/states.js UploadPhase, generated from these).
const (
	PhaseInflating         = "inflating"          // bytes of compressed payloads
	PhaseReadingRecords    = "reading records"    // bytes of the record stream
	PhaseAggregatingStacks = "aggregating stacks" // records
)

// Options bound what reading one file may cost.
type Options struct {
	// MaxDecompressed caps the bytes COMPRESSED records may expand to; 0 means no cap.
	MaxDecompressed int64
	// Spool, when set, gives where the records of a zstd-compressed
	// recording (perf record -z) are decompressed to: a file the caller
	// maps, so that such a recording is read in bounded memory as a plain
	// one is. Unset, they are decompressed into the heap.
	Spool func() (Spool, error)
	// UserStacks keeps each sample's user registers and stack copy
	// (--call-graph=dwarf) for unwinding. Off, they are skipped: the stack
	// bytes stay in the input and are not referenced, so a converter that
	// will not unwind does not keep them alive.
	UserStacks bool
	// Evict, when set, is told that data[lo:hi] (page-aligned or not) will
	// not be read for a while, so that a caller whose data maps a file can
	// drop those pages from memory: Scan and Convert read a mapped
	// recording with about a window of it resident. They may read the
	// same bytes again later, so the caller must keep them readable.
	Evict func(lo, hi int)
	// Progress, when set, is told how far Scan and Convert are:
	// PhaseInflating (bytes of -z records' payloads), PhaseReadingRecords
	// (bytes of the record stream) and PhaseAggregatingStacks (records),
	// every few megabytes or thousand records.
	Progress func(phase string, done, total int64)
	// Reserve, when set, is told how many more bytes a Scan's index takes
	// each time it grows (IndexMemory); its error stops the Scan, so the
	// caller can hold a Scan within a memory budget.
	Reserve func(n int64) error
}

// File is a decoded perf.data: its events, the records it holds in file
// order (compressed ones expanded after the rest), and what it says about the
// machine that recorded it.
type File struct {
	ByteOrder binary.ByteOrder
	Pipe      bool
	Attrs     []*Attr
	Features  Features
	Records   []Record
	// Skipped counts the records left out by type name: types this reader
	// does not know, and malformed records.
	Skipped map[string]int
	// Warnings describe what was skipped or damaged, one line each.
	Warnings []string
	// UserRegsSamples counts the samples with user registers
	// (--call-graph=dwarf), whose user stacks only unwinding recovers.
	UserRegsSamples int

	byID       map[uint64]int
	idPos      int // index of the ID among a sample's leading u64s, -1 if none
	idPosEnd   int // index of the ID counted from the end of the sample_id trailer, 0 if none
	malformed  int
	userStacks bool // Options.UserStacks
	descs      []eventDesc
	firstBad   string

	// The records in file order (compressed ones after the rest), each by
	// its time and position: Convert visits them in time order, decoding
	// each again from stream or plain, so a Scan keeps no decoded record.
	refs       []recRef
	stream     []byte           // the data section
	streamBase uint64           // its offset in the file
	plain      []byte           // the COMPRESSED records' payloads, decompressed
	plainEvict func(lo, hi int) // the plain Spool's evict, or nil
	// compressedCut says a damaged compressed record ended the stream,
	// plainCut that the zstd stream was damaged.
	compressedCut, plainCut bool
	keep                    bool // Read: keep Records
	evict                   func(lo, hi int)
	progress                func(phase string, done, total int64)
	reserve                 func(n int64) error
	scratch                 Sample     // what a Scan decodes samples into
	est                     *estimator // a Scan's count of what Convert will keep
	code                    codeRanges // with userStacks, the user code mapped, for est
	// sampleFirst and sampleLast are the earliest and latest non-zero
	// sample times.
	sampleFirst, sampleLast uint64
	// meta is the refs of the records other than samples, which a
	// conversion chunk replays (chunks.go).
	meta []recRef
}

// recRef is one record's time and position: its offset in the data
// section, or, with posPlain set, in the decompressed stream.
type recRef struct{ time, pos uint64 }

const posPlain = 1 << 63

// NumRecords is how many records of use to a profile the file holds
// (samples, mappings, comms, forks, kernel symbols, lost counts).
func (f *File) NumRecords() int { return len(f.refs) }

// Attr is one event: its perf_event_attr fields this reader needs and the
// sample IDs that point at it.
type Attr struct {
	Type             uint32
	Config           uint64
	SamplePeriod     uint64 // period, or frequency when Freq
	SampleType       uint64
	ReadFormat       uint64
	Flags            uint64
	BranchSampleType uint64
	SampleRegsUser   uint64
	SampleStackUser  uint32
	// SampleMaxStack is the most frames the kernel records in a call
	// chain, 0 for its sysctl kernel.perf_event_max_stack (127 by default).
	SampleMaxStack uint16
	SampleRegsIntr uint64
	IDs            []uint64
	// Name is the event's name from the EVENT_DESC feature, or derived from
	// Type and Config when the file has none.
	Name string
}

// RecordedMaxStack is the most frames any event's call chains were
// recorded with (perf record --call-graph=fp,N writes N as the attr's
// sample_max_stack), 0 when no event says (perf's default: the recording
// machine's kernel.perf_event_max_stack, which the file does not hold).
func (f *File) RecordedMaxStack() int {
	n := 0
	for _, a := range f.Attrs {
		n = max(n, int(a.SampleMaxStack))
	}
	return n
}

// Freq reports whether SamplePeriod is a frequency.
func (a *Attr) Freq() bool { return a.Flags&(1<<10) != 0 }

// SampleIDAll reports whether non-sample records carry a sample_id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&(1<<18) != 0 }

// Features are the header feature sections (or pipe-mode HEADER_FEATURE records).
type Features struct {
	Hostname, OSRelease, Version, Arch, CPUDesc, CPUID string
	NrCPUsOnline, NrCPUsAvail                          uint32
	TotalMemKB                                         uint64
	Cmdline                                            []string
	BuildIDs                                           []BuildID
	// FirstSample and LastSample are perf clock times from SAMPLE_TIME.
	FirstSample, LastSample uint64
	// ClockData maps perf clock times to wall time when the file has CLOCK_DATA.
	ClockData *ClockData
	// Compression is the COMPRESSED feature's type (1 is zstd), 0 when absent.
	Compression uint32
	// CacheLineSize is the L1 data cache's line size in bytes from the
	// CACHE feature (the recording machine's /sys), 0 when absent.
	CacheLineSize uint32
	// Present lists the feature IDs the file announced.
	Present []int
}

// ClockData pairs one perf clock reading with the wall clock at that moment.
type ClockData struct {
	ClockID        uint32
	WallClockNanos uint64
	ClockIDNanos   uint64
}

// BuildID is one BUILD_ID entry: the build ID of the file perf found at a
// path for a process (pid -1 for the kernel and its modules).
type BuildID struct {
	CPUMode  uint16 // perf's misc & 7: 1 kernel, 2 user, 4 guest kernel, 5 guest user
	Pid      int32
	ID       []byte
	Filename string
}

// Record types this reader decodes.
const (
	recMmap         = 1
	recLost         = 2
	recComm         = 3
	recExit         = 4
	recFork         = 7
	recSample       = 9
	recMmap2        = 10
	recLostSamples  = 13
	recKsymbol      = 17
	recHeaderAttr   = 64
	recEventType    = 65
	recTracingData  = 66
	recHeaderBuild  = 67
	recFinished     = 68
	recAuxtrace     = 71
	recHeaderFeat   = 80
	recCompressed   = 81
	recFinishedInit = 82
	recCompressed2  = 83
)

var recordNames = map[uint32]string{
	1: "MMAP", 2: "LOST", 3: "COMM", 4: "EXIT", 5: "THROTTLE", 6: "UNTHROTTLE", 7: "FORK", 8: "READ",
	9: "SAMPLE", 10: "MMAP2", 11: "AUX", 12: "ITRACE_START", 13: "LOST_SAMPLES", 14: "SWITCH",
	15: "SWITCH_CPU_WIDE", 16: "NAMESPACES", 17: "KSYMBOL", 18: "BPF_EVENT", 19: "CGROUP",
	20: "TEXT_POKE", 21: "AUX_OUTPUT_HW_ID", 64: "HEADER_ATTR", 65: "HEADER_EVENT_TYPE",
	66: "HEADER_TRACING_DATA", 67: "HEADER_BUILD_ID", 68: "FINISHED_ROUND", 69: "ID_INDEX",
	70: "AUXTRACE_INFO", 71: "AUXTRACE", 72: "AUXTRACE_ERROR", 73: "THREAD_MAP", 74: "CPU_MAP",
	75: "STAT_CONFIG", 76: "STAT", 77: "STAT_ROUND", 78: "EVENT_UPDATE", 79: "TIME_CONV",
	80: "HEADER_FEATURE", 81: "COMPRESSED", 82: "FINISHED_INIT", 83: "COMPRESSED2",
}

// RecordName is perf's name for a record type, or "type N" for one it does not know.
func RecordName(t uint32) string {
	if n, ok := recordNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// Record is one decoded record: *Sample, *Mmap, *Comm, *Fork, *Ksymbol or *Lost.
type Record interface{ time() uint64 }

// SampleID is the sample_id trailer of non-sample records (when the event has
// sample_id_all); fields the event does not record are zero.
type SampleID struct {
	Pid, Tid uint32
	Time     uint64
	ID       uint64
	StreamID uint64
	CPU      uint32
}

func (s SampleID) time() uint64 { return s.Time }

// Sample is one PERF_RECORD_SAMPLE.
type Sample struct {
	Attr     int    // index into File.Attrs
	CPUMode  uint16 // misc & 7
	IP       uint64 // PERF_SAMPLE_IP
	Pid, Tid uint32
	Time     uint64
	Addr     uint64
	ID       uint64
	StreamID uint64
	CPU      uint32
	Period   uint64
	// Read holds PERF_SAMPLE_READ values: one per event, or the group's.
	Read []ReadValue
	// Callchain is PERF_SAMPLE_CALLCHAIN as recorded, context markers included.
	Callchain []uint64
	Weight    uint64
	DataSrc   uint64
	PhysAddr  uint64
	// HasRegsUser and StackUser report DWARF-mode user state: registers were
	// sampled, and StackUser bytes of the user stack were copied (dyn_size).
	HasRegsUser bool
	StackUser   uint64
	// With Options.UserStacks: RegsUser holds PERF_SAMPLE_REGS_USER's values,
	// one per bit set in the event's sample_regs_user, in ascending bit order;
	// Stack the StackUser valid bytes copied from the user stack pointer up
	// (a slice of the input, not a copy).
	RegsUser []uint64
	Stack    []byte

	chain []byte // Callchain's bytes in the record, for Convert's stack cache
}

func (s *Sample) time() uint64 { return s.Time }

// ReadValue is one counter value from PERF_SAMPLE_READ.
type ReadValue struct {
	Value, ID, Lost uint64
}

// Mmap is PERF_RECORD_MMAP or PERF_RECORD_MMAP2.
type Mmap struct {
	SampleID
	Pid, Tid       uint32 // mapping owner; Pid is 0xffffffff (-1) for the kernel
	CPUMode        uint16
	Start, Len     uint64
	PgOff          uint64
	Filename       string
	BuildID        []byte // MMAP2 build-ID form
	Maj, Min       uint32
	Ino, InoGen    uint64
	Prot, Flags    uint32
	V2, Executable bool
}

// Comm is PERF_RECORD_COMM: a thread's name, set at exec when Exec.
type Comm struct {
	SampleID
	Pid, Tid uint32
	Comm     string
	Exec     bool
}

// Fork is PERF_RECORD_FORK or, when Exit, PERF_RECORD_EXIT.
type Fork struct {
	SampleID
	Pid, PPid, Tid, PTid uint32
	ForkTime             uint64
	Exit                 bool
}

// Ksymbol is PERF_RECORD_KSYMBOL: a kernel symbol (a BPF program, say)
// registered or, when Unregister, removed at run time.
type Ksymbol struct {
	SampleID
	Addr       uint64
	Len        uint32
	KsymType   uint16
	Unregister bool
	Name       string
}

// Lost is PERF_RECORD_LOST or LOST_SAMPLES: samples the kernel dropped.
type Lost struct {
	SampleID
	Lost uint64
}

// dec reads fixed-size fields from b in order, remembering the first overrun.
type dec struct {
	b   []byte
	o   binary.ByteOrder
	bad bool
}

func (d *dec) u64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		d.b = nil
		return 0
	}
	v := d.o.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) u32() uint32 {
	if len(d.b) < 4 {
		d.bad = true
		d.b = nil
		return 0
	}
	v := d.o.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) u16() uint16 {
	if len(d.b) < 2 {
		d.bad = true
		d.b = nil
		return 0
	}
	v := d.o.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *dec) skip(n uint64) {
	if uint64(len(d.b)) < n {
		d.bad = true
		d.b = nil
		return
	}
	d.b = d.b[n:]
}

func (d *dec) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.bad = true
		d.b = nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// str reads a perf_header_string: a u32 length, then that many bytes, NUL padded.
func (d *dec) str() string {
	n := d.u32()
	return cstr(d.bytes(uint64(n)))
}

// cstr is b up to its first NUL.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

type section struct{ off, size uint64 }

func (d *dec) section() section { return section{d.u64(), d.u64()} }

// sub returns the bytes of s inside data, or an error naming what it is.
func sub(data []byte, s section, what string) ([]byte, error) {
	if s.off > uint64(len(data)) || s.size > uint64(len(data))-s.off {
		return nil, fmt.Errorf("perf.data is truncated or corrupt: the %s (offset %d, %d bytes) lies beyond the end of the %d-byte file", what, s.off, s.size, len(data))
	}
	return data[s.off : s.off+s.size], nil
}

// Scan reads a perf.data's headers and indexes its records without
// keeping them decoded: Convert decodes each again as it aggregates it,
// so what a conversion keeps is proportional to the distinct stacks, not
// to the records (16 bytes of index each). data must stay readable until
// Convert returns; a Scan'ed File has no Records.
func Scan(data []byte, opt Options) (*File, error) { return read(data, opt, false) }

// ReadRecords decodes all of a perf.data's records into File.Records, for
// tools that look at samples one by one (cmd/viewer's fidelity test reads
// the user registers and stack copies of --call-graph=dwarf samples with
// Options.UserStacks); Scan and Convert read in bounded memory instead.
func ReadRecords(data []byte, opt Options) (*File, error) { return read(data, opt, true) }

func read(data []byte, opt Options, keep bool) (*File, error) {
	order, ok := byteOrder(data)
	if !ok {
		return nil, ErrNotPerfData
	}
	f := &File{ByteOrder: order, Skipped: map[string]int{}, byID: map[uint64]int{}, userStacks: opt.UserStacks, keep: keep, evict: opt.Evict, progress: opt.Progress, reserve: opt.Reserve}
	if len(data) < pipeHeaderSize {
		return nil, fmt.Errorf("perf.data is truncated: %d bytes, shorter than its %d-byte header", len(data), pipeHeaderSize)
	}
	hsize := order.Uint64(data[8:])
	var stream []byte
	var streamBase uint64
	switch hsize {
	case pipeHeaderSize:
		f.Pipe = true
		stream, streamBase = data[pipeHeaderSize:], pipeHeaderSize
	case fileHeaderSize:
		if len(data) < fileHeaderSize {
			return nil, fmt.Errorf("perf.data is truncated: %d bytes, shorter than its %d-byte header", len(data), fileHeaderSize)
		}
		var err error
		stream, streamBase, err = f.readFileHeader(data)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("perf.data header size is %d; this reader knows file mode (104) and pipe mode (16)", hsize)
	}
	f.stream, f.streamBase = stream, streamBase
	var compressed [][]byte
	if err := f.readRecords(stream, streamBase, false, &compressed); err != nil {
		return nil, err
	}
	if len(compressed) > 0 {
		if err := f.readCompressed(compressed, opt); err != nil {
			return nil, err
		}
	}
	if len(f.Attrs) == 0 {
		return nil, errors.New("perf.data has no event attributes: the header's attribute section is empty")
	}
	f.nameEvents()
	if f.malformed > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("skipped %d malformed records; the first: %s", f.malformed, f.firstBad))
	}
	return f, nil
}

// readFileHeader decodes the file-mode header, attributes and feature
// sections, and returns the data section.
func (f *File) readFileHeader(data []byte) ([]byte, uint64, error) {
	d := dec{b: data[16:fileHeaderSize], o: f.ByteOrder}
	attrSize := d.u64()
	attrs := d.section()
	dataSec := d.section()
	d.section() // event_types, unused since perf 2.6.x
	var featBits [4]uint64
	for i := range featBits {
		featBits[i] = d.u64()
	}
	ab, err := sub(data, attrs, "attribute section")
	if err != nil {
		return nil, 0, err
	}
	if attrSize < 16+8 || attrSize > 4096 {
		return nil, 0, fmt.Errorf("perf.data header gives an attribute entry size of %d bytes; expected about 136", attrSize)
	}
	for len(ab) >= int(attrSize) {
		entry := ab[:attrSize]
		ab = ab[attrSize:]
		a, err := f.decodeAttr(entry[:attrSize-16])
		if err != nil {
			return nil, 0, err
		}
		ed := dec{b: entry[attrSize-16:], o: f.ByteOrder}
		ids, err := sub(data, ed.section(), "event ID list")
		if err != nil {
			return nil, 0, err
		}
		idd := dec{b: ids, o: f.ByteOrder}
		for len(idd.b) >= 8 {
			a.IDs = append(a.IDs, idd.u64())
		}
		f.addAttr(a)
	}
	if dataSec.size == 0 && dataSec.off <= uint64(len(data)) {
		// perf record killed before it rewrote the header: read to the end as
		// perf does; the feature sections were never written.
		dataSec.size = uint64(len(data)) - dataSec.off
		featBits = [4]uint64{}
		f.Warnings = append(f.Warnings, "the header's data size is 0 (perf record was not stopped cleanly?); read records to the end of the file")
	}
	stream, err := sub(data, dataSec, "data section")
	if err != nil {
		return nil, 0, err
	}
	// Feature sections: an array of sections, one per announced feature, after the data.
	fd := dec{b: data[min(dataSec.off+dataSec.size, uint64(len(data))):], o: f.ByteOrder}
	for bit := 1; bit < 256; bit++ {
		if featBits[bit/64]&(1<<(bit%64)) == 0 {
			continue
		}
		s := fd.section()
		if fd.bad {
			return nil, 0, fmt.Errorf("perf.data is truncated: the header announces feature %s but the feature table ends early", featureName(bit))
		}
		fb, err := sub(data, s, "feature section "+featureName(bit))
		if err != nil {
			return nil, 0, err
		}
		f.Features.Present = append(f.Features.Present, bit)
		f.readFeature(bit, fb)
	}
	return stream, dataSec.off, nil
}

// decodeAttr reads a perf_event_attr of whatever size the file uses.
func (f *File) decodeAttr(b []byte) (*Attr, error) {
	if len(b) < 64 {
		return nil, fmt.Errorf("perf.data event attribute is %d bytes; the smallest perf writes is 64", len(b))
	}
	field64 := func(off int) uint64 {
		if off+8 > len(b) {
			return 0
		}
		return f.ByteOrder.Uint64(b[off:])
	}
	a := &Attr{
		Type:             f.ByteOrder.Uint32(b),
		Config:           field64(8),
		SamplePeriod:     field64(16),
		SampleType:       field64(24),
		ReadFormat:       field64(32),
		Flags:            field64(40),
		BranchSampleType: field64(72),
		SampleRegsUser:   field64(80),
		SampleRegsIntr:   field64(96),
	}
	if len(b) >= 92 {
		a.SampleStackUser = f.ByteOrder.Uint32(b[88:])
	}
	if len(b) >= 110 {
		a.SampleMaxStack = f.ByteOrder.Uint16(b[108:])
	}
	if f.ByteOrder == binary.BigEndian {
		// Bitfields are allocated from the most significant bit on big-endian
		// machines; reversing the word gives the little-endian bit numbers.
		a.Flags = bits.Reverse64(a.Flags)
	}
	return a, nil
}

func (f *File) addAttr(a *Attr) {
	idx := len(f.Attrs)
	f.Attrs = append(f.Attrs, a)
	for _, id := range a.IDs {
		f.byID[id] = idx
	}
	if idx == 0 {
		f.idPos, f.idPosEnd = idPositions(a.SampleType)
	}
}

// idPositions finds where a sample's ID sits: its index among a sample's
// leading u64s, and its index from the end of the sample_id trailer.
func idPositions(st uint64) (pos, posEnd int) {
	if st&sIdentifier != 0 {
		return 0, 1
	}
	if st&sID == 0 {
		return -1, 0
	}
	pos = 0
	for _, b := range []uint64{sIP, sTID, sTime, sAddr} {
		if st&b != 0 {
			pos++
		}
	}
	posEnd = 1
	for _, b := range []uint64{sCPU, sStreamID} {
		if st&b != 0 {
			posEnd++
		}
	}
	return pos, posEnd
}

// Sample type bits.
const (
	sIP           = 1 << 0
	sTID          = 1 << 1
	sTime         = 1 << 2
	sAddr         = 1 << 3
	sRead         = 1 << 4
	sCallchain    = 1 << 5
	sID           = 1 << 6
	sCPU          = 1 << 7
	sPeriod       = 1 << 8
	sStreamID     = 1 << 9
	sRaw          = 1 << 10
	sBranchStack  = 1 << 11
	sRegsUser     = 1 << 12
	sStackUser    = 1 << 13
	sWeight       = 1 << 14
	sDataSrc      = 1 << 15
	sIdentifier   = 1 << 16
	sTransaction  = 1 << 17
	sRegsIntr     = 1 << 18
	sPhysAddr     = 1 << 19
	sWeightStruct = 1 << 24
)

// Read format bits.
const (
	rfTotalTimeEnabled = 1 << 0
	rfTotalTimeRunning = 1 << 1
	rfID               = 1 << 2
	rfGroup            = 1 << 3
	rfLost             = 1 << 4
)

// attrFor finds the event a record belongs to from its ID.
func (f *File) attrFor(id uint64, hasID bool) int {
	if len(f.Attrs) == 1 || !hasID {
		return 0
	}
	if i, ok := f.byID[id]; ok {
		return i
	}
	return -1
}

// readRecords walks the record stream. base is the stream's file offset,
// for messages; plain says it is the decompressed stream.
func (f *File) readRecords(stream []byte, base uint64, plain bool, compressed *[][]byte) error {
	off := uint64(0)
	evicted, reported := uint64(0), uint64(0)
	evict := f.evict
	if plain {
		evict = f.plainEvict
	}
	sized, before := f.keep, uint64(len(f.refs))
	for off < uint64(len(stream)) {
		if !sized && off > 0 && off >= uint64(len(stream))/16 {
			// A sixteenth in, the records so far tell how many the
			// stream holds: room for them (and a sixteenth more) at once.
			sized = true
			n := before + (uint64(len(f.refs))-before)*uint64(len(stream))/off
			if err := f.sizeIndex(int(n + n/16)); err != nil {
				return err
			}
		}
		if evict != nil && off-evicted >= evictWindow {
			evict(int(base+evicted), int(base+off))
			evicted = off
		}
		if f.progress != nil && off-reported >= progressBytes {
			f.progress(PhaseReadingRecords, int64(off), int64(len(stream)))
			reported = off
		}
		rest := stream[off:]
		if plain && (len(rest) < 8 || uint64(f.ByteOrder.Uint16(rest[6:])) > uint64(len(rest)) || f.ByteOrder.Uint16(rest[6:]) < 8) {
			// A stream cut short (damaged, or a record left out) ends
			// within a record: the records before it are kept.
			if !f.plainCut && !f.compressedCut {
				f.Warnings = append(f.Warnings, fmt.Sprintf("the decompressed records end %d bytes into a damaged or cut record at offset %d: the records from it on are left out", len(rest), off))
			}
			break
		}
		if len(rest) < 8 {
			return fmt.Errorf("perf.data is truncated: %d stray bytes at offset %d where a record header should be", len(rest), base+off)
		}
		typ := f.ByteOrder.Uint32(rest)
		misc := f.ByteOrder.Uint16(rest[4:])
		size := uint64(f.ByteOrder.Uint16(rest[6:]))
		if size < 8 {
			return fmt.Errorf("perf.data is corrupt: the %s record at offset %d gives its size as %d bytes (at least 8)", RecordName(typ), base+off, size)
		}
		if size > uint64(len(rest)) {
			return fmt.Errorf("perf.data is truncated: the %s record at offset %d needs %d bytes but only %d remain", RecordName(typ), base+off, size, len(rest))
		}
		body := rest[8:size]
		extra := uint64(0) // bytes that follow the record but are not counted in its size
		switch typ {
		case recTracingData:
			d := dec{b: body, o: f.ByteOrder}
			extra = (uint64(d.u32()) + 7) &^ 7
		case recAuxtrace:
			d := dec{b: body, o: f.ByteOrder}
			extra = d.u64()
		}
		if extra > uint64(len(rest))-size {
			return fmt.Errorf("perf.data is truncated: the %s record at offset %d is followed by %d bytes of data but only %d remain", RecordName(typ), base+off, extra, uint64(len(rest))-size)
		}
		pos := off
		if plain {
			pos |= posPlain
		}
		if err := f.record(typ, misc, body, base+off, pos, compressed); err != nil {
			return err
		}
		off += size + extra
	}
	if evict != nil {
		evict(int(base+evicted), int(base+off))
	}
	if f.progress != nil {
		f.progress(PhaseReadingRecords, int64(off), int64(len(stream)))
	}
	return nil
}

// sizeIndex makes room for n records in the index at once: grown by
// append alone, its outgrown arrays would add up to four times its size
// in garbage, which the heap's peak holds on top of it.
func (f *File) sizeIndex(n int) error {
	if n <= cap(f.refs) {
		return nil
	}
	old := cap(f.refs)
	f.refs = slices.Grow(f.refs, n-len(f.refs))
	if f.reserve != nil {
		return f.reserve(int64(cap(f.refs)-old) * 16)
	}
	return nil
}

// progressBytes is how many bytes of records are read between two calls
// to Options.Progress.
const progressBytes = 4 << 20

// evictWindow is how many bytes of a mapped recording are read between
// two calls to Options.Evict (a variable for tests).
var evictWindow uint64 = 16 << 20

// record decodes one record and indexes it when it is of use (keeping it
// in f.Records for Read); off is its file offset, for messages, and pos its
// position for the index.
func (f *File) record(typ uint32, misc uint16, body []byte, off, pos uint64, compressed *[][]byte) error {
	switch typ {
	case recSample, recMmap, recMmap2, recComm, recFork, recExit, recKsymbol, recLost, recLostSamples:
		if typ == recSample && len(f.Attrs) == 0 {
			return fmt.Errorf("perf.data is corrupt: a SAMPLE record at offset %d comes before any event attribute", off)
		}
		r, err := f.decode(typ, misc, body)
		if err != nil {
			f.bad(typ, off, err)
			return nil
		}
		t := r.time()
		grown := cap(f.refs)
		f.refs = append(f.refs, recRef{t, pos})
		if grown != cap(f.refs) && f.reserve != nil {
			if err := f.reserve(int64(cap(f.refs)-grown) * 16); err != nil {
				return err
			}
		}
		if typ != recSample {
			f.meta = append(f.meta, recRef{t, pos})
		}
		if m, ok := r.(*Mmap); ok && f.userStacks && !f.keep && m.Executable && m.Pid != ^uint32(0) {
			f.code.add(m.Start, m.Start+m.Len)
		}
		if s, ok := r.(*Sample); ok {
			if !f.keep {
				if f.est == nil { // after the header's features, in pipe mode too
					f.est = newEstimator(f.Features.FirstSample, f.Features.LastSample, s.Time)
				}
				f.est.sample(f, s)
			}
			if s.HasRegsUser {
				f.UserRegsSamples++
			}
			if t != 0 {
				if f.sampleFirst == 0 || t < f.sampleFirst {
					f.sampleFirst = t
				}
				f.sampleLast = max(f.sampleLast, t)
			}
		}
		if f.keep {
			f.Records = append(f.Records, r)
		}
	case recHeaderAttr:
		if len(body) < 8 {
			f.bad(typ, off, errors.New("too short"))
			return nil
		}
		asize := uint64(f.ByteOrder.Uint32(body[4:]))
		if asize < 64 || asize > uint64(len(body)) {
			f.bad(typ, off, fmt.Errorf("attribute size %d does not fit the %d-byte record", asize, len(body)))
			return nil
		}
		a, err := f.decodeAttr(body[:asize])
		if err != nil {
			f.bad(typ, off, err)
			return nil
		}
		d := dec{b: body[asize:], o: f.ByteOrder}
		for len(d.b) >= 8 {
			a.IDs = append(a.IDs, d.u64())
		}
		f.addAttr(a)
	case recHeaderFeat:
		d := dec{b: body, o: f.ByteOrder}
		id := d.u64()
		if d.bad || id >= 256 {
			f.bad(typ, off, fmt.Errorf("feature id %d", id))
			return nil
		}
		f.Features.Present = append(f.Features.Present, int(id))
		f.readFeature(int(id), d.b)
	case recHeaderBuild:
		f.readBuildIDs(body, misc, true)
	case recCompressed, recCompressed2:
		if f.compressedCut {
			return nil
		}
		b, err := f.compressedPayload(typ, body)
		if err != nil {
			// The one zstd stream goes on in the next record: it cannot
			// be decoded past one left out.
			f.compressedCut = true
			f.Warnings = append(f.Warnings, fmt.Sprintf("the %s record at offset %d is damaged (%v): the compressed records from it on are left out", RecordName(typ), off, err))
			return nil
		}
		*compressed = append(*compressed, b)
	case recFinished, recFinishedInit, recEventType, recTracingData, recAuxtrace:
		// Ordering and framing records with nothing to convert.
	default:
		if _, known := recordNames[typ]; !known {
			f.Skipped[RecordName(typ)]++
		}
		// Known records with nothing for a profile (THROTTLE, SWITCH, ID_INDEX, ...) are left out silently.
	}
	return nil
}

// decode decodes one record of a type Record holds.
func (f *File) decode(typ uint32, misc uint16, body []byte) (Record, error) {
	switch typ {
	case recSample:
		return f.decodeSample(misc, body)
	case recMmap, recMmap2:
		return f.decodeMmap(typ, misc, body)
	case recComm:
		d := dec{b: body, o: f.ByteOrder}
		c := &Comm{Pid: d.u32(), Tid: d.u32(), Exec: misc&(1<<13) != 0}
		name, trailer, err := f.splitString(d.b)
		if err != nil || d.bad {
			return nil, errOr(err, "too short")
		}
		c.Comm, c.SampleID = name, trailer
		return c, nil
	case recFork, recExit:
		d := dec{b: body, o: f.ByteOrder}
		r := &Fork{Pid: d.u32(), PPid: d.u32(), Tid: d.u32(), PTid: d.u32(), ForkTime: d.u64(), Exit: typ == recExit}
		if d.bad {
			return nil, errors.New("too short")
		}
		r.SampleID = f.trailer(d.b)
		return r, nil
	case recKsymbol:
		d := dec{b: body, o: f.ByteOrder}
		k := &Ksymbol{Addr: d.u64(), Len: d.u32(), KsymType: d.u16()}
		k.Unregister = d.u16()&1 != 0
		name, trailer, err := f.splitString(d.b)
		if err != nil || d.bad {
			return nil, errOr(err, "too short")
		}
		k.Name, k.SampleID = name, trailer
		return k, nil
	case recLost, recLostSamples:
		d := dec{b: body, o: f.ByteOrder}
		l := &Lost{}
		if typ == recLost {
			d.u64() // id
		}
		l.Lost = d.u64()
		if d.bad {
			return nil, errors.New("too short")
		}
		l.SampleID = f.trailer(d.b)
		return l, nil
	}
	return nil, fmt.Errorf("record type %s is not decoded", RecordName(typ))
}

// at decodes again the record indexed at pos.
func (f *File) at(pos uint64) (Record, error) {
	stream := f.stream
	if pos&posPlain != 0 {
		stream, pos = f.plain, pos&^posPlain
	}
	rest := stream[pos:]
	size := uint64(f.ByteOrder.Uint16(rest[6:]))
	return f.decode(f.ByteOrder.Uint32(rest), f.ByteOrder.Uint16(rest[4:]), rest[8:size])
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

func (f *File) bad(typ uint32, off uint64, err error) {
	f.malformed++
	f.Skipped["malformed "+RecordName(typ)]++
	if f.firstBad == "" {
		f.firstBad = fmt.Sprintf("%s at offset %d: %v", RecordName(typ), off, err)
	}
}

// splitString splits a record tail into its NUL-terminated, 8-byte padded
// string and the sample_id trailer after it.
func (f *File) splitString(b []byte) (string, SampleID, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", SampleID{}, errors.New("name is not NUL-terminated")
	}
	end := min((uint64(i)+8)&^7, uint64(len(b)))
	return string(b[:i]), f.trailer(b[end:]), nil
}

// trailer decodes a sample_id trailer, using the ID (when present) to find
// the event whose sample_type lays it out.
func (f *File) trailer(b []byte) SampleID {
	var s SampleID
	if len(f.Attrs) == 0 {
		return s
	}
	a := f.Attrs[0]
	if f.idPosEnd > 0 && len(f.Attrs) > 1 && len(b) >= 8*f.idPosEnd {
		id := f.ByteOrder.Uint64(b[len(b)-8*f.idPosEnd:])
		if i, ok := f.byID[id]; ok {
			a = f.Attrs[i]
		}
	}
	if !a.SampleIDAll() {
		return s
	}
	st := a.SampleType
	n := 0
	for _, bit := range []uint64{sTID, sTime, sID, sStreamID, sCPU, sIdentifier} {
		if st&bit != 0 {
			n++
		}
	}
	if len(b) < 8*n {
		return s
	}
	d := dec{b: b[len(b)-8*n:], o: f.ByteOrder}
	if st&sTID != 0 {
		s.Pid, s.Tid = d.u32(), d.u32()
	}
	if st&sTime != 0 {
		s.Time = d.u64()
	}
	if st&sID != 0 {
		s.ID = d.u64()
	}
	if st&sStreamID != 0 {
		s.StreamID = d.u64()
	}
	if st&sCPU != 0 {
		s.CPU = d.u32()
		d.u32()
	}
	if st&sIdentifier != 0 {
		s.ID = d.u64()
	}
	return s
}

// maxCallchain bounds a callchain's length; perf's own limit is 127 by
// default and PERF_MAX_STACK_DEPTH-ish values stay far below this.
const maxCallchain = 1 << 16

func (f *File) decodeSample(misc uint16, body []byte) (*Sample, error) {
	// Find the event first: by the leading identifier, or the ID at its fixed position.
	ai := 0
	if len(f.Attrs) > 1 {
		if f.idPos < 0 {
			return nil, errors.New("several events but samples carry no ID")
		}
		if len(body) < 8*(f.idPos+1) {
			return nil, errors.New("too short to hold its event ID")
		}
		ai = f.attrFor(f.ByteOrder.Uint64(body[8*f.idPos:]), true)
		if ai < 0 {
			return nil, fmt.Errorf("event ID %d matches no event attribute", f.ByteOrder.Uint64(body[8*f.idPos:]))
		}
	}
	a := f.Attrs[ai]
	st := a.SampleType
	d := dec{b: body, o: f.ByteOrder}
	var s *Sample
	if f.keep {
		s = &Sample{Attr: ai, CPUMode: misc & 7}
	} else { // a Scan uses each sample at once: decode into one
		chain := f.scratch.Callchain
		s = &f.scratch
		*s = Sample{Attr: ai, CPUMode: misc & 7, Callchain: chain[:0]}
	}
	if st&sIdentifier != 0 {
		s.ID = d.u64()
	}
	if st&sIP != 0 {
		s.IP = d.u64()
	}
	if st&sTID != 0 {
		s.Pid, s.Tid = d.u32(), d.u32()
	}
	if st&sTime != 0 {
		s.Time = d.u64()
	}
	if st&sAddr != 0 {
		s.Addr = d.u64()
	}
	if st&sID != 0 {
		s.ID = d.u64()
	}
	if st&sStreamID != 0 {
		s.StreamID = d.u64()
	}
	if st&sCPU != 0 {
		s.CPU = d.u32()
		d.u32()
	}
	if st&sPeriod != 0 {
		s.Period = d.u64()
	}
	if st&sRead != 0 {
		s.Read = f.decodeRead(&d, a.ReadFormat)
	}
	if st&sCallchain != 0 {
		n := d.u64()
		if n > maxCallchain || n*8 > uint64(len(d.b)) {
			return nil, fmt.Errorf("callchain of %d entries does not fit the record", n)
		}
		if uint64(cap(s.Callchain)) >= n {
			s.Callchain = s.Callchain[:n]
		} else {
			s.Callchain = make([]uint64, n)
		}
		for i := range s.Callchain {
			s.Callchain[i] = d.o.Uint64(d.b[8*i:])
		}
		s.chain = d.b[:8*n]
		d.b = d.b[8*n:]
	}
	if d.bad {
		return nil, errors.New("shorter than its event's sample_type says")
	}
	// The rest is optional for conversion; a damaged tail keeps what came before.
	if st&sRaw != 0 {
		n := d.u32()
		d.skip(uint64(n))
	}
	if st&sBranchStack != 0 {
		n := d.u64()
		if a.BranchSampleType&(1<<17) != 0 { // PERF_SAMPLE_BRANCH_HW_INDEX
			d.u64()
		}
		if n > uint64(len(d.b))/24 {
			return s, nil
		}
		d.skip(24 * n)
	}
	if st&sRegsUser != 0 {
		if abi := d.u64(); abi != 0 {
			n := uint64(bits.OnesCount64(a.SampleRegsUser))
			if f.userStacks && !d.bad && uint64(len(d.b)) >= 8*n {
				s.RegsUser = make([]uint64, n)
				for i := range s.RegsUser {
					s.RegsUser[i] = d.o.Uint64(d.b[8*i:])
				}
			}
			d.skip(8 * n)
			s.HasRegsUser = !d.bad
		}
	}
	if st&sStackUser != 0 {
		n := d.u64()
		stack := d.bytes(n)
		if n != 0 {
			s.StackUser = d.u64() // dynamic size: the bytes actually copied
			if d.bad {
				s.StackUser, s.RegsUser = 0, nil
			} else if f.userStacks {
				s.Stack = stack[:min(s.StackUser, n)]
			}
		}
	}
	if st&(sWeight|sWeightStruct) != 0 {
		s.Weight = d.u64()
	}
	if st&sDataSrc != 0 {
		s.DataSrc = d.u64()
	}
	if st&sTransaction != 0 {
		d.u64()
	}
	if st&sRegsIntr != 0 {
		if abi := d.u64(); abi != 0 {
			d.skip(8 * uint64(bits.OnesCount64(a.SampleRegsIntr)))
		}
	}
	if st&sPhysAddr != 0 {
		s.PhysAddr = d.u64()
	}
	if d.bad { // drop only the tail fields we could not read
		s.Weight, s.DataSrc, s.PhysAddr = 0, 0, 0
	}
	return s, nil
}

func (f *File) decodeRead(d *dec, rf uint64) []ReadValue {
	one := func() ReadValue {
		var v ReadValue
		v.Value = d.u64()
		if rf&rfID != 0 {
			v.ID = d.u64()
		}
		if rf&rfLost != 0 {
			v.Lost = d.u64()
		}
		return v
	}
	if rf&rfGroup == 0 {
		v := ReadValue{Value: d.u64()}
		if rf&rfTotalTimeEnabled != 0 {
			d.u64()
		}
		if rf&rfTotalTimeRunning != 0 {
			d.u64()
		}
		if rf&rfID != 0 {
			v.ID = d.u64()
		}
		if rf&rfLost != 0 {
			v.Lost = d.u64()
		}
		return []ReadValue{v}
	}
	n := d.u64()
	if rf&rfTotalTimeEnabled != 0 {
		d.u64()
	}
	if rf&rfTotalTimeRunning != 0 {
		d.u64()
	}
	if n > uint64(len(d.b))/8 {
		d.bad = true
		return nil
	}
	vs := make([]ReadValue, 0, n)
	for range n {
		vs = append(vs, one())
	}
	return vs
}

func (f *File) decodeMmap(typ uint32, misc uint16, body []byte) (*Mmap, error) {
	d := dec{b: body, o: f.ByteOrder}
	m := &Mmap{Pid: d.u32(), Tid: d.u32(), Start: d.u64(), Len: d.u64(), PgOff: d.u64(), CPUMode: misc & 7, V2: typ == recMmap2}
	m.Executable = misc&(1<<13) == 0 // PERF_RECORD_MISC_MMAP_DATA marks data mappings
	if typ == recMmap2 {
		if misc&(1<<14) != 0 { // PERF_RECORD_MISC_MMAP_BUILD_ID
			raw := d.bytes(24)
			if raw != nil {
				n := min(int(raw[0]), 20)
				m.BuildID = slices.Clone(raw[4 : 4+n])
			}
		} else {
			m.Maj, m.Min, m.Ino, m.InoGen = d.u32(), d.u32(), d.u64(), d.u64()
		}
		m.Prot, m.Flags = d.u32(), d.u32()
		if m.Prot&4 == 0 && m.Prot != 0 { // PROT_EXEC
			m.Executable = false
		}
	}
	if d.bad {
		return nil, errors.New("too short")
	}
	name, trailer, err := f.splitString(d.b)
	if err != nil {
		return nil, err
	}
	m.Filename, m.SampleID = name, trailer
	return m, nil
}

// each calls fn with every record in time order (records of equal time in
// file order), as perf's ordered events would: a Read File's Records, or,
// for a Scan, each record decoded again from its position. Scanning in time
// order walks the file about in order, so a mapped recording's pages
// behind the earliest record still to come are evicted as it goes.
func (f *File) each(fn func(Record) error) error {
	if f.keep {
		recs := f.Records
		if !sort.SliceIsSorted(recs, func(i, j int) bool { return recs[i].time() < recs[j].time() }) {
			recs = append([]Record(nil), recs...)
			sort.SliceStable(recs, func(i, j int) bool { return recs[i].time() < recs[j].time() })
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	refs := f.sortedRefs()
	var low [][2]uint64
	if f.evicts() {
		low = f.lowPositions(refs)
	}
	ev := f.newEvictor([2]uint64{}, f.spaceLens())
	for i, ref := range refs {
		if f.progress != nil && i%evictRefs == 0 {
			f.progress(PhaseAggregatingStacks, int64(i), int64(len(refs)))
		}
		if low != nil && i%evictRefs == 0 {
			ev.upTo(low[i/evictRefs])
		}
		r, err := f.at(ref.pos)
		if err != nil { // Scan decoded it once already
			return fmt.Errorf("perf.data: decoding a record again: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if f.progress != nil {
		f.progress(PhaseAggregatingStacks, int64(len(refs)), int64(len(refs)))
	}
	return nil
}

// byTime orders records by time, then file order.
func byTime(a, b recRef) int {
	if c := cmp.Compare(a.time, b.time); c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// sortedRefs sorts a Scan's refs (and meta) in time order.
func (f *File) sortedRefs() []recRef {
	for _, refs := range [][]recRef{f.refs, f.meta} {
		if !slices.IsSortedFunc(refs, byTime) {
			slices.SortFunc(refs, byTime) // positions are unique: the sort is stable
		}
	}
	return f.refs
}

// evictRefs is how many records each is given between two looks at what
// it may evict (a variable for tests).
var evictRefs = 1 << 12

// lowPositions gives, for every evictRefs-th of refs (in time order), the
// lowest position of the records from it on in the data section and in
// the decompressed records (spaceOf): the pages below it are read by no
// later record and can be given back.
func (f *File) lowPositions(refs []recRef) [][2]uint64 {
	low := make([][2]uint64, (len(refs)+evictRefs-1)/evictRefs)
	m := f.spaceLens()
	for i := len(refs) - 1; i >= 0; i-- {
		s, p := spaceOf(refs[i].pos)
		m[s] = min(m[s], p)
		if i%evictRefs == 0 {
			low[i/evictRefs] = m
		}
	}
	return low
}
