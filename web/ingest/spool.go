package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/web/ingest/perfdata"
	"viewer/web/ingest/perftext"
)

// ParseFile is Parse for an input on disk (a spooled upload): gzip layers
// are inflated to files in lim.SpoolDir, counted as they inflate, and the
// input is read into memory only once its estimated cost is taken from
// lim.Memory, so the memory an upload makes the server spend is bounded
// before it is spent. A gzipped pprof is decoded as it inflates instead
// (pprofStream), taking that estimate as its bytes come out, and is
// spooled only when the stream stops on something it does not expect.
//
// A perf.data is not read into memory but mapped, read front to back with
// about a window of it resident, and its stacks are aggregated as its
// records are decoded (perfdata.Scan): its cost is taken in steps, its
// record index as it grows, then what the first read estimates the
// aggregation keeps (parsePerfData), not the file. The Progress ctx
// carries (WithProgress) is told how far the parse is.
func ParseFile(ctx context.Context, f *os.File, lim Limits) (*profile.Profile, string, error) {
	lim.progress = progressOf(ctx)
	lim.reserve = &reservation{b: lim.Memory, ctx: ctx}
	in, err := inflateLayers(ctx, f, lim, true)
	if err != nil {
		return nil, "", err
	}
	defer in.remove()
	if in.p != nil { // decoded as it inflated (pprofStream)
		defer in.release()
		if err := lim.finish(in.p); err != nil {
			return nil, "", err
		}
		return in.p, pprofFormat.Name, nil
	}
	if f, ok := streamFormat(in.head); ok {
		return parseStream(ctx, f, in.src, in.size, in.head, lim)
	}
	data, pprofErr, evict, release, err := in.read(ctx, lim, "profile", true)
	if err != nil {
		return nil, "", err
	}
	defer release()
	lim.evict = evict
	return parseFormats(data, data[:min(len(data), sniffLen)], lim, pprofErr)
}

// perfScanMemory is what reading a mapped perf.data takes before its
// record index (taken as it grows): the first read's counters of what the
// conversion will keep (perfdata.Estimate) and a record's scratch.
const perfScanMemory = 16 << 20

// inflated is an input with its gzip layers inflated (inflateLayers).
type inflated struct {
	f, src *os.File // the input, and what its last layer inflated to
	size   int64    // of src
	head   []byte
	pre    *prescanned
	// p is the profile a pprof input was decoded to as it inflated, and
	// release gives back the memory it took.
	p       *profile.Profile
	release func()
}

// remove removes the spooled file of the last layer.
func (in *inflated) remove() {
	if in.src != in.f {
		removeSpool(in.src)
	}
}

// inflateLayers inflates f's gzip layers within lim, each to a spooled
// file; with stream, the last layer, when pprof, is also decoded as it
// inflates (pprofStream).
func inflateLayers(ctx context.Context, f *os.File, lim Limits, stream bool) (*inflated, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size == 0 {
		return nil, fmt.Errorf("%w: the upload has no bytes; send a pprof (.pb.gz) or perf profile", ErrEmpty)
	}
	if lim.MaxBytes > 0 && size > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrTooLarge, size, lim.MaxBytes)
	}
	in := &inflated{f: f, src: f, size: size}
	fail := func(err error) (*inflated, error) {
		if in.release != nil {
			in.release()
		}
		in.remove()
		return nil, err
	}
	if in.head, err = readHead(f); err != nil {
		return fail(err)
	}
	for i := 0; isGzip(in.head); i++ {
		if i == maxGzipLayers {
			return fail(fmt.Errorf("%w: more than %d nested gzip layers", ErrCorrupt, maxGzipLayers))
		}
		out, n, scanned, sp, err := inflateFile(ctx, in.src, in.size, lim, stream)
		in.pre = scanned
		if sp != nil {
			in.p, in.release = sp.p, sp.release
		}
		in.remove()
		in.src = out
		if err != nil {
			return fail(err)
		}
		if in.size = n; in.size == 0 {
			return fail(fmt.Errorf("%w: the gzip stream decompresses to nothing", ErrEmpty))
		}
		if in.p != nil {
			return in, nil // decoded: its bytes were not spooled
		}
		if in.head, err = readHead(in.src); err != nil {
			return fail(err)
		}
	}
	return in, nil
}

// read takes the estimated cost of parsing the inflated input from
// lim.Memory and reads it into memory, or maps a perf.data (readFile).
func (in *inflated) read(ctx context.Context, lim Limits, what string, mapPerf bool) (data []byte, pprofErr error, evict func(lo, hi int), release func(), err error) {
	src, size, head, pre := in.src, in.size, in.head, in.pre
	if mapPerf && perfdata.Sniff(head) {
		r := lim.reserve
		if r == nil {
			r = &reservation{b: lim.Memory, ctx: ctx}
		}
		if err := r.grow(perfScanMemory, what); err != nil {
			return nil, nil, nil, nil, err
		}
		data, evict, unmap, err := mapFile(src, size)
		if err == nil {
			return data, nil, evict, func() { unmap(); r.release() }, nil
		}
		r.release() // read it into memory, at that cost
	}
	if mapPerf && sniffJSONProfile(head) {
		// A JSON profile is mapped and read as a stream; its records and
		// samples are taken from the budget as they grow (jsonParser).
		r := lim.reserve
		if r == nil {
			r = &reservation{b: lim.Memory, ctx: ctx}
		}
		if err := r.grow(jsonMemory(size), what); err != nil {
			return nil, nil, nil, nil, err
		}
		data, evict, unmap, err := mapFile(src, size)
		if err == nil {
			return data, nil, evict, func() { unmap(); r.release() }, nil
		}
		r.release()
	}
	var est int64
	if pre != nil && pre.scanned {
		est, pprofErr, err = pprofEstimate(size, head, pre.c, pre.err)
	} else {
		est, pprofErr, err = estimate(io.NewSectionReader(src, 0, size), size, head, lim)
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	release, err = lim.Memory.take(ctx, est, what)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	data = make([]byte, size)
	if _, err := src.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		release()
		return nil, nil, nil, nil, err
	}
	return data, pprofErr, nil, release, nil
}

func readHead(f *os.File) ([]byte, error) {
	head := make([]byte, sniffLen)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return head[:n], nil
}

// prescanned is the pre-scan of a pprof input made as it was inflated:
// scanned says the inflated bytes sniffed as pprof and were scanned.
type prescanned struct {
	scanned bool
	c       wireCounts
	err     error
}

// prescanStream pre-scans what r gives when it sniffs as pprof (and not as
// folded stacks, which estimate counts otherwise), then reads r to its end.
func prescanStream(r io.Reader, lim Limits) *prescanned {
	defer io.Copy(io.Discard, r)
	head := make([]byte, sniffLen)
	n, _ := io.ReadFull(r, head)
	head = head[:n]
	if !sniffPprof(head) || perftext.SniffFolded(head) {
		return &prescanned{}
	}
	c, err := prescanPprof(bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), r), 64<<10), lim)
	return &prescanned{scanned: true, c: c, err: err}
}

// inflateFile inflates the gzip stream in f (all its members) to a new
// file in lim.SpoolDir, failing with ErrTooLarge as soon as more than
// lim.MaxBytes came out. The returned file, even with an error, is the
// caller's to remove. The inflated bytes are pre-scanned on a second
// goroutine as they come out (prescanStream): reading the spooled file
// again for it cost a tenth of a 2M-sample upload, on one core. With
// stream, they are decoded there instead (pprofStream), and sp, when set,
// holds the profile, whose bytes were not spooled; the caller gives its
// memory back with sp.release.
func inflateFile(ctx context.Context, f *os.File, size int64, lim Limits, stream bool) (_ *os.File, _ int64, _ *prescanned, sp *pprofStream, _ error) {
	in := &countReader{r: io.NewSectionReader(f, 0, 1<<62), total: size, report: lim.progress}
	zr, err := gzip.NewReader(bufio.NewReaderSize(in, 64<<10))
	if err != nil {
		return nil, 0, nil, nil, fmt.Errorf("%w: bad gzip header: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	out, err := os.CreateTemp(lim.SpoolDir, "viewer-inflate-*")
	if err != nil {
		return nil, 0, nil, nil, fmt.Errorf("spooling the decompressed upload: %w", err)
	}
	var r io.Reader = zr
	if lim.MaxBytes > 0 {
		r = io.LimitReader(zr, lim.MaxBytes+1)
	}
	if stream {
		// What the decoder was handed, when it stops, is spooled from
		// the input inflated again, within what the first inflate read.
		restart := func() (io.Reader, error) {
			zr, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10))
			if err != nil {
				return nil, err
			}
			return &ctxReader{ctx: ctx, r: zr}, nil
		}
		sp = newPprofStream(lim, out, restart)
		n, err := sp.inflate(&ctxReader{ctx: ctx, r: r})
		err = inflateError(ctx, n, err, lim)
		p, serr := sp.finish(err == nil)
		if err == nil && serr != nil {
			err = fmt.Errorf("spooling the decompressed upload: %w", serr)
		}
		if p == nil {
			sp = nil
		}
		return out, n, nil, sp, err
	}
	pr, pw := io.Pipe()
	if lim.otlpStream != nil {
		// An OTLP request over a limit stops inflating at the count.
		counted := make(chan error, 1)
		go func() {
			err := lim.otlpStream(pr)
			if err == nil {
				_, err = io.Copy(io.Discard, pr)
			}
			pr.CloseWithError(err)
			counted <- err
		}()
		n, err := io.Copy(io.MultiWriter(out, pw), &ctxReader{ctx: ctx, r: r})
		pw.CloseWithError(err)
		if cerr := <-counted; cerr != nil && (err == nil || err == cerr) {
			return out, n, nil, nil, cerr
		}
		return out, n, nil, nil, inflateError(ctx, n, err, lim)
	}
	scanned := make(chan *prescanned, 1)
	go func() { scanned <- prescanStream(pr, lim) }()
	n, err := io.Copy(io.MultiWriter(out, pw), &ctxReader{ctx: ctx, r: r})
	pw.CloseWithError(err)
	pre := <-scanned
	if err != nil {
		pre = nil
	}
	err = inflateError(ctx, n, err, lim)
	return out, n, pre, nil, err
}

// inflateError is the error of inflating n bytes that ended with err.
func inflateError(ctx context.Context, n int64, err error, lim Limits) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the gzip stream is truncated (was the upload cut short?)", ErrCorrupt)
	case ctx.Err() != nil && err != nil:
		return err
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("spooling the decompressed upload: %w", err)
		}
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	case lim.MaxBytes > 0 && n > lim.MaxBytes:
		return fmt.Errorf("%w: decompresses to more than the %d-byte limit", ErrTooLarge, lim.MaxBytes)
	}
	return nil
}

// ctxReader stops reading when ctx ends: an upload whose client went away
// stops inflating.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// countReader tells report how many of total bytes were read, as phase
// (perfdata.PhaseInflating when "").
type countReader struct {
	r           io.Reader
	done, total int64
	last        int64
	report      Progress
	phase       string
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	if c.report != nil && (c.done-c.last >= 1<<20 || err != nil) {
		c.last = c.done
		phase := c.phase
		if phase == "" {
			phase = perfdata.PhaseInflating
		}
		c.report(phase, c.done, c.total)
	}
	return n, err
}

func removeSpool(f *os.File) {
	if f == nil {
		return
	}
	f.Close()
	os.Remove(f.Name())
}
