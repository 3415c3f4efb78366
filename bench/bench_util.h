/* bench/bench_util.h — shared helpers for the benchmark programs: a runtime
 * with the built-in plugins, graph-building shorthands that abort with the
 * status message on error, and a monotonic clock. Benchmarks print one JSON
 * line per result and never judge it. */
#ifndef WF_BENCH_UTIL_H
#define WF_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft/weft.h>

static inline void bench_check(int rc, wf_status *st, const char *what) {
  if (rc) {
    fprintf(stderr, "bench: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A runtime from $WEFT_CONFIG or the defaults, with `threads` inter-op
 * threads (0: the runtime's own split of the cores, as a user gets it). */
static inline wf_runtime *bench_runtime(int threads, wf_status *st) {
  wf_config *cfg = wf_config_new();
  const char *path = wf_config_default_path();
  if (path)
    bench_check(wf_config_load(cfg, path, st), st, "config");
  if (threads > 0) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", threads);
    bench_check(wf_config_set(cfg, "threads", "inter_op", buf, st), st,
                "config");
  }
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  bench_check(rt == NULL, st, "runtime");
  return rt;
}

static inline wf_node *bench_finish(wf_node_desc *d, wf_status *st) {
  wf_node *n = wf_node_desc_finish(d, st);
  bench_check(n == NULL, st, "adding a node");
  return n;
}

/* Const node holding t (the graph keeps its own reference). */
static inline wf_node *bench_const(wf_graph *g, wf_tensor *t, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  wf_node *n = bench_finish(d, st);
  wf_tensor_release(t);
  return n;
}

static inline wf_node *bench_placeholder(wf_graph *g, const char *name,
                                         wf_dtype dt, const int64_t *dims,
                                         int rank, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return bench_finish(d, st);
}

static inline wf_node *bench_op2(wf_graph *g, const char *op, wf_node *a,
                                 wf_node *b, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, (wf_output){a, 0});
  if (b)
    wf_node_desc_add_input(d, (wf_output){b, 0});
  return bench_finish(d, st);
}

#endif
