package webtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// BrowserProfile is a small CPU profile whose shares are easy to check by
// hand. Stacks (root first) and their cpu values in ms / sample counts:
//
//	main.main > main.work > main.parse                      30 ms / 3
//	main.main > main.work > main.render                     20 ms / 2
//	main.main > main.parse                                  10 ms / 1
//	main.main > main.render > main.parse > runtime.mallocgc 25 ms / 2
//	main.main > runtime.mallocgc                            15 ms / 1
//
// Total 100 ms / 9 samples. main.parse: 30+10+25 = 65%; "parse|render"
// counts the parse nested under render once: 30+20+10+25 = 85%.
func BrowserProfile(t *testing.T) []byte {
	t.Helper()
	fns := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name, Filename: "main.go"}
		fns[name] = f
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(locs) + 1), Address: 0x1000 + uint64(len(locs))*16, Line: []profile.Line{{Function: f, Line: int64(10 + len(locs))}}}
		locs[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	add := func(count, ms int64, rootFirst ...string) {
		s := &profile.Sample{Value: []int64{count, ms * 1_000_000}}
		for i := len(rootFirst) - 1; i >= 0; i-- {
			s.Location = append(s.Location, loc(rootFirst[i]))
		}
		p.Sample = append(p.Sample, s)
	}
	add(3, 30, "main.main", "main.work", "main.parse")
	add(2, 20, "main.main", "main.work", "main.render")
	add(1, 10, "main.main", "main.parse")
	add(2, 25, "main.main", "main.render", "main.parse", "runtime.mallocgc")
	add(1, 15, "main.main", "runtime.mallocgc")
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// BenchProfile returns the benchmark profile: $VIEWER_BENCH_PROFILE when set,
// else one made by testdata/bench/genprofile (200k samples, 50k stacks).
func BenchProfile(b *testing.B) (string, []byte) {
	b.Helper()
	path := os.Getenv("VIEWER_BENCH_PROFILE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "bench.pb.gz")
		GenProfile(b, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, data
}

// GenProfile writes to path the profile testdata/bench/genprofile makes
// with args (by default 200k samples, 50k stacks), run in the repository's
// top directory.
func GenProfile(tb testing.TB, path string, args ...string) {
	tb.Helper()
	cmd := exec.Command("go", append([]string{"run", "./testdata/bench/genprofile", "-o", path}, args...)...)
	cmd.Dir = Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go run ./testdata/bench/genprofile: %v\n%s", err, out)
	}
}

// WideStacks is n call paths main;workN;leafN with distinct names, so that
// every JSON body is well over the 1 KiB at which responses are gzipped.
func WideStacks(n, scale int) []any {
	var st []any
	for i := range n {
		st = append(st, fmt.Sprintf("main;pkg.work%d;pkg.leaf%d", i%40, i), 1+(i*scale)%17)
	}
	return st
}

// StacksPB is a gzipped pprof profile of "main;a;b" stacks (root first)
// with cpu values in nanoseconds. Every function gets the file and line
// given in lines (name → "file:line"), if any, and lives in /bin/app with
// build ID buildID.
func StacksPB(t testing.TB, buildID string, lines map[string]string, stacks ...any) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", BuildID: buildID, HasFunctions: true}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1,
		Mapping: []*profile.Mapping{m},
	}
	locs := map[string]*profile.Location{}
	fns := map[string]*profile.Function{}
	loc := func(frame string) *profile.Location {
		if l, ok := locs[frame]; ok {
			return l
		}
		name, lineNo := frame, int64(0)
		if i := strings.IndexByte(frame, '@'); i > 0 { // "fn@12": fn at line 12
			name = frame[:i]
			n, _ := json.Number(frame[i+1:]).Int64()
			lineNo = n
		}
		f := fns[name]
		if f == nil {
			f = &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name}
			if fl, ok := lines[name]; ok {
				f.Filename = fl
			}
			fns[name] = f
			p.Function = append(p.Function, f)
		}
		id := uint64(len(locs) + 1)
		l := &profile.Location{ID: id, Mapping: m, Address: 0x400000 + id*16, Line: []profile.Line{{Function: f, Line: lineNo}}}
		p.Location = append(p.Location, l)
		locs[frame] = l
		return l
	}
	for i := 0; i < len(stacks); i += 2 {
		names := strings.Split(stacks[i].(string), ";")
		s := &profile.Sample{Value: []int64{int64(stacks[i+1].(int))}}
		for j := len(names) - 1; j >= 0; j-- {
			s.Location = append(s.Location, loc(names[j]))
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
