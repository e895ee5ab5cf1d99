package webtest

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
