/* bench/cnn_infer.c — the cnn model of DESIGN.md in inference: batch-1
 * latency and batch-64 throughput, with whatever kernels win in the
 * registry (the reference kernels until a faster backend is loaded).
 * Weights are random: timing does not depend on their values. */
#include <config.h>

#include <stdint.h>
#include <string.h>

#include "bench_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 16777216.0)) - 0.5f;
}

static wf_node *weights(wf_graph *g, const int64_t *dims, int rank,
                        wf_status *st) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  bench_check(t == NULL, st, "weights");
  float *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    p[i] = frand() * 0.2f;
  return bench_const(g, t, st);
}

static wf_node *conv_relu_pool(wf_graph *g, wf_node *x, int cin, int cout,
                               wf_status *st) {
  int64_t fd[4] = {3, 3, cin, cout}, bd[1] = {cout};
  const int64_t ones[4] = {1, 1, 1, 1}, pool[4] = {1, 2, 2, 1};
  wf_node_desc *d = wf_node_desc_new(g, "Conv2D", NULL);
  wf_node_desc_add_input(d, (wf_output){x, 0});
  wf_node_desc_add_input(d, (wf_output){weights(g, fd, 4, st), 0});
  wf_node_desc_set_attr_int_list(d, "strides", ones, 4);
  wf_node_desc_set_attr_string(d, "padding", "SAME");
  wf_node *c = bench_finish(d, st);
  wf_node *b = bench_op2(g, "BiasAdd", c, weights(g, bd, 1, st), st);
  wf_node *r = bench_op2(g, "Relu", b, NULL, st);
  d = wf_node_desc_new(g, "MaxPool", NULL);
  wf_node_desc_add_input(d, (wf_output){r, 0});
  wf_node_desc_set_attr_int_list(d, "ksize", pool, 4);
  wf_node_desc_set_attr_int_list(d, "strides", pool, 4);
  wf_node_desc_set_attr_string(d, "padding", "VALID");
  return bench_finish(d, st);
}

/* Warm-up and measurement are bounded below in time as well as in steps:
 * a step of batch 64 takes half a millisecond, so twenty of them would
 * measure ten milliseconds of one-off effects (a library's worker threads
 * spinning for their first tenth of a second after it opens, the first
 * primitives of a shape) rather than the steady state; and one slow
 * moment of this shared machine moves a figure measured over half a second
 * far more than one measured over two. bench/compare's peers measure for
 * the same spans. */
#define WARM_S 0.3
#define MEASURE_S 2.0

static double run_batch(wf_callable *c, int batch, int steps, int warmup,
                        double *best, wf_status *st) {
  int64_t dims[4] = {batch, 28, 28, 1};
  wf_tensor *x = wf_tensor_new(WF_FLOAT32, dims, 4, st);
  float *p = wf_tensor_data(x);
  for (int64_t i = 0; i < wf_tensor_count(x); i++)
    p[i] = frand() + 0.5f;
  double total = 0, start = bench_now();
  int measured = 0;
  *best = 1e30;
  for (int i = 0;; i++) {
    int warming = i < warmup || bench_now() - start < WARM_S;
    if (!warming && measured >= steps && total >= MEASURE_S)
      break;
    wf_tensor *y = NULL;
    double t0 = bench_now();
    bench_check(wf_callable_run(c, NULL, &x, &y, NULL, st), st, "run");
    double dt = bench_now() - t0;
    if (wf_tensor_dim(y, 0) != batch || wf_tensor_dim(y, 1) != 10) {
      fprintf(stderr, "bench: cnn-infer produced a wrong shape\n");
      exit(1);
    }
    wf_tensor_release(y);
    if (!warming) {
      total += dt;
      measured++;
      if (dt < *best)
        *best = dt;
    }
  }
  wf_tensor_release(x);
  return total / measured;
}

static int count_arg(int argc, char **argv, int i, int dflt, int least) {
  if (argc <= i)
    return dflt;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || v < least || v > 1000000) {
    fprintf(stderr,
            "usage: cnn_infer [STEPS_BATCH1 [STEPS_BATCH64 [INTER_OP]]]\n"
            "bench: argument %d ('%s') must be a whole number from %d to "
            "1000000\n",
            i, argv[i], least);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  /* The least numbers of measured steps (each phase also measures for at
   * least MEASURE_S seconds). */
  int steps1 = count_arg(argc, argv, 1, 200, 1);
  int steps64 = count_arg(argc, argv, 2, 20, 1);
  /* 0: the runtime's own split of the cores; a third argument sets the
   * executor (inter-op) threads. */
  int threads = count_arg(argc, argv, 3, 0, 0);
  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(threads, st);
  wf_graph *g = wf_graph_new(rt);
  int64_t xd[4] = {WF_UNKNOWN_DIM, 28, 28, 1};
  wf_node *x = bench_placeholder(g, "images", WF_FLOAT32, xd, 4, st);
  wf_node *h = conv_relu_pool(g, x, 1, 16, st);
  h = conv_relu_pool(g, h, 16, 32, st);
  int64_t sd[1] = {2};
  wf_tensor *shape = wf_tensor_new(WF_INT64, sd, 1, st);
  ((int64_t *)wf_tensor_data(shape))[0] = -1;
  ((int64_t *)wf_tensor_data(shape))[1] = 7 * 7 * 32;
  h = bench_op2(g, "Reshape", h, bench_const(g, shape, st), st);
  int64_t wd[2] = {7 * 7 * 32, 10}, bd[1] = {10};
  h = bench_op2(g, "MatMul", h, weights(g, wd, 2, st), st);
  wf_node *logits = bench_op2(g, "BiasAdd", h, weights(g, bd, 1, st), st);

  wf_session *s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  wf_output feed = {x, 0}, fetch = {logits, 0};
  wf_callable *c = wf_session_prepare(s, &feed, 1, &fetch, 1, NULL, 0, st);
  bench_check(c == NULL, st, "prepare");

  double best1, best64;
  double mean1 = run_batch(c, 1, steps1, 10, &best1, st);
  double mean64 = run_batch(c, 64, steps64, 2, &best64, st);
  printf("{\"bench\":\"cnn-infer\",\"batch\":1,\"threads\":%d,"
         "\"latency_ms\":%.4f,\"latency_ms_best\":%.4f}\n",
         threads, mean1 * 1e3, best1 * 1e3);
  printf("{\"bench\":\"cnn-infer\",\"batch\":64,\"threads\":%d,"
         "\"samples_per_s\":%.1f,\"ms_per_batch\":%.3f,"
         "\"ms_per_batch_best\":%.3f}\n",
         threads, 64.0 / mean64, mean64 * 1e3, best64 * 1e3);
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
