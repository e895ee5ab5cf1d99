/* A private binary for the debuginfod server tests (web/debuginfod_test.go):
 * stripped, it has no names; its debug file, uploaded to viewer, gives
 * private_work and its lines back to gdb, perf and debuginfod-find. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long private_work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	printf("%ld\n", private_work(n));
	return 0;
}
