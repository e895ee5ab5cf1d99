package perfdata

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// compressRecords writes a pipe-mode perf.data as perf record -z does:
// the header records of plain (attributes, features) as they are, then
// the rest through one zstd stream, flushed every piece bytes of records
// (cut anywhere, not at record boundaries) into a COMPRESSED record, or a
// COMPRESSED2 record padded to 8 bytes with v2. The frame is never ended.
func compressRecords(t testing.TB, plain []byte, piece int, v2 bool) []byte {
	t.Helper()
	off := pipeHeaderSize
	for off < len(plain) {
		typ := binary.LittleEndian.Uint32(plain[off:])
		if typ != recHeaderAttr && typ != recHeaderFeat {
			break
		}
		off += int(binary.LittleEndian.Uint16(plain[off+6:]))
	}
	out := bytes.Clone(plain[:off])
	var z bytes.Buffer
	enc, err := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for rest := plain[off:]; len(rest) > 0; {
		n := min(piece, len(rest))
		if _, err := enc.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		if err := enc.Flush(); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
		payload := z.Bytes()
		typ, head := uint32(recCompressed), 8
		if v2 {
			typ, head = recCompressed2, 16
		}
		size := head + len(payload)
		pad := 0
		if v2 {
			pad = (8 - size%8) % 8
		}
		if size+pad > 0xffff {
			t.Fatalf("a %d-byte piece compressed to %d bytes, more than a record holds", n, len(payload))
		}
		out = binary.LittleEndian.AppendUint32(out, typ)
		out = binary.LittleEndian.AppendUint16(out, 0)
		out = binary.LittleEndian.AppendUint16(out, uint16(size+pad))
		if v2 {
			out = binary.LittleEndian.AppendUint64(out, uint64(len(payload)))
		}
		out = append(out, payload...)
		out = append(out, make([]byte, pad)...)
		z.Reset()
	}
	return out
}

// memSpool is a Spool in the heap whose evict overwrites the bytes it
// gives up once clearing is set, so that reading them again shows.
type memSpool struct {
	bytes.Buffer
	clearing *bool
	evicted  int
}

func (m *memSpool) Map() ([]byte, func(lo, hi int), error) {
	data := m.Bytes()
	return data, func(lo, hi int) {
		if *m.clearing {
			clear(data[lo:hi])
			m.evicted += hi - lo
		}
	}, nil
}

// TestCompressedAsPlain converts a synthesized recording plain and
// compressed, in COMPRESSED and in COMPRESSED2 records, with records cut
// across payloads, the decompressed records in the heap and in a Spool
// whose given-up bytes are overwritten (with tiny windows, on one and on
// several chunks), and wants the same profile byte for byte each time.
func TestCompressedAsPlain(t *testing.T) {
	defer func(w func() int, m int, ew uint64, er int) {
		convertWorkers, minChunkRecords, evictWindow, evictRefs = w, m, ew, er
	}(convertWorkers, minChunkRecords, evictWindow, evictRefs)
	minChunkRecords, evictWindow, evictRefs = 1, 512, 4
	plain := synthStream(2000, 8)
	convertWorkers = func() int { return 1 }
	want := convertBytes(t, bytes.Clone(plain), false)
	for _, v2 := range []bool{false, true} {
		for _, piece := range []int{333, 4096} {
			data := compressRecords(t, plain, piece, v2)
			if got := write(t, mustScan(t, data, Options{})); !bytes.Equal(got, want) {
				t.Errorf("v2 %v, pieces of %d bytes, in the heap: the profile differs from the plain recording's", v2, piece)
			}
			for _, workers := range []int{1, 3} {
				convertWorkers = func() int { return workers }
				clearing := false
				sp := &memSpool{clearing: &clearing}
				f := mustScan(t, data, Options{Spool: func() (Spool, error) { return sp, nil }})
				clearing = true
				if got := write(t, f); !bytes.Equal(got, want) {
					t.Errorf("v2 %v, pieces of %d bytes, spooled, %d chunks: the profile differs from the plain recording's", v2, piece, workers)
				}
				if sp.evicted == 0 {
					t.Errorf("v2 %v, pieces of %d bytes, %d chunks: Convert gave up none of the %d decompressed bytes", v2, piece, workers, sp.Len())
				}
			}
		}
	}
}

func mustScan(t testing.TB, data []byte, opt Options) *File {
	t.Helper()
	f, err := Scan(data, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCompressedDamaged wants a compressed recording whose COMPRESSED2
// record gives a wrong data size, or whose zstd stream is overwritten
// midway, converted from the records before the damage, with a warning
// that says what was left out.
func TestCompressedDamaged(t *testing.T) {
	plain := synthStream(2000, 8)
	whole, err := Parse(plain, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := compressRecords(t, plain, 4096, true)
	// The offsets of the compressed records.
	var recs []int
	for off := pipeHeaderSize; off < len(data); off += int(binary.LittleEndian.Uint16(data[off+6:])) {
		if binary.LittleEndian.Uint32(data[off:]) == recCompressed2 {
			recs = append(recs, off)
		}
	}
	mid := recs[len(recs)/2]
	for _, tc := range []struct {
		name, warning string
		damage        func(b []byte)
	}{
		{"data size", "the COMPRESSED2 record at offset", func(b []byte) { binary.LittleEndian.PutUint64(b[mid+8:], 1<<20) }},
		{"stream", "the zstd-compressed records are damaged after", func(b []byte) {
			for i := mid + 16; i < mid+48; i++ {
				b[i] = 0xff
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(data)
			tc.damage(b)
			p, err := Parse(b, 0, 0)
			if err != nil {
				t.Fatalf("one damaged record failed the recording: %v", err)
			}
			if n, all := total(p), total(whole); n == 0 || n >= all {
				t.Errorf("%d of the %d samples converted, want those before the damage", n, all)
			}
			if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, tc.warning) {
				t.Errorf("no warning %q in:\n%s", tc.warning, cm)
			}
		})
	}
}
