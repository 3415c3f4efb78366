/* tests/devices/test_cpu_pieces.c — the CPU plugin's loop pieces
 * (plugins/devices/cpu/cpu_pieces.c, compiled in): every iteration of
 * [0, total) is handed out exactly once, in pieces that start at
 * multiples of the unit and are at most the grain long, a grain no
 * shorter than the least piece asked, for totals from 0 up, units
 * from 1 to 48, least pieces from 0 to 100 and 1 to 40 shares (more
 * than the slots); a walk takes its own share first; a part that takes nothing (a core that
 * never got to run) leaves its share to the others; and threads taking
 * at once, one of them slowed, still cover every iteration once and the
 * fast ones take more than their own share. */
#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cpu_pieces.h"

/* Walks of parts first..first+parts-1, one after another, each until it
 * gets nothing; counts how often each iteration is handed out. */
static void walk_all(cpu_pieces *p, int first, int parts, int64_t total,
                     int64_t unit, unsigned char *seen) {
  for (int t = first; t < first + parts; t++) {
    cpu_piece_walk w = cpu_pieces_walk(p, t);
    int64_t b, e;
    while (cpu_pieces_take(&w, &b, &e)) {
      assert_true(b >= 0 && b < e && e <= total);
      assert_int_equal(b % unit, 0);
      assert_true(e - b <= p->grain);
      for (int64_t i = b; i < e; i++)
        seen[i]++;
    }
    /* a finished walk stays finished */
    assert_int_equal(cpu_pieces_take(&w, &b, &e), 0);
  }
}

static void test_every_iteration_once(void **state) {
  (void)state;
  static const int64_t totals[] = {0, 1, 2, 7, 63, 64, 65, 255, 1000, 4099};
  static const int64_t units[] = {1, 2, 8, 48};
  static const int shares[] = {1, 2, 3, 7, 32, 40};
  static const int64_t least[] = {0, 1, 5, 100};
  cpu_pieces p;

  for (size_t a = 0; a < sizeof totals / sizeof *totals; a++)
    for (size_t u = 0; u < sizeof units / sizeof *units; u++)
      for (size_t s = 0; s < sizeof shares / sizeof *shares; s++)
        for (size_t l = 0; l < sizeof least / sizeof *least; l++) {
        int64_t total = totals[a];
        unsigned char *seen = calloc((size_t)total + 1, 1);
        assert_non_null(seen);
        cpu_pieces_init(&p, total, units[u], least[l], shares[s]);
        assert_true(p.shares >= 1 && p.shares <= CPU_PIECE_SLOTS);
        assert_int_equal(p.grain % units[u], 0);
        assert_true(p.grain >= least[l]);
        /* one part alone, then (fresh) every part of a team of 3 */
        walk_all(&p, 0, 1, total, units[u], seen);
        for (int64_t i = 0; i < total; i++)
          assert_int_equal(seen[i], 1);
        memset(seen, 0, (size_t)total + 1);
        cpu_pieces_init(&p, total, units[u], least[l], shares[s]);
        walk_all(&p, 1, 3, total, units[u], seen);
        for (int64_t i = 0; i < total; i++)
          assert_int_equal(seen[i], 1);
        free(seen);
      }
}

static void test_own_share_first_and_pieces_small(void **state) {
  (void)state;
  cpu_pieces p;
  int64_t b, e;

  /* 2 shares of 800: part 1 starts at 800, in pieces of 100 */
  cpu_pieces_init(&p, 1600, 4, 0, 2);
  assert_int_equal(p.grain, 100);
  cpu_piece_walk w = cpu_pieces_walk(&p, 1);
  assert_true(cpu_pieces_take(&w, &b, &e));
  assert_int_equal(b, 800);
  assert_int_equal(e, 900);
  /* part 0 still begins at 0 */
  cpu_piece_walk w0 = cpu_pieces_walk(&p, 0);
  assert_true(cpu_pieces_take(&w0, &b, &e));
  assert_int_equal(b, 0);
  /* part 1 drains its share, then goes on in part 0's */
  int64_t last = 0;
  int got = 1;
  while (cpu_pieces_take(&w, &b, &e) && b >= 800)
    got++, last = e;
  assert_int_equal(got, 8);
  assert_int_equal(last, 1600);
  assert_int_equal(b, 100); /* the piece after part 0's first */

  /* a least of 1000 (rounded up to 1000 in units of 4): each share of
   * 800 is one piece, the fixed split */
  cpu_pieces_init(&p, 1600, 4, 998, 2);
  assert_int_equal(p.grain, 1000);
  w = cpu_pieces_walk(&p, 1);
  assert_true(cpu_pieces_take(&w, &b, &e));
  assert_int_equal(b, 800);
  assert_int_equal(e, 1600);
  assert_true(cpu_pieces_take(&w, &b, &e));
  assert_int_equal(b, 0);
  assert_int_equal(e, 800);
  assert_int_equal(cpu_pieces_take(&w, &b, &e), 0);
}

/* ---- threads at once, one slowed --------------------------------------- */

typedef struct team {
  cpu_pieces p;
  int64_t total;
  _Atomic int *seen;
  int64_t taken[4];
} team;

typedef struct member {
  team *tm;
  int t;
} member;

static void *run_member(void *arg) {
  member *m = arg;
  cpu_piece_walk w = cpu_pieces_walk(&m->tm->p, m->t);
  int64_t b, e;

  while (cpu_pieces_take(&w, &b, &e)) {
    for (int64_t i = b; i < e; i++)
      atomic_fetch_add(&m->tm->seen[i], 1);
    m->tm->taken[m->t] += e - b;
    if (m->t == 0) { /* the slow core: a pause after every piece */
      struct timespec d = {0, 20000000};
      nanosleep(&d, NULL);
    }
  }
  return NULL;
}

static void test_threads_cover_once_and_help_the_slow_one(void **state) {
  (void)state;
  team tm;
  pthread_t th[4];
  member m[4];

  memset(&tm, 0, sizeof tm);
  tm.total = 40000;
  tm.seen = calloc((size_t)tm.total, sizeof *tm.seen);
  assert_non_null(tm.seen);
  cpu_pieces_init(&tm.p, tm.total, 16, 0, 4);
  for (int t = 0; t < 4; t++) {
    m[t].tm = &tm, m[t].t = t;
    assert_int_equal(pthread_create(&th[t], NULL, run_member, &m[t]), 0);
  }
  for (int t = 0; t < 4; t++)
    pthread_join(th[t], NULL);
  for (int64_t i = 0; i < tm.total; i++)
    assert_int_equal(atomic_load(&tm.seen[i]), 1);
  /* the slow part (8 pieces of its share at 20 ms each against
   * microseconds) ends with less than its fixed quarter */
  assert_true(tm.taken[0] < tm.total / 4);
  assert_int_equal(tm.taken[0] + tm.taken[1] + tm.taken[2] + tm.taken[3],
                   tm.total);
  free(tm.seen);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_iteration_once),
      cmocka_unit_test(test_own_share_first_and_pieces_small),
      cmocka_unit_test(test_threads_cover_once_and_help_the_slow_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
