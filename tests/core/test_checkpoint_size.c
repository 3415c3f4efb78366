/* tests/core/test_checkpoint_size.c — the checkpoints of the reference mlp
 * training (Fashion-MNIST through a cache, a shuffle of the whole training
 * set, batches, maps and prefetch; 784-256-128-10 with Adam) stay within
 * 1.1 times its variables and Adam's slots at every step tried — the input
 * pipeline's position is saved as where to re-read from, not as its
 * buffered data — and a session restored from one continues with the same
 * losses bit for bit. Skipped when the data set is not installed. */
#include <config.h>

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
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define BATCH 64
#define PASS_STEPS (60000 / BATCH) /* full batches of one pass */
/* 784*256 + 256 + 256*128 + 128 + 128*10 + 10 parameters, each with Adam's
 * two slots beside it, in float32. */
#define PARAMS 235146LL
#define VARS_AND_SLOTS_BYTES (PARAMS * 3 * 4)

#define CHECK(cond, st)                                                        \
  do {                                                                         \
    if (cond)                                                                  \
      fail_msg("%s:%d: %s", __FILE__, __LINE__, wf_status_message(st));        \
  } while (0)

typedef struct job {
  wf_runtime *rt;
  wf_dataset *ds;
  wf_graph *g;
  wf_model *m;
  wf_session *s;
  wf_iterator *it;
  wf_node *init, *train;
  wf_output loss;
} job;

static void job_build(job *j, wf_status *st) {
  wf_config *cfg = wf_config_new();
  memset(j, 0, sizeof *j);
  CHECK(wf_config_set(cfg, "plugins", "paths", PLUGINS, st) ||
            wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
            wf_config_set(cfg, "plugins", "use_env_path", "false", st) ||
            wf_config_set(cfg, "threads", "inter_op", "2", st) ||
            wf_config_set(cfg, "threads", "intra_op", "1", st),
        st);
  j->rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  CHECK(!j->rt, st);

  /* As examples/train_fashion.c reads the training split. */
  wf_attr_item pair = {"label_file",
                       {.type = WF_ATTR_STRING, .count = 1, .u.s = "auto"}};
  wf_dataset *ds = wf_dataset_from_files(
      j->rt, FMNIST_DIR "/train-images-idx3-ubyte.gz", "idx", &pair, 1, st);
  ds = wf_dataset_cache(ds, st);
  ds = wf_dataset_shuffle(ds, 60000, 42, st);
  ds = wf_dataset_batch(ds, BATCH, 1, st);
  ds = wf_dataset_map_scale(ds, "image", 1.0 / 255.0, 0.0, st);
  ds = wf_dataset_map_cast(ds, "label", WF_INT32, st);
  j->ds = wf_dataset_prefetch(ds, 4, st);
  CHECK(!j->ds, st);

  j->g = wf_graph_new(j->rt);
  wf_node *next = wf_graph_add_get_next(j->g, "train", j->ds, "next", st);
  CHECK(!next, st);
  int64_t dims[2] = {-1, 784};
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
  wf_output h = wf_layer_dense(j->m, (wf_output){x, 0}, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(j->m, h, 128, WF_ACT_RELU, st);
  wf_output logits = wf_layer_dense(j->m, h, 10, WF_ACT_NONE, st);
  CHECK(!logits.node, st);
  j->loss = wf_loss_sparse_softmax_cross_entropy(j->m, logits,
                                                 (wf_output){next, 1}, st);
  CHECK(!j->loss.node, st);
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 1e-3;
  j->train = wf_model_minimize(j->m, j->loss, &opt, st);
  CHECK(!j->train, st);
  j->init = wf_model_init_op(j->m, st);
  CHECK(!j->init, st);

  j->s = wf_session_new(j->g, st);
  CHECK(!j->s, st);
  j->it = wf_iterator_new(j->ds, NULL, st);
  CHECK(!j->it, st);
  CHECK(wf_session_attach_iterator(j->s, "train", j->it, st), st);
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

static void job_free(job *j) {
  wf_session_free(j->s);
  wf_iterator_free(j->it);
  wf_model_free(j->m);
  wf_graph_free(j->g);
  wf_dataset_release(j->ds);
  wf_runtime_free(j->rt);
}

/* Saves a checkpoint of j at step into dir and returns its size. */
static long long save_size(job *j, const char *dir, int64_t step,
                           wf_status *st) {
  char path[1024];
  struct stat sb;
  CHECK(wf_checkpoint_save_dir(j->s, dir, step, 1, st), st);
  CHECK(wf_checkpoint_path(dir, step, path, sizeof path, st), st);
  assert_int_equal(stat(path, &sb), 0);
  return (long long)sb.st_size;
}

static void test_mlp_checkpoints_stay_near_variables_and_slots(void **state) {
  /* Steps before the first, inside the first pass (the shuffle buffer full
   * of the training set), at the end of the pass (937 batches; the
   * iterator is reset then, as an epoch loop does) and into the second. */
  static const int at[] = {0, 1, 2, 5, 100, 500, 936, 937, 938, 939, 945};
  const int nat = (int)(sizeof at / sizeof at[0]);
  const int resume_at = 5, compare = 4;
  wf_status *st = wf_status_new();
  char dir[] = "/tmp/weft-ckpt-size-XXXXXX";
  float after[8];
  long long largest = 0;
  job j;
  (void)state;

  if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0 ||
      access(FMNIST_DIR "/train-labels-idx1-ubyte.gz", R_OK) != 0) {
    wf_status_free(st);
    skip();
    return;
  }
  assert_non_null(mkdtemp(dir));
  job_build(&j, st);
  int step = 0;
  char keep[1024];
  keep[0] = 0;
  for (int k = 0; k < nat; k++) {
    while (step < at[k]) {
      if (step > 0 && step % PASS_STEPS == 0)
        CHECK(wf_iterator_reset(j.it, st), st);
      float l = job_step(&j, st);
      step++;
      if (step > resume_at && step <= resume_at + compare)
        after[step - resume_at - 1] = l;
    }
    long long size = save_size(&j, dir, step, st);
    printf("# checkpoint at step %d: %lld bytes (variables and slots: %lld, "
           "ratio %.4f)\n",
           step, size, VARS_AND_SLOTS_BYTES,
           (double)size / (double)VARS_AND_SLOTS_BYTES);
    if (size > largest)
      largest = size;
    if ((double)size > 1.1 * (double)VARS_AND_SLOTS_BYTES)
      fail_msg("the checkpoint at step %d is %lld bytes, more than 1.1 x "
               "the %lld bytes of variables and slots",
               step, size, VARS_AND_SLOTS_BYTES);
    if (step == resume_at) {
      char src[1024];
      CHECK(wf_checkpoint_path(dir, step, src, sizeof src, st), st);
      snprintf(keep, sizeof keep, "%s/resume.ckpt", dir);
      assert_int_equal(link(src, keep), 0);
    }
  }
  job_free(&j);
  printf("# largest checkpoint: %lld bytes, %.4f x variables and slots\n",
         largest, (double)largest / (double)VARS_AND_SLOTS_BYTES);

  /* A fresh process state restored at resume_at goes on bit for bit. */
  job_build(&j, st);
  CHECK(wf_session_restore(j.s, keep, NULL, st), st);
  for (int i = 0; i < compare; i++) {
    float l = job_step(&j, st);
    if (memcmp(&l, &after[i], sizeof l) != 0)
      fail_msg("step %d after the restore: loss %.9g, the uninterrupted run "
               "had %.9g",
               resume_at + i + 1, (double)l, (double)after[i]);
  }
  job_free(&j);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp_checkpoints_stay_near_variables_and_slots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
