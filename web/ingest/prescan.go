package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// wireCounts is what a pprof protobuf holds, counted from its wire format
// without building the profile (prescanPprof).
type wireCounts struct {
	strings, stringBytes int64
	samples, locIDs      int64 // location ids over all samples: frames before inlining
	values, labels       int64
	locations, lines     int64
	functions, mappings  int64
	other                int64 // bytes of the remaining fields (comments, sample types)
}

// memory estimates the bytes decodePprof (pprofwire.go) allocates for a
// profile with these counts, on top of the input itself, when no two
// sample records merge: per record its place in the input (24) and, as a
// distinct sample, its struct, pointer and hash entry (136+8+16), per
// location ID of a sample one pointer. It is the pre-scan's bound, made
// before any record is merged: a profile whose records repeat their
// stacks (the 2M benchmark profile's 2M records are 500k stacks) keeps
// far less, which the streamed decode charges instead (pprofStream.memory).
// parseOverhead is the parse's own first slices, whatever the profile.
func (c wireCounts) memory() int64 {
	return parseOverhead + c.tableMemory() +
		c.samples*(24+136+8+16) + 8*c.locIDs + 2*8*c.values + 80*c.labels
}

// parseOverhead is what parsing even the smallest pprof input allocates
// (a 2 kB one: 0.1 MiB measured).
const parseOverhead = 1 << 20

// tableMemory is what decodePprof allocates for the tables (strings,
// locations, functions, mappings) and the remaining fields: the sizes
// are those of pprof's structs and slices on 64-bit Go with room to
// spare, doubled where append growth can leave up to half a slice unused.
func (c wireCounts) tableMemory() int64 {
	return 2*c.stringBytes + 2*16*c.strings + // string table: copies and headers
		c.locations*(104+8+8) + 2*56*c.lines +
		c.functions*(96+8+8) + c.mappings*(176+8+8) + c.other
}

// prescanPprof walks the top-level fields of a pprof protobuf and the
// sample and location messages in them, counting what profile.Parse would
// allocate, and stops at the first count over lim. It reads the input once
// and allocates nothing per field.
func prescanPprof(r *bufio.Reader, lim Limits) (wireCounts, error) {
	var c wireCounts
	over := func(what, flag string, n int64, max int) error {
		if max > 0 && n > int64(max) {
			return fmt.Errorf("%w: the profile has more than %d %s (restart the server with a larger %s to accept it)", ErrTooLarge, max, what, flag)
		}
		return nil
	}
	for {
		field, wt, err := readTag(r)
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return c, err
		}
		if wt != 2 {
			if err := skipField(r, wt); err != nil {
				return c, err
			}
			continue
		}
		n, err := readLen(r)
		if err != nil {
			return c, err
		}
		switch field {
		case 2: // sample
			c.samples++
			err = scanSample(r, n, &c)
			if err == nil {
				err = over("samples", "--max-samples", c.samples, lim.MaxSamples)
			}
			if err == nil {
				err = over("frames", "--max-frames", c.locIDs, lim.MaxFrames)
			}
		case 3:
			c.mappings++
			err = discard(r, n)
			if err == nil {
				err = over("mappings", "--max-mappings", c.mappings, lim.MaxMappings)
			}
		case 4:
			c.locations++
			err = scanLocation(r, n, &c)
			if err == nil {
				err = over("locations", "--max-locations", c.locations, lim.MaxLocations)
			}
		case 5:
			c.functions++
			err = discard(r, n)
			if err == nil {
				err = over("functions", "--max-functions", c.functions, lim.MaxFunctions)
			}
		case 6:
			c.strings++
			c.stringBytes += n
			err = discard(r, n)
			if err == nil {
				err = over("strings", "--max-strings", c.strings, lim.MaxStrings)
			}
		default:
			c.other += n
			err = discard(r, n)
		}
		if err != nil {
			return c, err
		}
	}
}

// scanSample counts the location ids, values and labels of a sample
// message of n bytes.
func scanSample(r *bufio.Reader, n int64, c *wireCounts) error {
	return scanMessage(r, n, func(field, wt uint64, size int64) (bool, error) {
		switch {
		case field == 1 && wt == 0:
			c.locIDs++
		case field == 1 && wt == 2:
			k, err := countVarints(r, size)
			c.locIDs += k
			return true, err
		case field == 2 && wt == 0:
			c.values++
		case field == 2 && wt == 2:
			k, err := countVarints(r, size)
			c.values += k
			return true, err
		case field == 3:
			c.labels++
		}
		return false, nil
	})
}

// scanLocation counts the lines of a location message of n bytes.
func scanLocation(r *bufio.Reader, n int64, c *wireCounts) error {
	return scanMessage(r, n, func(field, wt uint64, size int64) (bool, error) {
		if field == 4 && wt == 2 {
			c.lines++
		}
		return false, nil
	})
}

// scanMessage walks the fields of an embedded message of n bytes, calling
// f with each field's number, wire type and (for length-delimited fields)
// size. f returns true when it consumed a length-delimited field's bytes.
func scanMessage(r *bufio.Reader, n int64, f func(field, wt uint64, size int64) (bool, error)) error {
	lr := countingReader{r: r}
	for lr.n < n {
		field, wt, err := readTag(&lr)
		if err != nil {
			return truncated(err)
		}
		var size int64
		if wt == 2 {
			if size, err = readLen(&lr); err != nil {
				return err
			}
			if lr.n+size > n {
				return errPprofWire("a field runs past the end of its message")
			}
		}
		done, err := f(field, wt, size)
		if err != nil {
			return err
		}
		switch {
		case done:
			lr.n += size
		case wt == 2:
			if err := discard(r, size); err != nil {
				return err
			}
			lr.n += size
		default:
			if err := skipField(&lr, wt); err != nil {
				return err
			}
		}
	}
	if lr.n != n {
		return errPprofWire("a field runs past the end of its message")
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

type byteReader interface{ ReadByte() (byte, error) }

func readTag(r byteReader) (field, wt uint64, err error) {
	tag, err := readVarint(r)
	if err != nil {
		return 0, 0, err
	}
	if tag>>3 == 0 {
		return 0, 0, errPprofWire("field number 0")
	}
	return tag >> 3, tag & 7, nil
}

func readVarint(r byteReader) (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 70; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			if shift > 0 {
				return 0, truncated(err)
			}
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errPprofWire("a varint longer than 10 bytes")
}

func readLen(r byteReader) (int64, error) {
	n, err := readVarint(r)
	if err != nil {
		return 0, truncated(err)
	}
	if n > 1<<62 {
		return 0, errPprofWire("a field length out of range")
	}
	return int64(n), nil
}

// skipField skips a field of wire type wt other than 2.
func skipField(r byteReader, wt uint64) error {
	k := 0
	switch wt {
	case 0:
		_, err := readVarint(r)
		return truncated(err)
	case 1:
		k = 8
	case 5:
		k = 4
	default:
		return errPprofWire(fmt.Sprintf("wire type %d", wt))
	}
	for range k {
		if _, err := r.ReadByte(); err != nil {
			return truncated(err)
		}
	}
	return nil
}

func discard(r *bufio.Reader, n int64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		d, err := r.Discard(k)
		n -= int64(d)
		if err != nil {
			return truncated(err)
		}
	}
	return nil
}

// countVarints counts the varints packed in the next n bytes.
func countVarints(r *bufio.Reader, n int64) (int64, error) {
	var k int64
	for n > 0 {
		buf, err := r.Peek(int(min(n, int64(r.Size()))))
		if len(buf) == 0 {
			return k, truncated(err)
		}
		for _, b := range buf {
			if b < 0x80 {
				k++
			}
		}
		r.Discard(len(buf))
		n -= int64(len(buf))
	}
	return k, nil
}

func truncated(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return errPprofWire("the input ends inside a field")
	}
	return err
}

// errPprofWire is a protobuf wire format error; the input is then not
// pprof, and the next format is tried.
type errPprofWire string

func (e errPprofWire) Error() string { return "invalid pprof protobuf: " + string(e) }
