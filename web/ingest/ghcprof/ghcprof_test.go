package ghcprof

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/jsonprof"
)

func parseFile(t *testing.T, name string) *profile.Profile {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// byStack sums sample type si per stack of function names, root first.
func byStack(p *profile.Profile, si int) map[string]float64 {
	out := map[string]float64{}
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			names = append(names, s.Location[i].Line[0].Function.Name)
		}
		if s.Value[si] > 0 {
			out[strings.Join(names, ";")] += float64(s.Value[si])
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// tvd is the total variation distance between the stack shares of a and b.
func tvd(a, b map[string]float64) float64 {
	ta, tb := total(a), total(b)
	d := 0.0
	for k, v := range a {
		d += math.Abs(v/ta - b[k]/tb)
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d += v / tb
		}
	}
	return d / 2
}

// TestExactReport checks a report written with +RTS -P against GHC's own
// totals: its ticks (of 1 ms) and bytes per cost centre stack sum to the
// report's total time and total alloc lines, and make, called from
// sumDepth's lambda, is a stack of the tree with its file and line.
func TestExactReport(t *testing.T) {
	p := parseFile(t, "testdata/bt-P.prof")
	time, alloc := byStack(p, 0), byStack(p, 1)
	if got := total(time); got != 58e6 {
		t.Errorf("time sums to %v ns, want the report's 58 ticks of 1000 us", got)
	}
	if got := total(alloc); got != 55982488 {
		t.Errorf("alloc sums to %v bytes, want the report's total alloc, 55,982,488", got)
	}
	const mk = "MAIN.MAIN;Main.main;Main.main.\\;Main.sumDepth;Main.sumDepth.\\;Main.make"
	if time[mk] == 0 || alloc[mk] == 0 {
		t.Errorf("no time or alloc on %s; stacks: %v", mk, alloc)
	}
	for _, fn := range p.Function {
		if fn.Name == "Main.make" && (fn.Filename != "bt.hs" || fn.StartLine != 10) {
			t.Errorf("Main.make is at %s:%d, want bt.hs:10 (its SRC)", fn.Filename, fn.StartLine)
		}
	}
}

// TestReportsAgree checks the three reports of one program against each
// other: the percentages of a -p report and the JSON report (read by
// jsonprof as speedscope reads it) give the stacks of the -P report with
// the same shares of allocation (exact but for I/O buffers and GHC's 0.1%
// rounding). Time is sampled, and the runs differ (the JSON report also
// counts GC's ticks): the -p report's time is checked against its own
// %time column, make's 37.5% of the run.
func TestReportsAgree(t *testing.T) {
	exact := parseFile(t, "testdata/bt-P.prof")
	pct := parseFile(t, "testdata/bt-p.prof")
	data, err := os.ReadFile("testdata/bt-pj.prof")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jsonprof.ParseGHC(data, jsonprof.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *profile.Profile
	}{{"-p", pct}, {"-pj", js}} {
		if d := tvd(byStack(c.p, 1), byStack(exact, 1)); d > 0.01 {
			t.Errorf("%s: allocation shares differ from -P's by TVD %.4f", c.name, d)
		}
	}
	time := byStack(pct, 0)
	const mk = "MAIN.MAIN;Main.main;Main.main.\\;Main.sumDepth;Main.sumDepth.\\;Main.make"
	if share := time[mk] / total(time); math.Abs(share-0.375) > 0.001 {
		t.Errorf("make has %.4f of the -p report's time, want its %%time, 37.5%%", share)
	}
}

// TestBadReports checks the errors for reports that cannot be read.
func TestBadReports(t *testing.T) {
	head := "\tTime and Allocation Profiling Report  (Final)\n\n"
	for in, want := range map[string]string{
		head + "\ttotal time  =  0.01 secs   (10 ticks @ 1000 us, 1 processor)\n":                                                 "no cost centre tree",
		head + "COST CENTRE MODULE SRC no. entries %time %alloc %time %alloc\n\nMAIN MAIN <built-in> 1 0 10.0 20.0 100.0 100.0\n": "no total time",
		head + "COST CENTRE MODULE SRC no. entries ticks bytes\n\nMAIN MAIN <built-in> 1 0 x y\n":                                 "could be read",
	} {
		if _, err := Parse(strings.NewReader(in), Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.60q) = %v; want an error saying %q", in, err, want)
		}
	}
}
