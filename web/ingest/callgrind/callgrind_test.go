package callgrind

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// program calls spin twice as long from heavy as from light, and
// recurses in fib under light.
const program = `#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) static unsigned long fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) static void heavy(void) { spin(200000); }
__attribute__((noinline)) static void light(void) { spin(100000); sink += fib(15); }
int main(void) { heavy(); light(); char *p = malloc(10); sink += (unsigned long)p; free(p); return 0; }
`

func onStack(s *profile.Sample, fn string) bool {
	for _, l := range s.Location {
		if l.Line[0].Function.Name == fn {
			return true
		}
	}
	return false
}

func names(s *profile.Sample) []string {
	var out []string
	for _, l := range s.Location {
		out = append(out, l.Line[0].Function.Name)
	}
	return out
}

// TestCircularCostWorkBounded: a file whose recursion passes its whole
// cost around, with no self cost to end it, takes every visit the call
// tree is given; 99 bytes took 8M visits (1.5 s) and FuzzCallgrind
// stalled on such inputs. Its visits are now in proportion to its bytes,
// and its cost is all kept.
func TestCircularCostWorkBounded(t *testing.T) {
	in := "events: Ir\nfn=main\n0 1\ncfn=a\ncalls=1 0\n0 100\nfn=a\ncfn=b\ncalls=1 0\n0 100\nfn=b\ncfn=a\ncalls=1 0\n0 100\n"
	rd, err := read(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rd.profile(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rd.visits > 2*minVisits { // the paths' ends take as many again
		t.Errorf("%d bytes made %d visits; want at most %d", len(in), rd.visits, 2*minVisits)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	if total != 101 {
		t.Errorf("the profile's total is %d; want main's 101 (1 self, 100 through a)", total)
	}
}
