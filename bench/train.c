/* bench/train.c — training throughput of the mlp, the cnn or the
 * transformer of DESIGN.md (layers API, Adam lr 1e-3, batch 64) in
 * samples/s over whole epochs of Fashion-MNIST (as many as take
 * --min-seconds, default 1: one for the cnn and the transformer, three
 * for the mlp), and for the cnn and the
 * transformer the peak RSS of the whole run. It does not evaluate accuracy
 * (examples/train_fashion does).
 *
 *   bench/train --model mlp
 *   bench/train --model cnn            # also prints the peak-RSS line
 *   bench/train --model transformer    # likewise
 *   bench/train --model cnn --limit 6000 --warm 1
 *   bench/train --model transformer --profile 50   # + where a step's time goes
 *   bench/train --model mlp --profile 50 --by-node # the same, node by node
 *
 * The data comes through the input pipeline as in examples/train_fashion
 * (idx reader, cache, shuffle, batch, scale, cast, prefetch 4). The first
 * --warm epochs fill the in-memory cache (reading and gunzipping the files)
 * and warm the kernels; the timed epoch after them reads from that cache,
 * so file I/O and decompression are not measured, while shuffling,
 * batching and scaling are (on the prefetch thread, next to the step).
 *
 * --profile N then runs N more steps traced (WF_TRACE_NODES) and prints
 * one JSON line per op and kernel: its summed node time per step (the
 * sum of end - start of its nodes: concurrent nodes both count) and its
 * share of that sum over all ops, largest first; with --by-node, one line
 * per node (name and kernel) instead. */
#include <config.h>

#include <getopt.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"

#ifndef FASHION_DIR
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#endif

typedef struct args {
  const char *model; /* "mlp", "cnn" or "transformer" */
  const char *data;
  int limit, warm, threads, batch, profile, by_node;
  double min_seconds;
} args;

static void usage(FILE *f) {
  fprintf(f, "usage: bench/train [--model mlp|cnn|transformer] [--limit N] [--warm N]\n"
             "                   [--threads N] [--batch N] [--data DIR]\n"
             "                   [--profile N]  (N traced steps: time per op)\n"
             "                   [--by-node]  (the profile per node, not op)\n"
             "                   [--min-seconds S]  (timed epochs until S s;\n"
             "                   default 1)\n"
             "  --threads N  executor (inter-op) threads; default 0: the\n"
             "               runtime's own split of the cores\n");
}

enum { MLP, CNN, TRANSFORMER };

/* The network of DESIGN.md; logits (N, 10). The transformer is
 * examples/train_fashion's. */
static wf_output build_net(wf_model *m, int kind, wf_output x, wf_status *st) {
  if (kind == TRANSFORMER) {
    wf_output h = wf_layer_dense(m, x, 64, WF_ACT_NONE, st);
    h = wf_layer_positional_embedding(m, h, st);
    for (int i = 0; i < 2; i++)
      h = wf_layer_transformer_encoder(m, h, 4, 128, st);
    h = wf_layer_layer_norm(m, h, 1e-5, st);
    h = wf_layer_global_avg_pool(m, h, st);
    return wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  }
  if (kind == MLP) {
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

/* Fashion-MNIST's training split as shuffled batches of float32 images in
 * [0, 1] and int32 labels; `shards` > 1 keeps every shards-th sample. */
static wf_dataset *fashion(wf_runtime *rt, const args *a, int64_t shards,
                           wf_status *st) {
  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", a->data);
  wf_attr_item pair = {"label_file",
                       {.type = WF_ATTR_STRING, .count = 1, .u.s = "auto"}};
  wf_dataset *ds = wf_dataset_from_files(rt, path, "idx", &pair, 1, st);
  if (shards > 1)
    ds = wf_dataset_shard(ds, shards, 0, st);
  ds = wf_dataset_cache(ds, st);
  ds = wf_dataset_shuffle(ds, 60000, 42, st);
  ds = wf_dataset_batch(ds, a->batch, 0, st);
  ds = wf_dataset_map_scale(ds, "image", 1.0 / 255.0, 0.0, st);
  ds = wf_dataset_map_cast(ds, "label", WF_INT32, st);
  ds = wf_dataset_prefetch(ds, 4, st);
  bench_check(ds == NULL, st, "data set");
  return ds;
}

/* The images of a batch as the model wants them: (N, 784), (N, 28, 28, 1)
 * or (N, 28, 28) (28 tokens of 28). */
static wf_output model_input(wf_graph *g, int kind, wf_node *get_next,
                             wf_status *st) {
  int64_t n = kind == CNN ? 4 : kind == TRANSFORMER ? 3 : 2;
  wf_tensor *shape = wf_tensor_new(WF_INT64, &n, 1, st);
  bench_check(shape == NULL, st, "shape");
  int64_t *d = wf_tensor_data(shape);
  d[0] = -1;
  d[1] = kind == MLP ? 784 : 28;
  if (kind != MLP)
    d[2] = 28;
  if (kind == CNN)
    d[3] = 1;
  wf_node *r = bench_op2(g, "Reshape", get_next, bench_const(g, shape, st), st);
  return (wf_output){r, 0};
}

/* Runs `step` until the iterator ends; returns the samples seen and the
 * last loss in *loss. */
static int64_t epoch(wf_callable *step, wf_iterator *it, int batch,
                     int64_t total, double *loss, wf_status *st) {
  int64_t seen = 0;
  for (;;) {
    wf_tensor *lv = NULL;
    int rc = wf_callable_run(step, NULL, NULL, &lv, NULL, st);
    if (rc == WF_OUT_OF_RANGE)
      break;
    bench_check(rc, st, "training step");
    *loss = *(float *)wf_tensor_data(lv);
    wf_tensor_release(lv);
    seen += batch;
  }
  bench_check(wf_iterator_reset(it, st), st, "next epoch");
  return seen < total ? seen : total;
}

/* One op and kernel's summed node time over the traced steps. */
typedef struct op_time {
  char op[128], kernel[64]; /* op, or node with --by-node */
  double ns;
  int64_t nodes;
} op_time;

static int by_time(const void *a, const void *b) {
  double x = ((const op_time *)a)->ns, y = ((const op_time *)b)->ns;
  return (x < y) - (x > y);
}

/* Runs `steps` traced steps (restarting the iterator at its end) and
 * prints each op and kernel's (by_node: each node's) time per step,
 * largest first. */
static void profile(wf_callable *step, wf_iterator *it, int steps,
                    const char *model, int by_node, wf_status *st) {
  enum { MAX_OPS = 2048 };
  op_time *t = calloc(MAX_OPS, sizeof *t);
  int n = 0, done = 0;
  double total = 0, wall = 0;
  wf_run_metadata *md = wf_run_metadata_new();
  wf_run_options o = WF_RUN_OPTIONS_INIT;
  o.trace_level = WF_TRACE_NODES;
  bench_check(!t || !md, st, "profile: out of memory");
  while (done < steps) {
    wf_tensor *lv = NULL;
    int rc = wf_callable_run(step, &o, NULL, &lv, md, st);
    if (rc == WF_OUT_OF_RANGE) {
      bench_check(wf_iterator_reset(it, st), st, "next epoch");
      continue;
    }
    bench_check(rc, st, "profiled step");
    wf_tensor_release(lv);
    wall += (double)wf_run_metadata_step_ns(md);
    for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
      wf_node_stats ns;
      wf_run_metadata_node(md, i, &ns);
      const char *k = wf_run_metadata_node_kernel(md, i);
      const char *key = by_node ? ns.node : ns.op;
      int j;
      for (j = 0; j < n; j++)
        if (!strncmp(t[j].op, key, sizeof t[j].op - 1) &&
            !strcmp(t[j].kernel, k ? k : ""))
          break;
      if (j == n && n < MAX_OPS) {
        snprintf(t[n].op, sizeof t[n].op, "%s", key);
        snprintf(t[n].kernel, sizeof t[n].kernel, "%s", k ? k : "");
        n++;
      }
      if (j < n) {
        t[j].ns += (double)(ns.end_ns - ns.start_ns);
        t[j].nodes++;
        total += (double)(ns.end_ns - ns.start_ns);
      }
    }
    done++;
  }
  qsort(t, (size_t)n, sizeof *t, by_time);
  printf("{\"bench\":\"train-profile\",\"model\":\"%s\",\"steps\":%d,"
         "\"ms_per_step\":%.4f,\"node_ms_per_step\":%.4f}\n",
         model, steps, wall / steps * 1e-6, total / steps * 1e-6);
  for (int j = 0; j < n; j++)
    printf("{\"bench\":\"train-profile-%s\",\"model\":\"%s\",\"%s\":\"%s\","
           "\"kernel\":\"%s\",\"nodes_per_step\":%.1f,\"ms_per_step\":%.4f,"
           "\"share\":%.4f}\n",
           by_node ? "node" : "op", model, by_node ? "node" : "op", t[j].op,
           t[j].kernel, (double)t[j].nodes / steps,
           t[j].ns / steps * 1e-6, total > 0 ? t[j].ns / total : 0.0);
  wf_run_metadata_free(md);
  free(t);
}

int main(int argc, char **argv) {
  args a = {"mlp", FASHION_DIR, 0, 1, 0, 64, 0, 0, 1.0};
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'},
      {"limit", required_argument, NULL, 'l'},
      {"warm", required_argument, NULL, 'w'},
      {"threads", required_argument, NULL, 't'},
      {"batch", required_argument, NULL, 'b'},
      {"data", required_argument, NULL, 'd'},
      {"profile", required_argument, NULL, 'p'},
      {"by-node", no_argument, NULL, 'n'},
      {"min-seconds", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'm': a.model = optarg; break;
    case 'l': a.limit = atoi(optarg); break;
    case 'w': a.warm = atoi(optarg); break;
    case 't': a.threads = atoi(optarg); break;
    case 'b': a.batch = atoi(optarg); break;
    case 'd': a.data = optarg; break;
    case 'p': a.profile = atoi(optarg); break;
    case 'n': a.by_node = 1; break;
    case 's': a.min_seconds = atof(optarg); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if ((strcmp(a.model, "mlp") && strcmp(a.model, "cnn") &&
       strcmp(a.model, "transformer")) ||
      a.limit < 0 ||
      a.warm < 0 || a.threads < 0 || a.batch < 1 || a.profile < 0 ||
      !(a.min_seconds >= 0 && a.min_seconds <= 3600) ||
      optind != argc) {
    usage(stderr);
    return 2;
  }
  int kind = strcmp(a.model, "cnn") == 0           ? CNN
             : strcmp(a.model, "transformer") == 0 ? TRANSFORMER
                                                   : MLP;

  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(a.threads, st);
  int64_t shards = a.limit > 0 && a.limit < 60000 ? 60000 / a.limit : 1;
  wf_dataset *train = fashion(rt, &a, shards, st);
  int64_t total = (60000 + shards - 1) / shards;

  wf_graph *g = wf_graph_new(rt);
  wf_node *in = wf_graph_add_get_next(g, "train", train, "train_data", st);
  bench_check(in == NULL, st, "iterator node");
  wf_model *m = wf_model_new(g, 42, st);
  bench_check(m == NULL, st, "model");
  wf_model_begin(m, 1);
  wf_output logits = build_net(m, kind, model_input(g, kind, in, st), st);
  bench_check(logits.node == NULL, st, "model");
  wf_output loss =
      wf_loss_sparse_softmax_cross_entropy(m, logits, (wf_output){in, 1}, st);
  bench_check(loss.node == NULL, st, "loss");
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 1e-3;
  wf_node *train_op = wf_model_minimize(m, loss, &opt, st);
  bench_check(train_op == NULL, st, "optimizer");
  wf_node *init = wf_model_init_op(m, st);
  bench_check(init == NULL, st, "init");

  wf_session *s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  wf_iterator *it = wf_iterator_new(train, NULL, st);
  bench_check(it == NULL, st, "iterator");
  bench_check(wf_session_attach_iterator(s, "train", it, st), st,
              "attaching the iterator");
  bench_check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1,
                             NULL, st),
              st, "initialising variables");
  wf_callable *step = wf_session_prepare(s, NULL, 0, &loss, 1, &train_op, 1, st);
  bench_check(step == NULL, st, "preparing the training step");

  double last_loss = 0;
  for (int i = 0; i < a.warm; i++)
    epoch(step, it, a.batch, total, &last_loss, st);
  /* whole epochs until min_seconds have passed: one epoch of the mlp is
   * 0.35 s, short enough for one slow moment of the machine to move it */
  double t0 = bench_now(), dt;
  int64_t seen = 0, steps = 0;
  int timed = 0;
  do {
    int64_t e = epoch(step, it, a.batch, total, &last_loss, st);
    seen += e;
    steps += (e + a.batch - 1) / a.batch;
    timed++;
    dt = bench_now() - t0;
  } while (dt < a.min_seconds);

  printf("{\"bench\":\"train\",\"model\":\"%s\",\"batch\":%d,\"threads\":%d,"
         "\"samples\":%lld,\"epochs\":%d,\"seconds\":%.3f,"
         "\"samples_per_s\":%.1f,\"ms_per_step\":%.4f,\"last_loss\":%.4f,"
         "\"data\":\"pipeline, from its cache after %d warm-up epoch(s)\"}\n",
         a.model, a.batch, a.threads, (long long)seen, timed, dt, seen / dt,
         dt / (double)steps * 1e3, last_loss, a.warm);
  if (kind != MLP) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"train-peak-rss\",\"model\":\"%s\",\"batch\":%d,"
           "\"threads\":%d,\"epochs\":%d,\"peak_rss_mib\":%.1f}\n",
           a.model, a.batch, a.threads, a.warm + timed,
           ru.ru_maxrss / 1024.0);
  }
  if (a.profile > 0)
    profile(step, it, a.profile, a.model, a.by_node, st);

  wf_callable_free(step);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_dataset_release(train);
  wf_model_free(m);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
