/* A shared library for symbolization tests: its code is mapped at an offset. */
static inline __attribute__((always_inline)) int twice(int x)
{
	return 2 * x;
}

__attribute__((noinline)) int lib_helper(int x)
{
	return twice(x) + 1;
}

int lib_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += lib_helper(i) ^ twice(s);
	return s;
}
