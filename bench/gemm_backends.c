/* bench/gemm_backends.c — the measurement behind the CPU plugin's choice of
 * matrix-product backend (plugins/devices/cpu/cpu_gemm.c): float32
 * row-major products C (M, N) = A (M, K) B (K, N) of the shapes the
 * reference workloads and their backward passes use, each timed with
 * OpenBLAS's cblas_sgemm, oneDNN's dnnl_sgemm and a oneDNN matmul primitive
 * (created once, then executed), at 1 and 2 threads. One JSON line per
 * shape, thread count and backend.
 *
 * It calls the libraries directly, not through weft: bench/gemm.c measures
 * the graph's overhead on top of the chosen backend. */
#include <config.h>

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

void openblas_set_num_threads(int n);

typedef struct shape {
  long m, n, k;
  int ta, tb; /* A stored (K, M), B stored (N, K) */
  const char *what;
} shape;

static const shape shapes[] = {
    {1, 10, 1568, 0, 0, "cnn dense, batch 1"},
    {64, 10, 1568, 0, 0, "cnn dense, batch 64"},
    {1568, 10, 64, 1, 0, "cnn dense dW"},
    {64, 1568, 10, 0, 1, "cnn dense dX"},
    {64, 256, 784, 0, 0, "mlp layer 1"},
    {784, 256, 64, 1, 0, "mlp layer 1 dW"},
    {64, 784, 256, 0, 1, "mlp layer 1 dX"},
    {64, 128, 256, 0, 0, "mlp layer 2"},
    {256, 128, 64, 1, 0, "mlp layer 2 dW"},
    {64, 256, 128, 0, 1, "mlp layer 2 dX"},
    {64, 10, 128, 0, 0, "mlp layer 3"},
    {128, 10, 64, 1, 0, "mlp layer 3 dW"},
    {64, 128, 10, 0, 1, "mlp layer 3 dX"},
    {64, 384, 28, 0, 0, "gru input projection"},
    {64, 384, 128, 0, 0, "gru recurrent"},
    {1792, 64, 28, 0, 0, "transformer embedding"},
    {1792, 64, 64, 0, 0, "transformer q, k, v, out"},
    {64, 64, 1792, 1, 0, "transformer q, k, v, out dW"},
    {1792, 64, 64, 0, 1, "transformer q, k, v, out dX"},
    {1792, 128, 64, 0, 0, "transformer mlp 1"},
    {64, 128, 1792, 1, 0, "transformer mlp 1 dW"},
    {1792, 64, 128, 0, 1, "transformer mlp 1 dX"},
    {128, 64, 1792, 1, 0, "transformer mlp 2 dW"},
    {32, 32, 32, 0, 0, "square 32"},
    {128, 128, 128, 0, 0, "square 128"},
    {256, 256, 256, 0, 0, "square 256"},
    {512, 512, 512, 0, 0, "square 512"},
    {512, 512, 512, 1, 1, "square 512, both transposed"},
    {1024, 1024, 1024, 0, 0, "square 1024"},
    {2048, 2048, 2048, 0, 0, "square 2048"},
};

static void fill(float *p, long n) {
  unsigned s = 12345;
  for (long i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    p[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
  }
}

/* Runs f until about 0.2 s have passed (at least 3 times after a warm-up)
 * and returns the best time of one call. */
#define TIME_BEST(best, call)                                                  \
  do {                                                                         \
    double start_ = bench_now(), t_;                                           \
    call;                                                                      \
    (best) = 1e30;                                                             \
    for (int i_ = 0; i_ < 3 || bench_now() - start_ < 0.2; i_++) {             \
      t_ = bench_now();                                                        \
      call;                                                                    \
      t_ = bench_now() - t_;                                                   \
      if (t_ < (best))                                                         \
        (best) = t_;                                                           \
    }                                                                          \
  } while (0)

static void check(dnnl_status_t s, const char *what) {
  if (s != dnnl_success) {
    fprintf(stderr, "bench: %s failed (oneDNN status %d)\n", what, (int)s);
    exit(1);
  }
}

/* The matmul primitive for one shape, with its memories bound to a, b, c. */
typedef struct mm {
  dnnl_primitive_t prim;
  dnnl_memory_t a, b, c;
} mm;

static void mm_init(mm *p, dnnl_engine_t eng, const shape *s, float *a,
                    float *b, float *c) {
  dnnl_memory_desc_t ad, bd, cd;
  dnnl_dims_t adims = {s->m, s->k}, bdims = {s->k, s->n}, cdims = {s->m, s->n};
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd;

  /* A transposed operand is the same logical matrix in column-major
   * order (tag ba). */
  check(dnnl_memory_desc_init_by_tag(&ad, 2, adims, dnnl_f32,
                                     s->ta ? dnnl_ba : dnnl_ab),
        "md");
  check(dnnl_memory_desc_init_by_tag(&bd, 2, bdims, dnnl_f32,
                                     s->tb ? dnnl_ba : dnnl_ab),
        "md");
  check(dnnl_memory_desc_init_by_tag(&cd, 2, cdims, dnnl_f32, dnnl_ab), "md");
  check(dnnl_matmul_desc_init(&desc, &ad, &bd, NULL, &cd), "matmul desc");
  check(dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL), "matmul pd");
  check(dnnl_primitive_create(&p->prim, pd), "matmul primitive");
  dnnl_primitive_desc_destroy(pd);
  check(dnnl_memory_create(&p->a, &ad, eng, a), "memory");
  check(dnnl_memory_create(&p->b, &bd, eng, b), "memory");
  check(dnnl_memory_create(&p->c, &cd, eng, c), "memory");
}

static void mm_run(const mm *p, dnnl_stream_t stream) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->a},
                             {DNNL_ARG_WEIGHTS, p->b},
                             {DNNL_ARG_DST, p->c}};
  check(dnnl_primitive_execute(p->prim, stream, 3, args), "matmul execute");
}

static void mm_fini(mm *p) {
  dnnl_primitive_destroy(p->prim);
  dnnl_memory_destroy(p->a);
  dnnl_memory_destroy(p->b);
  dnnl_memory_destroy(p->c);
}

static void print(const shape *s, int threads, const char *backend,
                  double best) {
  double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
  printf("{\"bench\":\"gemm-backends\",\"m\":%ld,\"n\":%ld,\"k\":%ld,"
         "\"ta\":%d,\"tb\":%d,\"shape\":\"%s\",\"threads\":%d,"
         "\"backend\":\"%s\",\"us\":%.2f,\"gflops\":%.2f}\n",
         s->m, s->n, s->k, s->ta, s->tb, s->what, threads, backend,
         best * 1e6, flops / best * 1e-9);
}

int main(void) {
  dnnl_engine_t eng;
  dnnl_stream_t stream;

  check(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine");
  check(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags), "stream");
  for (int threads = 1; threads <= 2; threads++) {
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      const shape *s = &shapes[i];
      float *a = malloc(sizeof(float) * (size_t)(s->m * s->k));
      float *b = malloc(sizeof(float) * (size_t)(s->k * s->n));
      float *c = malloc(sizeof(float) * (size_t)(s->m * s->n));
      double best;
      mm p;

      if (!a || !b || !c) {
        fprintf(stderr, "bench: out of memory\n");
        return 1;
      }
      fill(a, s->m * s->k);
      fill(b, s->k * s->n);
      long lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
      TIME_BEST(best,
                cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                            s->tb ? CblasTrans : CblasNoTrans, (int)s->m,
                            (int)s->n, (int)s->k, 1.0f, a, (int)lda, b,
                            (int)ldb, 0.0f, c, (int)s->n));
      print(s, threads, "openblas", best);
      TIME_BEST(best, check(dnnl_sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N',
                                       s->m, s->n, s->k, 1.0f, a, lda, b, ldb,
                                       0.0f, c, s->n),
                            "dnnl_sgemm"));
      print(s, threads, "dnnl_sgemm", best);
      mm_init(&p, eng, s, a, b, c);
      TIME_BEST(best, mm_run(&p, stream));
      print(s, threads, "dnnl_matmul", best);
      mm_fini(&p);
      free(a);
      free(b);
      free(c);
    }
  }
  dnnl_stream_destroy(stream);
  dnnl_engine_destroy(eng);
  return 0;
}
