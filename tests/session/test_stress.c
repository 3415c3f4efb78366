/* tests/session/test_stress.c — one training session used by many threads at
 * once: threads stepping (through wf_session_run and through one shared
 * callable), threads reading every variable and running inference on a fed
 * batch, a thread saving checkpoints into a directory, and threads walking
 * their own iterators of the same prefetched pipeline (saving and restoring
 * their positions). Afterwards the global step counts every step exactly
 * once, every checkpoint verifies and restores, and every value read was
 * finite.
 *
 * Its main purpose is the ThreadSanitizer stage of .ci/run, which runs it
 * with weft built with -fsanitize=thread; in a plain build it still checks
 * the results above. WEFT_STRESS_STEPS sets the steps per stepping thread
 * (default 12). It does not check timing or throughput. */
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
#include <unistd.h>

#include <cmocka.h>

#include "train_job.h"

#define STEPPERS 3
#define READERS 2
#define WALKERS 2

static char data_dir[64];
static char ckpt_dir[64];
static int steps_per_thread = 12;

typedef struct shared {
  tj_job j;
  wf_callable *call; /* loss and train, prepared once */
  int steppers_left; /* under mu */
  pthread_mutex_t mu;
  char error[512];   /* the first failure, under mu */
  int saves, reads, walks;
} shared;

static void record(shared *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void record(shared *sh, const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&sh->mu);
  if (!sh->error[0]) {
    va_start(ap, fmt);
    vsnprintf(sh->error, sizeof sh->error, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&sh->mu);
}

static int stepping(shared *sh) {
  pthread_mutex_lock(&sh->mu);
  int left = sh->steppers_left > 0 && !sh->error[0];
  pthread_mutex_unlock(&sh->mu);
  return left;
}

typedef struct worker {
  shared *sh;
  int index;
} worker;

static void *stepper(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  wf_status *st = wf_status_new();
  for (int i = 0; i < steps_per_thread; i++) {
    wf_tensor *loss = NULL;
    int rc = w->index % 2
                 ? wf_callable_run(sh->call, NULL, NULL, &loss, NULL, st)
                 : wf_session_run(sh->j.s, NULL, NULL, NULL, 0, &sh->j.loss,
                                  &loss, 1, &sh->j.train, 1, NULL, st);
    if (rc) {
      record(sh, "stepper %d, step %d: %s", w->index, i,
             wf_status_message(st));
      break;
    }
    float l = *(const float *)wf_tensor_data(loss);
    wf_tensor_release(loss);
    if (!isfinite(l)) {
      record(sh, "stepper %d, step %d: loss %g", w->index, i, l);
      break;
    }
  }
  wf_status_free(st);
  pthread_mutex_lock(&sh->mu);
  sh->steppers_left--;
  pthread_mutex_unlock(&sh->mu);
  return NULL;
}

/* Reads every variable and runs inference on a fed batch, until the
 * steppers are done (at least twice). */
static void *reader(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  tj_job *j = &sh->j;
  wf_status *st = wf_status_new();
  wf_tensor *vals[TJ_MAX_VARS];
  int64_t dims[4] = {TJ_BATCH, TJ_SIDE, TJ_SIDE, 1};
  wf_tensor *batch = wf_tensor_new(WF_FLOAT32, dims, 4, st);
  if (!batch) {
    record(sh, "reader %d: %s", w->index, wf_status_message(st));
    goto done;
  }
  for (int64_t i = 0; i < wf_tensor_count(batch); i++)
    ((float *)wf_tensor_data(batch))[i] = (float)(i % 7) / 7.0f;
  for (int round = 0; round < 2 || stepping(sh); round++) {
    if (wf_session_run(j->s, NULL, NULL, NULL, 0, j->var_values, vals,
                       j->nvars, NULL, 0, NULL, st)) {
      record(sh, "reader %d: variables: %s", w->index, wf_status_message(st));
      break;
    }
    for (int v = 0; v < j->nvars; v++) {
      if (wf_tensor_dtype(vals[v]) == WF_FLOAT32) {
        const float *p = wf_tensor_data(vals[v]);
        for (int64_t e = 0; e < wf_tensor_count(vals[v]); e++)
          if (!isfinite(p[e])) {
            record(sh, "reader %d: variable %d element %lld is %g", w->index,
                   v, (long long)e, p[e]);
            break;
          }
      }
      wf_tensor_release(vals[v]);
    }
    wf_tensor *logits = NULL;
    if (wf_session_run(j->s, NULL, &j->input, &batch, 1, &j->predict, &logits,
                       1, NULL, 0, NULL, st)) {
      record(sh, "reader %d: inference: %s", w->index, wf_status_message(st));
      break;
    }
    if (wf_tensor_count(logits) != TJ_BATCH * 4)
      record(sh, "reader %d: %lld logits", w->index,
             (long long)wf_tensor_count(logits));
    wf_tensor_release(logits);
    pthread_mutex_lock(&sh->mu);
    sh->reads++;
    pthread_mutex_unlock(&sh->mu);
  }
done:
  wf_tensor_release(batch);
  wf_status_free(st);
  return NULL;
}

/* Saves checkpoints (keeping the newest three) until the steppers are done
 * (at least twice). */
static void *saver(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  wf_status *st = wf_status_new();
  for (int64_t k = 0; k < 2 || stepping(sh); k++) {
    if (wf_checkpoint_save_dir(sh->j.s, ckpt_dir, k, 3, st)) {
      record(sh, "saver: checkpoint %lld: %s", (long long)k,
             wf_status_message(st));
      break;
    }
    pthread_mutex_lock(&sh->mu);
    sh->saves++;
    pthread_mutex_unlock(&sh->mu);
  }
  wf_status_free(st);
  return NULL;
}

/* Labels of the next n batches of it (n <= 8), each batch's labels summed
 * into one number per batch. */
static int take(wf_iterator *it, int n, int64_t *sums, wf_status *st) {
  for (int i = 0; i < n; i++) {
    wf_tensor *f[2] = {NULL, NULL};
    if (wf_iterator_next(it, f, st))
      return -1;
    int64_t s = 0;
    const int32_t *lab = wf_tensor_data(f[1]);
    for (int64_t e = 0; e < wf_tensor_count(f[1]); e++)
      s = s * 5 + lab[e];
    sums[i] = s;
    wf_tensor_release(f[0]);
    wf_tensor_release(f[1]);
  }
  return 0;
}

/* Its own iterator of the session's pipeline: walks, saves its position,
 * walks on, restores, and must see the same batches again; until the
 * steppers are done (at least twice). */
static void *walker(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  wf_status *st = wf_status_new();
  wf_iterator *it = wf_iterator_new(sh->j.ds, NULL, st);
  int64_t first[5], again[5], skip[3];
  if (!it) {
    record(sh, "walker %d: %s", w->index, wf_status_message(st));
    goto done;
  }
  for (int round = 0; round < 2 || stepping(sh); round++) {
    wf_tensor *pos = NULL;
    if (take(it, 3, skip, st) || !(pos = wf_iterator_save(it, st)) ||
        take(it, 5, first, st) || wf_iterator_restore(it, pos, st) ||
        take(it, 5, again, st)) {
      record(sh, "walker %d, round %d: %s", w->index, round,
             wf_status_message(st));
      wf_tensor_release(pos);
      break;
    }
    wf_tensor_release(pos);
    if (memcmp(first, again, sizeof first) != 0) {
      record(sh, "walker %d, round %d: the restored position gave other "
                 "batches",
             w->index, round);
      break;
    }
    pthread_mutex_lock(&sh->mu);
    sh->walks++;
    pthread_mutex_unlock(&sh->mu);
  }
done:
  wf_iterator_free(it);
  wf_status_free(st);
  return NULL;
}

static void test_threads_step_read_save_and_iterate_one_session(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  shared *sh = calloc(1, sizeof *sh);
  assert_non_null(sh);
  pthread_mutex_init(&sh->mu, NULL);
  if (tj_build(&sh->j, data_dir, "2", st) || tj_init(&sh->j, st))
    fail_msg("building the job: %s", wf_status_message(st));
  sh->call = wf_session_prepare(sh->j.s, NULL, 0, &sh->j.loss, 1,
                                &sh->j.train, 1, st);
  if (!sh->call)
    fail_msg("prepare: %s", wf_status_message(st));
  sh->steppers_left = STEPPERS;

  pthread_t th[STEPPERS + READERS + 1 + WALKERS];
  worker ws[STEPPERS + READERS + 1 + WALKERS];
  int n = 0;
  for (int i = 0; i < STEPPERS; i++, n++) {
    ws[n] = (worker){sh, i};
    assert_int_equal(pthread_create(&th[n], NULL, stepper, &ws[n]), 0);
  }
  for (int i = 0; i < READERS; i++, n++) {
    ws[n] = (worker){sh, i};
    assert_int_equal(pthread_create(&th[n], NULL, reader, &ws[n]), 0);
  }
  ws[n] = (worker){sh, 0};
  assert_int_equal(pthread_create(&th[n], NULL, saver, &ws[n]), 0);
  n++;
  for (int i = 0; i < WALKERS; i++, n++) {
    ws[n] = (worker){sh, i};
    assert_int_equal(pthread_create(&th[n], NULL, walker, &ws[n]), 0);
  }
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  if (sh->error[0])
    fail_msg("%s", sh->error);
  assert_true(sh->saves >= 2);
  assert_true(sh->reads >= 2 * READERS);
  assert_true(sh->walks >= 2 * WALKERS);

  /* Every step counted exactly once. */
  int64_t gs = tj_global_step(&sh->j, st);
  if (gs < 0)
    fail_msg("global step: %s", wf_status_message(st));
  assert_int_equal(gs, (int64_t)STEPPERS * steps_per_thread);

  /* The checkpoints kept verify, and the newest restores into a new
   * session of the same job that then trains on. */
  int64_t *steps = NULL;
  int nckpt = 0;
  if (wf_checkpoint_list(ckpt_dir, &steps, &nckpt, st))
    fail_msg("list: %s", wf_status_message(st));
  assert_true(nckpt >= 1 && nckpt <= 3);
  for (int i = 0; i < nckpt; i++) {
    char path[512];
    if (wf_checkpoint_path(ckpt_dir, steps[i], path, sizeof path, st) ||
        wf_checkpoint_verify(path, st))
      fail_msg("checkpoint %lld: %s", (long long)steps[i],
               wf_status_message(st));
  }
  free(steps);
  char latest[512];
  tj_job again;
  if (wf_checkpoint_latest(ckpt_dir, latest, sizeof latest, st) ||
      tj_build(&again, data_dir, "2", st) ||
      wf_session_restore(again.s, latest, NULL, st) ||
      tj_step(&again, NULL, st))
    fail_msg("resuming: %s", wf_status_message(st));
  tj_free(&again);

  wf_callable_free(sh->call);
  tj_free(&sh->j);
  pthread_mutex_destroy(&sh->mu);
  free(sh);
  wf_status_free(st);
}

static int setup(void **state) {
  (void)state;
  const char *env = getenv("WEFT_STRESS_STEPS");
  if (env && atoi(env) > 0)
    steps_per_thread = atoi(env);
  strcpy(data_dir, "/tmp/weft-stress-data-XXXXXX");
  strcpy(ckpt_dir, "/tmp/weft-stress-ckpt-XXXXXX");
  if (!mkdtemp(data_dir) || !mkdtemp(ckpt_dir))
    return -1;
  return tj_write_data(data_dir);
}

static int teardown(void **state) {
  (void)state;
  tj_remove_dir(data_dir);
  tj_remove_dir(ckpt_dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_step_read_save_and_iterate_one_session),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
