/* deeprec: a recursion DEPTH frames deep (320 by default) that does its work
 * at the bottom, for the stack fidelity test of stacks deeper than 256
 * frames (--call-graph=dwarf,32768 copies them whole). Usage: deeprec SECONDS */
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long spin(unsigned long x) {
  for (int i = 0; i < 200000; i++)
    x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

/* descend calls itself depth times; the volatile keeps each call a real
 * frame (no tail call, no folding into a loop). */
__attribute__((noinline)) static unsigned long descend(int depth, unsigned long x) {
  volatile unsigned long keep = x;
  if (depth == 0)
    return spin(keep);
  return descend(depth - 1, keep + 1) ^ keep;
}

int main(int argc, char **argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.3);
  unsigned long sum = 0;
  while (now() < end)
    sum += descend(320, sum);
  return (int)(sum & 1);
}
