/* sigwork: a C workload that takes signals and reads the clock through the
 * vDSO, for the stack fidelity test's system-wide recording: a SIGALRM
 * handler (setitimer, every millisecond) does work of its own, so samples
 * land in it above glibc's signal trampoline (__restore_rt) and the
 * function the signal interrupted; the main loop calls clock_gettime,
 * which the vDSO answers (__vdso_clock_gettime). Usage: sigwork SECONDS */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long mix(unsigned long x, int n) {
  for (int i = 0; i < n; i++)
    x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

__attribute__((noinline)) static void in_handler(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  sink += mix(ts.tv_nsec, 150000);
}

static void on_alarm(int sig) {
  (void)sig;
  in_handler();
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void) {
  struct timespec ts;
  for (int i = 0; i < 100; i++) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sink += ts.tv_nsec;
  }
  sink += mix(sink, 2000);
}

int main(int argc, char **argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.3);
  struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
  sigaction(SIGALRM, &sa, 0);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  setitimer(ITIMER_REAL, &it, 0);
  while (now() < end)
    spin();
  return (int)(sink & 1);
}
