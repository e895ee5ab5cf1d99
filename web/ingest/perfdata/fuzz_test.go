package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/unwind"
)

// fuzzFinder finds binaries for the unwinding pass of checkParse: the
// recorded paths (testdata/perf/deep where record.sh ran) and the system's.
var fuzzFinder = unwind.NewFinder(symbolize.New(symbolize.Config{BuildIDCacheDir: "-", DebuginfodCacheDir: "-"}))

// checkParse parses data under limits and requires a valid profile or an
// error that names perf.data; a panic fails the caller. It converts twice,
// as an upload (no unwinding) and as viewer convert does (unwinding
// --call-graph=dwarf stacks), and both must agree on whether data is good.
func checkParse(t *testing.T, data []byte) error {
	t.Helper()
	p, err := Parse(data, 16<<20, 100000)
	f, uerr := Read(data, Options{MaxDecompressed: 16 << 20, UserStacks: true})
	if uerr == nil {
		var up *profile.Profile
		up, uerr = Convert(f, ConvertOptions{MaxSamples: 100000, Binaries: fuzzFinder})
		if uerr == nil {
			if verr := up.CheckValid(); verr != nil {
				t.Fatalf("invalid unwound profile: %v", verr)
			}
		}
	}
	if (err == nil) != (uerr == nil) {
		t.Fatalf("converting without unwinding: %v; with: %v", err, uerr)
	}
	if err != nil {
		if msg := err.Error(); !strings.Contains(msg, "perf.data") {
			t.Fatalf("error %q does not say it is about the perf.data", msg)
		}
		return err
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
	return nil
}

// FuzzPerfData feeds the reader and converter mutated recordings; the seed
// corpus is the recordings themselves: go test -fuzz FuzzPerfData ./web/ingest/perfdata
func FuzzPerfData(f *testing.F) {
	// The small recordings whole (pipe mode, zstd, group read); the first
	// 4 KiB (header, attributes, first records) of the others.
	for _, name := range recordings {
		data := readFile(f, name+".data")
		if len(data) < 10000 {
			f.Add(data)
		} else {
			f.Add(data[:4096])
		}
	}
	f.Add(userStackRecording())                              // DWARF-mode samples whole: dwarf.data's first 4 KiB hold none
	f.Add(compressRecords(f, synthStream(40, 4), 333, true)) // COMPRESSED2, which perf 6.1 does not write
	f.Add([]byte("PERFILE2"))
	f.Add(append([]byte("PERFILE2"), make([]byte, 200)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
	})
}

// TestTruncated cuts each recording at many offsets: every cut must give an
// error saying the file is truncated or corrupt, except pipe-mode cuts at a
// record boundary, which are a shorter recording and may convert.
func TestTruncated(t *testing.T) {
	for _, name := range recordings {
		data := readFile(t, name+".data")
		step := max(1, len(data)/300)
		for cut := 0; cut < len(data); cut++ {
			if cut > 256 && cut%step != 0 {
				continue
			}
			err := checkParse(t, data[:cut])
			if err == nil {
				if !strings.HasPrefix(name, "pipe") {
					t.Errorf("%s cut at %d of %d bytes converted without error", name, cut, len(data))
				}
				continue
			}
			msg := err.Error()
			if cut >= 8 && !strings.Contains(msg, "truncated") && !strings.Contains(msg, "corrupt") && !strings.Contains(msg, "no samples") && !strings.Contains(msg, "no event attributes") {
				t.Errorf("%s cut at %d: error %q does not say truncated or corrupt", name, cut, msg)
			}
		}
	}
}

// TestGarbage checks inputs that are not perf.data, or are perf.data with
// damaged bytes: clear errors or valid profiles, never a panic.
func TestGarbage(t *testing.T) {
	if _, err := Parse([]byte("hello, world, this is not perf"), 0, 0); !errors.Is(err, ErrNotPerfData) {
		t.Errorf("err = %v, want ErrNotPerfData", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	for _, hsize := range []uint64{16, 104, 105, 1 << 40} {
		b := append([]byte("PERFILE2"), binary.LittleEndian.AppendUint64(nil, hsize)...)
		if _, err := Parse(append(b, junk...), 0, 0); err == nil {
			t.Errorf("header size %d + random bytes converted", hsize)
		}
	}
	for _, name := range recordings {
		data := readFile(t, name+".data")
		for i := 0; i < 300; i++ {
			d := bytes.Clone(data)
			for range 1 + r.IntN(8) {
				d[r.IntN(len(d))] = byte(r.Uint32())
			}
			checkParse(t, d)
		}
	}
}

// TestBigEndian converts a recording rewritten in big-endian byte order by
// swapping the magic only is not possible, so it checks the reader accepts
// the big-endian magic and reads the header with that order.
func TestBigEndianHeader(t *testing.T) {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, magicLE)
	binary.BigEndian.PutUint64(b[8:], pipeHeaderSize)
	if !Sniff(b) {
		t.Fatal("big-endian magic not recognised")
	}
	// One big-endian HEADER_ATTR record and one SAMPLE.
	attr := make([]byte, 120)
	binary.BigEndian.PutUint32(attr[0:], 1)   // PERF_TYPE_SOFTWARE
	binary.BigEndian.PutUint32(attr[4:], 120) // size
	binary.BigEndian.PutUint64(attr[24:], sIP|sTID|sPeriod)
	rec := func(typ uint32, body []byte) []byte {
		h := make([]byte, 8)
		binary.BigEndian.PutUint32(h, typ)
		binary.BigEndian.PutUint16(h[6:], uint16(8+len(body)))
		return append(h, body...)
	}
	sample := binary.BigEndian.AppendUint64(nil, 0x401234)
	sample = binary.BigEndian.AppendUint32(sample, 7)
	sample = binary.BigEndian.AppendUint32(sample, 8)
	sample = binary.BigEndian.AppendUint64(sample, 1000)
	data := append(b, rec(recHeaderAttr, attr)...)
	data = append(data, rec(recSample, sample)...)
	p, err := Parse(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sample[0]
	if s.Location[0].Address != 0x401234 || s.NumLabel["pid"][0] != 7 || s.NumLabel["tid"][0] != 8 || s.Value[1] != 1000 {
		t.Errorf("sample %#x pid %v tid %v values %v", s.Location[0].Address, s.NumLabel["pid"], s.NumLabel["tid"], s.Value)
	}
	if p.SampleType[1].Type != "cpu-clock" || p.SampleType[1].Unit != "nanoseconds" {
		t.Errorf("sample type %v", p.SampleType[1])
	}
}
