package webtest

import "testing"

// HelloC is the program whose source the view shows; compute's loop body
// is line 4 and its return line 6.
const HelloC = `int compute(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}
int main(void) { return compute(1000) & 1; }
`

// SourceProfile: main → compute at line 4 (30 ns, leaf) and line 6
// (10 ns, leaf), main → compute@4 → helper (5 ns). compute's lines: 4 has
// flat 30 and cum 35, 6 flat 10 cum 10.
func SourceProfile(t *testing.T, buildID, src string) []byte {
	return StacksPB(t, buildID, map[string]string{"compute": src, "main": src},
		"main@7;compute@4", 30, "main@7;compute@6", 10, "main@7;compute@4;helper", 5)
}
