/* tests/devices/test_cuda_host.c — what of the CUDA device plugin runs
 * without a GPU: the memory cache's bookkeeping over a fake backend, the
 * device code's Philox functions compiled for the host against the CPU
 * kernels' (plugins/numerics/philox.c) bit for bit, and the built plugin
 * loaded through the real loader with CUDA's devices hidden
 * (CUDA_VISIBLE_DEVICES=""), so it behaves the same on a machine with a
 * GPU: cuda:0 listed as unavailable with CUDA's reason, no kernel
 * registered, and a node asking for cuda:0 running on the CPU with the
 * fallback in the run metadata.
 *
 * The kernels themselves need a GPU: tests/gpu/test_cuda_kernels.c. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "cuda_cache.h"
#include "cuda_philox.h"
#include "cuda_stage.h"
#include "philox.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"

#define PLUGIN_DIRS                                                            \
  TEST_BUILDDIR "/plugins/devices/cuda/.libs, " TEST_BUILDDIR                  \
                "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/array/.libs"

/* ---- a fake device memory -------------------------------------------- */

/* Host memory posing as a device's: at most `limit` bytes live at once (0:
 * no limit); `fail_with` forces every malloc to that result. */
typedef struct fake {
  size_t limit, live;
  int fail_with;
  int mallocs, frees, nomems;
  pthread_mutex_t mu;
} fake;

/* The fake's blocks carry their size in front, 256 bytes before the
 * pointer handed out (the device alignment). */
#define FAKE_HEADER 256

static int fake_malloc(void *ctx, size_t bytes, void **out, char *why,
                       size_t whylen) {
  fake *f = ctx;
  unsigned char *p;
  int rc = WF_CUCACHE_BACKEND_OK;

  pthread_mutex_lock(&f->mu);
  if (f->fail_with) {
    rc = f->fail_with;
    snprintf(why, whylen, "fakeError: the fake device is %s",
             rc == WF_CUCACHE_BACKEND_NOMEM ? "full" : "broken");
  } else if (f->limit && f->live + bytes > f->limit) {
    rc = WF_CUCACHE_BACKEND_NOMEM;
    snprintf(why, whylen, "fakeErrorMemoryAllocation: out of memory");
  }
  if (rc != WF_CUCACHE_BACKEND_OK) {
    f->nomems += rc == WF_CUCACHE_BACKEND_NOMEM;
    pthread_mutex_unlock(&f->mu);
    return rc;
  }
  p = malloc(FAKE_HEADER + bytes);
  assert_non_null(p);
  memcpy(p, &bytes, sizeof bytes);
  f->live += bytes;
  f->mallocs++;
  pthread_mutex_unlock(&f->mu);
  *out = p + FAKE_HEADER;
  return WF_CUCACHE_BACKEND_OK;
}

static void fake_free(void *ctx, void *ptr) {
  fake *f = ctx;
  unsigned char *p = (unsigned char *)ptr - FAKE_HEADER;
  size_t bytes;

  memcpy(&bytes, p, sizeof bytes);
  pthread_mutex_lock(&f->mu);
  assert_true(f->live >= bytes);
  f->live -= bytes;
  f->frees++;
  pthread_mutex_unlock(&f->mu);
  free(p);
}

static cucache *fake_cache(fake *f, size_t limit) {
  cucache_backend b = {.malloc = fake_malloc,
                           .free = fake_free,
                           .ctx = f,
                           .name = "fake:0"};
  cucache *c;

  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
  f->limit = limit;
  c = cucache_new(&b);
  assert_non_null(c);
  return c;
}

static void fake_done(fake *f) { pthread_mutex_destroy(&f->mu); }

static void *must_alloc(cucache *c, size_t bytes) {
  char why[512];
  void *p = NULL;
  int rc = cucache_block_alloc(c, bytes, &p, why, sizeof why);

  if (rc)
    fail_msg("allocating %zu bytes: code %d: %s", bytes, rc, why);
  return p;
}

static cucache_stats stats_of(cucache *c) {
  cucache_stats s;
  cucache_stats_get(c, &s);
  return s;
}

/* ---- the cache ----------------------------------------------------------- */

static void test_cache_rounds_sizes_to_buckets(void **state) {
  static const struct {
    size_t in, out;
  } cases[] = {
      {1, 512},         {512, 512},       {513, 640},
      {640, 640},       {641, 768},       {1000, 1024},
      {1024, 1024},     {1025, 1280},     {1500, 1536},
      {1792, 1792},     {1793, 2048},     {3000, 3072},
      {(1u << 20) + 1, (1u << 20) + (1u << 18)},
      {(size_t)3 << 30, (size_t)3 << 30},
  };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (cucache_round(cases[i].in) != cases[i].out)
      fail_msg("%zu bytes rounds to %zu, expected %zu", cases[i].in,
               cucache_round(cases[i].in), cases[i].out);
  /* Every size lands in a bucket at most a quarter larger. */
  for (size_t b = 513; b < 70000; b += 97) {
    size_t r = cucache_round(b);
    assert_true(r >= b && r - b <= b / 4 && r % 128 == 0);
  }
  assert_int_equal(cucache_round(SIZE_MAX), 0);
}

static void test_cache_reuses_a_freed_block_of_the_same_bucket(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  void *a = must_alloc(c, 1000), *b, *d;

  assert_int_equal(cucache_block_free(c, a), 0);
  /* 1020 bytes fall in 1000's bucket (1024): the same block comes back. */
  b = must_alloc(c, 1020);
  assert_ptr_equal(b, a);
  assert_int_equal(f.mallocs, 1);
  /* 1100 bytes are another bucket (1280): a new block. */
  d = must_alloc(c, 1100);
  assert_ptr_not_equal(d, a);
  assert_int_equal(f.mallocs, 2);
  assert_int_equal(stats_of(c).hits, 1);
  assert_int_equal(stats_of(c).allocs, 3);
  assert_int_equal(cucache_free(c), 1024 + 1280);
  assert_int_equal(f.frees, 2);
  assert_int_equal(f.live, 0);
  fake_done(&f);
}

static void test_cache_statistics_track_in_use_cached_and_peak(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  void *a = must_alloc(c, 4096), *b = must_alloc(c, 600);
  cucache_stats s = stats_of(c);

  assert_int_equal(s.in_use, 4096 + 640);
  assert_int_equal(s.cached, 0);
  assert_int_equal(s.peak, 4096 + 640);
  cucache_block_free(c, a);
  s = stats_of(c);
  assert_int_equal(s.in_use, 640);
  assert_int_equal(s.cached, 4096);
  assert_int_equal(s.peak, 4096 + 640);
  a = must_alloc(c, 4000); /* the cached 4096 */
  s = stats_of(c);
  assert_int_equal(s.in_use, 4096 + 640);
  assert_int_equal(s.cached, 0);
  assert_int_equal(s.hits, 1);
  assert_int_equal(s.backend_allocs, 2);
  cucache_block_free(c, a);
  cucache_block_free(c, b);
  assert_int_equal(cucache_trim(c), 4096 + 640);
  s = stats_of(c);
  assert_int_equal(s.in_use, 0);
  assert_int_equal(s.cached, 0);
  assert_int_equal(s.backend_frees, 2);
  assert_int_equal(f.live, 0);
  assert_int_equal(cucache_free(c), 0);
  fake_done(&f);
}

static void test_cache_out_of_memory_empties_the_cache_and_retries(
    void **state) {
  fake f;
  cucache *c = fake_cache(&f, 4096);
  void *a = must_alloc(c, 2048), *b = must_alloc(c, 2048), *d;
  cucache_stats s;

  cucache_block_free(c, a);
  cucache_block_free(c, b);
  /* 3072 bytes: no block of that bucket, and the device is full of
   * cached 2048s — they go back and the second try succeeds. */
  d = must_alloc(c, 3072);
  s = stats_of(c);
  assert_non_null(d);
  assert_int_equal(f.nomems, 1);
  assert_int_equal(s.flushes, 1);
  assert_int_equal(s.cached, 0);
  assert_int_equal(s.in_use, 3072);
  assert_int_equal(f.live, 3072);
  cucache_free(c);
  fake_done(&f);
}

static void test_cache_out_of_memory_with_nothing_cached_says_what_and_why(
    void **state) {
  fake f;
  cucache *c = fake_cache(&f, 4096);
  void *a = must_alloc(c, 3000), *b = &f;
  char why[512];

  assert_int_equal(cucache_block_alloc(c, 2000, &b, why, sizeof why),
                   WF_RESOURCE_EXHAUSTED);
  assert_null(b);
  assert_non_null(strstr(why, "fake:0"));
  assert_non_null(strstr(why, "2000 bytes"));
  assert_non_null(strstr(why, "3.0 KiB in use"));
  assert_non_null(strstr(why, "fakeErrorMemoryAllocation"));
  /* Nothing was cached, so nothing was emptied. */
  assert_int_equal(stats_of(c).flushes, 0);
  assert_int_equal(f.nomems, 1);
  /* With a cached block that is not enough, the cache is emptied first and
   * the message says so. */
  cucache_block_free(c, a);
  f.limit = 1024;
  assert_int_equal(cucache_block_alloc(c, 2000, &b, why, sizeof why),
                   WF_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(why, "after giving back the cache's 3.0 KiB"));
  assert_int_equal(stats_of(c).flushes, 1);
  assert_int_equal(f.live, 0);
  cucache_free(c);
  fake_done(&f);
}

static void test_cache_other_backend_errors_are_not_retried(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  void *a = must_alloc(c, 5000), *b;
  char why[512];

  cucache_block_free(c, a);
  f.fail_with = WF_CUCACHE_BACKEND_ERROR;
  assert_int_equal(cucache_block_alloc(c, 100, &b, why, sizeof why),
                   WF_INTERNAL);
  assert_non_null(strstr(why, "fake device is broken"));
  /* The cached block stays: emptying the cache cannot help. */
  assert_int_equal(stats_of(c).cached, cucache_round(5000));
  assert_int_equal(stats_of(c).flushes, 0);
  cucache_free(c);
  fake_done(&f);
}

static void test_cache_refuses_a_pointer_it_did_not_hand_out(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  void *a = must_alloc(c, 100);
  int other;

  assert_int_equal(cucache_block_free(c, &other), -1);
  assert_int_equal(cucache_block_free(c, a), 0);
  /* Freed twice: the second is refused and nothing is counted twice. */
  assert_int_equal(cucache_block_free(c, a), -1);
  assert_int_equal(stats_of(c).cached, 512);
  assert_int_equal(stats_of(c).in_use, 0);
  assert_int_equal(cucache_block_free(c, NULL), 0);
  cucache_free(c);
  fake_done(&f);
}

static void test_cache_zero_bytes_is_no_block(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  void *p = &f;
  char why[64];

  assert_int_equal(cucache_block_alloc(c, 0, &p, why, sizeof why), 0);
  assert_null(p);
  assert_int_equal(f.mallocs, 0);
  assert_int_equal(stats_of(c).allocs, 0);
  cucache_free(c);
  fake_done(&f);
}

/* Many blocks in and out of the table of blocks in use, in an order that
 * makes its probe runs wrap and shift. */
static void test_cache_tracks_many_blocks(void **state) {
  enum { N = 3000 };
  fake f;
  cucache *c = fake_cache(&f, 0);
  void **p = calloc(N, sizeof *p);
  size_t total = 0;

  assert_non_null(p);
  for (int i = 0; i < N; i++)
    p[i] = must_alloc(c, (size_t)(i % 7 + 1) * 512);
  for (int i = 0; i < N; i += 3)
    assert_int_equal(cucache_block_free(c, p[i]), 0);
  for (int i = 0; i < N; i++)
    assert_int_equal(cucache_block_free(c, p[i]), i % 3 ? 0 : -1);
  assert_int_equal(stats_of(c).in_use, 0);
  assert_int_equal(f.mallocs, N);
  /* Everything again: all from the cache now. */
  for (int i = 0; i < N; i++) {
    p[i] = must_alloc(c, (size_t)(i % 7 + 1) * 512);
    total += (size_t)(i % 7 + 1) * 512; /* all bucket sizes already */
  }
  assert_int_equal(f.mallocs, N);
  assert_int_equal(stats_of(c).cached, 0);
  /* Blocks never freed are given back with the cache, and counted. */
  assert_int_equal(cucache_free(c), total);
  assert_int_equal(f.frees, N);
  assert_int_equal(f.live, 0);
  free(p);
  fake_done(&f);
}

typedef struct churn {
  cucache *c;
  int seed;
} churn;

static void *churn_thread(void *arg) {
  churn *ch = arg;
  void *mine[16] = {0};
  unsigned x = (unsigned)ch->seed * 2654435761u + 1;

  for (int i = 0; i < 20000; i++) {
    int k;
    x = x * 1103515245u + 12345u;
    k = (int)(x >> 16) % 16;
    if (mine[k]) {
      if (cucache_block_free(ch->c, mine[k]))
        return "a block of this thread was refused";
      mine[k] = NULL;
    } else {
      char why[256];
      if (cucache_block_alloc(ch->c, (x >> 8) % 9000 + 1, &mine[k], why,
                                  sizeof why))
        return "an allocation failed";
    }
  }
  for (int k = 0; k < 16; k++)
    if (cucache_block_free(ch->c, mine[k]))
      return "a block of this thread was refused at the end";
  return NULL;
}

static void test_cache_is_safe_from_several_threads(void **state) {
  fake f;
  cucache *c = fake_cache(&f, 0);
  pthread_t t[4];
  churn ch[4];

  for (int i = 0; i < 4; i++) {
    ch[i] = (churn){c, i};
    assert_int_equal(pthread_create(&t[i], NULL, churn_thread, &ch[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    void *res;
    pthread_join(t[i], &res);
    if (res)
      fail_msg("thread %d: %s", i, (const char *)res);
  }
  assert_int_equal(stats_of(c).in_use, 0);
  assert_int_equal(stats_of(c).cached, f.live);
  assert_int_equal(cucache_free(c), 0);
  assert_int_equal(f.live, 0);
  fake_done(&f);
}

/* ---- Philox: the device functions against the CPU kernels' ------------ */

static const uint64_t keys[] = {0, 1, UINT64_C(0x0123456789ABCDEF),
                                UINT64_MAX};
static const int64_t steps[] = {0, 1, 7, INT64_C(0x100000000), INT64_MAX};

static void test_philox_keys_match_the_cpu(void **state) {
  static const int64_t seeds[][2] = {
      {1, 0}, {0, 1}, {42, 7}, {-1, -1}, {INT64_MAX, INT64_MIN}};
  static const char *const names[] = {"", "w", "dense/kernel/Initializer",
                                      "\xc3\xa9t\xc3\xa9"};

  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
    assert_int_equal(cuphilox_key_from_seeds(seeds[i][0], seeds[i][1]),
                     rnd_key_from_seeds(seeds[i][0], seeds[i][1]));
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    assert_int_equal(cuphilox_key_from_name(names[i]),
                     rnd_key_from_name(names[i]));
}

static void test_philox_blocks_match_the_cpu(void **state) {
  static const uint64_t blocks[] = {0, 1, 2, 255, UINT64_C(0xFFFFFFFF),
                                    UINT64_C(0x100000000),
                                    (UINT64_C(1) << 48) - 1};
  static const uint32_t subs[] = {0, 1, 0xFFFF};

  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
      rnd_stream cpu;
      cuphilox dev;
      rnd_stream_init(&cpu, keys[k], steps[s]);
      cuphilox_init(&dev, keys[k], steps[s]);
      for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t d = 0; d < sizeof subs / sizeof subs[0]; d++) {
          uint32_t want[4], got[4];
          rnd_stream_block(&cpu, blocks[b], subs[d], want);
          cuphilox_block(&dev, blocks[b], subs[d], got);
          if (memcmp(want, got, sizeof want))
            fail_msg("key %016llx step %lld block %llu sub %u: device "
                     "%08x.. cpu %08x..",
                     (unsigned long long)keys[k], (long long)steps[s],
                     (unsigned long long)blocks[b], (unsigned)subs[d],
                     got[0], want[0]);
        }
    }
}

/* Bounds of the uniform tests: ordinary ones, an empty range, and narrow
 * ones where lo + (hi - lo) u rounds up to hi and is pulled back below. */
static const double bounds[][2] = {
    {0, 1}, {-0.05, 0.05}, {-3, 7.5}, {2, 2}, {-1e30, 1e30},
    {1, 1 + 0x1p-22},  /* float: a quarter of the draws round to hi */
    {1, 1 + 0x1p-51},  /* double: the same */
    {-0.0, 0x1p-149}}; /* float: the smallest subnormal */

#define N_UNIFORM 4099 /* not a multiple of 4: the last block is partial */

/* How many of the first N_UNIFORM elements round to hi (or above) before
 * the pull back below it; `per` elements to a block, each of `bits` random
 * bits. */
static int rounding_up_to_hi(const cuphilox *dev, double lo, double hi,
                             int per, int bits) {
  int n = 0;

  for (int64_t i = 0; i < N_UNIFORM && hi > lo; i++) {
    uint32_t w[4];
    cuphilox_block(dev, (uint64_t)(i / per), 0, w);
    if (bits == 24)
      n += (float)(lo + (hi - lo) * cuphilox_u24(w[i % 4])) >= (float)hi &&
           (float)hi > (float)lo;
    else
      n += lo + (hi - lo) * cuphilox_u53(w[2 * (i % 2)], w[2 * (i % 2) + 1]) >=
           hi;
  }
  return n;
}

static void test_philox_uniform_f32_matches_the_cpu_bit_for_bit(
    void **state) {
  float *want = malloc(N_UNIFORM * sizeof *want);
  float *got = malloc(N_UNIFORM * sizeof *got);
  int clamped = 0;

  assert_non_null(want);
  assert_non_null(got);
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s += 2)
      for (size_t r = 0; r < sizeof bounds / sizeof bounds[0]; r++) {
        double lo = bounds[r][0], hi = bounds[r][1];
        rnd_stream cpu;
        cuphilox dev;
        rnd_stream_init(&cpu, keys[k], steps[s]);
        cuphilox_init(&dev, keys[k], steps[s]);
        rnd_uniform_f32(want, N_UNIFORM, &cpu, lo, hi);
        for (int64_t b = 0; b * 4 < N_UNIFORM; b++) {
          float v[4];
          cuphilox_uniform_block_f32(&dev, (uint64_t)b, lo, hi, v);
          for (int j = 0; j < 4 && b * 4 + j < N_UNIFORM; j++)
            got[b * 4 + j] = v[j];
        }
        for (int i = 0; i < N_UNIFORM; i++) {
          if (memcmp(&want[i], &got[i], sizeof want[i]))
            fail_msg("[%g, %g) element %d: device %a, cpu %a", lo, hi, i,
                     (double)got[i], (double)want[i]);
        }
        clamped += rounding_up_to_hi(&dev, lo, hi, 4, 24);
      }
  /* The narrow ranges did pull values back below hi. */
  assert_true(clamped > 0);
  free(want);
  free(got);
}

static void test_philox_uniform_f64_matches_the_cpu_bit_for_bit(
    void **state) {
  double *want = malloc(N_UNIFORM * sizeof *want);
  double *got = malloc(N_UNIFORM * sizeof *got);
  int clamped = 0;

  assert_non_null(want);
  assert_non_null(got);
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s += 2)
      for (size_t r = 0; r < sizeof bounds / sizeof bounds[0]; r++) {
        double lo = bounds[r][0], hi = bounds[r][1];
        rnd_stream cpu;
        cuphilox dev;
        rnd_stream_init(&cpu, keys[k], steps[s]);
        cuphilox_init(&dev, keys[k], steps[s]);
        rnd_uniform_f64(want, N_UNIFORM, &cpu, lo, hi);
        for (int64_t b = 0; b * 2 < N_UNIFORM; b++) {
          double v[2];
          cuphilox_uniform_block_f64(&dev, (uint64_t)b, lo, hi, v);
          for (int j = 0; j < 2 && b * 2 + j < N_UNIFORM; j++)
            got[b * 2 + j] = v[j];
        }
        for (int i = 0; i < N_UNIFORM; i++) {
          if (memcmp(&want[i], &got[i], sizeof want[i]))
            fail_msg("[%g, %g) element %d: device %a, cpu %a", lo, hi, i,
                     got[i], want[i]);
        }
        clamped += rounding_up_to_hi(&dev, lo, hi, 2, 53);
      }
  /* The narrow ranges did pull values back below hi. */
  assert_true(clamped > 0);
  free(want);
  free(got);
}

/* ---- the plugin, loaded without a usable GPU ----------------------------- */

static wf_status *st;

/* A runtime loading the CUDA and CPU device plugins and the math and array
 * ops from the build tree, strictly (a refused plugin fails the test). */
static wf_runtime *runtime_new(void) {
  wf_config *cfg = wf_config_new();
  wf_runtime *rt;

  assert_non_null(cfg);
  if (wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", PLUGIN_DIRS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st))
    fail_msg("config: %s", wf_status_message(st));
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  return rt;
}

/* The runtime's device named name; fails the test when there is none. */
static wf_device_info device_named(const wf_runtime *rt, const char *name) {
  wf_device_info d;

  for (int i = 0; i < wf_runtime_device_count(rt); i++) {
    wf_runtime_device_get(rt, i, &d);
    if (strcmp(d.name, name) == 0)
      return d;
  }
  fail_msg("no device %s", name);
  return d;
}

static void test_plugin_lists_cuda0_unavailable_with_cudas_reason(
    void **state) {
  wf_runtime *rt = runtime_new();
  wf_device_info d = device_named(rt, "cuda:0");
  const wf__device *dev = NULL;
  int found = 0;

  assert_string_equal(d.type, "cuda");
  assert_string_equal(d.plugin, "device-cuda");
  assert_false(d.available);
  assert_non_null(d.reason);
  /* CUDA's own error name and text, and the runtime's version. */
  if (strncmp(d.reason, "cudaError", 9) != 0 || !strstr(d.reason, ": ") ||
      !strstr(d.reason, "(CUDA runtime "))
    fail_msg("reason '%s' does not give CUDA's error", d.reason);
  assert_non_null(strstr(d.description, "no usable GPU"));
  assert_non_null(strstr(d.description, "cuBLAS "));
  assert_non_null(strstr(d.description, "cuDNN "));
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    if (!p.name || strcmp(p.name, "device-cuda") != 0)
      continue;
    found = 1;
    assert_int_equal(p.state, WF_PLUGIN_LOADED);
    assert_int_equal(p.num_devices, 1);
    assert_int_equal(p.num_kernels, 0);
  }
  assert_true(found);
  /* Its memory: none to give. */
  for (int i = 0; i < rt->num_devices; i++)
    if (strcmp(rt->devices[i].desc.name, "cuda:0") == 0)
      dev = &rt->devices[i];
  assert_non_null(dev);
  assert_null(dev->type->def.alloc(dev->desc.state, 256, 0));
  wf_runtime_free(rt);
}

static void test_no_cuda_kernel_is_registered_without_a_gpu(void **state) {
  wf_runtime *rt = runtime_new();

  for (int i = 0; i < wf_runtime_kernel_count(rt); i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.device_type, "cuda") == 0)
      fail_msg("kernel for %s registered on cuda (label %s)", k.op, k.label);
  }
  assert_int_equal(wf_runtime_kernel_select(rt, "MatMul", "cuda", WF_FLOAT32),
                   -1);
  /* The CPU still has one. */
  assert_true(wf_runtime_kernel_select(rt, "MatMul", "cpu", WF_FLOAT32) >= 0);
  wf_runtime_free(rt);
}

static wf_output placeholder(wf_graph *g, const char *name, int64_t r,
                             int64_t c) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node *n;

  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", (const int64_t[]){r, c}, 2);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_output on_device(wf_graph *g, const char *op, const char *name,
                           const wf_output *in, int nin, const char *device) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node *n;

  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  wf_node_desc_set_device(d, device);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: %s", name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_tensor *matrix(int64_t r, int64_t c, const float *v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, (const int64_t[]){r, c}, 2, st);

  assert_non_null(t);
  memcpy(wf_tensor_data(t), v, (size_t)(r * c) * sizeof *v);
  return t;
}

static void expect_fallback(const wf_run_metadata *md, const char *node,
                            const char *requested) {
  for (int i = 0; i < wf_run_metadata_num_placements(md); i++) {
    wf_placement_info p;
    wf_run_metadata_placement(md, i, &p);
    if (strcmp(p.node, node) != 0)
      continue;
    assert_string_equal(p.requested, requested);
    assert_string_equal(p.device, "cpu:0");
    if (!strstr(p.reason, "cuda:0 is unavailable (cudaError"))
      fail_msg("fallback of %s: reason '%s' does not say cuda:0 is "
               "unavailable and why",
               node, p.reason);
    return;
  }
  fail_msg("no placement record for node '%s'", node);
}

static const char *device_of(const wf_run_metadata *md, const char *node) {
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.node, node) == 0)
      return ns.device;
  }
  fail_msg("node '%s' did not run", node);
  return NULL;
}

/* relu(x w) with MatMul asking for cuda:0 and Relu for any cuda device:
 * both run on cpu:0, give the CPU's values and are recorded. */
static void run_fallback_graph(wf_runtime *rt) {
  static const float xv[] = {1, -2, 3, 0.5f, 4, -1};
  static const float wv[] = {1, 0, 0, 1, -1, 1};
  static const float want[] = {0, 1, 1.5f, 3};
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", 2, 3), w = placeholder(g, "w", 3, 2);
  wf_output mm = on_device(g, "MatMul", "mm", (wf_output[]){x, w}, 2,
                           "cuda:0");
  wf_output r = on_device(g, "Relu", "relu", &mm, 1, "cuda");
  wf_session *s = wf_session_new(g, st);
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_tensor *feeds[2] = {matrix(2, 3, xv), matrix(3, 2, wv)}, *out = NULL;
  const float *got;

  assert_non_null(s);
  assert_non_null(md);
  opt.trace_level = WF_TRACE_NODES;
  if (wf_session_run(s, &opt, (wf_output[]){x, w}, feeds, 2, &r, &out, 1,
                     NULL, 0, md, st))
    fail_msg("run: %s", wf_status_message(st));
  got = wf_tensor_data(out);
  /* x w = {1 - 3, -2 + 3, 0.5 + 1, 4 - 1}, then relu. */
  assert_memory_equal(got, want, sizeof want);
  assert_int_equal(wf_run_metadata_num_placements(md), 2);
  expect_fallback(md, "mm", "cuda:0");
  expect_fallback(md, "relu", "cuda");
  assert_string_equal(device_of(md, "mm"), "cpu:0");
  assert_string_equal(device_of(md, "relu"), "cpu:0");
  wf_tensor_release(out);
  wf_tensor_release(feeds[0]);
  wf_tensor_release(feeds[1]);
  wf_run_metadata_free(md);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_nodes_asking_for_cuda_run_on_the_cpu_and_say_why(
    void **state) {
  wf_runtime *rt = runtime_new();
  run_fallback_graph(rt);
  wf_runtime_free(rt);
}

/* Two runtimes share the plugin's one state: freeing the first leaves the
 * second working, and a runtime made after both starts it again. */
static void test_runtimes_share_the_plugin_state(void **state) {
  wf_runtime *a = runtime_new(), *b = runtime_new();

  wf_runtime_free(a);
  assert_false(device_named(b, "cuda:0").available);
  run_fallback_graph(b);
  wf_runtime_free(b);
  a = runtime_new();
  assert_false(device_named(a, "cuda:0").available);
  wf_runtime_free(a);
}

/* ---- staged copies over a fake asynchronous device ---------------------- */

/* Queued work: a copy (h < 0) or half h's event. Nothing runs until a wait
 * (or the test's sync) makes the device catch up to that point, so a
 * staging half written before its copy ran shows as corrupt data. */
typedef struct fake_op {
  void *dst;
  const void *src;
  size_t n;
  int h;
} fake_op;

typedef struct fake_dev {
  fake_op ops[256];
  int head, tail;
  int fail_copy_at; /* the copy number that fails, or -1 */
  int copies, waits;
} fake_dev;

static void fake_run_one(fake_dev *d) {
  fake_op *o = &d->ops[d->head++ % 256];
  if (o->h < 0)
    memcpy(o->dst, o->src, o->n);
}

static void fake_sync(fake_dev *d) {
  while (d->head < d->tail)
    fake_run_one(d);
}

static int fake_copy(void *ctx, void *dst, const void *src, size_t n,
                     int to_device, char *why, size_t whylen) {
  fake_dev *d = ctx;
  (void)to_device;
  if (d->copies++ == d->fail_copy_at) {
    snprintf(why, whylen, "fake copy error");
    return 1;
  }
  assert_true(d->tail - d->head < 256);
  d->ops[d->tail++ % 256] = (fake_op){dst, src, n, -1};
  return 0;
}

static int fake_record(void *ctx, int h, char *why, size_t whylen) {
  fake_dev *d = ctx;
  (void)why;
  (void)whylen;
  assert_true(d->tail - d->head < 256);
  d->ops[d->tail++ % 256] = (fake_op){NULL, NULL, 0, h};
  return 0;
}

/* Runs queued work up to the last record of half h's event. */
static int fake_wait(void *ctx, int h, char *why, size_t whylen) {
  fake_dev *d = ctx;
  int last = -1;
  (void)why;
  (void)whylen;
  d->waits++;
  for (int i = d->head; i < d->tail; i++)
    if (d->ops[i % 256].h == h)
      last = i;
  while (last >= 0 && d->head <= last)
    fake_run_one(d);
  return 0;
}

static void fill_bytes(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static void test_staged_copies_survive_an_asynchronous_device(void **state) {
  enum { HALF = 64 };
  static const size_t sizes[] = {0, 1, HALF - 1, HALF, HALF + 1, 2 * HALF,
                                 2 * HALF + 1, 5 * HALF + 3};
  unsigned char stage[2 * HALF];
  fake_dev d = {.fail_copy_at = -1};
  custage_backend b = {fake_copy, fake_record, fake_wait, &d};
  custage s;
  char why[64];
  (void)state;

  custage_init(&s, &b, stage, HALF);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    unsigned char host[5 * HALF + 3], dev[5 * HALF + 3], back[5 * HALF + 3],
        want[5 * HALF + 3], later[5 * HALF + 3];

    /* In: the host buffer is reused at once; the device still gets it. */
    fill_bytes(host, n, (unsigned)k);
    memcpy(want, host, n);
    memset(dev, 0, sizeof dev);
    assert_int_equal(custage_in(&s, dev, host, n, why, sizeof why), 0);
    memset(host, 0xEE, sizeof host);
    fake_sync(&d);
    if (n)
      assert_memory_equal(dev, want, n);

    /* Out: work queued before the copy (a kernel writing dev) is in what
     * comes back, which is there when the call returns. */
    fill_bytes(later, n, (unsigned)k + 100);
    if (n)
      assert_int_equal(fake_copy(&d, dev, later, n, 1, why, sizeof why), 0);
    memset(back, 0, sizeof back);
    assert_int_equal(custage_out(&s, back, dev, n, why, sizeof why), 0);
    if (n)
      assert_memory_equal(back, later, n);
  }
  /* Back-to-back copies in reuse the halves only after their events. */
  {
    unsigned char a[3 * HALF], b2[3 * HALF], da[3 * HALF], db[3 * HALF];
    fill_bytes(a, sizeof a, 1);
    fill_bytes(b2, sizeof b2, 2);
    assert_int_equal(custage_in(&s, da, a, sizeof a, why, sizeof why), 0);
    assert_int_equal(custage_in(&s, db, b2, sizeof b2, why, sizeof why),
                     0);
    memset(a, 0, sizeof a);
    fill_bytes(b2, sizeof b2, 3);
    fake_sync(&d);
    fill_bytes(a, sizeof a, 1);
    assert_memory_equal(da, a, sizeof a);
    fill_bytes(b2, sizeof b2, 2);
    assert_memory_equal(db, b2, sizeof b2);
  }
  assert_int_equal(custage_drain(&s, why, sizeof why), 0);
  assert_true(d.waits > 0);
}

static void test_a_failed_staged_copy_says_why(void **state) {
  enum { HALF = 16 };
  unsigned char stage[2 * HALF], host[5 * HALF], dev[5 * HALF];
  fake_dev d = {.fail_copy_at = 2};
  custage_backend b = {fake_copy, fake_record, fake_wait, &d};
  custage s;
  char why[64] = "";
  (void)state;

  custage_init(&s, &b, stage, HALF);
  fill_bytes(host, sizeof host, 9);
  assert_int_not_equal(
      custage_in(&s, dev, host, sizeof host, why, sizeof why), 0);
  assert_string_equal(why, "fake copy error");
  /* What was queued still runs, and the stage can be drained. */
  assert_int_equal(custage_drain(&s, why, sizeof why), 0);
  fake_sync(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_rounds_sizes_to_buckets),
      cmocka_unit_test(test_cache_reuses_a_freed_block_of_the_same_bucket),
      cmocka_unit_test(test_cache_statistics_track_in_use_cached_and_peak),
      cmocka_unit_test(
          test_cache_out_of_memory_empties_the_cache_and_retries),
      cmocka_unit_test(
          test_cache_out_of_memory_with_nothing_cached_says_what_and_why),
      cmocka_unit_test(test_cache_other_backend_errors_are_not_retried),
      cmocka_unit_test(test_cache_refuses_a_pointer_it_did_not_hand_out),
      cmocka_unit_test(test_cache_zero_bytes_is_no_block),
      cmocka_unit_test(test_cache_tracks_many_blocks),
      cmocka_unit_test(test_cache_is_safe_from_several_threads),
      cmocka_unit_test(test_staged_copies_survive_an_asynchronous_device),
      cmocka_unit_test(test_a_failed_staged_copy_says_why),
      cmocka_unit_test(test_philox_keys_match_the_cpu),
      cmocka_unit_test(test_philox_blocks_match_the_cpu),
      cmocka_unit_test(test_philox_uniform_f32_matches_the_cpu_bit_for_bit),
      cmocka_unit_test(test_philox_uniform_f64_matches_the_cpu_bit_for_bit),
      cmocka_unit_test(test_plugin_lists_cuda0_unavailable_with_cudas_reason),
      cmocka_unit_test(test_no_cuda_kernel_is_registered_without_a_gpu),
      cmocka_unit_test(test_nodes_asking_for_cuda_run_on_the_cpu_and_say_why),
      cmocka_unit_test(test_runtimes_share_the_plugin_state),
  };
  int rc;

  /* CUDA reads this when its runtime starts: with no device visible, a
   * machine with a GPU answers as one without. */
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  st = wf_status_new();
  assert_non_null(st);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  wf_status_free(st);
  return rc;
}
