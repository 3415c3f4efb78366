/* tests/devices/test_cpu_plans.c — the CPU plugin's oneDNN plans and their
 * per-node cache (plugins/devices/cpu/cpu_dnnl.c, compiled into this
 * program with the core's host table): one plan per shape, a second plan
 * for a shape in use, the bound with least-recently-used eviction, shapes
 * oneDNN refuses kept as fallbacks, other build failures reported, weights
 * reordered again exactly when their bytes change, accumulating outputs
 * zeroed. The kernels that use them are tested in test_cpu_kernels.c. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cpu_kernels.h"
#include "base/log.h"
#include "host/host.h"
#include "base/status_internal.h"

/* The helper layer's host table, which the plans reach the core through. */
WFX_HOST_DEFINE(1, 0);

/* What cpu_kernels.c and cpu_lazy.c provide the plans in the plugin (the
 * test links oneDNN itself). */
static dnnl_engine_t engine;

dnnl_engine_t cpu_dnnl_engine(void) { return engine; }
int cpu_dnnl_ready(wf_status *st) {
  (void)st;
  return 0;
}
void cpu_omp_threads(void) {}
void cpu_omp_threads_n(int32_t n) { (void)n; }
/* The team width the cache asks for; a test changes it as crowding of the
 * cores would. */
static int width = 2;
int cpu_team_width(void) { return width; }

static int setup(void **state) {
  wfx_host = wf__host();
  return dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success ? 0 : -1;
}

static int teardown(void **state) {
  dnnl_engine_destroy(engine);
  return 0;
}

/* A build callback that counts its calls and answers `code`. */
typedef struct builder {
  int calls;
  int code;
} builder;

static int count_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  builder *b = arg;

  b->calls++;
  if (b->code)
    return wf_status_set(st, b->code, "build refused (code %d)", b->code);
  return 0;
}

static cpu_key key_of(int64_t v) {
  cpu_key k = {0};
  cpu_key_word(&k, v);
  return k;
}

static void test_cache_builds_one_plan_per_shape(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {0};
  cpu_key k1 = key_of(1), k2 = key_of(2);
  cpu_dnnl_plan *p, *q;

  cpu_dnnl_cache_init(&c);
  assert_non_null(p = cpu_dnnl_cache_get(&c, &k1, count_build, &b, st));
  cpu_dnnl_cache_put(&c, p);
  assert_ptr_equal(q = cpu_dnnl_cache_get(&c, &k1, count_build, &b, st), p);
  cpu_dnnl_cache_put(&c, q);
  assert_int_equal(b.calls, 1);
  assert_non_null(q = cpu_dnnl_cache_get(&c, &k2, count_build, &b, st));
  assert_ptr_not_equal(q, p);
  cpu_dnnl_cache_put(&c, q);
  assert_int_equal(b.calls, 2);
  assert_int_equal(c.n, 2);
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

/* A plan's primitives keep the team they were made for: while the cores
 * are crowded (width 1) the cache builds plans for one thread, and gives
 * the earlier ones back once the width is back. */
static void test_cache_keeps_plans_per_team_width(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {0};
  cpu_key k = key_of(5);
  cpu_dnnl_plan *p, *q, *r;

  cpu_dnnl_cache_init(&c);
  width = 2;
  assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_int_equal(p->threads, 2);
  cpu_dnnl_cache_put(&c, p);
  width = 1;
  assert_non_null(q = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_ptr_not_equal(q, p);
  assert_int_equal(q->threads, 1);
  cpu_dnnl_cache_put(&c, q);
  assert_int_equal(b.calls, 2);
  width = 2;
  assert_ptr_equal(r = cpu_dnnl_cache_get(&c, &k, count_build, &b, st), p);
  cpu_dnnl_cache_put(&c, r);
  width = 1;
  assert_ptr_equal(r = cpu_dnnl_cache_get(&c, &k, count_build, &b, st), q);
  cpu_dnnl_cache_put(&c, r);
  assert_int_equal(b.calls, 2);
  width = 2;
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

/* Concurrent steps on one node never share a plan. */
static void test_cache_gives_a_shape_in_use_a_second_plan(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {0};
  cpu_key k = key_of(7);
  cpu_dnnl_plan *p, *q, *r;

  cpu_dnnl_cache_init(&c);
  assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_non_null(q = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_ptr_not_equal(p, q);
  assert_int_equal(b.calls, 2);
  cpu_dnnl_cache_put(&c, q);
  assert_ptr_equal(r = cpu_dnnl_cache_get(&c, &k, count_build, &b, st), q);
  cpu_dnnl_cache_put(&c, r);
  cpu_dnnl_cache_put(&c, p);
  assert_int_equal(b.calls, 2);
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

/* More shapes than the bound: the least recently used idle plan goes; a
 * full cache whose plans are all in use hands out one it frees on put. */
static void test_cache_is_bounded_least_recently_used_out(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {0};
  cpu_dnnl_plan *held[WF_DNNL_CACHE_MAX], *p;

  cpu_dnnl_cache_init(&c);
  for (int i = 0; i < WF_DNNL_CACHE_MAX; i++) {
    cpu_key k = key_of(i);
    assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
    cpu_dnnl_cache_put(&c, p);
  }
  /* Touch key 0, so that key 1 is the oldest. */
  {
    cpu_key k = key_of(0);
    p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st);
    cpu_dnnl_cache_put(&c, p);
  }
  assert_int_equal(b.calls, WF_DNNL_CACHE_MAX);
  {
    cpu_key k = key_of(100);
    p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st);
    cpu_dnnl_cache_put(&c, p);
  }
  assert_int_equal(c.n, WF_DNNL_CACHE_MAX);
  for (int i = 0; i < 2; i++) {
    cpu_key k = key_of(i);
    int before = b.calls;
    p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st);
    cpu_dnnl_cache_put(&c, p);
    /* key 0 stayed; key 1 was evicted and is built again. */
    assert_int_equal(b.calls - before, i == 1);
  }
  /* Every plan busy: the next shape's plan lives for one call. */
  for (int i = 0; i < WF_DNNL_CACHE_MAX; i++) {
    cpu_key k = key_of(1000 + i);
    assert_non_null(held[i] = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  }
  {
    cpu_key k = key_of(5000);
    assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
    cpu_dnnl_cache_put(&c, p); /* freed: ASan would see a leak otherwise */
  }
  assert_int_equal(c.n, WF_DNNL_CACHE_MAX);
  for (int i = 0; i < WF_DNNL_CACHE_MAX; i++)
    cpu_dnnl_cache_put(&c, held[i]);
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

static void test_cache_keeps_a_refused_shape_as_a_fallback(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {.code = WF_UNIMPLEMENTED};
  cpu_key k = key_of(3);
  cpu_dnnl_plan *p;

  cpu_dnnl_cache_init(&c);
  assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_true(p->fallback);
  assert_int_equal(wf_status_code(st), WF_OK);
  cpu_dnnl_cache_put(&c, p);
  assert_non_null(p = cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_true(p->fallback);
  assert_int_equal(b.calls, 1);
  cpu_dnnl_cache_put(&c, p);
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

static void test_cache_reports_other_build_failures(void **state) {
  wf_status *st = wf_status_new();
  cpu_dnnl_cache c;
  builder b = {.code = WF_RESOURCE_EXHAUSTED};
  cpu_key k = key_of(4);

  cpu_dnnl_cache_init(&c);
  assert_null(cpu_dnnl_cache_get(&c, &k, count_build, &b, st));
  assert_int_equal(wf_status_code(st), WF_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(wf_status_message(st), "build refused"));
  assert_int_equal(c.n, 0);
  cpu_dnnl_cache_deinit(&c);
  wf_status_free(st);
}

/* Weights (4, 3) stored row-major, wanted column-major: the plan keeps the
 * reordered copy while the source's bytes stay, and reorders again when
 * they change in place. */
static void test_weights_are_reordered_again_only_when_their_bytes_change(
    void **state) {
  wf_status *st = wf_status_new();
  const int64_t dims[2] = {4, 3};
  static const int col_major[2] = {1, 0};
  dnnl_memory_desc_t user, want;
  float w[12];
  float *inner;
  cpu_dnnl_plan *p;
  void *data[1] = {w};

  for (int i = 0; i < 12; i++)
    w[i] = (float)i;
  assert_int_equal(cpu_dnnl_md(&user, 2, dims, NULL, st), 0);
  assert_int_equal(cpu_dnnl_md(&want, 2, dims, col_major, st), 0);
  assert_int_equal(cpu_dnnl_plan_new(&p, st), 0);
  assert_int_equal(
      cpu_dnnl_plan_mem(p, 0, &user, &want, WF_DNNL_WEIGHTS, st), 0);
  assert_int_equal(cpu_dnnl_plan_finish(p, st), 0);
  inner = p->mems[0].buf;
  assert_non_null(inner);
  assert_int_equal(cpu_dnnl_plan_run(p, data, NULL, "test", st), 0);
  /* w[r][c] at inner[c * 4 + r] */
  assert_true(inner[1 * 4 + 2] == w[2 * 3 + 1]);
  /* Same bytes: the copy is kept (a mark left in it survives). */
  inner[0] = -1.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, NULL, "test", st), 0);
  assert_true(inner[0] == -1.0f);
  /* New bytes at the same address: reordered again. */
  w[0] = 42.0f;
  w[5] = 7.5f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, NULL, "test", st), 0);
  assert_true(inner[0] == 42.0f);
  assert_true(inner[2 * 4 + 1] == 7.5f);
  cpu_dnnl_plan_free(p);
  wf_status_free(st);
}

/* With the core's version of the weights' bytes, the plan trusts it: the
 * same address and version keep the reordered copy without looking at the
 * bytes, a new version reorders, and a version of 0 goes back to
 * comparing the bytes against a saved copy. */
static void test_a_version_of_the_weights_stands_for_their_bytes(
    void **state) {
  wf_status *st = wf_status_new();
  const int64_t dims[2] = {4, 3};
  static const int col_major[2] = {1, 0};
  dnnl_memory_desc_t user, want;
  float w[12];
  float *inner;
  cpu_dnnl_plan *p;
  void *data[1] = {w};
  uint64_t v[1] = {5};

  for (int i = 0; i < 12; i++)
    w[i] = (float)i;
  assert_int_equal(cpu_dnnl_md(&user, 2, dims, NULL, st), 0);
  assert_int_equal(cpu_dnnl_md(&want, 2, dims, col_major, st), 0);
  assert_int_equal(cpu_dnnl_plan_new(&p, st), 0);
  assert_int_equal(
      cpu_dnnl_plan_mem(p, 0, &user, &want, WF_DNNL_WEIGHTS, st), 0);
  assert_int_equal(cpu_dnnl_plan_finish(p, st), 0);
  inner = p->mems[0].buf;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[1 * 4 + 2] == w[2 * 3 + 1]);
  assert_null(p->mems[0].copy); /* no saved copy under a version */
  /* Same address and version: kept, bytes unread. */
  inner[0] = -1.0f;
  w[0] = 42.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == -1.0f);
  /* A new version: reordered. */
  v[0] = 6;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == 42.0f);
  /* Version 0: reordered (nothing saved to compare with), then kept while
   * the bytes stay and reordered when they change. */
  v[0] = 0;
  inner[0] = -1.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == 42.0f);
  assert_non_null(p->mems[0].copy);
  inner[0] = -1.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == -1.0f);
  w[0] = 43.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == 43.0f);
  /* Back to version 6: the version kept before the bytes were compared is
   * gone, so this reorders too. */
  v[0] = 6;
  inner[0] = -1.0f;
  assert_int_equal(cpu_dnnl_plan_run(p, data, v, "test", st), 0);
  assert_true(inner[0] == 43.0f);
  cpu_dnnl_plan_free(p);
  wf_status_free(st);
}

/* Outputs a primitive accumulates into start from zero every run. */
static void test_accumulated_outputs_are_zeroed_before_each_run(void **state) {
  wf_status *st = wf_status_new();
  const int64_t dims[1] = {16};
  dnnl_memory_desc_t md;
  float out[16];
  cpu_dnnl_plan *p;
  void *data[1] = {out};

  for (int i = 0; i < 16; i++)
    out[i] = 3.0f;
  assert_int_equal(cpu_dnnl_md(&md, 1, dims, NULL, st), 0);
  assert_int_equal(cpu_dnnl_plan_new(&p, st), 0);
  assert_int_equal(cpu_dnnl_plan_mem(p, 0, &md, NULL, WF_DNNL_ZERO, st), 0);
  assert_int_equal(cpu_dnnl_plan_finish(p, st), 0);
  assert_int_equal(cpu_dnnl_plan_run(p, data, NULL, "test", st), 0);
  for (int i = 0; i < 16; i++)
    assert_true(out[i] == 0.0f);
  cpu_dnnl_plan_free(p);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_builds_one_plan_per_shape),
      cmocka_unit_test(test_cache_gives_a_shape_in_use_a_second_plan),
      cmocka_unit_test(test_cache_keeps_plans_per_team_width),
      cmocka_unit_test(test_cache_is_bounded_least_recently_used_out),
      cmocka_unit_test(test_cache_keeps_a_refused_shape_as_a_fallback),
      cmocka_unit_test(test_cache_reports_other_build_failures),
      cmocka_unit_test(
          test_weights_are_reordered_again_only_when_their_bytes_change),
      cmocka_unit_test(test_a_version_of_the_weights_stands_for_their_bytes),
      cmocka_unit_test(test_accumulated_outputs_are_zeroed_before_each_run),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
