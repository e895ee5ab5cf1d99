/* An inlined function with two copies, for the annotate view's inline
 * modes (symbolize/annotate/profile_test.go): mix is inlined into first and
 * into second, which are not inlined. Built by build.sh. */
#include <stdlib.h>

static inline __attribute__((always_inline)) long mix(const long *p, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += p[i] * 3;
	return s ^ (s >> 7);
}

__attribute__((noinline)) long first(const long *p, int n) { return mix(p, n) + 1; }

__attribute__((noinline)) long second(const long *p, int n) { return mix(p, n + 1) * 5; }

int main(int argc, char **argv)
{
	long a[64];
	for (int i = 0; i < 64; i++)
		a[i] = i;
	long r = 0;
	long loops = argc > 1 ? atol(argv[1]) : 1;
	for (long k = 0; k < loops; k++) {
		a[k & 63] += r & 1; /* the calls cannot be hoisted out of the loop */
		r += first(a, 63) + second(a, 62);
	}
	return (int)(r & 1);
}
