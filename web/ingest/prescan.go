package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"viewer/web/hashindex"
	"viewer/web/ingest/pprofwire"
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
	// The distinct samples (records of the same location IDs, labels
	// and number of values merge into one) and their location IDs,
	// values and labels: what the parse keeps (distinctSamples).
	distinct, distinctLocIDs, distinctValues, distinctLabels int64
}

// memory bounds the bytes pprofwire.Decode allocates for a profile with
// these counts, on top of the input itself. Every record costs its place
// in the input until the merge ends (24 bytes, up to 2.25× as the slice
// of them grows); only the distinct samples cost more: the two mergers'
// arrays (pprofwire's decodeSamples merges each half of the records on
// its own, then the second's samples into the first), then what build
// makes of the first's (the sizes of pprofwire's sampleMerger.memory).
// The pre-scan counts the distinct samples (distinctSamples): the 2M
// benchmark profile's 2M records are 500k, and a bound on every record
// as a distinct sample was twice the parse's peak.
// parseOverhead is the parse's own first slices, whatever the profile.
func (c wireCounts) memory() int64 {
	// A merger's arrays for n distinct samples: its samples, table
	// slots and values, sized for a quarter of the records it is given
	// first, and its label sets' (ls: at most one a distinct sample, and
	// a label at least each), doubled when full; growing holds the old
	// array and the new one, 3× the old's elements.
	arrays := func(n, v, ls, init int64) (steady, growing int64) {
		per := func(k, n, init int64) (int64, int64) { return k * max(2*n, init), k * max(3*n, init) }
		a, b := per(56, n, init)
		c, d := per(8, 2*n, 4*init) // the table: at most half full, 16 bytes an item; sized for init at most a quarter full
		e, f := per(8, v, init)
		g, h := per(24+8+4+16, ls, 0) // the label sets' fields, hashes, first samples and table
		return a + c + e + g, b + d + f + h
	}
	// Each merger is bounded by every distinct sample, so both are as one.
	first, growing := arrays(c.distinct, c.distinctValues, min(c.distinct, c.distinctLabels), c.samples/4+1)
	merging := 2 * growing
	building := first + c.distinct*(120+8) + 8*c.distinctLocIDs + 80*c.distinctLabels
	return parseOverhead + c.tableMemory() + 3*24*(c.strings+c.locations+c.functions+c.mappings) +
		c.samples*54 + max(merging, building)
}

// parseOverhead is what parsing even the smallest pprof input allocates
// (a 2 kB one: 0.1 MiB measured).
const parseOverhead = 1 << 20

// tableMemory is what pprofwire.Decode allocates for the tables
// (strings, locations, functions, mappings) and the remaining fields
// (pprofwire.Tables.Memory).
func (c wireCounts) tableMemory() int64 {
	return pprofwire.Tables{Strings: c.strings, StringBytes: c.stringBytes, Locations: c.locations, Lines: c.lines,
		Functions: c.functions, Mappings: c.mappings, Other: c.other}.Memory()
}

// prescanPprof walks the top-level fields of a pprof protobuf and the
// sample and location messages in them, counting what profile.Parse would
// allocate, and stops at the first count over lim. It reads the input once
// and allocates nothing per field.
func prescanPprof(r *bufio.Reader, lim Limits) (wireCounts, error) {
	var c wireCounts
	var ds distinctSamples
	ds.init()
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
			err = ds.scan(r, n, &c)
			if err == nil {
				err = over("samples", "--max-samples", c.samples, lim.MaxSamples)
			}
			if err == nil {
				// The frames the profile keeps: its distinct samples'.
				err = over("frames", "--max-frames", c.distinctLocIDs, lim.MaxFrames)
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

// distinctSamples tells the pre-scan which sample records are new: each
// record's key (its location IDs as written, its labels and its number
// of values) is hashed and looked up in a set of the hashes seen. Records
// the parse merges may count as distinct here (location IDs split over
// several fields, or sent unpacked, are always new), never the other way
// but for two keys of one 64-bit hash (maphash, seeded at random: about
// 10⁻⁷ for 2M keys, and one sample's bytes then). The set keeps up to
// distinctSetMax hashes; records after it is full count as new.
type distinctSamples struct {
	h      maphash.Hash
	table  hashindex.Table
	hashes []uint64
}

// distinctSetMax bounds the hashes the pre-scan keeps: 24 MiB of table
// and hashes at most (40 while the table grows), more than the 500k
// distinct samples of the 2M benchmark profile.
const distinctSetMax = 1 << 20

func (d *distinctSamples) init() {
	d.h.SetSeed(maphash.MakeSeed())
	d.table.Init(1 << 12)
}

// scan counts the location ids, values and labels of a sample message of
// n bytes, and, when its key is new, counts them again as a distinct
// sample's.
func (d *distinctSamples) scan(r *bufio.Reader, n int64, c *wireCounts) error {
	d.h.Reset()
	var ids, values, labels int64
	unique := false
	err := scanMessage(r, n, func(field, wt uint64, size int64) (bool, error) {
		switch {
		case field == 1 && wt == 0:
			ids++
			unique = true
		case field == 1 && wt == 2:
			d.h.WriteByte(1)
			k, err := countVarints(r, size, &d.h)
			ids += k
			return true, err
		case field == 2 && wt == 0:
			values++
		case field == 2 && wt == 2:
			k, err := countVarints(r, size, nil)
			values += k
			return true, err
		case field == 3:
			labels++
			if wt != 2 {
				unique = true
				return false, nil
			}
			d.h.WriteByte(3)
			_, err := countVarints(r, size, &d.h)
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	c.locIDs += ids
	c.values += values
	c.labels += labels
	if !unique && len(d.hashes) < distinctSetMax {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(values))
		d.h.Write(b[:])
		h := d.h.Sum64()
		slot, found := d.table.Find(h, func(i int32) bool { return d.hashes[i] == h })
		if found >= 0 {
			return nil
		}
		d.table.Insert(slot, h, int32(len(d.hashes)))
		d.hashes = append(d.hashes, h)
	}
	c.distinct++
	c.distinctLocIDs += ids
	c.distinctValues += values
	c.distinctLabels += labels
	return nil
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

// countVarints counts the varints packed in the next n bytes, writing
// the bytes (length first) to h when it is set.
func countVarints(r *bufio.Reader, n int64, h *maphash.Hash) (int64, error) {
	if h != nil {
		var b [binary.MaxVarintLen64]byte
		h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
	}
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
		if h != nil {
			h.Write(buf)
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
