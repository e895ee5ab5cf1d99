package instruments

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestSelfWeightColumn reads Instruments 16's deep copy, whose rows also
// give each node's self weight: a function's self time in the profile,
// made from the inclusive weights, is the file's within their rounding
// (three significant digits) for every function over 1% of the total.
func TestSelfWeightColumn(t *testing.T) {
	name := "../../../testdata/peers/speedscope-formats/sample/profiles/Instruments/16.0/simple-time-profile-deep-copy.txt"
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	total := 0.0
	for _, s := range p.Sample {
		got[s.Location[0].Line[0].Function.Name] += float64(s.Value[0])
		total += float64(s.Value[0])
	}
	want := map[string]float64{}
	data, _ := os.ReadFile(name)
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Scan()
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		m := weightRe.FindStringSubmatch(cols[1])
		if m == nil {
			t.Fatalf("self weight %q", cols[1])
		}
		var v float64
		for _, c := range m[1] {
			if c >= '0' && c <= '9' {
				v = v*10 + float64(c-'0')
			}
		}
		if i := strings.IndexByte(m[1], '.'); i >= 0 {
			for range len(m[1]) - i - 1 {
				v /= 10
			}
		}
		want[strings.TrimSpace(cols[2])] += v * units[m[2]].factor
	}
	checked := 0
	for fn, w := range want {
		if w < total/100 {
			continue
		}
		checked++
		if d := got[fn] - w; d > w*0.02 || -d > w*0.02 {
			t.Errorf("%s: self %.0f ns, the file's Self Weight %.0f ns", fn, got[fn], w)
		}
	}
	if checked < 4 {
		t.Errorf("%d functions checked; want delta, alpha, beta, gamma at least", checked)
	}
}
