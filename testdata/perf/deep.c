// deep burns CPU at the bottom of a 15-level call chain, partly in libm and
// partly in the kernel (write to /dev/null), so perf recordings of it have
// long frame-pointer call chains through the program, libm and the kernel.
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;
static int devnull;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void leaf(int i) {
	double x = 0;
	for (int k = 0; k < 2000; k++)
		x += cos(k * 0.001 + i);
	sink += x;
	if (i % 4 == 0) {
		char buf[64] = {0};
		for (int k = 0; k < 20; k++)
			if (write(devnull, buf, sizeof buf) < 0)
				abort();
	}
}

__attribute__((noinline)) static void level(int depth, int i) {
	if (depth == 0) {
		leaf(i);
		return;
	}
	level(depth - 1, i);
	sink += depth; // keep the call from becoming a tail call
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 0.2;
	devnull = open("/dev/null", O_WRONLY);
	double end = now() + secs;
	for (int i = 0; now() < end; i++)
		level(13, i);
	return 0;
}
