package pprofwire

import (
	"errors"
	"hash/maphash"
	"io"
	"os"
	"sync/atomic"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"
)

// Limits bounds what a Stream decodes, as the caller's own limits bound
// the profile (0: no bound): past one, the stream stops and the caller's
// spooled parse names the limit.
type Limits struct {
	MaxSamples   int // sample records
	MaxFrames    int // location IDs of the distinct samples (records merged)
	MaxLocations int
	MaxFunctions int
	MaxMappings  int
	MaxStrings   int // string table entries
	// Memory, when set, is the budget the stream takes what it holds
	// and will build from as it grows (Stream.memory).
	Memory Budget
}

// Budget is memory shared with other work, as web/ingest's Budget is.
type Budget interface {
	// TryTake reserves n bytes if they are free now, without waiting,
	// and reports whether it did; give gives them back.
	TryTake(n int64) (give func(), ok bool)
	// Size is the budget's total.
	Size() int64
}

// StreamConfig is what a Stream is told of its input and its caller.
type StreamConfig struct {
	Limits
	// Sniff is given the input's first SniffLen bytes (all of it when
	// shorter) and says whether to decode it: false (not pprof, or
	// another format that looks like it) stops the stream.
	Sniff    func(head []byte) bool
	SniffLen int
	// Chunk is the size of the chunks the inflater hands over (0:
	// DefaultChunk; the tests cut fields at every byte).
	Chunk int
}

// Stream decodes a pprof protobuf while it is inflated: the inflater
// (Inflate) reads the inflated bytes into chunks and hands them over, and
// the stream splits them into top-level fields on a goroutine of its own,
// merging the sample records (the bulk of a large profile) as they come,
// so that merging runs on the second core beside the inflate and only the
// tables after the samples (locations, functions, strings) are left to
// decode once the inflate ends.
//
// The decoder keeps copies of what it needs (the tables' fields, each
// distinct sample's location IDs and label set) and hands each chunk back
// once decoded, for the inflater to fill again: a few chunks go round
// instead of the whole inflated input staying in memory until the
// profile is built (361 MB of the 2M-sample deep shape's, where its
// distinct samples' IDs are a quarter of that), every page of it fresh
// memory the kernel had to fault in.
//
// It is a fast path and nothing more: on anything it does not expect (not
// pprof, a wire format Decode does not read, a count over Limits, a
// profile the caller's parse would reject, a panic) it stops decoding, the
// inflated bytes go to the spool file (those handed over already
// inflated again from the input, restart), and the caller reads that as
// before, whose pre-scan and parse give the errors and the fallbacks they
// always gave. Only then is the file written: a profile the stream
// decodes never goes to disk a second time. What it decodes takes its
// memory from Limits.Memory as it grows, by what it holds and will build
// (Stream.memory: what its distinct samples cost, a merged record
// nothing more), only while the budget has it to spare: otherwise it
// stops, and the spooled file's parse waits for the whole estimate, or is
// refused with the budget's error, as before.
type Stream struct {
	lim   Limits
	ch    chan []byte
	done  chan struct{}
	held  int64 // taken from lim.Memory
	gives []func()
	// sniff, given the first sniffLen bytes, says whether to decode;
	// chunk is the size of the chunks.
	sniff           func(head []byte) bool
	sniffLen, chunk int
	// stopped is set by the decoder when it stops: the inflater then
	// writes what it kept, and all that follows, to the spool file.
	stopped atomic.Bool

	// free holds chunks the decoder is done with, for the inflater to
	// fill again.
	free chan []byte

	// The inflater's own.
	out      *os.File
	sent     int64 // bytes handed over
	spooling bool
	// restart inflates the input again from its start: when the decoder
	// stops, the bytes handed over are spooled from it.
	restart func() (io.Reader, error)

	// Decoding state, the goroutine's own until done.
	d       pprofDecoder
	m       *sampleMerger
	c       counts
	size    int64    // bytes received
	head    [][]byte // the first chunks, until sniffLen bytes decide
	headLen int
	pending []byte   // a field cut by the end of the last chunk
	cut     int64    // bytes of the copies of cut fields made so far (pending's)
	batch   [][]byte // sample records not merged yet (addBatch)
	keys    *arena   // the copies of what the decoder keeps of the chunks
	off     bool     // not decoding: not pprof, or a fallback
	p       *profile.Profile
}

// counts is what the stream has read, counted as web/ingest's pre-scan
// counts it.
type counts struct {
	Tables
	samples, locIDs int64 // location ids over all samples: frames before inlining
	values, labels  int64
	locationBytes   int64 // the location table's (streamHolds)
}

// streamFree is how many decoded chunks wait for the inflater.
const streamFree = 4

// DefaultChunk is the size of the chunks the inflater hands over.
const DefaultChunk = 1 << 20

// NewStream starts the decoder of an input that is spooled to out only
// if it stops; restart inflates the input again from its start.
func NewStream(cfg StreamConfig, out *os.File, restart func() (io.Reader, error)) *Stream {
	s := &Stream{lim: cfg.Limits, sniff: cfg.Sniff, sniffLen: cfg.SniffLen, chunk: cfg.Chunk,
		out: out, restart: restart, ch: make(chan []byte, 4),
		free: make(chan []byte, streamFree), done: make(chan struct{}), keys: &arena{}}
	if s.chunk <= 0 {
		s.chunk = DefaultChunk
	}
	go s.run()
	return s
}

// newChunk is a chunk to fill: one the decoder handed back, else a new one.
func (s *Stream) newChunk() []byte {
	select {
	case c := <-s.free:
		return c[:0]
	default:
		return make([]byte, 0, s.chunk)
	}
}

// recycle hands chunk c, which the decoder holds no part of, back to the
// inflater (dropped when enough wait).
func (s *Stream) recycle(c []byte) {
	select {
	case s.free <- c:
	default:
	}
}

// Inflate reads r to its end into chunks, hands each full one to the
// decoder, and, once the decoder stopped, spools what it kept and what
// follows instead. It returns how many bytes r gave and the error that
// ended it, then Finish says what came of them.
func (s *Stream) Inflate(r io.Reader) (n int64, err error) {
	var chunk []byte
	for {
		if chunk == nil {
			chunk = s.newChunk()
		}
		k, rerr := r.Read(chunk[len(chunk):cap(chunk)])
		n += int64(k)
		chunk = chunk[:len(chunk)+k]
		if s.spooling {
			if _, err := s.out.Write(chunk); err != nil {
				return n, err
			}
			chunk = chunk[:0]
		} else if len(chunk) == cap(chunk) || rerr != nil && len(chunk) > 0 {
			if err := s.send(chunk); err != nil {
				return n, err
			}
			chunk = nil
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// send hands chunk over, or, when the decoder stopped, spools it after
// the bytes handed over before.
func (s *Stream) send(chunk []byte) error {
	if s.stopped.Load() {
		return s.spool(chunk)
	}
	s.sent += int64(len(chunk))
	s.ch <- chunk
	return nil
}

// spool writes the bytes handed over, inflated again (restart), then
// chunk, to the spool file, and what is inflated after them goes there
// too.
func (s *Stream) spool(chunk []byte) error {
	s.spooling = true
	if s.sent > 0 {
		r, err := s.restart()
		if err != nil {
			return err
		}
		if _, err := io.CopyN(s.out, r, s.sent); err != nil {
			return err
		}
	}
	_, err := s.out.Write(chunk)
	return err
}

// Finish waits for the decoder. ok says the inflate ended without an
// error: the stream's profile is then p, or, when it stopped, p is nil
// and the inflated bytes are all in the spool file (err: why not). When
// p is nil the stream's memory is given back; otherwise the caller gives
// it back with Release when done.
func (s *Stream) Finish(ok bool) (p *profile.Profile, err error) {
	close(s.ch)
	<-s.done
	if ok && s.p == nil && !s.spooling {
		err = s.spool(nil)
	}
	if !ok || err != nil || s.p == nil {
		s.p = nil
		s.Release()
	}
	return s.p, err
}

// Profile is the profile Finish returned.
func (s *Stream) Profile() *profile.Profile { return s.p }

// Release gives back the memory the stream took.
func (s *Stream) Release() {
	for _, give := range s.gives {
		give()
	}
	s.gives, s.held = nil, 0
}

func (s *Stream) run() {
	defer close(s.done)
	defer func() {
		if r := recover(); r != nil {
			s.fallback() // the spooled file's parse turns it into an error
			for range s.ch {
			}
		}
	}()
	for c := range s.ch {
		s.take(c)
	}
	if s.off {
		return
	}
	if s.head != nil { // shorter than sniffLen
		s.decide()
		if s.off {
			return
		}
	}
	if !s.flush() {
		return
	}
	if len(s.pending) > 0 || s.size == 0 {
		s.fallback() // truncated or empty
		return
	}
	p, err := s.decode()
	if err != nil {
		s.fallback()
		return
	}
	// The profile holds none of the copies: let them go before the
	// caller's passes over it.
	s.p, s.d, s.m, s.keys = p, pprofDecoder{}, nil, nil
}

// fallback stops decoding and drops what was decoded.
func (s *Stream) fallback() {
	s.off = true
	s.d, s.m, s.pending, s.head, s.batch, s.keys = pprofDecoder{}, nil, nil, nil, nil, nil
	s.Release()
	s.stopped.Store(true)
}

// take is given each chunk as it comes, and hands it back once decoded.
func (s *Stream) take(c []byte) {
	s.size += int64(len(c))
	if s.off {
		s.recycle(c)
		return
	}
	if s.m == nil { // the first chunks: is it pprof?
		s.head = append(s.head, c)
		s.headLen += len(c)
		if s.headLen < s.sniffLen {
			return
		}
		s.decide()
		return
	}
	s.fields(c)
	s.flush()
	s.grow()
	s.recycle(c)
}

// decide sniffs the first chunks and, when they are pprof, decodes them.
func (s *Stream) decide() {
	head := make([]byte, 0, min(s.headLen, s.sniffLen))
	for _, c := range s.head {
		head = append(head, c[:min(len(c), cap(head)-len(head))]...)
	}
	if s.sniff != nil && !s.sniff(head) {
		s.fallback()
		return
	}
	s.m = newSampleMerger(maphash.MakeSeed(), 1<<12)
	s.m.keys = s.keys
	chunks := s.head
	s.head = nil
	for _, c := range chunks {
		if s.off {
			return
		}
		s.fields(c)
	}
	s.flush()
	s.grow()
	for _, c := range chunks {
		s.recycle(c)
	}
}

// grow takes from the budget what the stream holds and will build for
// what came so far (memory), if it is free now; else the stream stops.
func (s *Stream) grow() {
	if s.off || s.lim.Memory == nil {
		return
	}
	if want := s.memory(); want > s.held {
		give, ok := s.lim.Memory.TryTake(want - s.held)
		if !ok || want > s.lim.Memory.Size() {
			if ok {
				give()
			}
			s.fallback()
			return
		}
		s.held = want
		s.gives = append(s.gives, give)
	}
}

// memory bounds what the stream holds, and what building its profile
// will allocate, for what came so far: the chunks going round (those
// queued either way, the one being filled and the one being decoded), the
// copies it keeps of the chunks (the tables' fields, the distinct
// samples' location IDs and label sets), the tables as the pre-scan
// counts them with their references kept until the build (24 bytes each,
// up to 3× while the slice of them grows), and the merger's distinct
// samples (sampleMerger.memory). Only the distinct samples cost memory:
// a merged record is a sum into one of them, its bytes in its chunk. A
// field cut by a chunk's end is copied whole (room): the copies made.
func (s *Stream) memory() int64 {
	c := s.c
	refs := 3 * 24 * (c.Strings + c.Locations + c.Functions + c.Mappings)
	merged := int64(0)
	if s.m != nil {
		merged = s.m.memory()
	}
	kept := int64(0)
	if s.keys != nil {
		kept = s.keys.size
	}
	chunks := int64(cap(s.ch)+cap(s.free)+2) * int64(s.chunk)
	return chunks + kept + c.Memory() + refs + merged + s.cut
}

// room makes the copy of a cut field of n bytes room for all of it at
// once, taking it from the budget first (cut): grown as its chunks came,
// the 10M-frame stack's 10 MB sample left 40 MB of old copies to collect.
// A field of more than maxCutField bytes (its length, as written, may be
// a lie the input's end shows up) stops the stream: the spooled file's
// parse reads it. False when the stream stopped.
func (s *Stream) room(n int) bool {
	if cap(s.pending) >= n {
		return true
	}
	if n > maxCutField {
		s.fallback()
		return false
	}
	s.cut += int64(n)
	if s.grow(); s.off {
		return false
	}
	s.pending = append(make([]byte, 0, n), s.pending...)
	return true
}

// maxCutField is the longest field the stream copies when a chunk's end
// cuts it: a sample of tens of millions of frames, far more than the
// hostile table's 10M-frame stack (10 MB).
const maxCutField = 64 << 20

// fields decodes the top-level fields in c, after completing the one the
// last chunk cut; the field c cuts is kept (copied) for the next.
func (s *Stream) fields(c []byte) {
	if len(s.pending) > 0 {
		n, ok := fieldLen(s.pending)
		for n == 0 && ok && len(c) > 0 { // its tag or length is cut: a byte at a time
			s.pending = append(s.pending, c[0])
			c = c[1:]
			n, ok = fieldLen(s.pending)
		}
		if !ok {
			s.fallback()
			return
		}
		if n == 0 {
			return
		}
		if !s.room(n) {
			return
		}
		k := min(n-len(s.pending), len(c))
		s.pending = append(s.pending, c[:k]...)
		c = c[k:]
		if len(s.pending) < n {
			return
		}
		f := s.pending
		s.pending = nil
		if !s.field(f) {
			return
		}
	}
	for len(c) > 0 {
		n, ok := fieldLen(c)
		if !ok {
			s.fallback()
			return
		}
		if n == 0 || n > len(c) {
			if n > 0 && !s.room(n) {
				return
			}
			s.pending = append(s.pending, c...)
			return
		}
		if !s.field(c[:n:n]) {
			return
		}
		c = c[n:]
	}
}

// fieldLen is the length of the top-level field b starts with, tag
// included: 0 when b ends inside its tag or length, so the length is not
// known yet; ok is false on a wire type Decode does not read.
func fieldLen(b []byte) (n int, ok bool) {
	tag, k := protowire.ConsumeVarint(b)
	if k < 0 {
		return 0, len(b) < 10 // cut, or a varint too long
	}
	switch protowire.Type(tag & 7) {
	case protowire.VarintType:
		_, m := protowire.ConsumeVarint(b[k:])
		if m < 0 {
			return 0, len(b)-k < 10
		}
		return k + m, true
	case protowire.BytesType:
		l, m := protowire.ConsumeVarint(b[k:])
		if m < 0 {
			return 0, len(b)-k < 10
		}
		if l > uint64(1<<62) {
			return 0, false
		}
		return k + m + int(l), true
	}
	return 0, false
}

// field decodes one complete top-level field, counting it as the pre-scan
// does; false when decoding stopped.
func (s *Stream) field(f []byte) bool {
	num, typ, n := protowire.ConsumeTag(f)
	if n < 0 || num == 0 {
		s.fallback()
		return false
	}
	f = f[n:]
	var v uint64
	var b []byte
	if typ == protowire.VarintType {
		v, _ = protowire.ConsumeVarint(f)
	} else {
		b, _ = protowire.ConsumeBytes(f)
	}
	var err error
	lim := s.lim
	switch {
	case typ != protowire.BytesType:
		err = s.d.field(num, typ, v, nil)
	case num == 2:
		if s.batch = append(s.batch, b); len(s.batch) == mergeBatch {
			return s.flush()
		}
	default:
		switch num {
		case 3:
			s.c.Mappings++
			err = overAny(err, s.c.Mappings, lim.MaxMappings, 0, 0)
		case 4:
			s.c.Locations++
			s.c.locationBytes += int64(len(b))
			s.c.Lines += int64(locationLines(b))
			err = overAny(err, s.c.Locations, lim.MaxLocations, 0, 0)
		case 5:
			s.c.Functions++
			err = overAny(err, s.c.Functions, lim.MaxFunctions, 0, 0)
		case 6:
			s.c.Strings++
			s.c.StringBytes += int64(len(b))
			err = overAny(err, s.c.Strings, lim.MaxStrings, 0, 0)
		default:
			s.c.Other += int64(len(b))
		}
		if !streamHolds(s.c.Locations, s.c.locationBytes) || max(s.c.Functions, s.c.Strings) > StreamTableEntries {
			err = errOverLimit
		}
		if err == nil {
			err = s.d.field(num, typ, 0, s.keys.copy(b)) // the chunk goes round
		}
	}
	if err != nil {
		s.fallback()
		return false
	}
	return true
}

// flush merges the sample records batched, counting them; false when
// decoding stopped.
func (s *Stream) flush() bool {
	if len(s.batch) == 0 || s.off {
		return !s.off
	}
	ids, vals, labels, err := s.m.addBatch(s.batch)
	s.c.samples += int64(len(s.batch))
	s.batch = s.batch[:0]
	s.c.locIDs += int64(ids)
	s.c.values += int64(vals)
	s.c.labels += int64(labels)
	// --max-frames bounds the frames the profile keeps: those of its
	// distinct samples, as web/ingest counts them once it is built.
	if err = overAny(err, s.c.samples, s.lim.MaxSamples, s.m.frames, s.lim.MaxFrames); err != nil {
		s.fallback()
		return false
	}
	return true
}

// StreamTableEntries bounds each table (locations, functions, strings)
// of small entries the stream holds a 24-byte reference per entry of
// until the profile is built: an entry can be 2 bytes on the wire, so a
// table of tens of millions of empty entries, refused only at its limit,
// would cost hundreds of MiB before the refusal. Past it, the input goes
// to the spooled file's parse, whose pre-scan counts without keeping.
// 512Ki entries (12 MiB of references) is more than the 20M-sample
// benchmark profile's largest table (267k locations) and keeps a refused
// string table's peak heap within the hostile table's 64 MiB.
const StreamTableEntries = 512 << 10

// streamEntryBytes is the average size on the wire past which the
// location table is held however many entries it has, up to
// --max-locations (streamHolds): their references (24 bytes, 72 while
// the slice of them grows) then cost at most 4.5× the bytes the stream
// holds anyway, both counted in its memory. A profile of many locations
// a function (8 a function: 800k locations at 2M samples, about 21 bytes
// each) was sent past StreamTableEntries to the spooled file's pre-scan
// and parse, at 1.4× the server CPU; bare locations (an ID and an
// address, 11 bytes: the hostile table's 1.9M) still are. Strings and
// functions keep the fixed bound: a table of 8M strings of 16 bytes is
// small gzipped, and real profiles have far fewer than 512Ki of either.
const streamEntryBytes = 16

// streamHolds says the stream may hold a location table of n entries of
// size bytes on the wire: at most StreamTableEntries, or more of
// streamEntryBytes an entry on average.
func streamHolds(n, size int64) bool {
	return n <= StreamTableEntries || size >= streamEntryBytes*n
}

// errOverLimit sends an input over a limit to the pre-scan, which names it.
var errOverLimit = errors.New("over a limit")

// overAny is err, or errOverLimit when a count is over its limit (0: none).
func overAny(err error, n int64, max int, n2 int64, max2 int) error {
	if err != nil {
		return err
	}
	if max > 0 && n > int64(max) || max2 > 0 && n2 > int64(max2) {
		return errOverLimit
	}
	return nil
}

// locationLines is the lines (field 4) of a location message.
func locationLines(b []byte) int {
	n := 0
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeField(b)
		if k < 0 {
			return n // decoding the location fails later
		}
		if num == 4 && typ == protowire.BytesType {
			n++
		}
		b = b[k:]
	}
	return n
}

// decode decodes the tables and builds the merged samples, and checks
// the profile as web/ingest's parse of pprof does.
func (s *Stream) decode() (*profile.Profile, error) {
	p, st, locs, err := s.d.tables()
	if err != nil {
		return nil, err
	}
	if err := s.m.build(&s.d, p, st, locs); err != nil {
		return nil, err
	}
	if st.err != nil {
		return nil, st.err
	}
	if len(p.SampleType) == 0 {
		return nil, errWire
	}
	if err := checkValid(p, s.m.samplesValid); err != nil {
		return nil, err
	}
	return p, nil
}

// checkValid is p.CheckValid, without its walk of every sample's values
// and locations when samplesChecked says they passed it (as the merged
// samples' build checks while it makes them): the 2M profile's 17.5M
// location pointers read again, on one goroutine, after the parse.
func checkValid(p *profile.Profile, samplesChecked bool) error {
	if !samplesChecked {
		return p.CheckValid()
	}
	samples := p.Sample
	p.Sample = nil
	defer func() { p.Sample = samples }()
	return p.CheckValid()
}
