/* tests/devices/test_cpu_crowding.c — the CPU plugin's sense of crowded
 * cores (plugins/devices/cpu/cpu_crowding.c, compiled in): the decision
 * over made-up periods, and the /proc samplers against threads that
 * really wait for one CPU. */
#include <config.h>

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "cpu_crowding.h"

#define MS ((int64_t)1000 * 1000)

/* Periods of a quiet training (its threads wait about a tenth of a core,
 * the machine is busy) never make it crowded. */
static void test_a_quiet_process_stays_uncrowded(void **state) {
  cpu_crowd c = {0};
  (void)state;
  for (int i = 1; i <= 100; i++)
    assert_int_equal(
        cpu_crowd_decide(&c, 0.1 + 0.002 * (i % 10), 0.0, i * 200 * MS), 0);
  assert_int_equal(cpu_crowd_decide(&c, CPU_CROWD_WAIT, 0.0, 101 * 200 * MS),
                   0);
  assert_int_equal(cpu_crowd_decide(&c, CPU_CROWD_WAIT, 0.0, 102 * 200 * MS),
                   0);
}

/* A single period of waiting (a program starting: plans made, data
 * decoded) is not crowding; the periods over the bar must come in a row. */
static void test_one_busy_period_is_not_crowding(void **state) {
  cpu_crowd c = {0};
  int64_t t = 0;
  (void)state;
  for (int i = 0; i < 10; i++) {
    for (int k = 1; k < CPU_CROWD_STRIKES; k++)
      assert_int_equal(cpu_crowd_decide(&c, 0.9, 0.0, t += 200 * MS), 0);
    assert_int_equal(cpu_crowd_decide(&c, 0.1, 0.0, t += 200 * MS), 0);
  }
}

/* Crowded after CPU_CROWD_STRIKES periods of waiting in a row. */
static int64_t crowd(cpu_crowd *c, int64_t t) {
  for (int k = 1; k < CPU_CROWD_STRIKES; k++)
    assert_int_equal(cpu_crowd_decide(c, 0.9, 0.0, t += 200 * MS), 0);
  assert_int_equal(cpu_crowd_decide(c, 0.9, 0.0, t += 200 * MS), 1);
  return t;
}

/* Crowded on a period of waiting; held for the hold even if a core comes
 * free; then left only once a core is idle. */
static void test_crowding_holds_then_waits_for_an_idle_core(void **state) {
  cpu_crowd c = {0};
  int64_t t = crowd(&c, 1000 * MS);
  (void)state;
  assert_int_equal(c.hold_ns, CPU_CROWD_HOLD_NS);
  /* Inside the hold: a free core changes nothing. */
  assert_int_equal(cpu_crowd_decide(&c, 0.0, 1.0, t + CPU_CROWD_HOLD_NS / 2),
                   1);
  /* After it, busy CPUs keep it crowded... */
  assert_int_equal(cpu_crowd_decide(&c, 0.0, 0.2, t + 2 * CPU_CROWD_HOLD_NS),
                   1);
  assert_int_equal(
      cpu_crowd_decide(&c, 0.0, CPU_CROWD_IDLE, t + 3 * CPU_CROWD_HOLD_NS), 1);
  /* ...until a core is idle. */
  assert_int_equal(cpu_crowd_decide(&c, 0.0, 0.9, t + 4 * CPU_CROWD_HOLD_NS),
                   0);
  assert_int_equal(c.changed_ns, t + 4 * CPU_CROWD_HOLD_NS);
}

/* Coming back soon after leaving doubles the hold, up to its bound; a
 * long calm starts it over. */
static void test_relapses_double_the_hold(void **state) {
  cpu_crowd c = {0};
  int64_t t = crowd(&c, 1000 * MS), hold = CPU_CROWD_HOLD_NS;
  (void)state;
  for (int i = 0; i < 12; i++) {
    t += c.hold_ns;
    assert_int_equal(cpu_crowd_decide(&c, 0.0, 1.0, t), 0);
    t = crowd(&c, t);
    hold = hold * 2 > CPU_CROWD_HOLD_MAX_NS ? CPU_CROWD_HOLD_MAX_NS : hold * 2;
    assert_int_equal(c.hold_ns, hold);
  }
  assert_int_equal(c.hold_ns, CPU_CROWD_HOLD_MAX_NS);
  t += c.hold_ns;
  assert_int_equal(cpu_crowd_decide(&c, 0.0, 1.0, t), 0);
  t = crowd(&c, t + CPU_CROWD_RELAPSE_NS);
  assert_int_equal(c.hold_ns, CPU_CROWD_HOLD_NS);
}

#ifdef __linux__
static atomic_int stop;

static void *spin(void *arg) {
  cpu_set_t one;
  (void)arg;
  CPU_ZERO(&one);
  CPU_SET(*(int *)arg, &one);
  (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  while (!atomic_load_explicit(&stop, memory_order_relaxed))
    ;
  return NULL;
}

/* Two threads busy on one CPU for 300 ms wait for it about half that
 * time each: the process's waits grow by far more than a quiet period's. */
static void test_the_samplers_see_threads_waiting_for_a_cpu(void **state) {
  int64_t wait0, idle0, wait1, idle1;
  cpu_set_t mask;
  pthread_t th[2];
  int cpu = -1;
  struct timespec pause = {0, 300 * 1000 * 1000};
  (void)state;

  if (cpu_crowd_read(&wait0, &idle0)) {
    skip(); /* no schedstat in this kernel, or no /proc */
    return;
  }
  assert_true(wait0 >= 0 && idle0 >= 0);
  assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
  for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
    if (CPU_ISSET(i, &mask))
      cpu = i;
  assert_true(cpu >= 0);
  atomic_store(&stop, 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, spin, &cpu), 0);
  nanosleep(&pause, NULL);
  assert_int_equal(cpu_crowd_read(&wait1, &idle1), 0);
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  assert_true(wait1 - wait0 >= 60 * MS);
  assert_true(idle1 >= idle0);
}
#endif

/* Switched off, the process is never crowded, whatever the machine does. */
static void test_switched_off_it_is_never_crowded(void **state) {
  (void)state;
  cpu_crowd_enable(0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(cpu_crowd_poll(), 0);
  assert_int_equal(cpu_crowded(), 0);
  cpu_crowd_enable(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_quiet_process_stays_uncrowded),
      cmocka_unit_test(test_one_busy_period_is_not_crowding),
      cmocka_unit_test(test_crowding_holds_then_waits_for_an_idle_core),
      cmocka_unit_test(test_relapses_double_the_hold),
#ifdef __linux__
      cmocka_unit_test(test_the_samplers_see_threads_waiting_for_a_cpu),
#endif
      cmocka_unit_test(test_switched_off_it_is_never_crowded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
