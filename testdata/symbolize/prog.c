/* A small C program for symbolization tests: inlined calls nested two deep,
 * out-of-line functions, a function in a shared library (lib.c). */
#include <stdio.h>
#include <stdlib.h>

int lib_work(int n); /* lib.c */

#ifdef VARIANT
/* Gives each variant its own build ID. */
__attribute__((used)) const char variant[] = VARIANT;
#endif

static inline __attribute__((always_inline)) int square(int x)
{
	return x * x;
}

static inline __attribute__((always_inline)) int sum_squares(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i);
	return s;
}

__attribute__((noinline)) int compute(int n)
{
	int v = sum_squares(n);
	if (v % 7 == 3)
		v += sum_squares(v % 13);
	return v;
}

__attribute__((noinline)) long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long r = compute(n) + fib(n % 20);
#ifdef WITH_LIB
	r += lib_work(n);
#endif
	printf("%ld\n", r);
	return 0;
}
