package pmcstat

import (
	"os"
	"strings"
	"testing"
)

// TestInvalidLinesCounted reads speedscope's pmcstat sample with a line
// that is no callgraph line: its stacks are read, the line is counted in
// a warning, comments are not.
func TestInvalidLinesCounted(t *testing.T) {
	f, err := os.Open("../../../testdata/peers/speedscope-formats/sample/profiles/pmcstat/simple-with-invalids.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "inst_retired.any" {
		t.Errorf("sample types %v, want the event inst_retired.any", p.SampleType)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	if total != 7447+1489+1 {
		t.Errorf("%d samples, want the 3 leaf paths' 8937", total)
	}
	if len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "skipped 1 lines") {
		t.Errorf("comments %q, want one warning of 1 skipped line", p.Comments)
	}
}
