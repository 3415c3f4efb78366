/* bench/serve_inproc.c — the in-process reference for bench/serve.sh: loads
 * a saved model and runs its signature through a prepared callable on the
 * first `batch` rows of an input .npy file (the same input the HTTP
 * benchmark sends), printing one JSON line with the latency percentiles
 * and runs per second. No HTTP, no JSON.
 *
 *   bench/serve_inproc MODEL SIGNATURE INPUT_KEY FILE.npy [BATCH [RUNS]]
 * A negative BATCH cycles through the batch sizes 1..-BATCH, as a dynamic
 * batcher's runs do. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* t's rows are the file's rows over and over. */
static void fill_rows(wf_tensor *t, const wf_tensor *all, size_t row,
                      int64_t nrows) {
  char *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_dim(t, 0); i++)
    memcpy(p + (size_t)i * row,
           (const char *)wf_tensor_data(all) + (size_t)(i % nrows) * row, row);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: serve_inproc MODEL SIGNATURE INPUT_KEY "
                    "FILE.npy [BATCH [RUNS]]\n");
    return 2;
  }
  int batch = argc > 5 ? atoi(argv[5]) : 1, vary = batch < 0;
  if (vary)
    batch = -batch;
  int runs = argc > 6 ? atoi(argv[6]) : 2000;
  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(0, st);
  wf_saved_model *m = wf_saved_model_load(rt, argv[1], st);
  bench_check(!m, st, "loading the model");
  int sig = wf_saved_model_find_signature(m, argv[2]);
  if (sig < 0 || wf_saved_model_num_inputs(m, sig) != 1) {
    fprintf(stderr, "serve_inproc: want a signature '%s' with one input\n",
            argv[2]);
    return 1;
  }
  wf_tensor *all = wf_npy_read(argv[4], st);
  bench_check(!all, st, "reading the input");
  int64_t dims[WF_MAX_RANK];
  int rank = wf_tensor_rank(all);
  for (int k = 0; k < rank; k++)
    dims[k] = wf_tensor_dim(all, k);
  if (batch < 1 || batch > 64 || dims[0] < 1) {
    fprintf(stderr, "serve_inproc: BATCH must be 1..64 (or -64..-1)\n");
    return 1;
  }
  int64_t nrows = dims[0];
  size_t row = wf_tensor_nbytes(all) / (size_t)nrows;
  dims[0] = batch;
  wf_tensor *in = wf_tensor_new(wf_tensor_dtype(all), dims, rank, st);
  bench_check(!in, st, "input");
  fill_rows(in, all, row, nrows);

  wf_graph *g = wf_saved_model_graph(m);
  int nout = wf_saved_model_num_outputs(m, sig);
  wf_output feed, fetch[16];
  wf_signature_arg a;
  wf_saved_model_input(m, sig, 0, &a);
  bench_check(wf_graph_parse_output(g, a.tensor, &feed, st), st, "input");
  for (int j = 0; j < nout && j < 16; j++) {
    wf_saved_model_output(m, sig, j, &a);
    bench_check(wf_graph_parse_output(g, a.tensor, &fetch[j], st), st,
                "output");
  }
  wf_callable *c = wf_session_prepare(wf_saved_model_session(m), &feed, 1,
                                      fetch, nout, NULL, 0, st);
  bench_check(!c, st, "prepare");
  wf_tensor *outs[16], *ins[65] = {0};
  for (int b = 1; vary && b <= batch && b <= 64; b++) {
    dims[0] = b;
    ins[b] = wf_tensor_new(wf_tensor_dtype(all), dims, rank, st);
    bench_check(!ins[b], st, "input");
    fill_rows(ins[b], all, row, nrows);
  }
  double *lat = malloc(sizeof *lat * (size_t)runs);
  for (int i = 0; i < runs / 10 + 10; i++) { /* warm-up */
    bench_check(wf_callable_run(c, NULL, &in, outs, NULL, st), st, "run");
    for (int j = 0; j < nout; j++)
      wf_tensor_release(outs[j]);
  }
  double t0 = bench_now();
  for (int i = 0; i < runs; i++) {
    double t = bench_now();
    wf_tensor *x = vary ? ins[1 + i % batch] : in;
    bench_check(wf_callable_run(c, NULL, &x, outs, NULL, st), st, "run");
    for (int j = 0; j < nout; j++)
      wf_tensor_release(outs[j]);
    lat[i] = bench_now() - t;
  }
  double total = bench_now() - t0;
  qsort(lat, (size_t)runs, sizeof *lat, cmp);
  printf("{\"bench\":\"serve\",\"mode\":\"in-process\",\"batch\":%s%d%s,"
         "\"runs_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         vary ? "\"1.." : "", batch, vary ? "\"" : "", runs / total,
         lat[runs / 2] * 1e6, lat[(int)(runs * 0.99)] * 1e6);
  free(lat);
  for (int b = 0; b < 65; b++)
    wf_tensor_release(ins[b]);
  wf_callable_free(c);
  wf_tensor_release(in);
  wf_tensor_release(all);
  wf_saved_model_free(m);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
