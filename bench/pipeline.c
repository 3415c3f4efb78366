/* bench/pipeline.c — the input pipeline with any reader: samples per second
 * of a source read through the pipeline (reader, batching, optionally a
 * map and prefetch) next to a raw reference that reads and gunzips the same
 * files without parsing them; and, for the mlp of DESIGN.md trained from
 * an iterator op, the fraction of each training step spent waiting for
 * input (time inside IteratorGetNext, from run metadata); and (--mode
 * cached) the time to make one batch of bench/train's pipeline once its
 * cache is full (cache, a shuffle of the whole set, batch, scale, cast),
 * on the calling thread (no prefetch), which the training step waits for
 * whenever the prefetch thread finds no free core. One JSON line per
 * result.
 *
 *   bench/pipeline --format idx --path 'train-images-idx3-ubyte.gz' \
 *       --option label_file=auto --also train-labels-idx1-ubyte.gz
 *   bench/pipeline --mode wait --format idx --path ... --option \
 *       label_file=auto --x image --y label
 *
 * With no --path it reads Fashion-MNIST's training set from FASHION_DIR. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <zlib.h>

#include "bench_util.h"

#ifndef FASHION_DIR
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#endif

typedef struct args {
  const char *mode; /* "throughput" or "wait" */
  const char *format, *path;
  const char *also[8]; /* more files the raw reference reads */
  int nalso;
  wf_attr_item options[16];
  int noptions;
  int batch, prefetch, repeats, threads, steps;
  const char *scale; /* field mapped to float x / 255 (throughput) */
  const char *x, *y; /* wait: features and labels */
} args;

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench/pipeline [--mode throughput|wait|cached] [--format F]\n"
          "         [--path PATTERN] [--option KEY=VALUE]... [--also FILE]...\n"
          "         [--batch N] [--prefetch N] [--repeats N] [--threads N]\n"
          "         [--scale FIELD] [--x FIELD] [--y FIELD] [--steps N]\n");
}

/* KEY=VALUE as an int option when VALUE is a number, else a string. */
static void add_option(args *a, char *text) {
  char *eq = strchr(text, '=');
  if (!eq || a->noptions == 16) {
    fprintf(stderr, "bench: --option %s: expected KEY=VALUE (at most 16)\n",
            text);
    exit(2);
  }
  *eq = '\0';
  wf_attr_item *o = &a->options[a->noptions++];
  char *end;
  errno = 0;
  long long v = strtoll(eq + 1, &end, 10);
  o->name = text;
  o->value.count = 1;
  if (eq[1] && !*end && !errno) {
    o->value.type = WF_ATTR_INT;
    o->value.u.i = v;
  } else {
    o->value.type = WF_ATTR_STRING;
    o->value.u.s = eq + 1;
  }
}

/* ---- throughput ------------------------------------------------------------ */

/* Reads and decompresses (gzread passes raw files through) every file of
 * ds and the --also files; returns the bytes read. */
static int64_t read_raw(const wf_dataset *ds, const args *a) {
  static char buf[1 << 20];
  int64_t total = 0;
  int n = wf_dataset_num_files(ds);
  for (int i = 0; i < n + a->nalso; i++) {
    const char *path = i < n ? wf_dataset_file(ds, i, NULL) : a->also[i - n];
    gzFile f = gzopen(path, "rb");
    if (!f) {
      fprintf(stderr, "bench: cannot open %s\n", path);
      exit(1);
    }
    gzbuffer(f, 1 << 17);
    int got;
    while ((got = gzread(f, buf, sizeof buf)) > 0)
      total += got;
    if (got < 0) {
      int err;
      fprintf(stderr, "bench: reading %s: %s\n", path, gzerror(f, &err));
      exit(1);
    }
    gzclose(f);
  }
  return total;
}

/* One pass of the pipeline; returns the samples (batch rows) seen. */
static int64_t run_pipeline(wf_dataset *ds, wf_status *st) {
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  bench_check(it == NULL, st, "iterator");
  int nf = wf_dataset_num_fields(ds);
  wf_tensor *f[64];
  int64_t samples = 0;
  int rc;
  if (nf > 64) {
    fprintf(stderr, "bench: more than 64 fields\n");
    exit(1);
  }
  while ((rc = wf_iterator_next(it, f, st)) == WF_OK) {
    samples += wf_tensor_dim(f[0], 0);
    for (int i = 0; i < nf; i++)
      wf_tensor_release(f[i]);
  }
  bench_check(rc != WF_OUT_OF_RANGE, st, "iterating");
  wf_iterator_free(it);
  return samples;
}

static void throughput(wf_runtime *rt, const args *a, wf_status *st) {
  wf_dataset *src = wf_dataset_from_files(rt, a->path, a->format,
                                          a->options, a->noptions, st);
  bench_check(src == NULL, st, "source");
  int64_t records = 0;
  bench_check(wf_dataset_count(src, &records, st), st, "count");

  double raw_best = 1e30;
  int64_t bytes = 0;
  for (int r = 0; r < a->repeats; r++) {
    double t0 = bench_now();
    bytes = read_raw(src, a);
    double dt = bench_now() - t0;
    if (dt < raw_best)
      raw_best = dt;
  }

  wf_dataset *ds = wf_dataset_retain(src);
  if (a->scale)
    ds = wf_dataset_map_scale(ds, a->scale, 1.0 / 255, 0, st);
  ds = wf_dataset_batch(ds, a->batch, 0, st);
  if (a->prefetch > 0)
    ds = wf_dataset_prefetch(ds, a->prefetch, st);
  bench_check(ds == NULL, st, "pipeline");
  double best = 1e30;
  for (int r = 0; r < a->repeats; r++) {
    double t0 = bench_now();
    int64_t samples = run_pipeline(ds, st);
    double dt = bench_now() - t0;
    if (samples != records) {
      fprintf(stderr, "bench: the pipeline gave %lld samples, the count is "
                      "%lld\n",
              (long long)samples, (long long)records);
      exit(1);
    }
    if (dt < best)
      best = dt;
  }
  const char *reader;
  wf_dataset_file(src, 0, &reader);
  printf("{\"bench\":\"pipeline\",\"mode\":\"raw\",\"reader\":\"%s\","
         "\"path\":\"%s\",\"files\":%d,\"samples\":%lld,\"bytes\":%lld,"
         "\"seconds\":%.4f,\"samples_per_s\":%.0f,\"mb_per_s\":%.1f}\n",
         reader, a->path, wf_dataset_num_files(src) + a->nalso,
         (long long)records, (long long)bytes, raw_best, records / raw_best,
         bytes / raw_best / 1e6);
  printf("{\"bench\":\"pipeline\",\"mode\":\"pipeline\",\"reader\":\"%s\","
         "\"path\":\"%s\",\"batch\":%d,\"prefetch\":%d,\"scale\":%s,"
         "\"samples\":%lld,\"seconds\":%.4f,\"samples_per_s\":%.0f,"
         "\"vs_raw\":%.3f}\n",
         reader, a->path, a->batch, a->prefetch, a->scale ? "true" : "false",
         (long long)records, best, records / best, raw_best / best);
  wf_dataset_release(ds);
  wf_dataset_release(src);
}

/* ---- batches from the cache ------------------------------------------------- */

static void cached(wf_runtime *rt, const args *a, wf_status *st) {
  wf_dataset *ds = wf_dataset_from_files(rt, a->path, a->format, a->options,
                                         a->noptions, st);
  ds = wf_dataset_cache(ds, st);
  ds = wf_dataset_shuffle(ds, 1 << 30, 42, st);
  ds = wf_dataset_batch(ds, a->batch, 0, st);
  ds = wf_dataset_map_scale(ds, a->x, 1.0 / 255, 0, st);
  ds = wf_dataset_map_cast(ds, a->y, WF_INT32, st);
  bench_check(ds == NULL, st, "pipeline");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  bench_check(it == NULL, st, "iterator");
  int nf = wf_dataset_num_fields(ds);
  wf_tensor *f[64];
  double best = 1e30;
  int64_t batches = 0;
  if (nf > 64) {
    fprintf(stderr, "bench: more than 64 fields\n");
    exit(1);
  }
  /* the first epoch fills the cache */
  for (int r = 0; r <= a->repeats; r++) {
    double t0 = bench_now();
    int rc;
    batches = 0;
    while ((rc = wf_iterator_next(it, f, st)) == WF_OK) {
      for (int i = 0; i < nf; i++)
        wf_tensor_release(f[i]);
      batches++;
    }
    bench_check(rc != WF_OUT_OF_RANGE, st, "iterating");
    double dt = bench_now() - t0;
    if (r > 0 && dt < best)
      best = dt;
    bench_check(wf_iterator_reset(it, st), st, "next epoch");
  }
  printf("{\"bench\":\"pipeline\",\"mode\":\"cached\",\"path\":\"%s\","
         "\"batch\":%d,\"batches\":%lld,\"epochs\":%d,\"us_per_batch\":%.2f,"
         "\"samples_per_s\":%.0f}\n",
         a->path, a->batch, (long long)batches, a->repeats,
         best / (double)batches * 1e6, (double)batches * a->batch / best);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

/* ---- input wait of a training step ------------------------------------------ */

static void input_wait(wf_runtime *rt, const args *a, int prefetch,
                       wf_status *st) {
  /* Decoded records are cached (47 MB for Fashion-MNIST) so that later
   * epochs skip the reader; the shuffle buffer refills from memory at each
   * epoch; maps run once per batch. */
  wf_dataset *ds = wf_dataset_from_files(rt, a->path, a->format, a->options,
                                         a->noptions, st);
  ds = wf_dataset_cache(ds, st);
  ds = wf_dataset_shuffle(ds, 10000, 42, st);
  ds = wf_dataset_batch(ds, a->batch, 1, st);
  ds = wf_dataset_map_scale(ds, a->x, 1.0 / 255, 0, st);
  ds = wf_dataset_map_cast(ds, a->y, WF_INT32, st);
  ds = wf_dataset_repeat(ds, -1, st);
  if (prefetch > 0)
    ds = wf_dataset_prefetch(ds, prefetch, st);
  bench_check(ds == NULL, st, "pipeline");
  int xi = wf_dataset_find_field(ds, a->x), yi = wf_dataset_find_field(ds, a->y);

  wf_graph *g = wf_graph_new(rt);
  wf_node *next = wf_graph_add_get_next(g, "train", ds, "get_next", st);
  bench_check(next == NULL, st, "IteratorGetNext");
  wf_model *m = wf_model_new(g, 42, st);
  bench_check(m == NULL, st, "model");
  wf_model_begin(m, 1);
  wf_output h = wf_layer_flatten(m, (wf_output){next, xi}, st);
  h = wf_layer_dense(m, h, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(m, h, 128, WF_ACT_RELU, st);
  h = wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  bench_check(h.node == NULL, st, "mlp");
  wf_output loss =
      wf_loss_sparse_softmax_cross_entropy(m, h, (wf_output){next, yi}, st);
  bench_check(loss.node == NULL, st, "loss");
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  wf_node *train = wf_model_minimize(m, loss, &opt, st);
  bench_check(train == NULL, st, "optimizer");
  wf_node *init = wf_model_init_op(m, st);
  bench_check(init == NULL, st, "init");

  wf_session *s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  bench_check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1,
                             NULL, st),
              st, "init");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  bench_check(it == NULL, st, "iterator");
  bench_check(wf_session_attach_iterator(s, "train", it, st), st, "attach");
  wf_callable *step = wf_session_prepare(s, NULL, 0, &loss, 1, &train, 1, st);
  bench_check(step == NULL, st, "prepare");

  wf_run_options ro = WF_RUN_OPTIONS_INIT;
  ro.trace_level = WF_TRACE_NODES;
  wf_run_metadata *md = wf_run_metadata_new();
  int warmup = 20;
  double wait_ns = 0, step_ns = 0, wall = 0;
  for (int i = 0; i < warmup + a->steps; i++) {
    wf_tensor *lv = NULL;
    double t0 = bench_now();
    bench_check(wf_callable_run(step, &ro, NULL, &lv, md, st), st, "step");
    double dt = bench_now() - t0;
    wf_tensor_release(lv);
    if (i < warmup)
      continue;
    wall += dt;
    step_ns += (double)wf_run_metadata_step_ns(md);
    for (int k = 0; k < wf_run_metadata_num_nodes(md); k++) {
      wf_node_stats ns;
      wf_run_metadata_node(md, k, &ns);
      if (strcmp(ns.op, "IteratorGetNext") == 0)
        wait_ns += (double)(ns.end_ns - ns.start_ns);
    }
  }
  printf("{\"bench\":\"pipeline\",\"mode\":\"input_wait\",\"model\":\"mlp\","
         "\"path\":\"%s\",\"batch\":%d,\"prefetch\":%d,\"threads\":%d,"
         "\"steps\":%d,\"step_ms\":%.3f,\"wait_ms\":%.4f,"
         "\"wait_fraction\":%.4f,\"samples_per_s\":%.0f}\n",
         a->path, a->batch, prefetch, a->threads, a->steps,
         step_ns / a->steps / 1e6, wait_ns / a->steps / 1e6,
         wait_ns / step_ns, (double)a->steps * a->batch / wall);
  wf_run_metadata_free(md);
  wf_callable_free(step);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_model_free(m);
  wf_graph_free(g);
  wf_dataset_release(ds);
}

int main(int argc, char **argv) {
  static char default_opt[] = "label_file=auto";
  args a = {.mode = "throughput", .batch = 64, .prefetch = 4, .repeats = 3,
            .threads = 2, .steps = 2000, .x = "image", .y = "label"};
  static const struct option longopts[] = {
      {"mode", required_argument, NULL, 'm'},
      {"format", required_argument, NULL, 'f'},
      {"path", required_argument, NULL, 'p'},
      {"option", required_argument, NULL, 'o'},
      {"also", required_argument, NULL, 'a'},
      {"batch", required_argument, NULL, 'b'},
      {"prefetch", required_argument, NULL, 'P'},
      {"repeats", required_argument, NULL, 'r'},
      {"threads", required_argument, NULL, 't'},
      {"scale", required_argument, NULL, 's'},
      {"x", required_argument, NULL, 'x'},
      {"y", required_argument, NULL, 'y'},
      {"steps", required_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'm': a.mode = optarg; break;
    case 'f': a.format = optarg; break;
    case 'p': a.path = optarg; break;
    case 'o': add_option(&a, optarg); break;
    case 'a':
      if (a.nalso == 8) {
        fprintf(stderr, "bench: at most 8 --also files\n");
        return 2;
      }
      a.also[a.nalso++] = optarg;
      break;
    case 'b': a.batch = atoi(optarg); break;
    case 'P': a.prefetch = atoi(optarg); break;
    case 'r': a.repeats = atoi(optarg); break;
    case 't': a.threads = atoi(optarg); break;
    case 's': a.scale = optarg; break;
    case 'x': a.x = optarg; break;
    case 'y': a.y = optarg; break;
    case 'S': a.steps = atoi(optarg); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc || a.batch < 1 || a.repeats < 1 || a.threads < 1 ||
      a.steps < 1 || a.prefetch < 0 ||
      (strcmp(a.mode, "throughput") && strcmp(a.mode, "wait") &&
       strcmp(a.mode, "cached"))) {
    usage(stderr);
    return 2;
  }
  if (!a.path) {
    a.path = FASHION_DIR "/train-images-idx3-ubyte.gz";
    a.also[a.nalso++] = FASHION_DIR "/train-labels-idx1-ubyte.gz";
    if (a.noptions == 0)
      add_option(&a, default_opt);
  }
  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(a.threads, st);
  if (strcmp(a.mode, "throughput") == 0) {
    throughput(rt, &a, st);
  } else if (strcmp(a.mode, "cached") == 0) {
    cached(rt, &a, st);
  } else {
    input_wait(rt, &a, a.prefetch, st);
    if (a.prefetch > 0)
      input_wait(rt, &a, 0, st);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
