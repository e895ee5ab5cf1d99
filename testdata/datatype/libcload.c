/* Load for the annotate benchmark (annotate-bench.sh): most of its time is
 * in glibc's string functions, so its perf.data has a hot libc function. */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long loops = argc > 1 ? atol(argv[1]) : 1000;
	static char buf[1 << 16], dst[1 << 16];
	memset(buf, 'x', sizeof buf - 1);
	volatile size_t sink = 0;
	for (long i = 0; i < loops; i++) {
		memset(dst, (int)i, sizeof dst);
		sink += strlen(buf);
		memcpy(dst, buf, sizeof buf);
	}
	return (int)(sink & 1);
}
