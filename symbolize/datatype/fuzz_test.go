package datatype

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// openDeadline bounds one input's Open and attribution: the seeds take
// milliseconds, a debug file of libc's size about a second.
const openDeadline = 10 * time.Second

// FuzzOpenAttribute opens mutated binaries (code and DWARF in one file, as
// debuginfod may serve them) and attributes instructions in them:
// go test -fuzz FuzzOpenAttribute ./symbolize/datatype. Open may fail but
// must not crash or hang; Attribute and skid-corrected aggregation must
// not either.
func FuzzOpenAttribute(f *testing.F) {
	for name, pc := range map[string]uint64{"datatype-dw5-pie": 0x1380, "datatype-dw4-nopie": 0x401380, "datatype-dw5-O0": 0x1380, "libdatatype.so": 0x1100} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "datatype", name))
		if err != nil {
			f.Fatalf("seed: %v", err)
		}
		f.Add(b, pc)
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"), uint64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		// A hang fails at once, with every goroutine's stack, instead of
		// stalling the fuzz run until its worker is killed; the panic
		// ends the worker, so the input is kept in the corpus.
		watchdog := time.AfterFunc(openDeadline, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("Open and Attribute have not ended after %v on %d bytes:\n%s", openDeadline, len(data), buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		path := filepath.Join(dir, "fuzz.elf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(path, path)
		if err != nil {
			return
		}
		var samples []Sample
		for i := uint64(0); i < 16; i++ {
			_ = b.Attribute(pc + 4*i)
			samples = append(samples, Sample{PC: pc + 3*i, Weight: 1})
		}
		// Skid correction walks back through the function's decoded blocks.
		agg := NewAggregator()
		agg.Skid = true
		agg.Add("fuzz", b, samples)
		_ = agg.Profile()
	})
}
