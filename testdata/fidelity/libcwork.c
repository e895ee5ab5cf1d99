/* libcwork: a C workload whose stacks go through libc (qsort calling back
 * into a comparator that calls memcmp and strlen, plus snprintf), for the
 * stack fidelity test with libc6-dbg's debug info. Usage: libcwork SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 20000
static char buf[N][40];
static char *ptr[N];

static int cmp(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  size_t lx = strlen(x), ly = strlen(y);
  int c = memcmp(x, y, lx < ly ? lx : ly);
  return c ? c : (lx > ly) - (lx < ly);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void fill(unsigned seed) {
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245 + 12345;
    snprintf(buf[i], sizeof buf[i], "common-prefix-%u-%x", seed % 1000, seed);
    ptr[i] = buf[i];
  }
}

int main(int argc, char **argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.3);
  unsigned seed = 1;
  long sum = 0;
  while (now() < end) {
    fill(seed++);
    qsort(ptr, N, sizeof ptr[0], cmp);
    sum += ptr[0][14];
  }
  return (int)(sum & 1);
}
