package perfdata

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChunksConvertAsOne converts every recording, and one recorded here
// of a shell forking and exec'ing programs (mappings that come and go
// between samples), in 2, 3, 7 and 16 chunks at once, and wants the
// profile byte for byte that converting in one gives. As in
// TestScanConvertsAsRead, the bytes a chunk gives up are overwritten at
// once, so a chunk reading what another gave up changes the profile.
func TestChunksConvertAsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf and converts every recording in 2 to 16 chunks: make test runs it")
	}
	defer func(w func() int, m int, ew uint64, er int) {
		convertWorkers, minChunkRecords, evictWindow, evictRefs = w, m, ew, er
	}(convertWorkers, minChunkRecords, evictWindow, evictRefs)
	minChunkRecords, evictWindow, evictRefs = 1, 512, 4

	forks := filepath.Join(t.TempDir(), "forks.data")
	cmd := exec.Command(needPerf(t), "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-o", forks, "--",
		"sh", "-c", "for i in $(seq 15); do ls -lR /usr/include/linux >/dev/null; cat /etc/os-release | wc -l >/dev/null; done")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	files := map[string]string{"forks": forks}
	for _, name := range append(recordings, "system") {
		files[name] = filepath.Join(dir, name+".data")
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			convertWorkers = func() int { return 1 }
			want := convertBytes(t, data, false)
			for _, n := range []int{2, 3, 7, 16} {
				convertWorkers = func() int { return n }
				cp := bytes.Clone(data)
				f, err := Scan(cp, Options{})
				if err != nil {
					t.Fatal(err)
				}
				bounds := newConverter(f, ConvertOptions{}).chunks()
				if name == "forks" && len(bounds) != n+1 {
					t.Fatalf("%d chunks: cut into %v", n, bounds)
				}
				got := convertBytes(t, cp, true)
				if !bytes.Equal(got, want) {
					t.Errorf("%d chunks (%v): the profile differs from one chunk's (%d and %d bytes)", n, bounds, len(got), len(want))
				}
			}
		})
	}
}

// convertBytes scans and converts data and encodes the profile; with
// clearing, Convert's evictions overwrite the bytes they give up, in data
// and in the decompressed records.
func convertBytes(t *testing.T, data []byte, clearing bool) []byte {
	t.Helper()
	converting, spoolClearing := false, false
	sp := &memSpool{clearing: &spoolClearing} // the compressed records', decompressed
	f, err := Scan(data, Options{Evict: func(lo, hi int) {
		if clearing && converting {
			clear(data[lo:hi])
		}
	}, Spool: func() (Spool, error) { return sp, nil }})
	if err != nil {
		t.Fatal(err)
	}
	converting, spoolClearing = true, clearing
	return write(t, f)
}

// TestChunksMaxSamples wants the cap on pprof samples to hold over all
// chunks together: a recording converted in 4 chunks keeps its N samples
// under a cap of N, and fails under N-1.
func TestChunksMaxSamples(t *testing.T) {
	defer func(w func() int, m int) { convertWorkers, minChunkRecords = w, m }(convertWorkers, minChunkRecords)
	convertWorkers, minChunkRecords = func() int { return 4 }, 1
	data := readFile(t, "fp.data")
	convert := func(opt ConvertOptions) (samples, frames int, err error) {
		f, err := Scan(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b := newConverter(f, ConvertOptions{}).chunks(); len(b) != 5 {
			t.Fatalf("fp.data cut into %v, not 4 chunks", b)
		}
		p, err := Convert(f, opt)
		if err != nil {
			return 0, 0, err
		}
		for _, s := range p.Sample {
			frames += len(s.Location)
		}
		return len(p.Sample), frames, nil
	}
	n, frames, err := convert(ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := convert(ConvertOptions{MaxSamples: n}); err != nil || got != n {
		t.Errorf("cap %d: %d samples, %v", n, got, err)
	}
	if _, _, err := convert(ConvertOptions{MaxSamples: n - 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("cap %d of %d samples: %v, want ErrLimit", n-1, n, err)
	}
	// The frame cap, too, counts every chunk's kept samples together.
	if _, got, err := convert(ConvertOptions{MaxFrames: frames}); err != nil || got != frames {
		t.Errorf("frame cap %d: %d frames, %v", frames, got, err)
	}
	var le *LimitError
	if _, _, err := convert(ConvertOptions{MaxFrames: frames - 1}); !errors.As(err, &le) || le.What != "frames" {
		t.Errorf("frame cap %d of %d frames: %v, want a frames LimitError", frames-1, frames, err)
	}
}

// TestChunksPanicInCaller: a chunk that panics (here on a record index
// pointing past the data) panics in Convert's goroutine, where
// ingest's safeParse recovers a parser's panics, not on its own (which
// would end the server).
func TestChunksPanicInCaller(t *testing.T) {
	defer func(w func() int, m int) { convertWorkers, minChunkRecords = w, m }(convertWorkers, minChunkRecords)
	convertWorkers, minChunkRecords = func() int { return 2 }, 1
	f, err := Scan(readFile(t, "fp.data"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	refs := f.sortedRefs()
	refs[len(refs)-1].pos = uint64(len(f.stream)) + 100
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "converting chunk 2 of 2") {
			t.Errorf("recovered %v, want the second chunk's panic", r)
		}
	}()
	Convert(f, ConvertOptions{})
	t.Error("Convert returned")
}
