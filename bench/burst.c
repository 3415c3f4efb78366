/* bench/burst.c — a load that comes in bursts: on one CPU, busy for BUSY
 * milliseconds of every PERIOD, asleep the rest, until killed (or for
 * --seconds). It is not a benchmark but the disturbance some benchmarks
 * are run beside (bench/crowded.sh, bench/compare's --burst): a machine
 * shared with other programs, or a virtual one whose host now and then
 * runs something else on one of its cores, takes a core away in short
 * stretches like these, and a program whose threads wait for one another
 * at every join loses more of its speed than the share of the core taken.
 * On exit it prints one JSON line: the bursts run and the busy share of
 * the CPU they had (below BUSY / PERIOD when the CPU was shared).
 *
 *   bench/burst [--cpu N] [--busy 2] [--period 10] [--seconds S] */
#define _GNU_SOURCE /* sched_setaffinity */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void usage(FILE *f) {
  fprintf(f, "usage: bench/burst [--cpu N] [--busy MS] [--period MS] "
             "[--seconds S]\n"
             "  busy MS (default 2) of every period MS (default 10) on CPU N\n"
             "  (default: the last CPU this process may run on), until\n"
             "  killed or S seconds have passed\n");
}

/* A positive number from option `name`, else exit 2. */
static double positive(const char *name, const char *s) {
  char *end;
  double v;

  errno = 0;
  v = strtod(s, &end);
  if (errno || end == s || *end || !(v > 0)) {
    fprintf(stderr, "bench/burst: --%s wants a positive number, not '%s'\n",
            name, s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},
                                       {"busy", required_argument, 0, 'b'},
                                       {"period", required_argument, 0, 'p'},
                                       {"seconds", required_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  double busy_ms = 2, period_ms = 10, seconds = 0;
  int cpu = -1, o;
  cpu_set_t set;

  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'c': {
      char *end;
      long v;
      errno = 0;
      v = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || v < 0 || v >= CPU_SETSIZE) {
        fprintf(stderr, "bench/burst: --cpu wants a CPU number, not '%s'\n",
                optarg);
        return 2;
      }
      cpu = (int)v;
      break;
    }
    case 'b':
      busy_ms = positive("busy", optarg);
      break;
    case 'p':
      period_ms = positive("period", optarg);
      break;
    case 's':
      seconds = positive("seconds", optarg);
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc || busy_ms > period_ms) {
    if (busy_ms > period_ms)
      fprintf(stderr, "bench/burst: --busy %g is longer than --period %g\n",
              busy_ms, period_ms);
    usage(stderr);
    return 2;
  }
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    fprintf(stderr, "bench/burst: sched_getaffinity: %s\n", strerror(errno));
    return 1;
  }
  if (cpu < 0)
    for (int i = 0; i < CPU_SETSIZE; i++)
      if (CPU_ISSET(i, &set))
        cpu = i;
  if (cpu < 0 || !CPU_ISSET(cpu, &set)) {
    fprintf(stderr, "bench/burst: CPU %d is not one this process may run "
                    "on\n",
            cpu);
    return 1;
  }
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    fprintf(stderr, "bench/burst: cannot move to CPU %d: %s\n", cpu,
            strerror(errno));
    return 1;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);

  int64_t busy = (int64_t)(busy_ms * 1e6), period = (int64_t)(period_ms * 1e6);
  int64_t t0 = now_ns(), c0 = cpu_ns(), bursts = 0;
  int64_t end = seconds > 0 ? t0 + (int64_t)(seconds * 1e9) : INT64_MAX;
  volatile uint64_t spin = 0;
  /* Bursts start on the period's grid, so that one delayed by the CPU
   * being taken does not shift the ones after it. */
  for (int64_t start = t0; !stop && start < end; start += period) {
    while (!stop && now_ns() < start + busy)
      spin++;
    bursts++;
    int64_t next = start + period, t = now_ns();
    if (next > t) {
      struct timespec d = {(time_t)((next - t) / 1000000000),
                           (long)((next - t) % 1000000000)};
      while (nanosleep(&d, &d) != 0 && errno == EINTR && !stop)
        ;
    }
  }
  double wall = (double)(now_ns() - t0) * 1e-9;
  double used = (double)(cpu_ns() - c0) * 1e-9;
  printf("{\"bench\":\"burst\",\"cpu\":%d,\"busy_ms\":%g,\"period_ms\":%g,"
         "\"bursts\":%lld,\"seconds\":%.3f,\"cpu_share\":%.3f}\n",
         cpu, busy_ms, period_ms, (long long)bursts, wall,
         wall > 0 ? used / wall : 0.0);
  return 0;
}
