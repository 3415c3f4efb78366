/* tests/core/test_checkpoint.c — checkpoints of sessions
 * (core/io/checkpoint.c, core/io/checkpoint_ops.c): variables round-trip into a
 * fresh session; a restore checks everything first, reports every
 * mismatch by variable name and changes nothing when one fails; partial
 * and name-selected saves and restores; the step counter and an attached
 * iterator's position come back; directories keep the newest N and find
 * the newest checkpoint that verifies; the Save and Restore ops; and a
 * saver SIGKILLed at random moments always leaves a whole checkpoint of a
 * state it committed. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "checkpoint_harness.h"
#include "exec/executor.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"
#include "exec/session_internal.h"
#include "train_harness.h"
#include "exec/variables.h"

#define PLUGIN_PATHS                                                           \
  TEST_BUILDDIR "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/devices/cpu/.libs, " TEST_BUILDDIR                   \
                "/plugins/readers/csv/.libs"

static wf_runtime *rt;
static wf_status *st;

#define CHECK(x)                                                               \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static int setup(void **state) {
  wf_config *cfg = wf_config_new();
  (void)state;
  st = wf_status_new();
  if (!cfg || !st || ch_setup_dir() != 0 ||
      wf_config_set(cfg, "plugins", "paths", PLUGIN_PATHS, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
      wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "threads", "inter_op", "2", st))
    return -1;
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    fprintf(stderr, "cannot make the runtime: %s\n", wf_status_message(st));
  return rt ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  ch_remove_dir();
  wf_status_free(st);
  return 0;
}

/* ---- a small model ------------------------------------------------------- */

/* Variables w float32 (2, 3), b float64 (3), gstep int64 () with
 * assignments of the values base + index, and reads of each. */
typedef struct model {
  wf_graph *g;
  wf_node *w, *b, *gstep;
  wf_node *init[3];
  wf_node *read_w, *read_b, *read_gstep;
} model;

static void model_build(model *m, double base) {
  float wv[6];
  double bv[3];
  int64_t gv = (int64_t)base;
  for (int i = 0; i < 6; i++)
    wv[i] = (float)(base + i);
  for (int i = 0; i < 3; i++)
    bv[i] = base + 10 + i;
  m->g = wf_graph_new(rt);
  m->w = th_var(m->g, "w", WF_FLOAT32, TH_DIMS(2, 3), 2);
  m->b = th_var(m->g, "b", WF_FLOAT64, TH_DIMS(3), 1);
  m->gstep = th_var(m->g, "global_step", WF_INT64, NULL, 0);
  m->init[0] =
      th_assign(m->g, m->w, th_const(m->g, WF_FLOAT32, TH_DIMS(2, 3), 2, wv));
  m->init[1] =
      th_assign(m->g, m->b, th_const(m->g, WF_FLOAT64, TH_DIMS(3), 1, bv));
  m->init[2] =
      th_assign(m->g, m->gstep, th_const(m->g, WF_INT64, NULL, 0, &gv));
  m->read_w = th_read(m->g, m->w, WF_FLOAT32, TH_DIMS(2, 3), 2);
  m->read_b = th_read(m->g, m->b, WF_FLOAT64, TH_DIMS(3), 1);
  m->read_gstep = th_read(m->g, m->gstep, WF_INT64, NULL, 0);
}

/* Element i of the variable read by node r, as a double. */
static double value_at(wf_session *s, wf_node *r, int i) {
  wf_tensor *v = th_fetch(s, r);
  double x = th_get(v, i);
  wf_tensor_release(v);
  return x;
}

/* The model's values in s were assigned with base. */
static void expect_model(wf_session *s, const model *m, double base) {
  for (int i = 0; i < 6; i++)
    assert_true(value_at(s, m->read_w, i) == base + i);
  for (int i = 0; i < 3; i++)
    assert_true(value_at(s, m->read_b, i) == base + 10 + i);
  assert_true(value_at(s, m->read_gstep, 0) == base);
}

static int64_t session_step(wf_session *s) {
  return (int64_t)atomic_load(&wf__session_state_of(s)->step);
}

/* ---- sessions ------------------------------------------------------------ */

static void test_fresh_session_restores_without_initialisers(void **state) {
  model m;
  const char *path = ch_path("model.safetensors");
  (void)state;

  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  CHECK(wf_session_save(s, path, NULL, st));
  wf_session_free(s);

  /* A new session has no variables until the restore creates them. */
  s = wf_session_new(m.g, st);
  CHECK(!s);
  CHECK(wf_session_restore(s, path, NULL, st));
  expect_model(s, &m, 1);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_checkpoint_holds_variables_step_and_checksums(void **state) {
  model m;
  const char *path = ch_path("contents.safetensors");
  wf_save_options opt = WF_SAVE_OPTIONS_INIT;
  (void)state;

  model_build(&m, 2);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  th_run_ok(s, m.init, 1);
  opt.global_step = 1234;
  CHECK(wf_session_save(s, path, &opt, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_int_equal(wf_checkpoint_num_tensors(c), 3);
  assert_true(wf_checkpoint_find(c, "w") >= 0);
  assert_true(wf_checkpoint_find(c, "b") >= 0);
  assert_true(wf_checkpoint_find(c, "global_step") >= 0);
  assert_string_equal(wf_checkpoint_metadata(c, WF_CHECKPOINT_STEP_KEY), "2");
  assert_string_equal(wf_checkpoint_metadata(c, WF_CHECKPOINT_GLOBAL_STEP_KEY),
                      "1234");
  assert_non_null(wf_checkpoint_metadata(c, "weft.crc32c/w"));
  wf_checkpoint_close(c);

  /* variables_only: no step counter. */
  opt = (wf_save_options)WF_SAVE_OPTIONS_INIT;
  opt.variables_only = 1;
  CHECK(wf_session_save(s, path, &opt, st));
  c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_null(wf_checkpoint_metadata(c, WF_CHECKPOINT_STEP_KEY));
  assert_null(wf_checkpoint_metadata(c, WF_CHECKPOINT_GLOBAL_STEP_KEY));
  wf_checkpoint_close(c);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_uninitialised_variables_are_left_out(void **state) {
  model m;
  const char *path = ch_path("uninit.safetensors");
  wf_restore_options ro = WF_RESTORE_OPTIONS_INIT;
  (void)state;

  model_build(&m, 3);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 2); /* global_step never assigned */
  CHECK(wf_session_save(s, path, NULL, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_int_equal(wf_checkpoint_num_tensors(c), 2);
  assert_int_equal(wf_checkpoint_find(c, "global_step"), -1);
  wf_checkpoint_close(c);
  wf_session_free(s);

  /* The graph declares global_step: a full restore misses it... */
  s = wf_session_new(m.g, st);
  CHECK(!s);
  assert_int_equal(wf_session_restore(s, path, NULL, st), WF_INVALID_ARGUMENT);
  ch_expect_message(st, path, "'global_step' is not in the file", NULL);
  /* ... and a partial one leaves it alone. */
  ro.partial = 1;
  CHECK(wf_session_restore(s, path, &ro, st));
  assert_true(value_at(s, m.read_w, 5) == 3 + 5);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void
test_restore_reports_every_mismatch_and_changes_nothing(void **state) {
  wf_graph *g = wf_graph_new(rt);
  const float one = 1, two[2] = {1, 2};
  wf_node *a = th_var(g, "a", WF_FLOAT32, NULL, 0);
  wf_node *b = th_var(g, "b", WF_FLOAT32, NULL, 0);
  wf_node *c = th_var(g, "c", WF_FLOAT32, TH_DIMS(2), 1);
  wf_node *d = th_var(g, "d", WF_FLOAT32, NULL, 0);
  wf_node *e = th_var(g, "e", WF_FLOAT32, NULL, 0);
  wf_node *vars[5] = {a, b, c, d, e}, *inits[5], *reads[5];
  const char *path = ch_path("mismatch.safetensors");
  (void)state;

  for (int i = 0; i < 5; i++) {
    int vec = vars[i] == c;
    inits[i] =
        th_assign(g, vars[i],
                  th_const(g, WF_FLOAT32, TH_DIMS(2), vec,
                           vec ? (const void *)two : (const void *)&one));
    reads[i] = th_read(g, vars[i], WF_FLOAT32, TH_DIMS(2), vec);
  }
  wf_session *s = wf_session_new(g, st);
  CHECK(!s);
  th_run_ok(s, inits, 5);

  /* The file: no a; b as float64; c of shape (3); d corrupt; e fine. */
  const int64_t d3[] = {3};
  wf_tensor *fb = wf_tensor_new(WF_FLOAT64, NULL, 0, st);
  *(double *)wf_tensor_data(fb) = 5;
  wf_tensor *t[4] = {fb, ch_filled(d3, 1, 5), ch_filled(NULL, 0, 5),
                     ch_filled(NULL, 0, 5)};
  const char *names[4] = {"b", "c", "d", "e"};
  CHECK(wf_checkpoint_write(path, names, t, 4, NULL, NULL, 0, st));
  ch_flip_byte(path, ch_data_offset(path, "d"));

  assert_int_equal(wf_session_restore(s, path, NULL, st), WF_DATA_LOSS);
  ch_expect_message(st, path, "4 problems", "'a' is not in the file",
                    "'b' is float32, the file has float64",
                    "'c' has shape (2), the file has (3)",
                    "variable 'd': checksum mismatch", NULL);
  assert_null(strstr(wf_status_message(st), "'e'"));
  /* Nothing changed, e included. */
  for (int i = 0; i < 5; i++)
    assert_true(value_at(s, reads[i], 0) == 1);

  /* Without the corrupt one it is INVALID_ARGUMENT. */
  CHECK(wf_checkpoint_write(path, names, t, 4, NULL, NULL, 0, st));
  assert_int_equal(wf_session_restore(s, path, NULL, st), WF_INVALID_ARGUMENT);
  ch_expect_message(st, "3 problems", NULL);
  assert_true(value_at(s, reads[4], 0) == 1);
  for (int i = 0; i < 4; i++)
    wf_tensor_release(t[i]);
  wf_session_free(s);
  wf_graph_free(g);
}

static void test_partial_and_named_restores(void **state) {
  model m;
  const char *path = ch_path("named.safetensors");
  const char *only_w[] = {"w"}, *unknown[] = {"w", "nope"};
  wf_save_options so = WF_SAVE_OPTIONS_INIT;
  wf_restore_options ro = WF_RESTORE_OPTIONS_INIT;
  (void)state;

  model_build(&m, 4);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  CHECK(wf_session_save(s, path, NULL, st));
  wf_session_free(s);
  wf_graph_free(m.g);

  /* Another session whose values are 7: only w comes back, the step
   * counter is not touched. */
  model_build(&m, 7);
  s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  int64_t step = session_step(s);
  ro.names = only_w;
  ro.nnames = 1;
  CHECK(wf_session_restore(s, path, &ro, st));
  assert_true(value_at(s, m.read_w, 0) == 4);
  assert_true(value_at(s, m.read_b, 0) == 17);
  assert_true(value_at(s, m.read_gstep, 0) == 7);
  assert_int_equal(session_step(s), step + 3); /* the three reads */

  ro.names = unknown;
  ro.nnames = 2;
  assert_int_equal(wf_session_restore(s, path, &ro, st), WF_INVALID_ARGUMENT);
  ch_expect_message(st, "'nope' is not a variable", NULL);

  /* A save of named variables, then a partial restore of everything. */
  so.names = only_w;
  so.nnames = 1;
  CHECK(wf_session_save(s, path, &so, st));
  so.names = unknown;
  so.nnames = 2;
  assert_int_equal(wf_session_save(s, path, &so, st), WF_NOT_FOUND);
  ch_expect_message(st, path, "'nope' is not a variable", NULL);
  wf_session_free(s);

  s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  ro = (wf_restore_options)WF_RESTORE_OPTIONS_INIT;
  ro.partial = 1;
  CHECK(wf_session_restore(s, path, &ro, st));
  assert_true(value_at(s, m.read_w, 0) == 4);
  assert_true(value_at(s, m.read_b, 0) == 17);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_named_save_of_uninitialised_variable_fails(void **state) {
  model m;
  const char *names[] = {"w", "global_step"};
  wf_save_options so = WF_SAVE_OPTIONS_INIT;
  const char *path = ch_path("named_uninit.safetensors");
  (void)state;

  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 1);
  th_run_ok(s, &m.gstep, 1); /* creates global_step without a value */
  so.names = names;
  so.nnames = 2;
  assert_int_equal(wf_session_save(s, path, &so, st), WF_FAILED_PRECONDITION);
  ch_expect_message(st, "'global_step' has no value", NULL);
  assert_int_equal(access(path, F_OK), -1);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_step_counter_comes_back(void **state) {
  model m;
  const char *path = ch_path("step.safetensors");
  (void)state;

  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  for (int i = 0; i < 5; i++)
    th_run_ok(s, m.init, 3);
  assert_int_equal(session_step(s), 5);
  CHECK(wf_session_save(s, path, NULL, st));
  wf_session_free(s);

  s = wf_session_new(m.g, st);
  CHECK(!s);
  assert_int_equal(session_step(s), 0);
  CHECK(wf_session_restore(s, path, NULL, st));
  assert_int_equal(session_step(s), 5);
  wf_session_free(s);
  wf_graph_free(m.g);
}

/* ---- iterators ----------------------------------------------------------- */

static wf_iterator *csv_iterator(const char *path) {
  const wf_attr_item opts[] = {
      {"header", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}},
      {"columns", {.type = WF_ATTR_STRING, .count = 1, .u.s = "x:int64"}}};
  wf_dataset *ds = wf_dataset_from_files(rt, path, NULL, opts, 2, st);
  CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  CHECK(!it);
  wf_dataset_release(ds);
  return it;
}

static int64_t next_x(wf_iterator *it) {
  wf_tensor *f = NULL;
  CHECK(wf_iterator_next(it, &f, st));
  int64_t x = *(int64_t *)wf_tensor_data(f);
  wf_tensor_release(f);
  return x;
}

static void test_attached_iterator_position_comes_back(void **state) {
  model m;
  const char *csv = ch_path("data.csv");
  const char *path = ch_path("iter.safetensors");
  FILE *f = fopen(csv, "w");
  (void)state;

  assert_non_null(f);
  fputs("x\n", f);
  for (int i = 1; i <= 20; i++)
    fprintf(f, "%d\n", i);
  fclose(f);

  model_build(&m, 1);
  wf_iterator *it = csv_iterator(csv);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  CHECK(wf_session_attach_iterator(s, "train", it, st));
  th_run_ok(s, m.init, 3);
  for (int i = 1; i <= 3; i++)
    assert_int_equal(next_x(it), i);
  CHECK(wf_session_save(s, path, NULL, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  int k = wf_checkpoint_find(c, WF_CHECKPOINT_ITERATOR_PREFIX "train");
  assert_true(k >= 0);
  assert_int_equal(wf_checkpoint_tensor_dtype(c, k), WF_UINT8);
  wf_checkpoint_close(c);
  for (int i = 4; i <= 9; i++)
    assert_int_equal(next_x(it), i);

  /* The same iterator goes back... */
  CHECK(wf_session_restore(s, path, NULL, st));
  assert_int_equal(next_x(it), 4);
  wf_session_free(s);

  /* ... and a new one, in a new session, starts where it was saved. */
  wf_iterator *fresh = csv_iterator(csv);
  s = wf_session_new(m.g, st);
  CHECK(!s);
  CHECK(wf_session_attach_iterator(s, "train", fresh, st));
  CHECK(wf_session_restore(s, path, NULL, st));
  assert_int_equal(next_x(fresh), 4);
  assert_int_equal(next_x(fresh), 5);

  /* A position that fails its checksum changes nothing: the iterator goes
   * on from where it is. */
  th_run_ok(s, m.init, 3);
  ch_flip_byte(path,
               ch_data_offset(path, WF_CHECKPOINT_ITERATOR_PREFIX "train"));
  assert_int_equal(wf_session_restore(s, path, NULL, st), WF_DATA_LOSS);
  ch_expect_message(st, "iterator 'train'", "checksum mismatch", NULL);
  assert_int_equal(next_x(fresh), 6);

  wf_session_free(s);
  wf_iterator_free(fresh);
  wf_iterator_free(it);
  wf_graph_free(m.g);
}

/* ---- directories --------------------------------------------------------- */

static void test_save_dir_keeps_newest_and_latest_finds_it(void **state) {
  model m;
  char dir[300], latest[400], want[400], stale[400], live[400];
  int64_t *steps = NULL;
  int n = 0;
  pid_t dead;
  (void)state;

  snprintf(dir, sizeof dir, "%s/run/ckpts", ch_dir);
  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);

  /* The temporary file of a saver that died goes; one of a live process
   * (this one's parent) stays. */
  dead = fork();
  assert_true(dead >= 0);
  if (dead == 0)
    _exit(0);
  assert_int_equal(waitpid(dead, NULL, 0), dead);
  CHECK(wf_checkpoint_save_dir(s, dir, 1, 3, st));
  snprintf(stale, sizeof stale, "%s/.ckpt-0000000009.safetensors.tmp-%ld-abcdef",
           dir, (long)dead);
  snprintf(live, sizeof live, "%s/.ckpt-0000000009.safetensors.tmp-%ld-abcdef",
           dir,
           (long)getppid());
  ch_write_bytes(stale, "x", 1);
  ch_write_bytes(live, "x", 1);

  for (int64_t step = 2; step <= 5; step++)
    CHECK(wf_checkpoint_save_dir(s, dir, step * 10, 3, st));
  CHECK(wf_checkpoint_list(dir, &steps, &n, st));
  assert_int_equal(n, 3);
  assert_int_equal(steps[0], 30);
  assert_int_equal(steps[1], 40);
  assert_int_equal(steps[2], 50);
  free(steps);
  assert_int_equal(access(stale, F_OK), -1);
  assert_int_equal(access(live, F_OK), 0);
  unlink(live);

  /* A step below the others is kept (the lowest other one goes), though
   * the newest is still the highest step. */
  CHECK(wf_checkpoint_save_dir(s, dir, 5, 3, st));
  CHECK(wf_checkpoint_list(dir, &steps, &n, st));
  assert_int_equal(n, 3);
  assert_int_equal(steps[0], 5);
  assert_int_equal(steps[1], 40);
  assert_int_equal(steps[2], 50);
  free(steps);

  CHECK(wf_checkpoint_latest(dir, latest, sizeof latest, st));
  CHECK(wf_checkpoint_path(dir, 50, want, sizeof want, st));
  assert_string_equal(latest, want);
  assert_non_null(strstr(latest, "/ckpt-0000000050.safetensors"));
  wf_checkpoint *c = wf_checkpoint_open(latest, st);
  CHECK(!c);
  assert_string_equal(wf_checkpoint_metadata(c, WF_CHECKPOINT_GLOBAL_STEP_KEY),
                      "50");
  wf_checkpoint_close(c);

  /* Too small a buffer, a negative step. */
  assert_int_equal(wf_checkpoint_latest(dir, latest, 8, st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_checkpoint_save_dir(s, dir, -1, 3, st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_checkpoint_save_dir(s, "", 1, 3, st),
                   WF_INVALID_ARGUMENT);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_latest_skips_a_corrupt_newest_checkpoint(void **state) {
  model m;
  char dir[300], latest[400], want[400];
  (void)state;

  snprintf(dir, sizeof dir, "%s/corrupt", ch_dir);
  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  assert_int_equal(
      wf_checkpoint_latest(ch_path("nothing-here"), latest, sizeof latest, st),
      WF_NOT_FOUND);
  for (int64_t step = 1; step <= 3; step++)
    CHECK(wf_checkpoint_save_dir(s, dir, step, 0, st));

  /* Newest: a flipped data byte; the one before: cut short. */
  CHECK(wf_checkpoint_path(dir, 3, want, sizeof want, st));
  ch_flip_byte(want, -1);
  CHECK(wf_checkpoint_path(dir, 2, want, sizeof want, st));
  assert_int_equal(truncate(want, ch_file_size(want) - 5), 0);
  CHECK(wf_checkpoint_latest(dir, latest, sizeof latest, st));
  CHECK(wf_checkpoint_path(dir, 1, want, sizeof want, st));
  assert_string_equal(latest, want);

  ch_flip_byte(want, -2);
  assert_int_equal(wf_checkpoint_latest(dir, latest, sizeof latest, st),
                   WF_NOT_FOUND);
  ch_expect_message(st, dir, "3 checkpoints", "ckpt-0000000003", NULL);

  /* An empty directory has none. */
  assert_int_equal(mkdir(ch_path("empty"), 0755), 0);
  assert_int_equal(
      wf_checkpoint_latest(ch_path("empty"), latest, sizeof latest, st),
      WF_NOT_FOUND);
  ch_expect_message(st, "no checkpoint", NULL);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void test_save_dir_over_a_file_fails_naming_it(void **state) {
  model m;
  const char *file = ch_path("plainfile");
  char dir[300];
  (void)state;

  ch_write_bytes(file, "x", 1);
  snprintf(dir, sizeof dir, "%s/sub", file);
  model_build(&m, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  assert_true(wf_checkpoint_save_dir(s, dir, 1, 1, st) != WF_OK);
  ch_expect_message(st, file, NULL);
  assert_int_equal(wf_checkpoint_save_dir(s, file, 1, 1, st),
                   WF_INVALID_ARGUMENT);
  ch_expect_message(st, "not a directory", NULL);
  wf_session_free(s);
  wf_graph_free(m.g);
}

/* ---- the Save and Restore ops -------------------------------------------- */

static wf_node *ckpt_op(wf_graph *g, const char *op, wf_node *const *vars,
                        int n, const char *path, int partial) {
  wf_output in[8];
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  for (int i = 0; i < n; i++)
    in[i] = th_out(vars[i]);
  wf_node_desc_add_input_list(d, in, n);
  wf_node_desc_set_attr_string(d, "path", path);
  if (partial >= 0)
    wf_node_desc_set_attr_bool(d, "partial", partial);
  return th_finish(d, op);
}

static void test_save_and_restore_ops_round_trip_in_a_session(void **state) {
  model m, other;
  const char *path = ch_path("ops.safetensors");
  (void)state;

  model_build(&m, 1);
  wf_node *vars[2] = {m.w, m.b};
  wf_node *save = ckpt_op(m.g, "Save", vars, 2, path, -1);
  wf_node *restore = ckpt_op(m.g, "Restore", vars, 2, path, 0);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  th_run_ok(s, &save, 1);
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  assert_int_equal(wf_checkpoint_num_tensors(c), 2);
  assert_null(wf_checkpoint_metadata(c, WF_CHECKPOINT_STEP_KEY));
  wf_checkpoint_close(c);
  CHECK(wf_checkpoint_verify(path, st));

  /* Overwrite w and b by the values of another model, then restore. */
  model_build(&other, 6);
  wf_session *s2 = wf_session_new(other.g, st);
  CHECK(!s2);
  th_run_ok(s2, other.init, 3);
  CHECK(wf_session_save(s2, ch_path("six.safetensors"), NULL, st));
  wf_session_free(s2);
  wf_graph_free(other.g);
  CHECK(wf_session_restore(s, ch_path("six.safetensors"), NULL, st));
  assert_true(value_at(s, m.read_w, 0) == 6);
  th_run_ok(s, &restore, 1);
  /* w and b come back; global_step, not an input of Restore, stays. */
  for (int i = 0; i < 6; i++)
    assert_true(value_at(s, m.read_w, i) == 1 + i);
  for (int i = 0; i < 3; i++)
    assert_true(value_at(s, m.read_b, i) == 11 + i);
  assert_true(value_at(s, m.read_gstep, 0) == 6);
  wf_session_free(s);
  wf_graph_free(m.g);
}

static void
test_restore_op_reports_every_mismatch_and_changes_nothing(void **state) {
  model m;
  const char *path = ch_path("ops_bad.safetensors");
  const int64_t d[] = {5};
  wf_tensor *t = ch_filled(d, 1, 3);
  const char *name = "w";
  (void)state;

  model_build(&m, 2);
  wf_node *vars[3] = {m.w, m.b, m.gstep};
  wf_node *restore = ckpt_op(m.g, "Restore", vars, 3, path, -1);
  wf_node *partial = ckpt_op(m.g, "Restore", vars + 1, 2, path, 1);
  wf_session *s = wf_session_new(m.g, st);
  CHECK(!s);
  th_run_ok(s, m.init, 3);
  CHECK(wf_checkpoint_write(path, &name, &t, 1, NULL, NULL, 0, st));
  assert_int_equal(th_run_targets(s, &restore, 1, st), WF_INVALID_ARGUMENT);
  ch_expect_message(st, path, "3 problems", "'w' has shape (2, 3)",
                    "'b' is not in the file", "'global_step' is not in", NULL);
  expect_model(s, &m, 2);
  /* partial: b and global_step are missing and left alone. */
  th_run_ok(s, &partial, 1);
  expect_model(s, &m, 2);
  wf_tensor_release(t);
  wf_session_free(s);
  wf_graph_free(m.g);
}

/* ---- the kill test ------------------------------------------------------- */

#define KILL_VARS 4
#define KILL_ELEMS (256 * 1024) /* 4 MiB in all */
#define KILL_ROUNDS 100

/* A session on a runtime without plugins or threads (safe to make in a
 * forked child) holding KILL_VARS float32 variables. */
static wf_session *kill_session(wf_graph **g, wf_runtime **krt,
                                wf__variable **vars, wf_status *kst) {
  wf_config *cfg = wf_config_new();
  wf_shape shape = {.rank = 1, .dims = {KILL_ELEMS}};
  wf_session *s = NULL;
  char name[16];

  if (!cfg || wf_config_set(cfg, "threads", "inter_op", "1", kst) ||
      !(*krt = wf__runtime_new_empty(cfg, kst)) || !(*g = wf_graph_new(*krt)) ||
      !(s = wf_session_new(*g, kst)))
    goto done;
  for (int i = 0; i < KILL_VARS; i++) {
    snprintf(name, sizeof name, "v%d", i);
    vars[i] = wf__varstore_get(wf__session_state_of(s)->vars, name, WF_FLOAT32,
                               &shape, kst);
    wf_tensor *t = wf_tensor_new(WF_FLOAT32, shape.dims, 1, kst);
    if (!vars[i] || !t || wf__var_assign(vars[i]->handle, t, kst)) {
      wf_tensor_release(t);
      wf_session_free(s);
      s = NULL;
      goto done;
    }
    wf_tensor_release(t);
  }
done:
  wf_config_free(cfg);
  return s;
}

/* Fills every variable with step and saves it into dir as checkpoint
 * step, keeping two. */
static int kill_save(wf_session *s, wf__variable **vars, const char *dir,
                     int64_t step, wf_status *kst) {
  for (int i = 0; i < KILL_VARS; i++) {
    float *p = wf_tensor_data(wf__var_lock(vars[i]->handle, kst));
    for (int k = 0; k < KILL_ELEMS; k++)
      p[k] = (float)step;
    wf__var_unlock(vars[i]->handle);
  }
  return wf_checkpoint_save_dir(s, dir, step, 2, kst);
}

/* The child: commits steps first, first + 1, ... until it is killed. */
static void saver(const char *dir, int64_t first) __attribute__((noreturn));
static void saver(const char *dir, int64_t first) {
  wf_status *kst = wf_status_new();
  wf__variable *vars[KILL_VARS];
  wf_runtime *krt = NULL;
  wf_graph *g = NULL;
  wf_session *s = kill_session(&g, &krt, vars, kst);

  if (!s)
    _exit(2);
  for (int64_t step = first;; step++)
    if (kill_save(s, vars, dir, step, kst)) {
      fprintf(stderr, "saver: %s\n", wf_status_message(kst));
      _exit(3);
    }
}

/* The checkpoint of step in dir verifies and holds the state of its step:
 * every element of every variable equal to it. */
static void check_step(const char *dir, int64_t step) {
  char path[400];
  CHECK(wf_checkpoint_path(dir, step, path, sizeof path, st));
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c);
  const char *gs = wf_checkpoint_metadata(c, WF_CHECKPOINT_GLOBAL_STEP_KEY);
  assert_non_null(gs);
  assert_int_equal(strtoll(gs, NULL, 10), step);
  assert_int_equal(wf_checkpoint_num_tensors(c), KILL_VARS);
  for (int i = 0; i < KILL_VARS; i++) {
    wf_tensor *t = wf_checkpoint_read(c, i, st);
    CHECK(!t);
    const float *p = wf_tensor_data(t);
    for (int k = 0; k < KILL_ELEMS; k++)
      if (p[k] != (float)step)
        fail_msg("%s: %s[%d] is %g, not the step %lld", path,
                 wf_checkpoint_tensor_name(c, i), k, (double)p[k],
                 (long long)step);
    wf_tensor_release(t);
  }
  wf_checkpoint_close(c);
}

/* Every checkpoint file in dir is whole (a torn one would mean a write
 * that was not atomic), and the newest one is what wf_checkpoint_latest
 * finds. Returns its step. */
static int64_t check_dir(const char *dir) {
  char latest[400], want[400];
  int64_t *steps = NULL, newest;
  int n = 0;

  CHECK(wf_checkpoint_list(dir, &steps, &n, st));
  assert_true(n >= 1);
  for (int i = 0; i < n; i++)
    check_step(dir, steps[i]);
  newest = steps[n - 1];
  free(steps);
  CHECK(wf_checkpoint_latest(dir, latest, sizeof latest, st));
  CHECK(wf_checkpoint_path(dir, newest, want, sizeof want, st));
  assert_string_equal(latest, want);
  return newest;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void test_killed_saver_always_leaves_a_whole_checkpoint(void **state) {
  wf__variable *vars[KILL_VARS];
  wf_runtime *krt = NULL;
  wf_graph *g = NULL;
  char dir[300];
  uint64_t seed = 0x9e3779b97f4a7c15u, rnd = seed;
  int64_t newest;
  int torn = 0;
  (void)state;

  /* Step 0 is committed before any child runs; a save's duration sets the
   * range of the delays, so kills land in every phase of a save. */
  snprintf(dir, sizeof dir, "%s/kill", ch_dir);
  wf_session *s = kill_session(&g, &krt, vars, st);
  CHECK(!s);
  double t0 = now_us();
  CHECK(kill_save(s, vars, dir, 0, st));
  double save_us = now_us() - t0;
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(krt);
  if (save_us > 50000)
    save_us = 50000;
  newest = check_dir(dir);

  for (int round = 0; round < KILL_ROUNDS; round++) {
    rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
    long delay = (long)(rnd % (uint64_t)(3 * save_us + 1000));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
      saver(dir, newest + 1);
    struct timespec ts = {delay / 1000000, (delay % 1000000) * 1000};
    nanosleep(&ts, NULL);
    int status;
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
      fail_msg("round %d: the saver exited with %d", round,
               WEXITSTATUS(status));
    torn += ch_count_hidden(dir) > 0;
    int64_t step = check_dir(dir);
    /* Committed checkpoints never go away beyond the two kept. */
    assert_true(step >= newest);
    newest = step;
  }
  fprintf(stderr,
          "kill test: %d kills (seed %#llx, delays up to %.0f us), newest "
          "step %lld, %d left a temporary file behind\n",
          KILL_ROUNDS, (unsigned long long)seed, 3 * save_us + 1000,
          (long long)newest, torn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fresh_session_restores_without_initialisers),
      cmocka_unit_test(test_checkpoint_holds_variables_step_and_checksums),
      cmocka_unit_test(test_uninitialised_variables_are_left_out),
      cmocka_unit_test(test_restore_reports_every_mismatch_and_changes_nothing),
      cmocka_unit_test(test_partial_and_named_restores),
      cmocka_unit_test(test_named_save_of_uninitialised_variable_fails),
      cmocka_unit_test(test_step_counter_comes_back),
      cmocka_unit_test(test_attached_iterator_position_comes_back),
      cmocka_unit_test(test_save_dir_keeps_newest_and_latest_finds_it),
      cmocka_unit_test(test_latest_skips_a_corrupt_newest_checkpoint),
      cmocka_unit_test(test_save_dir_over_a_file_fails_naming_it),
      cmocka_unit_test(test_save_and_restore_ops_round_trip_in_a_session),
      cmocka_unit_test(
          test_restore_op_reports_every_mismatch_and_changes_nothing),
      cmocka_unit_test(test_killed_saver_always_leaves_a_whole_checkpoint),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
