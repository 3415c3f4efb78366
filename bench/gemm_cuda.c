/* bench/gemm_cuda.c — float32 square matrix products on the GPU (N = 1024,
 * 2048, 4096): MatMul through a one-node weft graph placed on cuda:0 next
 * to a direct cublasSgemm in the same process. One JSON line per N with
 * GFLOP/s from the best of the timed runs and the graph's ratio to cuBLAS.
 *
 * What is timed, so that it is the product and not the copies:
 *   graph   one run of a prepared callable whose only target assigns
 *           MatMul(a, b) to variable c, with a, b and c variables created
 *           under a cuda:0 device scope (initialised once, before timing),
 *           then cudaDeviceSynchronize (kernels may return before the GPU
 *           is done). Nothing is fed or fetched.
 *   direct  cublasSgemm on device buffers holding the same a and b, then
 *           cudaDeviceSynchronize.
 * The line also says where placement put the variables, the MatMul and
 * the assignment, and how many _Recv transfers a run makes: a core that
 * keeps these variables in host memory copies a and b to the GPU and the
 * product back in every run, and that is then part of the graph's time.
 * max_abs_diff compares the graph's product with cuBLAS's, once.
 *
 * Without a usable cuda:0 it prints one JSON line saying why and exits 0,
 * as a benchmark has nothing to judge. Plugins and devices come as for
 * every program: $WEFT_CONFIG (give it `[devices] order = cuda, cpu`) and
 * $WEFT_PLUGIN_PATH.
 *
 *   bench/gemm_cuda [REPS]          (default 20 timed runs per side) */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "bench_util.h"

/* Prints s as the inside of a JSON string. */
static void json_chars(const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", (unsigned)*s);
    else
      putchar(*s);
  }
}

static void skip(const char *why, const char *detail) {
  printf("{\"bench\":\"gemm_cuda\",\"skipped\":\"");
  json_chars(why);
  if (detail) {
    printf(": ");
    json_chars(detail);
  }
  printf("\"}\n");
}

static void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "bench: %s: %s: %s\n", what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    exit(1);
  }
}

static void cublas_check(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "bench: %s: cuBLAS status %d\n", what, (int)s);
    exit(1);
  }
}

/* Runs call (which ends with cudaDeviceSynchronize) for at least 0.3 s,
 * then `reps` times; best gets the shortest of those. */
#define BEST_OF(best, reps, call)                                              \
  do {                                                                         \
    double w_ = bench_now();                                                   \
    do {                                                                       \
      call;                                                                    \
    } while (bench_now() - w_ < 0.3);                                          \
    (best) = 1e30;                                                             \
    for (int r_ = 0; r_ < (reps); r_++) {                                      \
      double t_ = bench_now();                                                 \
      call;                                                                    \
      t_ = bench_now() - t_;                                                   \
      if (t_ < (best))                                                         \
        (best) = t_;                                                           \
    }                                                                          \
  } while (0)

static void graph_run(wf_callable *c, wf_status *st) {
  bench_check(wf_callable_run(c, NULL, NULL, NULL, NULL, st), st, "run");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static void direct_run(cublasHandle_t h, int n, const float *a, const float *b,
                       float *c) {
  const float one = 1.0f, zero = 0.0f;
  /* Row-major c = a b is column-major c^T = b^T a^T. */
  cublas_check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a,
                           n, &zero, c, n),
               "cublasSgemm");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* Where one traced run put things: the device of the first node of op
 * (or "-" when none ran) and the number of _Recv nodes. */
typedef struct placed {
  char matmul[32], read[32], assign[32], kernel[64];
  int recvs;
} placed;

static void copy_device(char *dst, size_t len, const wf_node_stats *ns) {
  if (dst[0] == '-')
    snprintf(dst, len, "%s", ns->device);
}

static void where(wf_callable *c, placed *p, wf_status *st) {
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  wf_run_metadata *md = wf_run_metadata_new();

  bench_check(md == NULL, st, "metadata");
  opt.trace_level = WF_TRACE_NODES;
  bench_check(wf_callable_run(c, &opt, NULL, NULL, md, st), st, "traced run");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  strcpy(p->matmul, "-");
  strcpy(p->read, "-");
  strcpy(p->assign, "-");
  strcpy(p->kernel, "-");
  p->recvs = 0;
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    if (strcmp(ns.op, "MatMul") == 0) {
      copy_device(p->matmul, sizeof p->matmul, &ns);
      snprintf(p->kernel, sizeof p->kernel, "%s/%s",
               wf_run_metadata_node_kernel_plugin(md, i),
               wf_run_metadata_node_kernel(md, i));
    } else if (strcmp(ns.op, "ReadVariable") == 0) {
      copy_device(p->read, sizeof p->read, &ns);
    } else if (strcmp(ns.op, "AssignVariable") == 0) {
      copy_device(p->assign, sizeof p->assign, &ns);
    }
    p->recvs += strcmp(ns.op, "_Recv") == 0;
  }
  wf_run_metadata_free(md);
}

/* Whether rt has a usable cuda:0; when not, *why says why (borrowed from
 * rt or static). */
static int cuda_usable(wf_runtime *rt, const char **why) {
  *why = "no cuda:0 listed (is the device-cuda plugin on WEFT_PLUGIN_PATH?)";
  for (int i = 0; i < wf_runtime_device_count(rt); i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    if (strcmp(d.name, "cuda:0") != 0)
      continue;
    if (d.available)
      return 1;
    *why = d.reason;
    return 0;
  }
  return 0;
}

/* A new (n, n) float32 variable of m, uniform in [-1, 1] or zeros: its
 * value read in the pass; *handle (unless NULL) gets its handle. */
static wf_output variable(wf_model *m, const char *name, int64_t n,
                          wf_init init, wf_output *handle, wf_status *st) {
  int64_t dims[2] = {n, n};
  wf_output v =
      wf_model_variable(m, name, WF_FLOAT32, dims, 2, init, 1.0, 0, st);
  bench_check(v.node == NULL, st, name);
  if (handle)
    wf_model_variable_name(m, wf_model_num_variables(m) - 1, handle, NULL);
  return v;
}

static void one_size(wf_runtime *rt, cublasHandle_t h, int64_t n, int reps,
                     wf_status *st) {
  double flops = 2.0 * (double)n * (double)n * (double)n, best;
  double graph_s, direct_s, diff = 0;
  size_t bytes = (size_t)n * (size_t)n * sizeof(float);
  wf_graph *g = wf_graph_new(rt);
  wf_model *m = wf_model_new(g, 42, st);
  wf_output a, b, hc, fetch[3];
  wf_node *y, *assign, *init;
  wf_node_desc *d;
  wf_session *s;
  wf_callable *c;
  wf_tensor *vals[3] = {NULL, NULL, NULL};
  float *da, *db, *dc, *hostc;
  placed p;

  bench_check(g == NULL || m == NULL, st, "graph");
  wf_model_begin(m, 1);
  bench_check(wf_graph_push_device(g, "cuda:0", st), st, "device scope");
  a = variable(m, "a", n, WF_INIT_UNIFORM, NULL, st);
  b = variable(m, "b", n, WF_INIT_UNIFORM, NULL, st);
  variable(m, "c", n, WF_INIT_ZEROS, &hc, st);
  y = bench_op2(g, "MatMul", a.node, b.node, st);
  d = wf_node_desc_new(g, "AssignVariable", "store");
  wf_node_desc_add_input(d, hc);
  wf_node_desc_add_input(d, (wf_output){y, 0});
  assign = bench_finish(d, st);
  init = wf_model_init_op(m, st);
  bench_check(init == NULL, st, "init op");
  wf_graph_pop_device(g);

  s = wf_session_new(g, st);
  bench_check(s == NULL, st, "session");
  bench_check(
      wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st),
      st, "initialising the variables");
  c = wf_session_prepare(s, NULL, 0, NULL, 0, &assign, 1, st);
  bench_check(c == NULL, st, "prepare");
  where(c, &p, st);
  BEST_OF(best, reps, graph_run(c, st));
  graph_s = best;

  /* The same a and b for cuBLAS, and the graph's product to compare. */
  fetch[0] = a;
  fetch[1] = b;
  {
    wf_node_desc *r = wf_node_desc_new(g, "ReadVariable", "c_value");
    wf_node_desc_add_input(r, hc);
    wf_node_desc_set_attr_dtype(r, "dtype", WF_FLOAT32);
    fetch[2] = (wf_output){bench_finish(r, st), 0};
  }
  bench_check(
      wf_session_run(s, NULL, NULL, NULL, 0, fetch, vals, 3, NULL, 0, NULL, st),
      st, "reading the variables");
  cuda_check(cudaMalloc((void **)&da, bytes), "cudaMalloc");
  cuda_check(cudaMalloc((void **)&db, bytes), "cudaMalloc");
  cuda_check(cudaMalloc((void **)&dc, bytes), "cudaMalloc");
  cuda_check(
      cudaMemcpy(da, wf_tensor_data(vals[0]), bytes, cudaMemcpyHostToDevice),
      "cudaMemcpy");
  cuda_check(
      cudaMemcpy(db, wf_tensor_data(vals[1]), bytes, cudaMemcpyHostToDevice),
      "cudaMemcpy");
  BEST_OF(best, reps, direct_run(h, (int)n, da, db, dc));
  direct_s = best;
  hostc = malloc(bytes);
  bench_check(hostc == NULL, st, "out of memory");
  cuda_check(cudaMemcpy(hostc, dc, bytes, cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  for (int64_t i = 0; i < n * n; i++) {
    double e = fabs((double)hostc[i] -
                    (double)((const float *)wf_tensor_data(vals[2]))[i]);
    if (!(e <= diff))
      diff = e;
  }

  printf("{\"bench\":\"gemm_cuda\",\"n\":%lld,\"runs\":%d,"
         "\"graph_gflops\":%.1f,\"direct_cublas_gflops\":%.1f,"
         "\"graph_vs_direct\":%.3f,\"graph_ms\":%.4f,\"direct_ms\":%.4f,"
         "\"matmul_device\":\"%s\",\"matmul_kernel\":\"%s\","
         "\"variables_device\":\"%s\",\"assign_device\":\"%s\","
         "\"recvs_per_run\":%d,\"max_abs_diff\":%.3g,"
         "\"measured\":\"best run: graph = callable run (variables a, b -> "
         "MatMul -> assign c) + cudaDeviceSynchronize; direct = cublasSgemm "
         "+ cudaDeviceSynchronize\"}\n",
         (long long)n, reps, flops / graph_s * 1e-9, flops / direct_s * 1e-9,
         direct_s / graph_s, graph_s * 1e3, direct_s * 1e3, p.matmul, p.kernel,
         p.read, p.assign, p.recvs, diff);
  fflush(stdout);

  free(hostc);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  for (int i = 0; i < 3; i++)
    wf_tensor_release(vals[i]);
  wf_callable_free(c);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

int main(int argc, char **argv) {
  static const int64_t sizes[] = {1024, 2048, 4096};
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  const char *why;
  cublasHandle_t h;
  int count = 0;
  cudaError_t e;

  if (reps < 1) {
    fprintf(stderr, "usage: bench/gemm_cuda [REPS]\n");
    return 2;
  }
  rt = bench_runtime(1, st);
  if (!cuda_usable(rt, &why)) {
    skip("cuda:0 is unavailable", why);
    goto out;
  }
  /* The plugin's GPU is the first CUDA device of this process too. */
  e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    skip("no CUDA device in this process",
         e != cudaSuccess ? cudaGetErrorString(e) : NULL);
    goto out;
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  cublas_check(cublasCreate(&h), "cublasCreate");
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    one_size(rt, h, sizes[i], reps, st);
  cublasDestroy(h);

out:
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
