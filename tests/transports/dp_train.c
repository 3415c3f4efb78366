/* tests/transports/dp_train.c — the program behind dp_equivalence.sh: the
 * mlp of DESIGN.md (784-256-128-10, Adam lr 1e-3) trained for a few steps
 * on fixed synthetic data, alone or data-parallel in an MPI job, with what
 * it did written to a file per task; and the comparison of two such files.
 *
 *   dp_train data FILE N          N synthetic records (image float32 784,
 *                                 label int32) in the fixed reader's layout
 *   dp_train train [--plain] [--seed-per-task] [--steps S] [--batch B]
 *                  [--bucket BYTES] [--seed N] [--sgd] DATA PREFIX
 *       trains S steps of global batch B on DATA, input sharded by task
 *       (--plain: alone, without data parallelism; the reference), and
 *       writes PREFIX.taskT: each step's loss averaged over the job, every
 *       trainable weight after initialisation and after training.
 *       --seed-per-task gives task t the model seed N + 7919 t, so only the
 *       broadcast from task 0 makes the replicas start alike. --sgd: plain
 *       gradient descent (lr 0.01) instead of Adam, whose updates hardly
 *       change when every gradient is scaled alike (a sum across tasks
 *       instead of a mean would go unnoticed). --short-task T
 *       --short-data FILE: task T reads FILE (fewer records) instead, so
 *       its input alone runs out; it then stays alive --stay seconds
 *       (default 60) without reaching the step's collectives, and exits 1.
 *   dp_train compare [--exact] A B
 *       exit 0 when B matches A: initial weights bit for bit, losses and
 *       final weights within the tolerances below (--exact: all bit for
 *       bit); otherwise prints the worst differences and exits 1.
 *
 * Threads are set explicitly ([threads] inter_op = intra_op = 1, pin =
 * false) so that several processes share the cores without fighting. */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft/weft.h>

/* Tolerances of `compare` (not --exact). Averaging per-task batch means
 * sums in another order than one batch mean does, so gradients differ in
 * their last bits (float32: about 1e-7 relative) and so do the weights
 * after each update. Measured over the 20 steps of dp_equivalence.sh: loss
 * 1e-7 relative, weights 4e-7 at worst and 7e-8 of their RMS overall. The
 * bounds leave a margin of about 100: losses within LOSS_TOL relative;
 * every final weight within WEIGHT_ABS_TOL (lr / 10: Adam divides by
 * sqrt(v), so a gradient element near zero whose sign flips could move
 * one weight by up to lr in one step, which this would catch); and the
 * RMS of the weight differences within WEIGHT_RMS_TOL of the weights'
 * RMS. */
#define LOSS_TOL 1e-5
#define WEIGHT_ABS_TOL 1e-4
#define WEIGHT_RMS_TOL 1e-5

#define MAGIC 0x31544e5250445746ull /* "FWDPRNT1" */

static void check(int failed, wf_status *st, const char *what) {
  if (failed) {
    fprintf(stderr, "dp_train: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "dp_train: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

/* ---- data ---------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* Record i: pixels in [0, 1) from a hash; the label is the block of 78
 * pixels (of 10) with the largest sum, which a linear layer can learn. */
static int write_data(const char *path, long n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    die("cannot create %s", path);
  for (long i = 0; i < n; i++) {
    float px[784];
    double block[10] = {0};
    for (int k = 0; k < 784; k++) {
      px[k] = (float)((mix((uint64_t)i * 784 + (uint64_t)k + 1) >> 11) *
                      (1.0 / 9007199254740992.0));
      if (k < 780)
        block[k / 78] += px[k];
    }
    int32_t label = 0;
    for (int c = 1; c < 10; c++)
      if (block[c] > block[label])
        label = c;
    if (fwrite(px, sizeof px, 1, f) != 1 || fwrite(&label, 4, 1, f) != 1)
      die("cannot write %s", path);
  }
  if (fclose(f))
    die("cannot write %s", path);
  return 0;
}

/* ---- training -------------------------------------------------------------- */

typedef struct args {
  int plain, seed_per_task, steps, sgd;
  long batch;
  long long bucket;
  unsigned long seed;
  const char *data, *prefix;
  int short_task;         /* this task reads short_data instead; -1: none */
  const char *short_data;
  int stay;               /* seconds the short task lives on after its error */
} args;

static wf_runtime *runtime(wf_status *st) {
  wf_config *cfg = wf_config_new();
  check(cfg == NULL, st, "config");
  check(wf_config_set(cfg, "threads", "inter_op", "1", st) ||
            wf_config_set(cfg, "threads", "intra_op", "1", st) ||
            wf_config_set(cfg, "threads", "pin", "false", st),
        st, "config");
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  check(rt == NULL, st, "runtime");
  return rt;
}

/* The values of the model's trainable variables, concatenated, as a new
 * float32 array of *count values. */
static float *read_weights(wf_session *s, const wf_output *reads, int n,
                           long *count, wf_status *st) {
  wf_tensor **v = calloc((size_t)n, sizeof *v);
  long total = 0;
  check(wf_session_run(s, NULL, NULL, NULL, 0, reads, v, n, NULL, 0, NULL, st),
        st, "reading the weights");
  for (int i = 0; i < n; i++)
    total += (long)wf_tensor_count(v[i]);
  float *w = malloc((size_t)total * sizeof *w);
  long at = 0;
  for (int i = 0; i < n; i++) {
    long c = (long)wf_tensor_count(v[i]);
    memcpy(w + at, wf_tensor_data(v[i]), (size_t)c * sizeof *w);
    at += c;
    wf_tensor_release(v[i]);
  }
  free(v);
  *count = total;
  return w;
}

static int train(const args *a) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = runtime(st);
  int32_t task = 0, size = 1;
  int64_t b = a->batch;
  if (!a->plain) {
    check(wf_runtime_cluster(rt, &task, &size, st), st, "joining the job");
    check(wf_parallel_task_batch(rt, a->batch, &b, st), st, "batch");
  }

  wf_attr_item fields = {"fields", {.type = WF_ATTR_STRING, .count = 1,
                                    .u.s = "image:float32:784,label:int32"}};
  int is_short = a->short_task == (int)task && a->short_data;
  wf_dataset *ds = wf_dataset_from_files(rt, is_short ? a->short_data : a->data,
                                         "fixed", &fields, 1, st);
  if (!a->plain)
    ds = wf_dataset_shard_by_task(ds, rt, st);
  ds = wf_dataset_batch(ds, b, 1, st);
  check(ds == NULL, st, "data set");

  wf_graph *g = wf_graph_new(rt);
  wf_node *in = wf_graph_add_get_next(g, "train", ds, "train_data", st);
  check(in == NULL, st, "iterator node");
  wf_model *m = wf_model_new(
      g, a->seed + (a->seed_per_task ? 7919ul * (unsigned long)task : 0), st);
  check(m == NULL, st, "model");
  wf_model_begin(m, 1);
  wf_output h = wf_layer_dense(m, (wf_output){in, 0}, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(m, h, 128, WF_ACT_RELU, st);
  wf_output logits = wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  wf_output loss =
      wf_loss_sparse_softmax_cross_entropy(m, logits, (wf_output){in, 1}, st);
  check(loss.node == NULL, st, "model");
  wf_optimizer opt = wf_optimizer_defaults(a->sgd ? WF_OPT_SGD : WF_OPT_ADAM);
  if (!a->plain)
    check(wf_model_set_data_parallel(m, a->bucket, st) != WF_OK, st,
          "data parallel");
  wf_node *step = wf_model_minimize(m, loss, &opt, st);
  check(step == NULL, st, "optimizer");
  wf_node *init = wf_model_init_op(m, st);
  check(init == NULL, st, "init");

  /* Reads of the trainable weights, and the job's mean of a fed loss. */
  int nv = wf_model_num_variables(m), nr = 0;
  wf_output *reads = calloc((size_t)nv, sizeof *reads);
  for (int i = 0; i < nv; i++) {
    wf_output hd;
    int trainable;
    wf_model_variable_name(m, i, &hd, &trainable);
    if (!trainable)
      continue;
    wf_attr_value dt, shape;
    check(wf_node_get_attr(hd.node, "dtype", &dt, st) ||
              wf_node_get_attr(hd.node, "shape", &shape, st),
          st, "variable");
    wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);
    wf_node_desc_add_input(d, hd);
    wf_node_desc_set_attr_dtype(d, "dtype", (wf_dtype)dt.u.dtype);
    wf_node_desc_set_attr_shape(d, "shape", shape.u.shape.dims,
                                shape.u.shape.rank);
    reads[nr] = (wf_output){wf_node_desc_finish(d, st), 0};
    check(reads[nr++].node == NULL, st, "read");
  }
  /* The loss of the global batch: the mean of the tasks' batch means. */
  wf_output loss_mean = loss;
  if (!a->plain)
    check(wf_graph_add_task_mean(g, &loss, 1, &loss_mean, st), st,
          "loss mean");

  wf_session *s = wf_session_new(g, st);
  check(s == NULL, st, "session");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  check(it == NULL || wf_session_attach_iterator(s, "train", it, st), st,
        "iterator");
  check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                       st),
        st, "initialising");

  long nw = 0, nw2 = 0;
  float *w0 = read_weights(s, reads, nr, &nw, st);
  double *losses = calloc((size_t)a->steps, sizeof *losses);
  wf_callable *c =
      wf_session_prepare(s, NULL, 0, &loss_mean, 1, &step, 1, st);
  check(c == NULL, st, "preparing the step");
  for (int k = 0; k < a->steps; k++) {
    wf_tensor *lv = NULL;
    if (wf_callable_run(c, NULL, NULL, &lv, NULL, st) && is_short) {
      /* This task alone ran out of input: it stays alive (heartbeats go
       * on) but never reaches the step's collectives. */
      fprintf(stderr, "dp_train: task %d: training step %d: %s; staying "
                      "alive %d s\n",
              (int)task, k, wf_status_message(st), a->stay);
      fflush(stderr);
      sleep((unsigned)a->stay);
      exit(1);
    }
    check(wf_status_code(st) != WF_OK, st, "training step");
    losses[k] = *(float *)wf_tensor_data(lv);
    wf_tensor_release(lv);
  }
  float *w1 = read_weights(s, reads, nr, &nw2, st);

  /* The file: header (magic, steps, weights), losses, initial weights,
   * final weights. */
  char path[1024];
  snprintf(path, sizeof path, "%s.task%d", a->prefix, (int)task);
  FILE *f = fopen(path, "wb");
  if (!f)
    die("cannot create %s", path);
  uint64_t head[3] = {MAGIC, (uint64_t)a->steps, (uint64_t)nw};
  if (fwrite(head, sizeof head, 1, f) != 1 ||
      fwrite(losses, sizeof *losses, (size_t)a->steps, f) !=
          (size_t)a->steps ||
      fwrite(w0, sizeof *w0, (size_t)nw, f) != (size_t)nw ||
      fwrite(w1, sizeof *w1, (size_t)nw, f) != (size_t)nw || fclose(f))
    die("cannot write %s", path);
  printf("task %d of %d: %d steps of batch %lld (per task), loss %.6f -> "
         "%.6f, written to %s\n",
         (int)task, (int)size, a->steps, (long long)b, losses[0],
         losses[a->steps - 1], path);

  free(losses);
  free(w0);
  free(w1);
  free(reads);
  wf_callable_free(c);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_model_free(m);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

/* ---- comparing ----------------------------------------------------------------- */

typedef struct record {
  uint64_t steps, nw;
  double *losses;
  float *w0, *w1;
} record;

static void load(const char *path, record *r) {
  FILE *f = fopen(path, "rb");
  if (!f)
    die("cannot open %s", path);
  uint64_t head[3];
  if (fread(head, sizeof head, 1, f) != 1 || head[0] != MAGIC ||
      head[1] > 1000000 || head[2] > 100000000)
    die("%s is not a dp_train record", path);
  r->steps = head[1];
  r->nw = head[2];
  r->losses = malloc((r->steps + 1) * sizeof *r->losses);
  r->w0 = malloc((r->nw + 1) * sizeof *r->w0);
  r->w1 = malloc((r->nw + 1) * sizeof *r->w1);
  if (fread(r->losses, sizeof *r->losses, r->steps, f) != r->steps ||
      fread(r->w0, sizeof *r->w0, r->nw, f) != r->nw ||
      fread(r->w1, sizeof *r->w1, r->nw, f) != r->nw)
    die("%s is truncated", path);
  fclose(f);
}

static int compare(const char *pa, const char *pb, int exact) {
  record a, b;
  load(pa, &a);
  load(pb, &b);
  if (a.steps != b.steps || a.nw != b.nw) {
    fprintf(stderr, "dp_train: %s has %llu steps and %llu weights, %s %llu "
                    "and %llu\n",
            pa, (unsigned long long)a.steps, (unsigned long long)a.nw, pb,
            (unsigned long long)b.steps, (unsigned long long)b.nw);
    return 1;
  }
  int ok = 1;
  /* Replicas start from task 0's draw, the reference's. */
  uint64_t init_diff = 0;
  for (uint64_t i = 0; i < a.nw; i++)
    init_diff += memcmp(&a.w0[i], &b.w0[i], sizeof *a.w0) != 0;
  if (init_diff) {
    printf("initial weights: %llu of %llu differ (must be identical)\n",
           (unsigned long long)init_diff, (unsigned long long)a.nw);
    ok = 0;
  }
  double loss_worst = 0;
  uint64_t loss_at = 0;
  for (uint64_t k = 0; k < a.steps; k++) {
    double d = fabs(a.losses[k] - b.losses[k]) /
               fmax(1.0, fabs(a.losses[k]));
    if (d > loss_worst || (exact && a.losses[k] != b.losses[k])) {
      loss_worst = fmax(d, loss_worst);
      loss_at = k;
      if (exact)
        ok = 0;
    }
  }
  double worst = 0, sq = 0, wsq = 0;
  uint64_t worst_at = 0, moved = 0, differ = 0;
  for (uint64_t i = 0; i < a.nw; i++) {
    double d = fabs((double)a.w1[i] - (double)b.w1[i]);
    if (d > worst) {
      worst = d;
      worst_at = i;
    }
    differ += a.w1[i] != b.w1[i];
    moved += d > 1e-5;
    sq += d * d;
    wsq += (double)a.w1[i] * a.w1[i];
  }
  double rms = sqrt(sq / (double)a.nw), wrms = sqrt(wsq / (double)a.nw);
  printf("losses: worst relative difference %.3g (step %llu: %.7f vs %.7f); "
         "final weights: %llu of %llu differ, %llu by more than 1e-5, worst "
         "%.3g (weight %llu), RMS of differences %.3g = %.3g of the weights' "
         "RMS\n",
         loss_worst, (unsigned long long)loss_at, a.losses[loss_at],
         b.losses[loss_at], (unsigned long long)differ,
         (unsigned long long)a.nw, (unsigned long long)moved, worst,
         (unsigned long long)worst_at, rms, wrms > 0 ? rms / wrms : 0.0);
  if (exact && differ)
    ok = 0;
  if (!exact && (loss_worst > LOSS_TOL || worst > WEIGHT_ABS_TOL ||
                 rms > WEIGHT_RMS_TOL * wrms))
    ok = 0;
  printf("%s %s: %s (%s)\n", pa, pb, ok ? "match" : "DIFFER",
         exact ? "bit for bit"
               : "tolerances: loss 1e-5 relative, weights 1e-4 each and RMS "
                 "1e-5 of theirs");
  free(a.losses);
  free(a.w0);
  free(a.w1);
  free(b.losses);
  free(b.w0);
  free(b.w1);
  return ok ? 0 : 1;
}

static void usage(void) {
  fprintf(stderr,
          "usage: dp_train data FILE N\n"
          "       dp_train train [--plain] [--seed-per-task] [--steps S] "
          "[--batch B] [--bucket BYTES] [--seed N] [--sgd]\n"
          "                [--short-task T --short-data FILE [--stay S]] "
          "DATA PREFIX\n"
          "       dp_train compare [--exact] A B\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2)
    usage();
  const char *mode = argv[1];
  if (strcmp(mode, "data") == 0) {
    if (argc != 4)
      usage();
    return write_data(argv[2], atol(argv[3]));
  }
  if (strcmp(mode, "compare") == 0) {
    int exact = argc == 5 && strcmp(argv[2], "--exact") == 0;
    if (argc != 4 + exact)
      usage();
    return compare(argv[2 + exact], argv[3 + exact], exact);
  }
  if (strcmp(mode, "train") != 0)
    usage();
  args a = {0, 0, 20, 0, 48, 0, 42, NULL, NULL, -1, NULL, 60};
  static const struct option longopts[] = {
      {"plain", no_argument, NULL, 'p'},
      {"seed-per-task", no_argument, NULL, 't'},
      {"steps", required_argument, NULL, 's'},
      {"batch", required_argument, NULL, 'b'},
      {"bucket", required_argument, NULL, 'k'},
      {"seed", required_argument, NULL, 'S'},
      {"sgd", no_argument, NULL, 'g'},
      {"short-task", required_argument, NULL, 'T'},
      {"short-data", required_argument, NULL, 'D'},
      {"stay", required_argument, NULL, 'Y'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 2;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'p': a.plain = 1; break;
    case 't': a.seed_per_task = 1; break;
    case 's': a.steps = atoi(optarg); break;
    case 'b': a.batch = atol(optarg); break;
    case 'k': a.bucket = atoll(optarg); break;
    case 'S': a.seed = strtoul(optarg, NULL, 10); break;
    case 'g': a.sgd = 1; break;
    case 'T': a.short_task = atoi(optarg); break;
    case 'D': a.short_data = optarg; break;
    case 'Y': a.stay = atoi(optarg); break;
    default: usage();
    }
  }
  if (optind + 2 != argc || a.steps < 1 || a.batch < 1)
    usage();
  a.data = argv[optind];
  a.prefix = argv[optind + 1];
  return train(&a);
}
