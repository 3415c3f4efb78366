/* tests/transports/dp_shard.c — the input of a data-parallel job
 * (wf_dataset_shard_by_task, wf_parallel_task_batch), run by dp_shard.sh
 * under mpirun with 1, 2 and 3 tasks.
 *
 *   dp_shard data FILE N       N records, record i holding id i (int64)
 *   dp_shard check FILE B      run by every task of the job
 *
 * Every task shuffles the records with one seed, keeps its shard and
 * batches it by B / size; over two passes of floor(N / B) steps, step k of
 * all tasks together (summed across the job with AllReduce) must hold each
 * id of global batch k of the unsharded, shuffled records (batched by B)
 * exactly once and no other id: the tasks read disjoint parts that cover
 * the global batch. Also: a global batch the job size does not divide is
 * refused. Exits 0 on success, 1 naming the first mismatch. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#define SEED 1234

static void check(int failed, wf_status *st, const char *what) {
  if (failed) {
    fprintf(stderr, "dp_shard: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

static wf_dataset *records(wf_runtime *rt, const char *path, int64_t n,
                           wf_status *st) {
  wf_attr_item fields = {"fields", {.type = WF_ATTR_STRING, .count = 1,
                                    .u.s = "id:int64"}};
  wf_dataset *ds = wf_dataset_from_files(rt, path, "fixed", &fields, 1, st);
  return wf_dataset_shuffle(ds, n, SEED, st);
}

static int run_check(const char *path, int64_t global) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  check(wf_config_set(cfg, "threads", "inter_op", "1", st) ||
            wf_config_set(cfg, "threads", "intra_op", "1", st) ||
            wf_config_set(cfg, "threads", "pin", "false", st),
        st, "config");
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  check(rt == NULL, st, "runtime");
  int32_t task, size;
  check(wf_runtime_cluster(rt, &task, &size, st), st, "joining the job");
  int64_t b = 0;
  check(wf_parallel_task_batch(rt, global, &b, st), st, "task batch");
  if (size > 1) {
    int64_t bad = 0;
    if (wf_parallel_task_batch(rt, global + 1, &bad, st) !=
            WF_INVALID_ARGUMENT ||
        !strstr(wf_status_message(st), "does not split evenly")) {
      fprintf(stderr, "dp_shard: a global batch of %lld on %d tasks was not "
                      "refused (%s)\n",
              (long long)(global + 1), (int)size, wf_status_message(st));
      return 1;
    }
  }

  /* The number of records, from the source. */
  int64_t n = 0;
  {
    wf_attr_item fields = {"fields", {.type = WF_ATTR_STRING, .count = 1,
                                      .u.s = "id:int64"}};
    wf_dataset *src = wf_dataset_from_files(rt, path, "fixed", &fields, 1, st);
    check(!src || wf_dataset_count(src, &n, st), st, "counting");
    wf_dataset_release(src);
  }
  wf_dataset *mine = wf_dataset_batch(
      wf_dataset_shard_by_task(records(rt, path, n, st), rt, st), b, 1, st);
  wf_dataset *whole = wf_dataset_batch(records(rt, path, n, st), global, 1, st);
  check(!mine || !whole, st, "data sets");
  wf_iterator *it = wf_iterator_new(mine, NULL, st);
  wf_iterator *ref = wf_iterator_new(whole, NULL, st);
  check(!it || !ref, st, "iterators");

  /* counts (n,) summed over the job. */
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[1] = {n};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "counts");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT64);
  wf_node_desc_set_attr_shape(d, "shape", dims, 1);
  wf_output counts = {wf_node_desc_finish(d, st), 0};
  check(counts.node == NULL, st, "placeholder");
  d = wf_node_desc_new(g, "AllReduce", "sum");
  wf_node_desc_add_input_list(d, &counts, 1);
  wf_node_desc_set_attr_string(d, "reduction", "sum");
  wf_output total = {wf_node_desc_finish(d, st), 0};
  check(total.node == NULL, st, "AllReduce");
  wf_session *s = wf_session_new(g, st);
  check(s == NULL, st, "session");

  int64_t steps = n / global;
  int failures = 0;
  for (int pass = 0; pass < 2 && !failures; pass++) {
    for (int64_t k = 0; k < steps && !failures; k++) {
      wf_tensor *mb[1] = {NULL}, *gb[1] = {NULL};
      check(wf_iterator_next(it, mb, st), st, "this task's batch");
      check(wf_iterator_next(ref, gb, st), st, "the global batch");
      wf_tensor *c = wf_tensor_new(WF_INT64, dims, 1, st);
      check(c == NULL, st, "counts");
      int64_t *cv = wf_tensor_data(c);
      memset(cv, 0, (size_t)n * sizeof *cv);
      const int64_t *ids = wf_tensor_data(mb[0]);
      for (int64_t i = 0; i < wf_tensor_count(mb[0]); i++)
        cv[ids[i]]++;
      wf_tensor *sum = NULL;
      check(wf_session_run(s, NULL, &counts, &c, 1, &total, &sum, 1, NULL, 0,
                           NULL, st),
            st, "summing the counts");
      const int64_t *sv = wf_tensor_data(sum);
      const int64_t *want = wf_tensor_data(gb[0]);
      int64_t seen = 0;
      for (int64_t i = 0; i < wf_tensor_count(gb[0]); i++) {
        if (sv[want[i]] != 1) {
          fprintf(stderr, "dp_shard: task %d, pass %d, step %lld: id %lld "
                          "of the global batch was read %lld times by the "
                          "job\n",
                  (int)task, pass, (long long)k, (long long)want[i],
                  (long long)sv[want[i]]);
          failures++;
          break;
        }
      }
      for (int64_t i = 0; i < n; i++)
        seen += sv[i];
      if (!failures && seen != global) {
        fprintf(stderr, "dp_shard: task %d, pass %d, step %lld: the job read "
                        "%lld ids, the global batch holds %lld\n",
                (int)task, pass, (long long)k, (long long)seen,
                (long long)global);
        failures++;
      }
      if (wf_tensor_count(mb[0]) != b) {
        fprintf(stderr, "dp_shard: task %d: a batch of %lld, not %lld\n",
                (int)task, (long long)wf_tensor_count(mb[0]), (long long)b);
        failures++;
      }
      wf_tensor_release(sum);
      wf_tensor_release(c);
      wf_tensor_release(mb[0]);
      wf_tensor_release(gb[0]);
    }
    /* The next pass, abandoning what is left of this one. */
    check(wf_iterator_reset(it, st) || wf_iterator_reset(ref, st), st,
          "next pass");
  }
  if (!failures)
    printf("task %d of %d: %lld steps of %lld ids (global %lld) in each of 2 "
           "passes over %lld records: disjoint and covering\n",
           (int)task, (int)size, (long long)steps, (long long)b,
           (long long)global, (long long)n);
  wf_session_free(s);
  wf_graph_free(g);
  wf_iterator_free(it);
  wf_iterator_free(ref);
  wf_dataset_release(mine);
  wf_dataset_release(whole);
  wf_runtime_free(rt);
  wf_status_free(st);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "data") == 0) {
    FILE *f = fopen(argv[2], "wb");
    long n = atol(argv[3]);
    for (int64_t i = 0; f && i < n; i++)
      if (fwrite(&i, sizeof i, 1, f) != 1)
        break;
    if (!f || fclose(f)) {
      fprintf(stderr, "dp_shard: cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "check") == 0)
    return run_check(argv[2], atoll(argv[3]));
  fprintf(stderr, "usage: dp_shard data FILE N | dp_shard check FILE B\n");
  return 2;
}
