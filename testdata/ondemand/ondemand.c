/* ondemand.c: the program whose profile the on-demand symbolization tests
 * upload. Its functions have distinctive names so a test can search the
 * flame graph for them once the debug info, fetched from debuginfod by
 * build ID, has named the raw addresses. VARIANT makes each build of the
 * benchmark's 20 binaries different, so each has its own build ID. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VARIANT
#define VARIANT 0
#endif

static unsigned table[256];

__attribute__((noinline)) unsigned ondemand_hash_block(const unsigned char *p, size_t n)
{
	unsigned h = 2166136261u ^ VARIANT;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u + table[p[i]];
	return h;
}

__attribute__((noinline)) void ondemand_render_frame(unsigned *out, int w, int h)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			out[y * w + x] = (unsigned)(x * 31 + y * 17 + VARIANT) ^ table[(x + y) & 255];
}

__attribute__((noinline)) int ondemand_parse_input(const char *s)
{
	int n = 0;
	while (*s)
		n = n * 10 + (*s++ - '0');
	return n;
}

__attribute__((noinline)) unsigned ondemand_run_workload(int rounds)
{
	static unsigned char buf[4096];
	static unsigned frame[64 * 64];
	unsigned acc = 0;
	for (int r = 0; r < rounds; r++) {
		memset(buf, r, sizeof buf);
		acc += ondemand_hash_block(buf, sizeof buf);
		ondemand_render_frame(frame, 64, 64);
		acc += frame[r & 4095];
	}
	return acc;
}

int main(int argc, char **argv)
{
	for (int i = 0; i < 256; i++)
		table[i] = (unsigned)i * 2654435761u;
	int rounds = ondemand_parse_input(argc > 1 ? argv[1] : "1000");
	printf("%u\n", ondemand_run_workload(rounds));
	return 0;
}
