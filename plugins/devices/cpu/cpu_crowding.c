/* plugins/devices/cpu/cpu_crowding.c — whether other work crowds this
 * process's cores (cpu_crowding.h says why and how): the samplers of
 * /proc, the decision, and the state the kernels ask for. */
#include <config.h> /* _GNU_SOURCE: sched_getaffinity, CPU_ISSET */

#include "cpu_crowding.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cpu_crowd_decide(cpu_crowd *c, double wait, double idle, int64_t now_ns) {
  if (!c->crowded) {
    c->strikes = wait > CPU_CROWD_WAIT ? c->strikes + 1 : 0;
    if (c->strikes >= CPU_CROWD_STRIKES) {
      /* Back soon after leaving: hold twice as long as last time. */
      int relapse = c->changed_ns > 0 &&
                    now_ns - c->changed_ns < CPU_CROWD_RELAPSE_NS &&
                    c->hold_ns > 0;
      c->hold_ns = relapse ? c->hold_ns * 2 : CPU_CROWD_HOLD_NS;
      if (c->hold_ns > CPU_CROWD_HOLD_MAX_NS)
        c->hold_ns = CPU_CROWD_HOLD_MAX_NS;
      c->crowded = 1;
      c->strikes = 0;
      c->changed_ns = now_ns;
    }
  } else if (now_ns - c->changed_ns >= c->hold_ns && idle > CPU_CROWD_IDLE) {
    c->crowded = 0;
    c->changed_ns = now_ns;
  }
  return c->crowded;
}

#ifdef __linux__
/* The second number of a task's schedstat: nanoseconds waited on a run
 * queue. -1 when the file is missing (the task ended) or unreadable. */
static int64_t task_wait(const char *tid) {
  char path[64], buf[128];
  unsigned long long run, wait;
  FILE *f;
  int ok;

  if (snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid) >=
      (int)sizeof path)
    return -1;
  if (!(f = fopen(path, "r")))
    return -1;
  ok = fgets(buf, sizeof buf, f) != NULL &&
       sscanf(buf, "%llu %llu", &run, &wait) == 2;
  fclose(f);
  return ok ? (int64_t)wait : -1;
}

static int read_wait(int64_t *wait_ns) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int64_t sum = 0;
  int found = 0;

  if (!d)
    return -1;
  while ((e = readdir(d))) {
    int64_t w;
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if ((w = task_wait(e->d_name)) >= 0) {
      sum += w;
      found = 1;
    }
  }
  closedir(d);
  *wait_ns = sum;
  return found ? 0 : -1;
}

/* Idle and iowait of the CPUs in this thread's mask, from /proc/stat's
 * "cpuN" lines (in clock ticks). */
static int read_idle(int64_t *idle_ns) {
  cpu_set_t mask;
  char line[512];
  long hz = sysconf(_SC_CLK_TCK);
  int64_t ticks = 0;
  int found = 0;
  FILE *f;

  if (hz <= 0 || sched_getaffinity(0, sizeof mask, &mask) != 0)
    return -1;
  if (!(f = fopen("/proc/stat", "r")))
    return -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long v[5];
    int cpu;
    if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
      continue;
    if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
               &v[2], &v[3], &v[4]) != 6 ||
        cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask))
      continue;
    ticks += (int64_t)(v[3] + v[4]);
    found = 1;
  }
  fclose(f);
  *idle_ns = ticks * (1000000000 / hz);
  return found ? 0 : -1;
}

int cpu_crowd_read(int64_t *wait_ns, int64_t *idle_ns) {
  return read_wait(wait_ns) || read_idle(idle_ns) ? -1 : 0;
}

static int64_t now_coarse(void) {
  struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
#else
int cpu_crowd_read(int64_t *wait_ns, int64_t *idle_ns) {
  *wait_ns = *idle_ns = 0;
  return -1;
}
#endif

static atomic_int enabled, crowded;
#ifdef __linux__
/* The period's sampler: the thread that holds `sampling` owns the rest. */
static _Atomic int64_t next_sample_ns;
#define POLL_EVERY 16u
static atomic_uint polls;
static pthread_mutex_t sampling = PTHREAD_MUTEX_INITIALIZER;
static cpu_crowd state;
static int64_t last_ns, last_wait, last_idle;
static int broken; /* /proc could not say: never crowded */

static void sample(int64_t now) {
  int64_t wait, idle;

  if (broken)
    return;
  if (cpu_crowd_read(&wait, &idle)) {
    broken = 1;
    atomic_store_explicit(&crowded, 0, memory_order_relaxed);
    return;
  }
  if (last_ns > 0 && now > last_ns) {
    double span = (double)(now - last_ns);
    /* Threads that ended took their waits along: no less than nothing. */
    double w = wait > last_wait ? (double)(wait - last_wait) / span : 0.0;
    double i = idle > last_idle ? (double)(idle - last_idle) / span : 0.0;
    atomic_store_explicit(&crowded, cpu_crowd_decide(&state, w, i, now),
                          memory_order_relaxed);
  }
  last_ns = now;
  last_wait = wait;
  last_idle = idle;
}
#endif

void cpu_crowd_enable(int on) {
  atomic_store(&enabled, on != 0);
  if (!on)
    atomic_store(&crowded, 0);
}

int cpu_crowd_poll(void) {
#ifdef __linux__
  int64_t now, next;
  unsigned n;

  if (!atomic_load_explicit(&enabled, memory_order_relaxed))
    return 0;
  /* The clock is read every POLL_EVERY-th call: a kernel asks on every
   * run, a period holds thousands of runs. Racing threads may lose counts
   * (a plain load and store, not an atomic increment): that only moves the
   * next reading a little. */
  n = atomic_load_explicit(&polls, memory_order_relaxed);
  atomic_store_explicit(&polls, n + 1, memory_order_relaxed);
  if (n % POLL_EVERY != 0)
    return atomic_load_explicit(&crowded, memory_order_relaxed);
  now = now_coarse();
  next = atomic_load_explicit(&next_sample_ns, memory_order_relaxed);
  if (now >= next && pthread_mutex_trylock(&sampling) == 0) {
    /* Another thread may have sampled since the load above. */
    if (now >= atomic_load_explicit(&next_sample_ns, memory_order_relaxed)) {
      atomic_store_explicit(&next_sample_ns, now + CPU_CROWD_PERIOD_NS,
                            memory_order_relaxed);
      sample(now);
    }
    pthread_mutex_unlock(&sampling);
  }
#endif
  return atomic_load_explicit(&crowded, memory_order_relaxed);
}

int cpu_crowded(void) {
  return atomic_load_explicit(&crowded, memory_order_relaxed);
}
