/* tests/core/test_recovery.c — training resumed from a checkpoint follows
 * the loss trajectory of a run that was never interrupted: variables,
 * Adam's slots, the global step, the step counter that keys dropout's random
 * streams and the shuffled input pipeline's position all come back. Once in
 * process (the session torn down and rebuilt), once across a process killed
 * with SIGKILL at a random point of its training (checkpoint writes
 * included). The same binary is the killed worker
 * (`--worker CKPT_DIR DATA_DIR`). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/weft.h>

#define PLUGINS                                                                \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs, " TEST_BUILDDIR                     \
                "/plugins/readers/idx/.libs, " TEST_BUILDDIR                   \
                "/plugins/devices/cpu/.libs"

#define SAMPLES 96
#define SIDE 6
#define BATCH 8
#define STEPS 40         /* a run: 40 batches, over 3 passes of the data */
#define EVERY 4          /* the worker's checkpoint interval */
#define LOSS_TOL 1e-5    /* relative; same kernels, same thread counts */

static char data_dir[256];
static float reference[STEPS]; /* the uninterrupted trajectory */
static int64_t reference_global_step;

#define CHECK(cond, st)                                                        \
  do {                                                                         \
    if (cond)                                                                  \
      fail_msg("%s:%d: %s", __FILE__, __LINE__, wf_status_message(st));        \
  } while (0)

/* ---- the training job ----------------------------------------------------------- */

typedef struct job {
  wf_runtime *rt;
  wf_dataset *ds;
  wf_graph *g;
  wf_model *m;
  wf_session *s;
  wf_iterator *it;
  wf_node *init, *train;
  wf_output loss, global_step;
} job;

static int write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(p, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* idx files of SAMPLES 6x6 images whose label is the brightest quadrant
 * (0..3) plus 4 when the image is bright overall: learnable, not trivial. */
static void write_data(const char *dir) {
  uint8_t img[16 + SAMPLES * SIDE * SIDE], lab[8 + SAMPLES];
  uint8_t ih[16] = {0, 0, 8, 3, 0, 0, 0, SAMPLES, 0, 0, 0, SIDE, 0, 0, 0, SIDE};
  uint8_t lh[8] = {0, 0, 8, 1, 0, 0, 0, SAMPLES};
  memcpy(img, ih, 16);
  memcpy(lab, lh, 8);
  uint32_t x = 12345;
  for (int i = 0; i < SAMPLES; i++) {
    int q[4] = {0, 0, 0, 0}, total = 0;
    for (int p = 0; p < SIDE * SIDE; p++) {
      x = x * 1664525u + 1013904223u;
      uint8_t v = (uint8_t)(x >> 24);
      img[16 + i * SIDE * SIDE + p] = v;
      q[(p / SIDE >= SIDE / 2) * 2 + (p % SIDE >= SIDE / 2)] += v;
      total += v;
    }
    int best = 0;
    for (int k = 1; k < 4; k++)
      if (q[k] > q[best])
        best = k;
    lab[8 + i] = (uint8_t)(best + (total > 128 * SIDE * SIDE ? 4 : 0));
  }
  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  assert_int_equal(write_file(path, img, sizeof img), 0);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
  assert_int_equal(write_file(path, lab, sizeof lab), 0);
}

static wf_runtime *new_runtime(wf_status *st) {
  wf_config *cfg = wf_config_new();
  CHECK(wf_config_set(cfg, "plugins", "paths", PLUGINS, st) ||
            wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
            wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
            wf_config_set(cfg, "threads", "inter_op", "2", st),
        st);
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  CHECK(!rt, st);
  return rt;
}

/* Everything a training process builds, from nothing: the pipeline
 * (shuffled, repeated, prefetched), an mlp with dropout, Adam, a session
 * and its iterator. Nothing is initialised or restored yet. */
static void job_build(job *j, wf_status *st) {
  memset(j, 0, sizeof *j);
  j->rt = new_runtime(st);
  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", data_dir);
  wf_attr_item pair = {"label_file",
                       {.type = WF_ATTR_STRING, .count = 1, .u.s = "auto"}};
  wf_dataset *ds = wf_dataset_from_files(j->rt, path, "idx", &pair, 1, st);
  ds = wf_dataset_shuffle(ds, 32, 99, st);
  ds = wf_dataset_batch(ds, BATCH, 1, st);
  ds = wf_dataset_map_scale(ds, "image", 1.0 / 255, 0, st);
  ds = wf_dataset_map_cast(ds, "label", WF_INT32, st);
  ds = wf_dataset_repeat(ds, -1, st);
  j->ds = wf_dataset_prefetch(ds, 2, st);
  CHECK(!j->ds, st);

  j->g = wf_graph_new(j->rt);
  wf_node *next = wf_graph_add_get_next(j->g, "train", j->ds, "next", st);
  CHECK(!next, st);
  int64_t dims[2] = {-1, SIDE * SIDE};
  wf_tensor *shape = wf_tensor_new(WF_INT64, (int64_t[]){2}, 1, st);
  CHECK(!shape, st);
  memcpy(wf_tensor_data(shape), dims, sizeof dims);
  wf_node_desc *c = wf_node_desc_new(j->g, "Const", "flat_shape");
  wf_node_desc_set_attr_tensor(c, "value", shape);
  wf_node_desc_set_attr_dtype(c, "dtype", WF_INT64);
  wf_node *cn = wf_node_desc_finish(c, st);
  wf_tensor_release(shape);
  CHECK(!cn, st);
  wf_node_desc *r = wf_node_desc_new(j->g, "Reshape", "flat");
  wf_node_desc_add_input(r, (wf_output){next, 0});
  wf_node_desc_add_input(r, (wf_output){cn, 0});
  wf_node *x = wf_node_desc_finish(r, st);
  CHECK(!x, st);

  j->m = wf_model_new(j->g, 7, st);
  CHECK(!j->m, st);
  wf_model_begin(j->m, 1);
  wf_output h = wf_layer_dense(j->m, (wf_output){x, 0}, 24, WF_ACT_RELU, st);
  h = wf_layer_dropout(j->m, h, 0.25, st);
  wf_output logits = wf_layer_dense(j->m, h, 8, WF_ACT_NONE, st);
  CHECK(!logits.node, st);
  j->loss = wf_loss_sparse_softmax_cross_entropy(j->m, logits,
                                                 (wf_output){next, 1}, st);
  CHECK(!j->loss.node, st);
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 0.01;
  j->train = wf_model_minimize(j->m, j->loss, &opt, st);
  CHECK(!j->train, st);
  j->global_step = wf_model_global_step(j->m, st);
  CHECK(!j->global_step.node, st);
  j->init = wf_model_init_op(j->m, st);
  CHECK(!j->init, st);

  j->s = wf_session_new(j->g, st);
  CHECK(!j->s, st);
  j->it = wf_iterator_new(j->ds, NULL, st);
  CHECK(!j->it, st);
  CHECK(wf_session_attach_iterator(j->s, "train", j->it, st), st);
}

static void job_init(job *j, wf_status *st) {
  CHECK(wf_session_run(j->s, NULL, NULL, NULL, 0, NULL, NULL, 0, &j->init, 1,
                       NULL, st),
        st);
}

static float job_step(job *j, wf_status *st) {
  wf_tensor *out = NULL;
  CHECK(wf_session_run(j->s, NULL, NULL, NULL, 0, &j->loss, &out, 1,
                       &j->train, 1, NULL, st),
        st);
  float l = *(float *)wf_tensor_data(out);
  wf_tensor_release(out);
  return l;
}

static int64_t job_global_step(job *j, wf_status *st) {
  wf_tensor *out = NULL;
  CHECK(wf_session_run(j->s, NULL, NULL, NULL, 0, &j->global_step, &out, 1,
                       NULL, 0, NULL, st),
        st);
  int64_t v = wf_tensor_dtype(out) == WF_INT64
                  ? *(int64_t *)wf_tensor_data(out)
                  : (int64_t)*(int32_t *)wf_tensor_data(out);
  wf_tensor_release(out);
  return v;
}

static void job_free(job *j) {
  wf_session_free(j->s);
  wf_iterator_free(j->it);
  wf_model_free(j->m);
  wf_graph_free(j->g);
  wf_dataset_release(j->ds);
  wf_runtime_free(j->rt);
}

/* Restores the newest good checkpoint in dir; returns its global step, read
 * from the checkpoint's metadata: fetching the variable would take a step
 * of the session and so move the step counter that keys dropout. */
static int64_t job_resume(job *j, const char *dir, wf_status *st) {
  char path[1024];
  CHECK(wf_checkpoint_latest(dir, path, sizeof path, st), st);
  CHECK(wf_session_restore(j->s, path, NULL, st), st);
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  CHECK(!c, st);
  const char *gs = wf_checkpoint_metadata(c, WF_CHECKPOINT_GLOBAL_STEP_KEY);
  assert_non_null(gs);
  int64_t step = strtoll(gs, NULL, 10);
  wf_checkpoint_close(c);
  return step;
}

static void assert_loss_near(float got, float want, int step) {
  float tol = LOSS_TOL * fmaxf(1.0f, fabsf(want));
  if (!(fabsf(got - want) <= tol))
    fail_msg("step %d: loss %.9g, the uninterrupted run had %.9g", step, got,
             want);
}

static void make_temp_dir(char *buf, size_t len, const char *what) {
  snprintf(buf, len, "/tmp/weft-recovery-%s-XXXXXX", what);
  assert_non_null(mkdtemp(buf));
}

static void remove_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* ---- the worker --------------------------------------------------------------------- */

/* Trains STEPS steps with a checkpoint every EVERY steps (keeping 2), writing
 * "step loss" lines to stdout; the test kills it somewhere on the way. */
static int worker(const char *dir) {
  wf_status *st = wf_status_new();
  job j;
  job_build(&j, st);
  job_init(&j, st);
  for (int i = 0; i < STEPS; i++) {
    float l = job_step(&j, st);
    printf("%d %.9g\n", i, (double)l);
    fflush(stdout);
    if ((i + 1) % EVERY == 0 &&
        wf_checkpoint_save_dir(j.s, dir, i + 1, 2, st)) {
      fprintf(stderr, "worker: %s\n", wf_status_message(st));
      return 1;
    }
  }
  job_free(&j);
  wf_status_free(st);
  return 0;
}

/* ---- tests -------------------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  job j;
  make_temp_dir(data_dir, sizeof data_dir, "data");
  write_data(data_dir);
  job_build(&j, st);
  job_init(&j, st);
  for (int i = 0; i < STEPS; i++)
    reference[i] = job_step(&j, st);
  reference_global_step = job_global_step(&j, st);
  job_free(&j);
  wf_status_free(st);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  remove_dir(data_dir);
  return 0;
}

static void test_the_reference_run_learns(void **state) {
  (void)state;
  assert_int_equal(reference_global_step, STEPS);
  float first = 0, last = 0;
  for (int i = 0; i < 8; i++) {
    first += reference[i];
    last += reference[STEPS - 8 + i];
  }
  assert_true(last < 0.9f * first);
}

static void test_resumed_session_follows_the_uninterrupted_trajectory(
    void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  char dir[256];
  make_temp_dir(dir, sizeof dir, "ckpt");
  const int at = 13; /* mid-pass: the pipeline is inside a shuffle buffer */
  job j;
  job_build(&j, st);
  job_init(&j, st);
  for (int i = 0; i < at; i++)
    assert_loss_near(job_step(&j, st), reference[i], i);
  CHECK(wf_checkpoint_save_dir(j.s, dir, at, 3, st), st);
  /* Work after the checkpoint is lost with the session. */
  for (int i = at; i < at + 5; i++)
    job_step(&j, st);
  job_free(&j);

  /* A new process would build everything again, then restore instead of
   * initialising. */
  job_build(&j, st);
  assert_int_equal(job_resume(&j, dir, st), at);
  for (int i = at; i < STEPS; i++)
    assert_loss_near(job_step(&j, st), reference[i], i);
  assert_int_equal(job_global_step(&j, st), STEPS);
  job_free(&j);
  remove_dir(dir);
  wf_status_free(st);
}

static void test_restoring_the_variables_alone_diverges(void **state) {
  /* The check above can fail: restoring the variables alone (a fresh
   * iterator, the step counter from zero) gives another trajectory. */
  (void)state;
  wf_status *st = wf_status_new();
  char dir[256], path[1024];
  make_temp_dir(dir, sizeof dir, "partial");
  const int at = 13;
  job j;
  job_build(&j, st);
  job_init(&j, st);
  for (int i = 0; i < at; i++)
    job_step(&j, st);
  wf_save_options so = WF_SAVE_OPTIONS_INIT;
  so.variables_only = 1;
  snprintf(path, sizeof path, "%s/vars.safetensors", dir);
  CHECK(wf_session_save(j.s, path, &so, st), st);
  job_free(&j);
  job_build(&j, st);
  CHECK(wf_session_restore(j.s, path, NULL, st), st);
  int differ = 0;
  for (int i = at; i < at + 4; i++)
    differ += fabsf(job_step(&j, st) - reference[i]) >
              LOSS_TOL * fmaxf(1.0f, fabsf(reference[i]));
  assert_true(differ > 0);
  job_free(&j);
  remove_dir(dir);
  wf_status_free(st);
}

/* Runs the worker until it has printed `lines` loss lines plus a random
 * delay, then SIGKILLs it. Returns how many steps it reported; *killed
 * says whether the signal found it still running. */
static int run_and_kill(const char *dir, int lines, long delay_us,
                        float *losses, int *killed) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/proc/self/exe", "test_recovery", "--worker", dir, data_dir,
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  assert_non_null(f);
  int seen = 0, step;
  double loss;
  while (seen < lines && fscanf(f, "%d %lf", &step, &loss) == 2) {
    assert_int_equal(step, seen);
    losses[seen++] = (float)loss;
  }
  struct timespec d = {0, delay_us * 1000};
  nanosleep(&d, NULL);
  kill(pid, SIGKILL);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  *killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  while (fscanf(f, "%d %lf", &step, &loss) == 2)
    if (step == seen)
      losses[seen++] = (float)loss;
  fclose(f);
  return seen;
}

static void test_process_killed_mid_training_resumes_on_trajectory(
    void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  float losses[STEPS];
  unsigned seed = (unsigned)time(NULL);
  srand(seed);
  int kills = 0;
  for (int round = 0; round < 5; round++) {
    char dir[256];
    make_temp_dir(dir, sizeof dir, "kill");
    /* Line EVERY comes after the first checkpoint is complete. */
    int lines = EVERY + 1 + rand() % (STEPS - 2 * EVERY);
    long delay = rand() % 3000;
    int killed;
    int seen = run_and_kill(dir, lines, delay, losses, &killed);
    kills += killed;
    /* The worker's own steps match the reference: the trajectory does not
     * depend on the process. */
    for (int i = 0; i < seen; i++)
      assert_loss_near(losses[i], reference[i], i);
    job j;
    job_build(&j, st);
    int64_t at = job_resume(&j, dir, st);
    if (at % EVERY != 0 || at > seen || at < EVERY)
      fail_msg("seed %u: resumed at step %lld after the worker reported %d",
               seed, (long long)at, seen);
    for (int i = (int)at; i < STEPS; i++)
      assert_loss_near(job_step(&j, st), reference[i], i);
    assert_int_equal(job_global_step(&j, st), STEPS);
    job_free(&j);
    remove_dir(dir);
  }
  assert_true(kills > 0); /* the worker did not always finish first */
  wf_status_free(st);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--worker") == 0) {
    snprintf(data_dir, sizeof data_dir, "%s", argv[3]);
    return worker(argv[2]);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_reference_run_learns),
      cmocka_unit_test(test_resumed_session_follows_the_uninterrupted_trajectory),
      cmocka_unit_test(test_restoring_the_variables_alone_diverges),
      cmocka_unit_test(test_process_killed_mid_training_resumes_on_trajectory),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
