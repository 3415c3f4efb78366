/* bench/data_parallel.c — data-parallel training throughput: the mlp of
 * DESIGN.md (Adam lr 1e-3, global batch 64) over one epoch of
 * Fashion-MNIST on every task of the job it runs in, gradients averaged
 * with AllReduce (weft/parallel.h). Task 0 prints one JSON line with the
 * job's size and its samples/s (global batch x steps / seconds).
 *
 *   bench/data_parallel                        # a job of one
 *   mpirun --allow-run-as-root --oversubscribe -np 2 bench/data_parallel
 *   ... --bucket 1       # one AllReduce per gradient instead of one fused
 *   ... --intra 2        # threads per task (default: the cores split
 *                        # evenly between the tasks on this host)
 *
 * Every task caches, shuffles (one seed) and shards the training split,
 * batching it by 64 / size; a warm-up epoch fills the cache and warms the
 * kernels, then one epoch of floor(60000 / 64) steps is timed. The threads
 * are set explicitly ([threads] inter_op = 1, intra_op as above, pin =
 * false): the core's own split counts the cores of the whole host for each
 * process. */
#include <config.h>

#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

#ifndef FASHION_DIR
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#endif

typedef struct args {
  const char *data;
  int batch, warm, intra;
  long long bucket;
} args;

static void usage(FILE *f) {
  fprintf(f, "usage: bench/data_parallel [--batch N] [--warm N] [--intra N]\n"
             "                           [--bucket BYTES] [--data DIR]\n"
             "  --batch N     global batch (default 64; divisible by the "
             "job's size)\n"
             "  --intra N     intra-op threads per task (default: the host's "
             "cores / tasks on it)\n"
             "  --bucket B    AllReduce bucket bytes (default 0: 25 MiB)\n");
}

/* Tasks of this job on this host, as Open MPI tells its processes. */
static int local_tasks(void) {
  const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int n = v ? atoi(v) : 1;
  return n > 0 ? n : 1;
}

int main(int argc, char **argv) {
  args a = {FASHION_DIR, 64, 1, 0, 0};
  static const struct option longopts[] = {
      {"batch", required_argument, NULL, 'b'},
      {"warm", required_argument, NULL, 'w'},
      {"intra", required_argument, NULL, 'i'},
      {"bucket", required_argument, NULL, 'k'},
      {"data", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'b': a.batch = atoi(optarg); break;
    case 'w': a.warm = atoi(optarg); break;
    case 'i': a.intra = atoi(optarg); break;
    case 'k': a.bucket = atoll(optarg); break;
    case 'd': a.data = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (a.batch < 1 || a.warm < 0 || a.intra < 0 || optind != argc) {
    usage(stderr);
    return 2;
  }
  if (a.intra == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a.intra = (int)(cores / local_tasks());
    if (a.intra < 1)
      a.intra = 1;
  }

  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  char intra[16];
  snprintf(intra, sizeof intra, "%d", a.intra);
  bench_check(wf_config_set(cfg, "threads", "inter_op", "1", st) ||
                  wf_config_set(cfg, "threads", "intra_op", intra, st) ||
                  wf_config_set(cfg, "threads", "pin", "false", st),
              st, "config");
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  bench_check(rt == NULL, st, "runtime");
  int32_t task = 0, size = 1;
  bench_check(wf_runtime_cluster(rt, &task, &size, st), st, "joining the job");
  int64_t b = 0;
  bench_check(wf_parallel_task_batch(rt, a.batch, &b, st), st, "batch");

  char path[512];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", a.data);
  wf_attr_item pair = {"label_file",
                       {.type = WF_ATTR_STRING, .count = 1, .u.s = "auto"}};
  wf_dataset *ds = wf_dataset_from_files(rt, path, "idx", &pair, 1, st);
  ds = wf_dataset_cache(ds, st);
  ds = wf_dataset_shuffle(ds, 60000, 42, st);
  ds = wf_dataset_shard_by_task(ds, rt, st);
  ds = wf_dataset_batch(ds, b, 1, st);
  ds = wf_dataset_map_scale(ds, "image", 1.0 / 255.0, 0.0, st);
  ds = wf_dataset_map_cast(ds, "label", WF_INT32, st);
  ds = wf_dataset_prefetch(ds, 4, st);
  bench_check(ds == NULL, st, "data set");
  int64_t steps = 60000 / a.batch;

  wf_graph *g = wf_graph_new(rt);
  wf_node *in = wf_graph_add_get_next(g, "train", ds, "train_data", st);
  bench_check(in == NULL, st, "iterator node");
  int64_t shape_dims = 2;
  wf_tensor *shape = wf_tensor_new(WF_INT64, &shape_dims, 1, st);
  bench_check(shape == NULL, st, "shape");
  ((int64_t *)wf_tensor_data(shape))[0] = -1;
  ((int64_t *)wf_tensor_data(shape))[1] = 784;
  wf_node *x = bench_op2(g, "Reshape", in, bench_const(g, shape, st), st);
  wf_model *m = wf_model_new(g, 42 + (uint64_t)task, st);
  bench_check(m == NULL, st, "model");
  wf_model_begin(m, 1);
  wf_output h = wf_layer_dense(m, (wf_output){x, 0}, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(m, h, 128, WF_ACT_RELU, st);
  wf_output logits = wf_layer_dense(m, h, 10, WF_ACT_NONE, st);
  wf_output loss =
      wf_loss_sparse_softmax_cross_entropy(m, logits, (wf_output){in, 1}, st);
  bench_check(loss.node == NULL, st, "model");
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  bench_check(wf_model_set_data_parallel(m, a.bucket, st) != WF_OK, st,
              "data parallel");
  wf_node *train_op = wf_model_minimize(m, loss, &opt, st);
  bench_check(train_op == NULL, st, "optimizer");
  wf_node *init = wf_model_init_op(m, st);
  bench_check(init == NULL, st, "init");
  int buckets = 0;
  for (int i = 0; i < wf_graph_num_nodes(g); i++)
    buckets += strcmp(wf_node_op(wf_graph_node(g, i)), "AllReduce") == 0;

  wf_session *s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  bench_check(it == NULL, st, "iterator");
  bench_check(wf_session_attach_iterator(s, "train", it, st), st,
              "attaching the iterator");
  bench_check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1,
                             NULL, st),
              st, "initialising (and broadcasting) the variables");
  wf_callable *step = wf_session_prepare(s, NULL, 0, &loss, 1, &train_op, 1, st);
  bench_check(step == NULL, st, "preparing the training step");

  double t0 = 0, last_loss = 0;
  for (int e = 0; e <= a.warm; e++) {
    if (e == a.warm)
      t0 = bench_now();
    for (int64_t k = 0; k < steps; k++) {
      wf_tensor *lv = NULL;
      bench_check(wf_callable_run(step, NULL, NULL, &lv, NULL, st), st,
                  "training step");
      last_loss = *(float *)wf_tensor_data(lv);
      wf_tensor_release(lv);
    }
    bench_check(wf_iterator_reset(it, st), st, "next epoch");
  }
  double dt = bench_now() - t0;

  if (task == 0)
    printf("{\"bench\":\"data_parallel\",\"model\":\"mlp\",\"tasks\":%d,"
           "\"global_batch\":%d,\"task_batch\":%lld,\"inter_op\":1,"
           "\"intra_op\":%d,\"buckets\":%d,\"samples\":%lld,\"seconds\":%.3f,"
           "\"samples_per_s\":%.1f,\"ms_per_step\":%.4f,"
           "\"task0_last_loss\":%.4f}\n",
           (int)size, a.batch, (long long)b, a.intra, buckets,
           (long long)(steps * a.batch), dt, (double)(steps * a.batch) / dt,
           dt / (double)steps * 1e3, last_loss);

  wf_callable_free(step);
  wf_session_free(s);
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_model_free(m);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
