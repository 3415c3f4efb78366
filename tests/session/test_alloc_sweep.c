/* tests/session/test_alloc_sweep.c — allocation-failure sweeps over the paths
 * a training program takes, in the manner of SQLite's malloc tests: for
 * each operation (creating a runtime and a session, the first and a warm
 * training step, saving and restoring a checkpoint, exporting and loading a
 * saved model, an iterator with prefetch), count the host allocations it
 * makes, then run it again once for every k making the k-th of them fail
 * (core/base/alloc.h's injection, which the plugins' allocations through
 * the host table go through too). Each run must return RESOURCE_EXHAUSTED
 * or succeed, and leave what it worked on usable: the session steps again,
 * the previous checkpoint or exported model is intact, the iterator goes on
 * with the elements it had not yet returned. Leaks are LeakSanitizer's to
 * find (checked after each sweep in a build with AddressSanitizer).
 *
 * Bounded in time: an operation of at most WEFT_SWEEP_MAX allocations
 * (default 250) is swept at every k; a longer one at every k up to 32,
 * then at a stride that keeps the total near WEFT_SWEEP_MAX (starting at
 * an offset WEFT_SWEEP_SEED varies, so runs can cover other ks), and at
 * its last allocation. Each sweep prints how many allocations it saw and
 * how many it tried. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "train_job.h"

#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_LSAN 1
#endif
#endif
#ifdef SWEEP_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static char data_dir[64];
static char work_dir[64];
static long sweep_max = 250;
static long sweep_seed;
static wf_status *st;

/* ---- the sweep ------------------------------------------------------------ */

/* One try of an operation under test. arm() is called right before the
 * operation proper (after any set-up the try needs), so that only the
 * operation's own allocations are counted and failed. Returns the
 * operation's code; checks of what it left behind are the try's own. */
typedef int (*try_fn)(void *ctx, long k);

/* The operation's status, kept while the checks after it use st. */
static wf_status *kept;

static void keep_status(void) {
  wf_status_set(kept, wf_status_code(st), "%s", wf_status_message(st));
}

static void put_status_back(void) {
  wf_status_set(st, wf_status_code(kept), "%s", wf_status_message(kept));
}

static long armed_at = -1; /* the count when armed (-1: not armed) */
static long arm_k;            /* the allocation to fail (0: none) */
static long counted;          /* allocations between the last arm/disarm */

static void arm(void) {
  armed_at = wf__alloc_count();
  if (arm_k > 0)
    wf__alloc_fail_after(arm_k, 0);
}

/* Idempotent: only the first call after arm() counts. */
static void disarm(void) {
  wf__alloc_fail_after(0, 0);
  if (armed_at >= 0)
    counted = wf__alloc_count() - armed_at;
  armed_at = -1;
}

static void leak_check(const char *what) {
#ifdef SWEEP_LSAN
  if (__lsan_do_recoverable_leak_check())
    fail_msg("%s: LeakSanitizer found leaks (reported above)", what);
#else
  (void)what;
#endif
}

/* Whether k is tried in a sweep of total allocations. */
static long sweep_only; /* WEFT_SWEEP_ONLY: try this k alone (debugging) */

static int tried(long k, long total, long stride, long offset) {
  if (sweep_only > 0)
    return k == sweep_only;
  return total <= sweep_max || k <= 32 || k == total ||
         (k - 33) % stride == offset;
}

static void sweep(const char *what, try_fn fn, void *ctx) {
  /* A clean run first: it must succeed, and gives the count. */
  arm_k = 0;
  wf_status_reset(st);
  counted = 0;
  int rc = fn(ctx, 0);
  disarm();
  long total = counted;
  if (rc != WF_OK)
    fail_msg("%s without injected failures: %s", what,
             wf_status_message(st));
  assert_true(total > 0);
  long stride = total > sweep_max ? (total - 32) / (sweep_max - 32) + 1 : 1;
  long offset = sweep_seed % stride, tries = 0, failed = 0;
  for (long k = 1; k <= total; k++) {
    if (!tried(k, total, stride, offset))
      continue;
    tries++;
    arm_k = k;
    wf_status_reset(st);
    rc = fn(ctx, k);
    disarm();
    arm_k = 0;
    if (rc != WF_OK && rc != WF_RESOURCE_EXHAUSTED)
      fail_msg("%s, allocation %ld of %ld failing: %s: %s", what, k, total,
               wf_code_name((wf_code)rc), wf_status_message(st));
    if (rc == WF_RESOURCE_EXHAUSTED &&
        !strstr(wf_status_message(st), "memory"))
      fail_msg("%s, allocation %ld failing: RESOURCE_EXHAUSTED without "
               "saying what ran out: %s",
               what, k, wf_status_message(st));
    failed += rc != WF_OK;
  }
  wf_status_reset(st);
  printf("sweep %s: %ld allocations, %ld tried, %ld failed\n", what, total,
         tries, failed);
  leak_check(what);
}

/* Fails the test (naming the sweep and k) when a call made after the
 * operation, with nothing injected, does not succeed. */
#define AFTER(what, k, call)                                                   \
  do {                                                                         \
    wf_status_reset(st);                                                       \
    if (call)                                                                  \
      fail_msg("%s, after allocation %ld failed: %s: %s", what, k, #call,     \
               wf_status_message(st));                                         \
  } while (0)

/* ---- files ------------------------------------------------------------------ */

static char *read_all(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)*len + 1)) &&
      fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

static int same_file(const char *path, const char *want, long want_len) {
  long len = 0;
  char *got = read_all(path, &len);
  int same = got && len == want_len && memcmp(got, want, (size_t)len) == 0;
  free(got);
  return same;
}

/* Names in dir other than . and .., counted. */
static int count_entries(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1)
      n = -1;
    pclose(p);
  }
  return n;
}

/* ---- runtime and session creation ----------------------------------------- */

static int try_runtime_new(void *ctx, long k) {
  (void)ctx;
  (void)k;
  wf_config *cfg = wf_config_new();
  assert_non_null(cfg);
  if (wf_config_set(cfg, "plugins", "paths", TJ_PLUGINS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "plugins", "strict", "true", st))
    fail_msg("config: %s", wf_status_message(st));
  arm();
  wf_runtime *rt = wf_runtime_new(cfg, st);
  disarm();
  wf_config_free(cfg);
  int rc = rt ? WF_OK : wf_status_code(st);
  wf_runtime_free(rt);
  return rc;
}

static void test_runtime_creation(void **state) {
  (void)state;
  sweep("wf_runtime_new", try_runtime_new, NULL);
}

static int try_session_new(void *ctx, long k) {
  tj_job *j = ctx;
  arm();
  wf_session *s = wf_session_new(j->g, st);
  disarm();
  int rc = s ? WF_OK : wf_status_code(st);
  keep_status();
  if (!s) {
    /* The graph is as it was: a session on it works. */
    AFTER("wf_session_new", k, !(s = wf_session_new(j->g, st)));
  }
  AFTER("wf_session_new", k,
        wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &j->init, 1,
                       NULL, st));
  wf_session_free(s);
  put_status_back();
  return rc;
}

static void test_session_creation(void **state) {
  (void)state;
  tj_job j;
  if (tj_build(&j, data_dir, "2", st))
    fail_msg("build: %s", wf_status_message(st));
  sweep("wf_session_new", try_session_new, &j);
  tj_free(&j);
}

/* ---- training steps ------------------------------------------------------- */

/* The first step of a new session (its executors are built in it), right
 * after the initialiser ran. */
static int try_first_step(void *ctx, long k) {
  tj_job *j = ctx;
  wf_session *s = wf_session_new(j->g, st);
  wf_iterator *it = wf_iterator_new(j->ds, NULL, st);
  wf_tensor *loss = NULL;
  if (!s || !it || wf_session_attach_iterator(s, "train", it, st) ||
      wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &j->init, 1, NULL,
                     st))
    fail_msg("first step set-up: %s", wf_status_message(st));
  arm();
  int rc = wf_session_run(s, NULL, NULL, NULL, 0, &j->loss, &loss, 1,
                          &j->train, 1, NULL, st);
  disarm();
  if (rc == WF_OK)
    assert_true(isfinite(*(const float *)wf_tensor_data(loss)));
  wf_tensor_release(loss);
  keep_status();
  /* The session steps on. */
  for (int i = 0; i < 2; i++)
    AFTER("first step", k,
          wf_session_run(s, NULL, NULL, NULL, 0, &j->loss, &loss, 1,
                         &j->train, 1, NULL, st) ||
              (wf_tensor_release(loss), 0));
  put_status_back();
  wf_session_free(s);
  wf_iterator_free(it);
  return rc;
}

static void test_first_training_step(void **state) {
  (void)state;
  tj_job j;
  if (tj_build(&j, data_dir, "2", st))
    fail_msg("build: %s", wf_status_message(st));
  sweep("first training step", try_first_step, &j);
  tj_free(&j);
}

typedef struct warm_ctx {
  tj_job j;
  int64_t steps_ok; /* steps that succeeded so far */
} warm_ctx;

static int try_warm_step(void *ctx, long k) {
  warm_ctx *w = ctx;
  float loss = 0;
  arm();
  int rc = tj_step(&w->j, &loss, st);
  disarm();
  if (rc == WF_OK) {
    assert_true(isfinite(loss));
    w->steps_ok++;
  }
  keep_status();
  AFTER("warm step", k, tj_step(&w->j, &loss, st));
  assert_true(isfinite(loss));
  w->steps_ok++;
  put_status_back();
  return rc;
}

static void test_warm_training_step(void **state) {
  (void)state;
  warm_ctx *w = calloc(1, sizeof *w);
  assert_non_null(w);
  if (tj_build(&w->j, data_dir, "2", st) || tj_init(&w->j, st) ||
      tj_step(&w->j, NULL, st) || tj_step(&w->j, NULL, st))
    fail_msg("build: %s", wf_status_message(st));
  w->steps_ok = 2;
  sweep("warm training step", try_warm_step, w);
  /* A failed step may have updated some variables before it failed, but
   * the global step never counts more steps than were run. */
  int64_t gs = tj_global_step(&w->j, st);
  assert_true(gs >= w->steps_ok);
  tj_free(&w->j);
  free(w);
}

/* ---- checkpoints ----------------------------------------------------------- */

typedef struct ckpt_ctx {
  tj_job j;
  char path[300]; /* the checkpoint saved before the sweep */
  char dir[300];  /* a directory of checkpoints */
  char *bytes;    /* its content */
  long len;
  wf_tensor *want[TJ_MAX_VARS]; /* the variables' values in it */
} ckpt_ctx;

static void fetch_vars(tj_job *j, wf_tensor **vals) {
  AFTER("fetching variables", 0L,
        wf_session_run(j->s, NULL, NULL, NULL, 0, j->var_values, vals,
                       j->nvars, NULL, 0, NULL, st));
}

static void expect_vars(ckpt_ctx *c, const char *what, long k) {
  wf_tensor *got[TJ_MAX_VARS];
  fetch_vars(&c->j, got);
  for (int v = 0; v < c->j.nvars; v++) {
    size_t n = wf_tensor_nbytes(got[v]);
    if (n != wf_tensor_nbytes(c->want[v]) ||
        memcmp(wf_tensor_data(got[v]), wf_tensor_data(c->want[v]), n) != 0)
      fail_msg("%s, after allocation %ld failed: variable %d differs from "
               "the checkpoint's",
               what, k, v);
    wf_tensor_release(got[v]);
  }
}

static int try_save(void *ctx, long k) {
  ckpt_ctx *c = ctx;
  arm();
  int rc = wf_session_save(c->j.s, c->path, NULL, st);
  disarm();
  /* A failed save leaves the previous file as it was; either way the file
   * holds a whole checkpoint, and no temporary file is left. */
  keep_status();
  if (rc != WF_OK && !same_file(c->path, c->bytes, c->len))
    fail_msg("wf_session_save, allocation %ld failing: the previous "
             "checkpoint changed",
             k);
  AFTER("wf_session_save", k, wf_checkpoint_verify(c->path, st));
  if (rc == WF_OK) {
    free(c->bytes);
    c->bytes = read_all(c->path, &c->len);
    assert_non_null(c->bytes);
  }
  put_status_back();
  if (count_entries(work_dir) != 1)
    fail_msg("wf_session_save, allocation %ld failing: %d files in %s", k,
             count_entries(work_dir), work_dir);
  return rc;
}

static int try_save_dir(void *ctx, long k) {
  ckpt_ctx *c = ctx;
  char latest[512];
  arm();
  int rc = wf_checkpoint_save_dir(c->j.s, c->dir, 7, 1, st);
  disarm();
  keep_status();
  AFTER("wf_checkpoint_save_dir", k,
        wf_checkpoint_latest(c->dir, latest, sizeof latest, st));
  AFTER("wf_checkpoint_save_dir", k, wf_checkpoint_verify(latest, st));
  put_status_back();
  return rc;
}

static int try_restore(void *ctx, long k) {
  ckpt_ctx *c = ctx;
  /* Move away from the checkpoint's state first. */
  AFTER("restore set-up", k, tj_step(&c->j, NULL, st));
  arm();
  int rc = wf_session_restore(c->j.s, c->path, NULL, st);
  disarm();
  keep_status();
  if (rc == WF_OK)
    expect_vars(c, "wf_session_restore", k);
  /* The session still steps, and restores cleanly. */
  AFTER("wf_session_restore", k, tj_step(&c->j, NULL, st));
  AFTER("wf_session_restore", k,
        wf_session_restore(c->j.s, c->path, NULL, st));
  expect_vars(c, "wf_session_restore", k);
  put_status_back();
  return rc;
}

static void test_checkpoint_save_and_restore(void **state) {
  (void)state;
  ckpt_ctx *c = calloc(1, sizeof *c);
  assert_non_null(c);
  char sub[80];
  snprintf(sub, sizeof sub, "%s/save", work_dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  snprintf(c->path, sizeof c->path, "%s/ckpt.safetensors", sub);
  snprintf(c->dir, sizeof c->dir, "%s/dir", work_dir);
  if (tj_build(&c->j, data_dir, "2", st) || tj_init(&c->j, st) ||
      tj_step(&c->j, NULL, st) || wf_session_save(c->j.s, c->path, NULL, st) ||
      wf_checkpoint_save_dir(c->j.s, c->dir, 3, 1, st))
    fail_msg("build: %s", wf_status_message(st));
  fetch_vars(&c->j, c->want);
  c->bytes = read_all(c->path, &c->len);
  assert_non_null(c->bytes);
  /* work_dir is looked at by try_save: only the checkpoint's directory. */
  char saved_work[64];
  strcpy(saved_work, work_dir);
  strcpy(work_dir, sub);
  sweep("wf_session_save", try_save, c);
  strcpy(work_dir, saved_work);
  sweep("wf_checkpoint_save_dir", try_save_dir, c);
  sweep("wf_session_restore", try_restore, c);
  for (int v = 0; v < c->j.nvars; v++)
    wf_tensor_release(c->want[v]);
  free(c->bytes);
  tj_free(&c->j);
  free(c);
}

/* ---- saved models ----------------------------------------------------------- */

typedef struct model_ctx {
  tj_job j;
  char dir[300];
  wf_signature_def sig;
  const char *in_keys[1], *out_keys[1];
  wf_tensor *batch, *want; /* an input and the model's output for it */
} model_ctx;

/* Loads the model in dir and checks its output for the batch; 0, or the
 * load's code with st set. */
static int load_and_check(model_ctx *c, const char *what, long k) {
  wf_saved_model *m = wf_saved_model_load(c->j.rt, c->dir, st);
  if (!m)
    return wf_status_code(st);
  wf_tensor *out = NULL;
  AFTER(what, k, wf_saved_model_run(m, 0, c->in_keys, &c->batch, 1, &out, st));
  if (wf_tensor_nbytes(out) != wf_tensor_nbytes(c->want) ||
      memcmp(wf_tensor_data(out), wf_tensor_data(c->want),
             wf_tensor_nbytes(out)) != 0)
    fail_msg("%s, allocation %ld failing: the loaded model computes "
             "another output",
             what, k);
  wf_tensor_release(out);
  wf_saved_model_free(m);
  return WF_OK;
}

static int try_export(void *ctx, long k) {
  model_ctx *c = ctx;
  arm();
  int rc = wf_saved_model_export(c->j.s, c->dir, &c->sig, 1, st);
  disarm();
  keep_status();
  /* The old model, or the new one (the same), loads and computes. */
  AFTER("wf_saved_model_export", k,
        load_and_check(c, "wf_saved_model_export", k));
  put_status_back();
  return rc;
}

static int try_load(void *ctx, long k) {
  model_ctx *c = ctx;
  arm();
  wf_saved_model *m = wf_saved_model_load(c->j.rt, c->dir, st);
  disarm();
  int rc = m ? WF_OK : wf_status_code(st);
  wf_saved_model_free(m);
  keep_status();
  AFTER("wf_saved_model_load", k,
        load_and_check(c, "wf_saved_model_load", k));
  put_status_back();
  return rc;
}

static void test_saved_model_export_and_load(void **state) {
  (void)state;
  model_ctx *c = calloc(1, sizeof *c);
  assert_non_null(c);
  snprintf(c->dir, sizeof c->dir, "%s/model", work_dir);
  if (tj_build(&c->j, data_dir, "2", st) || tj_init(&c->j, st) ||
      tj_step(&c->j, NULL, st))
    fail_msg("build: %s", wf_status_message(st));
  c->in_keys[0] = "image";
  c->out_keys[0] = "logits";
  c->sig = (wf_signature_def){"serve", 1, c->in_keys, &c->j.input, 1,
                              c->out_keys, &c->j.predict};
  int64_t dims[4] = {2, TJ_SIDE, TJ_SIDE, 1};
  c->batch = wf_tensor_new(WF_FLOAT32, dims, 4, st);
  assert_non_null(c->batch);
  for (int64_t i = 0; i < wf_tensor_count(c->batch); i++)
    ((float *)wf_tensor_data(c->batch))[i] = (float)(i % 5) / 5.0f;
  if (wf_session_run(c->j.s, NULL, &c->j.input, &c->batch, 1, &c->j.predict,
                     &c->want, 1, NULL, 0, NULL, st) ||
      wf_saved_model_export(c->j.s, c->dir, &c->sig, 1, st))
    fail_msg("export: %s", wf_status_message(st));
  sweep("wf_saved_model_export", try_export, c);
  sweep("wf_saved_model_load", try_load, c);
  wf_tensor_release(c->batch);
  wf_tensor_release(c->want);
  tj_free(&c->j);
  free(c);
}

/* ---- an iterator with prefetch ------------------------------------------------ */

#define ITER_ELEMS 12

typedef struct iter_ctx {
  tj_job j;
  int64_t want[ITER_ELEMS]; /* each batch's labels, folded into a number */
} iter_ctx;

static int64_t fold(wf_tensor *labels) {
  int64_t s = 0;
  const int32_t *p = wf_tensor_data(labels);
  for (int64_t e = 0; e < wf_tensor_count(labels); e++)
    s = s * 5 + p[e];
  return s;
}

/* A new iterator takes ITER_ELEMS elements with the k-th allocation
 * failing somewhere (creation, the first call that starts the prefetch
 * thread, or a later call), then goes on: the elements it returns are the
 * pipeline's elements in order, none lost or repeated. */
static int try_iterator(void *ctx, long k) {
  iter_ctx *c = ctx;
  int64_t got[ITER_ELEMS];
  int n = 0, rc = WF_OK;
  wf_iterator *it = NULL;
  arm();
  it = wf_iterator_new(c->j.ds, NULL, st);
  if (!it) {
    disarm();
    return wf_status_code(st);
  }
  while (n < ITER_ELEMS) {
    wf_tensor *f[2] = {NULL, NULL};
    int r = wf_iterator_next(it, f, st);
    if (r == WF_OK) {
      got[n++] = fold(f[1]);
      wf_tensor_release(f[0]);
      wf_tensor_release(f[1]);
      continue;
    }
    disarm();
    if (r != WF_RESOURCE_EXHAUSTED || rc != WF_OK) {
      rc = r; /* a second failure, or another code: reported */
      break;
    }
    rc = r;
  }
  disarm();
  keep_status();
  if (rc == WF_OK || rc == WF_RESOURCE_EXHAUSTED) {
    if (n != ITER_ELEMS)
      fail_msg("iterator, allocation %ld failing: it stopped after %d "
               "elements: %s",
               k, n, wf_status_message(st));
    for (int i = 0; i < n; i++)
      if (got[i] != c->want[i])
        fail_msg("iterator, allocation %ld failing: element %d is not the "
                 "pipeline's element %d",
                 k, i, i);
  }
  wf_iterator_free(it);
  put_status_back();
  return rc;
}

static void test_iterator_with_prefetch(void **state) {
  (void)state;
  iter_ctx *c = calloc(1, sizeof *c);
  assert_non_null(c);
  if (tj_build(&c->j, data_dir, "2", st))
    fail_msg("build: %s", wf_status_message(st));
  wf_iterator *it = wf_iterator_new(c->j.ds, NULL, st);
  assert_non_null(it);
  for (int i = 0; i < ITER_ELEMS; i++) {
    wf_tensor *f[2];
    if (wf_iterator_next(it, f, st))
      fail_msg("iterator: %s", wf_status_message(st));
    c->want[i] = fold(f[1]);
    wf_tensor_release(f[0]);
    wf_tensor_release(f[1]);
  }
  wf_iterator_free(it);
  sweep("iterator with prefetch", try_iterator, c);
  tj_free(&c->j);
  free(c);
}

static int setup(void **state) {
  (void)state;
  const char *env = getenv("WEFT_SWEEP_MAX");
  if (env && atol(env) > 40)
    sweep_max = atol(env);
  env = getenv("WEFT_SWEEP_ONLY");
  if (env)
    sweep_only = atol(env);
  env = getenv("WEFT_SWEEP_SEED");
  if (env)
    sweep_seed = labs(atol(env));
  st = wf_status_new();
  kept = wf_status_new();
  strcpy(data_dir, "/tmp/weft-sweep-data-XXXXXX");
  strcpy(work_dir, "/tmp/weft-sweep-work-XXXXXX");
  if (!st || !mkdtemp(data_dir) || !mkdtemp(work_dir))
    return -1;
  return tj_write_data(data_dir);
}

static int teardown(void **state) {
  (void)state;
  tj_remove_dir(data_dir);
  tj_remove_dir(work_dir);
  wf_status_free(st);
  wf_status_free(kept);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runtime_creation),
      cmocka_unit_test(test_session_creation),
      cmocka_unit_test(test_first_training_step),
      cmocka_unit_test(test_warm_training_step),
      cmocka_unit_test(test_checkpoint_save_and_restore),
      cmocka_unit_test(test_saved_model_export_and_load),
      cmocka_unit_test(test_iterator_with_prefetch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
