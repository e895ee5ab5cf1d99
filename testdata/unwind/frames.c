// frames is the unwinder's .debug_frame test binary: built without unwind
// tables, its functions are described only by .debug_frame, which build.sh
// moves to a separate debug file (frames.debug) as distributions do.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static long leaf(long *v, int n) {
	long s = 0;
	for (int i = 0; i < n; i++)
		s += v[i] * (i + 1);
	return s;
}

__attribute__((noinline)) static long middle(int n) {
	long buf[64];
	for (int i = 0; i < 64; i++)
		buf[i] = n + i;
	return leaf(buf, n % 64) + buf[n % 64];
}

__attribute__((noinline)) static long saves(int a, int b, int c) {
	long x = middle(a), y = middle(b), z = middle(c);
	return x * y + z + middle(a + b + c);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 3;
	printf("%ld\n", saves(n, n + 1, n + 2));
	return 0;
}
