/* examples/train_fashion.c — trains the mlp or the cnn of DESIGN.md on
 * Fashion-MNIST with Adam and reports test accuracy.
 *
 *   examples/train_fashion --model cnn --epochs 3
 *   examples/train_fashion --model mlp --epochs 5 --batch 64
 *   examples/train_fashion --model mlp --limit 6000 --epochs 1   # quick
 *
 * The model is built twice into one graph with the layers API: a training
 * pass (the loss and the optimizer step) and an inference pass (accuracy),
 * sharing their variables. Batches are fed without copying: each step wraps
 * the batch buffer in a tensor. */
#define _GNU_SOURCE /* getopt_long, clock_gettime */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#include "fashion_data.h"

typedef struct options {
  const char *model; /* "mlp" or "cnn" */
  int epochs, batch, limit, threads, quiet;
  unsigned long seed;
  double lr;
  const char *data;
  const char *dot; /* write the training step's graphs here */
} options;

static void check(int failed, wf_status *st, const char *what) {
  if (failed) {
    fprintf(stderr, "train_fashion: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The network of DESIGN.md; logits (N, 10). */
static wf_output build_net(wf_model *m, const options *o, wf_output x,
                           wf_status *st) {
  if (strcmp(o->model, "mlp") == 0) {
    wf_output h = wf_layer_dense(m, x, 256, WF_ACT_RELU, st);
    h = wf_layer_dense(m, h, 128, WF_ACT_RELU, st);
    return wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  }
  wf_output h = wf_layer_conv2d(m, x, 16, 3, 3, 1, "SAME", WF_ACT_RELU, st);
  h = wf_layer_max_pool(m, h, 2, 2, "VALID", st);
  h = wf_layer_conv2d(m, h, 32, 3, 3, 1, "SAME", WF_ACT_RELU, st);
  h = wf_layer_max_pool(m, h, 2, 2, "VALID", st);
  h = wf_layer_flatten(m, h, st);
  return wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
}

/* Wraps n samples of buf/labels as the feeds (no copy). */
static void make_feeds(const options *o, float *x, int32_t *y, int n,
                       wf_tensor **out, wf_status *st) {
  int cnn = strcmp(o->model, "cnn") == 0;
  int64_t xd[4] = {n, 28, 28, 1}, mlpd[2] = {n, 784}, yd[1] = {n};
  out[0] = wf_tensor_wrap(WF_FLOAT32, cnn ? xd : mlpd, cnn ? 4 : 2, x,
                          (size_t)n * 784 * sizeof(float), NULL, NULL, st);
  check(out[0] == NULL, st, "wrapping a batch");
  out[1] = wf_tensor_wrap(WF_INT32, yd, 1, y, (size_t)n * sizeof(int32_t),
                          NULL, NULL, st);
  check(out[1] == NULL, st, "wrapping a batch");
}

static void progress(int epoch, const options *o, int done, int total,
                     double t0, double loss, int final) {
  double el = now() - t0;
  double rate = el > 0 ? done / el : 0;
  double eta = rate > 0 ? (total - done) / rate : 0;
  int width = 30, fill = total ? (int)((double)width * done / total) : width;
  char bar[64];
  for (int i = 0; i < width; i++)
    bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
  bar[width] = '\0';
  printf("%sepoch %d/%d [%s] %6d/%d | %7.0f samples/s | loss %.4f | %s %4.0fs",
         isatty(STDOUT_FILENO) ? "\r" : "", epoch, o->epochs, bar, done,
         total, rate, loss, final ? "took" : "ETA ", final ? el : eta);
  if (final || !isatty(STDOUT_FILENO))
    printf("\n");
  fflush(stdout);
}

static void usage(FILE *f) {
  fprintf(f, "usage: train_fashion [--model mlp|cnn] [--epochs N] "
             "[--batch N] [--limit N]\n"
             "                     [--threads N] [--seed N] [--lr X] "
             "[--data DIR] [--quiet]\n"
             "                     [--dot DIR]  (Graphviz files of the "
             "training step, before and after each pass)\n");
}

int main(int argc, char **argv) {
  options o = {"cnn", 3, 64, 0, 2, 0, 42, 1e-3, FASHION_DIR, NULL};
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'},
      {"epochs", required_argument, NULL, 'e'},
      {"batch", required_argument, NULL, 'b'},
      {"limit", required_argument, NULL, 'l'},
      {"threads", required_argument, NULL, 't'},
      {"seed", required_argument, NULL, 's'},
      {"lr", required_argument, NULL, 'r'},
      {"data", required_argument, NULL, 'd'},
      {"quiet", no_argument, NULL, 'q'},
      {"dot", required_argument, NULL, 'g'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'm': o.model = optarg; break;
    case 'e': o.epochs = atoi(optarg); break;
    case 'b': o.batch = atoi(optarg); break;
    case 'l': o.limit = atoi(optarg); break;
    case 't': o.threads = atoi(optarg); break;
    case 's': o.seed = strtoul(optarg, NULL, 10); break;
    case 'r': o.lr = atof(optarg); break;
    case 'd': o.data = optarg; break;
    case 'q': o.quiet = 1; break;
    case 'g': o.dot = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if ((strcmp(o.model, "mlp") && strcmp(o.model, "cnn")) || o.epochs < 1 ||
      o.batch < 1 || o.threads < 1 || optind != argc) {
    usage(stderr);
    return 2;
  }

  fashion_set train, test;
  if (fashion_load(o.data, "train", o.limit, &train) ||
      fashion_load(o.data, "t10k", 0, &test))
    return 1;

  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  const char *cpath = wf_config_default_path();
  if (cpath)
    check(wf_config_load(cfg, cpath, st), st, cpath);
  char threads[16];
  snprintf(threads, sizeof threads, "%d", o.threads);
  check(wf_config_set(cfg, "threads", "inter_op", threads, st), st, "config");
  wf_runtime *rt = wf_runtime_new(cfg, st);
  check(rt == NULL, st, "runtime");
  wf_config_free(cfg);

  /* The graph: inputs, a training pass and an inference pass. */
  wf_graph *g = wf_graph_new(rt);
  int cnn = strcmp(o.model, "cnn") == 0;
  int64_t xd[4] = {WF_UNKNOWN_DIM, 28, 28, 1}, mlpd[2] = {WF_UNKNOWN_DIM, 784};
  int64_t yd[1] = {WF_UNKNOWN_DIM};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "images");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", cnn ? xd : mlpd, cnn ? 4 : 2);
  wf_output x = {wf_node_desc_finish(d, st), 0};
  check(x.node == NULL, st, "images");
  d = wf_node_desc_new(g, "Placeholder", "labels");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", yd, 1);
  wf_output y = {wf_node_desc_finish(d, st), 0};
  check(y.node == NULL, st, "labels");

  wf_model *m = wf_model_new(g, o.seed, st);
  check(m == NULL, st, "model");
  wf_model_begin(m, 1);
  wf_output logits = build_net(m, &o, x, st);
  check(logits.node == NULL, st, "training pass");
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  check(loss.node == NULL, st, "loss");
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = o.lr;
  wf_node *train_op = wf_model_minimize(m, loss, &opt, st);
  check(train_op == NULL, st, "optimizer");
  wf_model_begin(m, 0);
  wf_output eval_logits = build_net(m, &o, x, st);
  check(eval_logits.node == NULL, st, "inference pass");
  wf_output acc = wf_metric_accuracy(m, eval_logits, y, st);
  check(acc.node == NULL, st, "accuracy");
  wf_node *init = wf_model_init_op(m, st);
  check(init == NULL, st, "init");

  wf_output feeds[2] = {x, y};
  if (o.dot) {
    check(wf_graph_write_dot_passes(g, feeds, 2, &loss, 1, &train_op, 1,
                                    o.dot, st),
          st, "writing the graphs");
    printf("graphs of the training step written to %s/\n", o.dot);
  }

  wf_session *s = wf_session_new(g, st);
  check(s == NULL, st, "session");
  check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                       st),
        st, "initialising variables");
  wf_callable *step =
      wf_session_prepare(s, feeds, 2, &loss, 1, &train_op, 1, st);
  check(step == NULL, st, "preparing the training step");
  wf_callable *eval = wf_session_prepare(s, feeds, 2, &acc, 1, NULL, 0, st);
  check(eval == NULL, st, "preparing evaluation");

  if (!o.quiet)
    printf("%s on Fashion-MNIST: %d training samples, %d test samples, "
           "batch %d, Adam lr %g, %d threads\n",
           o.model, train.n, test.n, o.batch, o.lr, o.threads);

  /* Training: a new permutation each epoch, batches gathered into one
   * buffer that a wrapped tensor feeds to the step. */
  int *perm = malloc((size_t)train.n * sizeof *perm);
  float *bx = malloc((size_t)o.batch * 784 * sizeof *bx);
  int32_t *by = malloc((size_t)o.batch * sizeof *by);
  if (!perm || !bx || !by) {
    fprintf(stderr, "train_fashion: out of memory\n");
    return 1;
  }
  for (int i = 0; i < train.n; i++)
    perm[i] = i;
  uint64_t rng = o.seed * 0x9E3779B97F4A7C15ULL + 1;
  double t_train = now();
  for (int epoch = 1; epoch <= o.epochs; epoch++) {
    for (int i = train.n - 1; i > 0; i--) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      int j = (int)(rng % (uint64_t)(i + 1));
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    double t0 = now(), last = 0, loss_avg = 0;
    int seen = 0;
    for (int b = 0; b < train.n; b += o.batch) {
      int n = train.n - b < o.batch ? train.n - b : o.batch;
      for (int k = 0; k < n; k++) {
        memcpy(bx + (size_t)k * 784, train.images + (size_t)perm[b + k] * 784,
               784 * sizeof(float));
        by[k] = train.labels[perm[b + k]];
      }
      wf_tensor *in[2], *lv = NULL;
      make_feeds(&o, bx, by, n, in, st);
      check(wf_callable_run(step, NULL, in, &lv, NULL, st), st,
            "training step");
      double l = *(float *)wf_tensor_data(lv);
      loss_avg = seen ? 0.98 * loss_avg + 0.02 * l : l;
      seen += n;
      wf_tensor_release(lv);
      wf_tensor_release(in[0]);
      wf_tensor_release(in[1]);
      if (!o.quiet && isatty(STDOUT_FILENO) && now() - last > 0.25) {
        last = now();
        progress(epoch, &o, seen, train.n, t0, loss_avg, 0);
      }
    }
    if (!o.quiet)
      progress(epoch, &o, seen, train.n, t0, loss_avg, 1);
  }
  double train_s = now() - t_train;

  /* Test accuracy, in batches of up to 500. */
  double correct = 0;
  for (int b = 0; b < test.n; b += 500) {
    int n = test.n - b < 500 ? test.n - b : 500;
    wf_tensor *in[2], *av = NULL;
    make_feeds(&o, test.images + (size_t)b * 784, test.labels + b, n, in, st);
    check(wf_callable_run(eval, NULL, in, &av, NULL, st), st, "evaluation");
    correct += *(float *)wf_tensor_data(av) * n;
    wf_tensor_release(av);
    wf_tensor_release(in[0]);
    wf_tensor_release(in[1]);
  }
  printf("test accuracy %.4f (%d samples) after %d epoch(s), training took "
         "%.1f s (%.0f samples/s)\n",
         correct / test.n, test.n, o.epochs, train_s,
         (double)train.n * o.epochs / train_s);

  free(perm);
  free(bx);
  free(by);
  wf_callable_free(step);
  wf_callable_free(eval);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  fashion_free(&train);
  fashion_free(&test);
  return 0;
}
