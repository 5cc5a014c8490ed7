/* tests/bench/learn.sh's probe: the time of one syscall the learning filter notifies (getppid:
 * not in the baseline) and of one it lets pass (getpid: the baseline), N each, in ns per call.
 * Static, so it runs in the busybox bundle. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    syscall(SYS_getppid);
  double t1 = now_ns();
  for (long i = 0; i < n; i++)
    syscall(SYS_getpid);
  double t2 = now_ns();
  printf("notified_ns %.0f baseline_ns %.0f\n", (t1 - t0) / (double)n, (t2 - t1) / (double)n);
  return 0;
}
