package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"viewer/web/flame"
	"viewer/web/ingest"
)

// TestNodeCPUProfile records a real `node --cpu-prof` profile of a script
// that spins in spinA twice as long as in spinB, then idles, and reads
// it: both functions are under main with spinA about twice spinB (the
// weights are the gaps between samples, as DevTools shows them), the idle
// wait is not a frame, and the timeline spans the recording. The spins
// last 1.2 s and 0.6 s so that a sample gap stretched by a busy machine
// (a CI runner shared with other jobs) moves the ratio by little: at
// 0.6 s and 0.3 s one such gap once read 1.22 to 1.
func TestNodeCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("records node --cpu-prof for 2 s: skipped with -short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node (nodejs) is required: run make deps")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "spin.js")
	os.WriteFile(script, []byte(`
function spin(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
function spinA() { return spin(1200); }
function spinB() { return spin(600); }
function main() { spinA(); spinB(); }
main();
setTimeout(() => {}, 300);
`), 0o644)
	cmd := exec.Command("node", "--cpu-prof", "--cpu-prof-dir="+dir, "--cpu-prof-name=spin.cpuprofile", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --cpu-prof: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "spin.cpuprofile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, format, err := ingest.ParseFile(context.Background(), f, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if format != "V8 CPU profile" || p.SampleType[0].Unit != "nanoseconds" {
		t.Fatalf("read as %q, %v; want a V8 CPU profile in nanoseconds", format, p.SampleType)
	}
	// cum is each function's time on the stack; under says whether it is
	// always called from main.
	cum := map[string]int64{}
	under := map[string]bool{"spinA": true, "spinB": true}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
		seen := map[string]bool{}
		for i, l := range s.Location {
			name := l.Line[0].Function.Name
			if name == "(idle)" || name == "(root)" {
				t.Errorf("%s is a frame", name)
			}
			if !seen[name] {
				cum[name] += s.Value[0]
				seen[name] = true
			}
			if (name == "spinA" || name == "spinB") && (i+1 >= len(s.Location) || s.Location[i+1].Line[0].Function.Name != "main") {
				under[name] = false
			}
		}
	}
	ratio := float64(cum["spinA"]) / float64(cum["spinB"])
	if !under["spinA"] || !under["spinB"] || ratio < 1.5 || ratio > 2.7 {
		t.Errorf("spinA %d ns, spinB %d ns (ratio %.2f, called from main: %v); want about 2 to 1, both called from main", cum["spinA"], cum["spinB"], ratio, under)
	}
	if main := cum["main"]; main < cum["spinA"]+cum["spinB"] || total < 1600e6 {
		t.Errorf("main %d ns of %d ns; want it to hold both spins, 1.8 s", main, total)
	}
	tl := flame.BuildTimeline(p, 0)
	if tl.SpanNanos < 1600e6 || len(tl.Rows) != 1 {
		t.Errorf("the timeline spans %d ns in %d rows; want the recording's 1.8 s in one row", tl.SpanNanos, len(tl.Rows))
	}
}
