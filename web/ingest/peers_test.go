package ingest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/web/flame"
	"viewer/web/ingest"
)

const peersDir = "../../testdata/peers"

// pprofUnits are the -unit values that make go tool pprof print a sample
// type's values as integers of the unit the profile stores.
var pprofUnits = map[string]string{"nanoseconds": "ns", "microseconds": "us", "milliseconds": "ms", "seconds": "s", "bytes": "B"}

type flatCum struct{ flat, cum int64 }

// pprofTop runs go tool pprof -top on file for sample index si and returns
// its rows by name. With addresses, rows are per location address
// (-addresses), keyed by the address as pprof prints it in hex.
func pprofTop(t *testing.T, file string, si int, unit string, addresses bool) map[string]flatCum {
	t.Helper()
	args := []string{"tool", "pprof", "-top", "-symbolize=none", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0", "-sample_index=" + strconv.Itoa(si)}
	if u := pprofUnits[unit]; u != "" {
		args = append(args, "-unit="+u)
	}
	if addresses {
		args = append(args, "-addresses")
	}
	cmd := exec.Command("go", append(args, file)...)
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH=/nonexistent", "PPROF_TOOLS=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	rows := map[string]flatCum{}
	inTable := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" && f[3] == "cum" {
			inTable = true
			continue
		}
		if !inTable || len(f) < 6 {
			continue
		}
		name := strings.Join(f[5:], " ")
		if addresses {
			name = f[5] // the address; the rest names its function or mapping
		}
		r := rows[name]
		r.flat += pprofValue(t, f[0])
		r.cum += pprofValue(t, f[3])
		rows[name] = r
	}
	if len(rows) == 0 {
		t.Fatalf("go tool pprof printed no rows:\n%s", out)
	}
	return rows
}

// pprofValue reads one of pprof's value columns: an integer, maybe with a
// unit suffix.
func pprofValue(t *testing.T, s string) int64 {
	num := strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzAB")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		t.Fatalf("pprof value %q is not an integer in the profile's unit", s)
	}
	return v
}

// TestLegacyPprofMatchesGoToolPprof uploads each of google/pprof's legacy
// test profiles through ingest.Parse and checks that the top table the
// /top page computes (flame.Top) has the flat and cum of go tool pprof -top
// for every function, on every sample type. Profiles without function names
// are compared per address (pprof -addresses), as viewer names a location
// it has not symbolized by its address.
func TestLegacyPprofMatchesGoToolPprof(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go command is needed for go tool pprof")
	}
	files, _ := filepath.Glob(filepath.Join(peersDir, "pprof", "*"))
	for _, file := range files {
		if filepath.Base(file) == "LICENSE" {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) { compareTop(t, file) })
	}
}

// TestGoDebugTextMatchesGoToolPprof writes this process's own runtime
// profiles as Go's ?debug=1 text (what /debug/pprof/heap?debug=1 serves)
// and compares viewer's top table with go tool pprof's on each.
func TestGoDebugTextMatchesGoToolPprof(t *testing.T) {
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	t.Cleanup(func() { runtime.SetBlockProfileRate(0); runtime.SetMutexProfileFraction(0) })
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				mu.Lock()
				time.Sleep(10 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	runtime.GC()
	for _, name := range []string{"goroutine", "heap", "threadcreate", "mutex", "block"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), name+".txt")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.Lookup(name).WriteTo(f, 1); err != nil {
				t.Fatal(err)
			}
			f.Close()
			compareTop(t, file)
		})
	}
}

// compareTop parses file as an upload would and compares flame.Top (what
// the /top page lists) with go tool pprof -top on every sample type.
func compareTop(t *testing.T, file string) {
	if testing.Short() {
		t.Skip("runs go tool pprof; not in -short")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, format, err := ingest.Parse(data, ingest.Limits{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if format != "legacy pprof" {
		t.Errorf("read as %q", format)
	}
	addresses := false
	for _, l := range p.Location {
		if len(l.Line) == 0 {
			addresses = true
		}
	}
	for si, st := range p.SampleType {
		want := pprofTop(t, file, si, st.Unit, addresses)
		rows, _ := flame.Top(p, si)
		t.Logf("%s: %d rows of go tool pprof, %d of viewer (addresses %v)", st.Type, len(want), len(rows), addresses)
		got := map[string]flatCum{}
		for _, r := range rows {
			k := r.Name
			if addresses {
				k = addressKey(t, p, r.Name)
			}
			g := got[k]
			g.flat += r.Flat
			g.cum += r.Cum
			got[k] = g
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s flat/cum %v, go tool pprof %v", st.Type, k, got[k], w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok && g != (flatCum{}) {
				t.Errorf("%s: %s flat/cum %v, not in go tool pprof's table", st.Type, k, g)
			}
		}
	}
}

// addressKey turns viewer's name of an unsymbolized location
// ("mapping+0xOFFSET" or "0xADDR") into pprof's 16-digit hex address.
func addressKey(t *testing.T, p *profile.Profile, name string) string {
	t.Helper()
	base, off, ok := strings.Cut(name, "+0x")
	if !ok {
		a, err := strconv.ParseUint(strings.TrimPrefix(name, "0x"), 16, 64)
		if err != nil {
			return name // a function name
		}
		return fmt.Sprintf("%016x", a)
	}
	o, err := strconv.ParseUint(off, 16, 64)
	if err != nil {
		return name
	}
	for _, m := range p.Mapping {
		if filepath.Base(m.File) == base && o >= m.Offset && o-m.Offset < m.Limit-m.Start {
			return fmt.Sprintf("%016x", o-m.Offset+m.Start)
		}
	}
	return name
}
