/* bench/onnx_infer.c — an ONNX model in weft: imports MODEL.onnx (the ONNX
 * importer plugin), feeds INPUT.npy to its one input, runs it ITERS times
 * after WARMUP runs through a prepared signature, and prints one JSON line
 * with the mean and the median time per run and the items (rows of the
 * input) per second;
 * with --out writes the output to a .npy file so a script can compare it
 * with another runtime's (bench/onnx_vs_ort.py). Threads: --intra N for
 * the kernels' threads (inter-op 1), so runs are comparable with a runtime
 * told to use N threads. --profile adds one traced run and prints the time
 * spent per op (and kernel) to stderr, the largest first. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  const char *model = NULL, *input = NULL, *out = NULL;
  int iters = 20, warmup = 3, intra = 2, profile = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
      warmup = atoi(argv[++i]);
    else if (strcmp(argv[i], "--intra") == 0 && i + 1 < argc)
      intra = atoi(argv[++i]);
    else if (strcmp(argv[i], "--profile") == 0)
      profile = 1;
    else if (!model)
      model = argv[i];
    else if (!input)
      input = argv[i];
    else
      model = NULL, i = argc;
  }
  if (!model || !input || iters < 1) {
    fprintf(stderr,
            "usage: onnx_infer MODEL.onnx INPUT.npy [--out OUT.npy] "
            "[--iters N] [--warmup N] [--intra THREADS] [--profile]\n");
    return 2;
  }
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  const char *path = wf_config_default_path(); /* $WEFT_CONFIG, ... */
  if (path)
    bench_check(wf_config_load(cfg, path, st), st, "config");
  char buf[16];
  snprintf(buf, sizeof buf, "%d", intra);
  bench_check(wf_config_set(cfg, "threads", "inter_op", "1", st) ||
                  wf_config_set(cfg, "threads", "intra_op", buf, st),
              st, "config");
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  bench_check(rt == NULL, st, "runtime");
  wf_imported *m = wf_import(rt, model, "onnx", st);
  bench_check(m == NULL, st, "import");
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  if (sig->ninputs != 1 || sig->noutputs < 1) {
    fprintf(stderr, "bench: the model needs one input (it has %d)\n",
            sig->ninputs);
    return 1;
  }
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  wf_session *s = wf_session_new(wf_imported_graph(m), st);
  bench_check(s == NULL, st, "session");
  bench_check(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init,
                             ninit, NULL, st),
              st, "initialising the weights");
  wf_tensor *x = wf_npy_read(input, st);
  bench_check(x == NULL, st, "input");
  wf_callable *c =
      wf_session_prepare(s, sig->inputs, 1, sig->outputs, 1, NULL, 0, st);
  bench_check(c == NULL, st, "prepare");
  wf_tensor *y = NULL;
  for (int i = 0; i < warmup + iters; i++) {
    if (i == warmup) {
      double *t = calloc((size_t)iters, sizeof *t), t0 = bench_now();
      bench_check(t == NULL, st, "out of memory");
      for (int k = 0; k < iters; k++) {
        wf_tensor_release(y);
        y = NULL;
        double r0 = bench_now();
        bench_check(wf_callable_run(c, NULL, &x, &y, NULL, st), st, "run");
        t[k] = bench_now() - r0;
      }
      double dt = (bench_now() - t0) / iters;
      /* the median run: one run of a noisy machine's slow moments moves
       * the mean, not the median */
      for (int a = 1; a < iters; a++)
        for (int b = a; b > 0 && t[b - 1] > t[b]; b--) {
          double v = t[b];
          t[b] = t[b - 1];
          t[b - 1] = v;
        }
      double med = iters % 2 ? t[iters / 2]
                             : (t[iters / 2 - 1] + t[iters / 2]) / 2;
      int64_t batch = wf_tensor_rank(x) ? wf_tensor_dim(x, 0) : 1;
      printf("{\"bench\":\"onnx_infer\",\"model\":\"%s\",\"batch\":%lld,"
             "\"threads\":%d,\"ms_per_run\":%.3f,\"ms_median\":%.3f,"
             "\"items_per_s\":%.1f}\n",
             model, (long long)batch, intra, dt * 1e3, med * 1e3, batch / dt);
      free(t);
      break;
    }
    wf_tensor_release(y);
    y = NULL;
    bench_check(wf_callable_run(c, NULL, &x, &y, NULL, st), st, "run");
  }
  if (profile) {
    wf_run_options o = WF_RUN_OPTIONS_INIT;
    wf_run_metadata *md = wf_run_metadata_new();
    wf_tensor *z = NULL;
    o.trace_level = WF_TRACE_NODES;
    bench_check(wf_callable_run(c, &o, &x, &z, md, st), st, "traced run");
    wf_tensor_release(z);
    int n = wf_run_metadata_num_nodes(md), nk = 0;
    struct { char op[96]; double ms; int count; } *k = calloc((size_t)n + 1,
                                                              sizeof *k);
    for (int i = 0; i < n; i++) {
      wf_node_stats ns;
      char key[96];
      wf_run_metadata_node(md, i, &ns);
      snprintf(key, sizeof key, "%s/%s", ns.op,
               wf_run_metadata_node_kernel(md, i));
      int j = 0;
      while (j < nk && strcmp(k[j].op, key) != 0)
        j++;
      if (j == nk)
        snprintf(k[nk++].op, sizeof k[0].op, "%s", key);
      k[j].ms += (ns.end_ns - ns.start_ns) / 1e6;
      k[j].count++;
    }
    for (int a = 0; a < nk; a++) /* largest first */
      for (int b = a + 1; b < nk; b++)
        if (k[b].ms > k[a].ms) {
          __typeof__(*k) t = k[a];
          k[a] = k[b];
          k[b] = t;
        }
    for (int a = 0; a < nk && a < 15; a++)
      fprintf(stderr, "%-40s %5d nodes %10.3f ms\n", k[a].op, k[a].count,
              k[a].ms);
    free(k);
    wf_run_metadata_free(md);
  }
  if (out)
    bench_check(wf_npy_write(out, y, st), st, "writing the output");
  wf_tensor_release(y);
  wf_tensor_release(x);
  wf_callable_free(c);
  wf_session_free(s);
  wf_imported_free(m);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
