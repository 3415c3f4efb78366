/* bench/dispatch.c — executor overhead: a chain of 10,000 tiny ops
 * (x = x + 1 on one float32) run through a prepared callable; prints the
 * time per node (mean, best and median step) and the time the session
 * and callable took to make (the chain compiled: placement, passes,
 * plans) as one JSON line. */
#include <config.h>

#include "bench_util.h"

#define NODES 10000

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 200;
  if (steps < 1) {
    fprintf(stderr, "usage: bench/dispatch [STEPS >= 1]\n");
    return 2;
  }
  int threads = 2;
  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(threads, st);
  wf_graph *g = wf_graph_new(rt);
  wf_node *x0 = bench_placeholder(g, "x", WF_FLOAT32, NULL, 0, st);
  wf_tensor *one_t = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  *(float *)wf_tensor_data(one_t) = 1.0f;
  wf_node *one = bench_const(g, one_t, st);
  wf_node *x = x0;
  for (int i = 0; i < NODES; i++)
    x = bench_op2(g, "Add", x, one, st);

  double t_make = bench_now();
  wf_session *s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  wf_output feed = {x0, 0}, fetch = {x, 0};
  wf_callable *c = wf_session_prepare(s, &feed, 1, &fetch, 1, NULL, 0, st);
  bench_check(c == NULL, st, "prepare");
  t_make = bench_now() - t_make;
  wf_tensor *in = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  *(float *)wf_tensor_data(in) = 0.0f;

  /* Warm up, then time. */
  for (int i = 0; i < 5; i++) {
    wf_tensor *out = NULL;
    bench_check(wf_callable_run(c, NULL, &in, &out, NULL, st), st, "run");
    if (*(float *)wf_tensor_data(out) != (float)NODES) {
      fprintf(stderr, "bench: dispatch computed %g, expected %d\n",
              (double)*(float *)wf_tensor_data(out), NODES);
      return 1;
    }
    wf_tensor_release(out);
  }
  double best = 1e30, total = 0;
  double *times = calloc((size_t)steps, sizeof *times);
  bench_check(times == NULL, st, "out of memory");
  for (int i = 0; i < steps; i++) {
    wf_tensor *out = NULL;
    double t0 = bench_now();
    bench_check(wf_callable_run(c, NULL, &in, &out, NULL, st), st, "run");
    double dt = bench_now() - t0;
    total += dt;
    times[i] = dt;
    if (dt < best)
      best = dt;
    wf_tensor_release(out);
  }
  for (int a = 1; a < steps; a++) /* sorted, for the median */
    for (int b = a; b > 0 && times[b - 1] > times[b]; b--) {
      double v = times[b];
      times[b] = times[b - 1];
      times[b - 1] = v;
    }
  printf("{\"bench\":\"dispatch\",\"nodes\":%d,\"steps\":%d,\"threads\":%d,"
         "\"us_per_node\":%.4f,\"us_per_node_best\":%.4f,"
         "\"us_per_node_median\":%.4f,\"prepare_ms\":%.1f}\n",
         NODES, steps, threads, total / steps / NODES * 1e6,
         best / NODES * 1e6, times[steps / 2] / NODES * 1e6, t_make * 1e3);
  free(times);
  wf_tensor_release(in);
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
