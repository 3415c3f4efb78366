/* tests/session/train_job.h — a small training job for the tests that hammer
 * one session (test_stress.c: many threads at once; test_alloc_sweep.c:
 * every allocation failing in turn): idx files of a learnable toy problem,
 * a runtime on the build tree's plugins, a shuffled, batched, repeated and
 * prefetched pipeline, an mlp trained by Adam, its session with the
 * iterator attached, and ReadVariable nodes for every model variable.
 *
 * Building is not meant to fail: tj_build returns non-zero with st set
 * instead of asserting, so a caller that injects failures can tell. Every
 * function is static: a program includes this once, after cmocka.h. */
#ifndef WF_TESTS_SESSION_TRAIN_JOB_H
#define WF_TESTS_SESSION_TRAIN_JOB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#define TJ_PLUGINS                                                             \
  TEST_BUILDDIR "/plugins/ops/array/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/math/.libs, " TEST_BUILDDIR                      \
                "/plugins/ops/nn/.libs, " TEST_BUILDDIR                        \
                "/plugins/ops/state/.libs, " TEST_BUILDDIR                     \
                "/plugins/ops/random/.libs, " TEST_BUILDDIR                    \
                "/plugins/ops/train/.libs, " TEST_BUILDDIR                     \
                "/plugins/readers/idx/.libs, " TEST_BUILDDIR                   \
                "/plugins/devices/cpu/.libs"

#define TJ_SAMPLES 64
#define TJ_SIDE 6
#define TJ_BATCH 8
#define TJ_MAX_VARS 16

typedef struct tj_job {
  wf_runtime *rt;
  wf_dataset *ds;
  wf_graph *g;
  wf_model *m;
  wf_session *s;
  wf_iterator *it;
  wf_node *init, *train;
  wf_output loss, global_step;
  int nvars;
  wf_output var_values[TJ_MAX_VARS]; /* ReadVariable of each model variable */
  wf_output predict;                 /* logits of a fed batch (inference) */
  wf_output input;                   /* the placeholder predict reads */
} tj_job;

static int tj_write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(p, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* idx files of TJ_SAMPLES images whose label is the brightest quadrant. */
static int tj_write_data(const char *dir) {
  uint8_t img[16 + TJ_SAMPLES * TJ_SIDE * TJ_SIDE], lab[8 + TJ_SAMPLES];
  uint8_t ih[16] = {0, 0, 8, 3, 0, 0, 0, TJ_SAMPLES,
                    0, 0, 0, TJ_SIDE, 0, 0, 0, TJ_SIDE};
  uint8_t lh[8] = {0, 0, 8, 1, 0, 0, 0, TJ_SAMPLES};
  memcpy(img, ih, 16);
  memcpy(lab, lh, 8);
  uint32_t x = 4321;
  for (int i = 0; i < TJ_SAMPLES; i++) {
    int q[4] = {0, 0, 0, 0};
    for (int p = 0; p < TJ_SIDE * TJ_SIDE; p++) {
      x = x * 1664525u + 1013904223u;
      uint8_t v = (uint8_t)(x >> 24);
      img[16 + i * TJ_SIDE * TJ_SIDE + p] = v;
      q[(p / TJ_SIDE >= TJ_SIDE / 2) * 2 + (p % TJ_SIDE >= TJ_SIDE / 2)] += v;
    }
    int best = 0;
    for (int k = 1; k < 4; k++)
      if (q[k] > q[best])
        best = k;
    lab[8 + i] = (uint8_t)best;
  }
  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  if (tj_write_file(path, img, sizeof img))
    return -1;
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
  return tj_write_file(path, lab, sizeof lab);
}

static wf_runtime *tj_runtime(const char *inter_op, wf_status *st) {
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;
  if (!cfg) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "config: out of memory");
    return NULL;
  }
  if (!wf_config_set(cfg, "plugins", "paths", TJ_PLUGINS, st) &&
      !wf_config_set(cfg, "plugins", "use_default_dir", "false", st) &&
      !wf_config_set(cfg, "plugins", "use_env_path", "false", st) &&
      !wf_config_set(cfg, "threads", "inter_op", inter_op, st))
    rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  return rt;
}

/* The pipeline over the files in dir: shuffle, batch, scale, cast, repeat
 * forever, prefetch. A new reference, or NULL with st set. */
static wf_dataset *tj_dataset(wf_runtime *rt, const char *dir,
                              wf_status *st) {
  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  wf_attr_item pair = {"label_file",
                       {.type = WF_ATTR_STRING, .count = 1, .u.s = "auto"}};
  wf_dataset *ds = wf_dataset_from_files(rt, path, "idx", &pair, 1, st);
  ds = wf_dataset_shuffle(ds, 16, 99, st);
  ds = wf_dataset_batch(ds, TJ_BATCH, 1, st);
  ds = wf_dataset_map_scale(ds, "image", 1.0 / 255, 0, st);
  ds = wf_dataset_map_cast(ds, "label", WF_INT32, st);
  ds = wf_dataset_repeat(ds, -1, st);
  return wf_dataset_prefetch(ds, 2, st);
}

/* A (N, 36) float32 reshape of x. */
static wf_node *tj_flatten(wf_graph *g, wf_output x, const char *name,
                           wf_status *st) {
  int64_t dims[2] = {-1, TJ_SIDE * TJ_SIDE};
  char cname[64];
  wf_tensor *shape = wf_tensor_new(WF_INT64, (int64_t[]){2}, 1, st);
  if (!shape)
    return NULL;
  memcpy(wf_tensor_data(shape), dims, sizeof dims);
  snprintf(cname, sizeof cname, "%s_shape", name);
  wf_node_desc *c = wf_node_desc_new(g, "Const", cname);
  wf_node_desc_set_attr_tensor(c, "value", shape);
  wf_node_desc_set_attr_dtype(c, "dtype", WF_INT64);
  wf_node *cn = wf_node_desc_finish(c, st);
  wf_tensor_release(shape);
  if (!cn)
    return NULL;
  wf_node_desc *r = wf_node_desc_new(g, "Reshape", name);
  wf_node_desc_add_input(r, x);
  wf_node_desc_add_input(r, (wf_output){cn, 0});
  return wf_node_desc_finish(r, st);
}

/* Builds everything (nothing initialised yet); 0, or non-zero with st set
 * (what was built is freed by tj_free). */
static int tj_build(tj_job *j, const char *dir, const char *inter_op,
                    wf_status *st) {
  memset(j, 0, sizeof *j);
  if (!(j->rt = tj_runtime(inter_op, st)) ||
      !(j->ds = tj_dataset(j->rt, dir, st)))
    return -1;
  j->g = wf_graph_new(j->rt);
  if (!j->g)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "graph: out of memory");
  wf_node *next = wf_graph_add_get_next(j->g, "train", j->ds, "next", st);
  if (!next)
    return -1;
  wf_node *x = tj_flatten(j->g, (wf_output){next, 0}, "flat", st);
  if (!x)
    return -1;
  if (!(j->m = wf_model_new(j->g, 7, st)))
    return -1;
  wf_model_begin(j->m, 1);
  wf_output h = wf_layer_dense(j->m, (wf_output){x, 0}, 16, WF_ACT_RELU, st);
  wf_output logits = wf_layer_dense(j->m, h, 4, WF_ACT_NONE, st);
  if (!logits.node)
    return -1;
  j->loss = wf_loss_sparse_softmax_cross_entropy(j->m, logits,
                                                 (wf_output){next, 1}, st);
  if (!j->loss.node)
    return -1;
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 0.01;
  if (!(j->train = wf_model_minimize(j->m, j->loss, &opt, st)))
    return -1;
  j->global_step = wf_model_global_step(j->m, st);
  if (!j->global_step.node || !(j->init = wf_model_init_op(j->m, st)))
    return -1;

  /* Inference on a fed batch, as an exported model runs it. */
  wf_node_desc *p = wf_node_desc_new(j->g, "Placeholder", "image");
  wf_node_desc_set_attr_dtype(p, "dtype", WF_FLOAT32);
  wf_node *ph = wf_node_desc_finish(p, st);
  if (!ph)
    return -1;
  j->input = (wf_output){ph, 0};
  wf_model_begin(j->m, 0);
  wf_node *px = tj_flatten(j->g, j->input, "predict_flat", st);
  if (!px)
    return -1;
  h = wf_layer_dense(j->m, (wf_output){px, 0}, 16, WF_ACT_RELU, st);
  j->predict = wf_layer_dense(j->m, h, 4, WF_ACT_NONE, st);
  if (!j->predict.node)
    return -1;

  j->nvars = wf_model_num_variables(j->m);
  if (j->nvars > TJ_MAX_VARS)
    j->nvars = TJ_MAX_VARS;
  for (int i = 0; i < j->nvars; i++) {
    wf_output handle;
    int trainable;
    char name[160];
    wf_attr_value dtype;
    wf_model_variable_name(j->m, i, &handle, &trainable);
    if (wf_node_get_attr(handle.node, "dtype", &dtype, st))
      return -1;
    snprintf(name, sizeof name, "read_%d", i);
    wf_node_desc *r = wf_node_desc_new(j->g, "ReadVariable", name);
    wf_node_desc_add_input(r, handle);
    wf_node_desc_set_attr_dtype(r, "dtype", (wf_dtype)dtype.u.dtype);
    wf_node *rn = wf_node_desc_finish(r, st);
    if (!rn)
      return -1;
    j->var_values[i] = (wf_output){rn, 0};
  }

  if (!(j->s = wf_session_new(j->g, st)) ||
      !(j->it = wf_iterator_new(j->ds, NULL, st)) ||
      wf_session_attach_iterator(j->s, "train", j->it, st))
    return -1;
  return 0;
}

static int tj_init(tj_job *j, wf_status *st) {
  return wf_session_run(j->s, NULL, NULL, NULL, 0, NULL, NULL, 0, &j->init, 1,
                        NULL, st);
}

/* One training step; *loss (if given) receives the loss. */
static int tj_step(tj_job *j, float *loss, wf_status *st) {
  wf_tensor *out = NULL;
  int rc = wf_session_run(j->s, NULL, NULL, NULL, 0, &j->loss, &out, 1,
                          &j->train, 1, NULL, st);
  if (rc == WF_OK && loss)
    *loss = *(const float *)wf_tensor_data(out);
  wf_tensor_release(out);
  return rc;
}

/* The global step variable's value, or -1 with st set. */
static int64_t tj_global_step(tj_job *j, wf_status *st) {
  wf_tensor *out = NULL;
  if (wf_session_run(j->s, NULL, NULL, NULL, 0, &j->global_step, &out, 1,
                     NULL, 0, NULL, st))
    return -1;
  int64_t v = wf_tensor_dtype(out) == WF_INT64
                  ? *(const int64_t *)wf_tensor_data(out)
                  : (int64_t)*(const int32_t *)wf_tensor_data(out);
  wf_tensor_release(out);
  return v;
}

static void tj_free(tj_job *j) {
  wf_session_free(j->s);
  wf_iterator_free(j->it);
  wf_model_free(j->m);
  wf_graph_free(j->g);
  wf_dataset_release(j->ds);
  wf_runtime_free(j->rt);
  memset(j, 0, sizeof *j);
}

/* rm -rf dir. */
static void tj_remove_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

#endif /* WF_TESTS_SESSION_TRAIN_JOB_H */
