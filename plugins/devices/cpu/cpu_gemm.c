/* plugins/devices/cpu/cpu_gemm.c — fast MatMul and BatchMatMul for float32
 * (oneDNN matmul primitives, or OpenBLAS sgemm where it measured faster)
 * and float64 (OpenBLAS dgemm), every transpose flag, BatchMatMul's batch
 * dimensions broadcast as NumPy does. Other dtypes keep the reference
 * kernels (the registry picks by dtype).
 *
 * Which library computes a float32 product was decided by measurement on
 * the development machine (AMD EPYC, family 26, AVX-512; 2 cores; idle)
 * with bench/gemm_backends, best of many runs, in microseconds:
 *
 *   M x N x K (transposes)     thr  OpenBLAS  OpenBLAS  oneDNN  oneDNN
 *                                   Haswell   SkylakeX  sgemm   matmul
 *   1 x 10 x 1568 (cnn dense)   1      3.8       1.5      2.4     1.6
 *   64 x 10 x 1568              2     33.8      26.1      8.8     8.2
 *   128 x 10 x 64, A^T          1      2.3       1.0      1.5     1.6
 *   64 x 128 x 10, B^T          1      1.9       1.3      1.0     1.0
 *   32 x 32 x 32                2      0.7       0.3      0.5     0.9
 *   64 x 256 x 784 (mlp)        2    110.2      66.7     51.7    52.2
 *   64 x 784 x 256, B^T         2    115.7      73.1     74.9    65.7
 *   512^3, A^T B^T              2   1078.5     582.7    690.5   542.3
 *   512^3                       2   1045.0     567.8    527.5   527.6
 *   1024^3                      2   8430.3    4536.4   4255.9  4391.2
 *   2048^3                      2  69522.9   36265.4  35120.7 38997.8
 *
 * OpenBLAS 0.3.21 does not know this CPU and runs its AVX2 (Haswell)
 * kernels, about half as fast as oneDNN's AVX-512 ones at every size; with
 * OPENBLAS_CORETYPE=SkylakeX it wins only on tiny products (M*N*K up to
 * about 2^17, where it also stays on one thread). oneDNN's matmul
 * primitive beats its dnnl_sgemm on transposed operands and ties it up
 * to 512^3; from 1024^3 on, dnnl_sgemm is 3-10% faster.
 *
 * On an Intel Xeon (Sapphire Rapids, AVX-512; 2 cores), the same program:
 *
 *   M x N x K (transposes)     thr  OpenBLAS  oneDNN  oneDNN
 *                                   SkylakeX  sgemm   matmul
 *   512^3                       1    1371.5  1332.3  1254.2
 *   512^3, A^T B^T              1    1355.5  1341.8  1256.3
 *   512^3                       2     784.1   591.0   607.8
 *   512^3, A^T B^T              2     769.5   692.1   629.2
 *   1024^3                      2    5316.5  5068.4  5472.8
 *   2048^3                      2   42647.8 40018.6 46474.5
 *
 * so dnnl_sgemm takes over at 512^3 there when the operands are not
 * transposed and two threads share the product.
 *
 * On an AMD EPYC with AVX2 and no AVX-512 (2 cores), oneDNN runs its
 * jit:avx2 kernels and OpenBLAS its own AVX2 ones, in GFLOP/s:
 *
 *   M x N x K (transposes)     thr  OpenBLAS  oneDNN  oneDNN
 *                                             sgemm   matmul
 *   128^3                       2     143.4   174.0   170.5
 *   256^3                       2     170.7   183.1   184.4
 *   512^3                       2     182.6   137.2   135.8
 *   512^3, A^T B^T              2     182.1   130.0   130.4
 *   1024^3                      2     183.2   174.4   179.8
 *   2048^3                      2     185.2   183.3   183.7
 *
 * so there OpenBLAS takes the products of 2^27 multiply-adds and more on
 * several threads. Products with at most 16 columns (a classifier's last
 * layer) waste most of either library's register block there; the
 * plugin's own loops (narrow_gemm below: four rows at a time, the columns
 * in two vectors) took, for the cnn's dense layer, 1.95 us at 1 x 10 x
 * 1568 (the matmul primitive's node: 4.2) and 32 us at 64 x 10 x 1568 on
 * one thread (the primitive on two: 39). For float32:
 *   - a batch of two or more small matrices (at most 2^16 multiply-adds
 *     each, at most 64 columns), on a CPU with AVX2 and FMA, AVX-512 or
 *     not (with it, 16 lanes to a vector): the plugin's loops for them,
 *     the matrices shared by the threads (below; on an Intel Xeon with
 *     AVX-512 and AMX, 2 cores, the
 *     transformer's BatchMatMul nodes took 0.84 ms a training step in
 *     them against 1.57 in OpenBLAS's and oneDNN's kernels);
 *   - one matrix of at most 16 columns, B not transposed, on a CPU with
 *     AVX2 and FMA and no AVX-512: the plugin's loops (a batch of them,
 *     the transformer's attention-weighted values, ran 2.5% slower in
 *     training one matrix at a time than in the matmul primitive);
 *   - at most 2^17 multiply-adds, and OpenBLAS runs AVX-512 kernels:
 *     OpenBLAS sgemm;
 *   - one matrix, whose output is small beside its operands
 *     (m n at most (m + n) k / 4, k of 512 and more, work enough to
 *     share as cpu_dnnl_plan_threads counts it), on more than one
 *     intra-op thread: one-thread matmul plans, each a contiguous part of
 *     k, summed by the team (gemm_ksplit below);
 *   - one matrix of A transposed (a weight gradient) and fewer than 2^27
 *     multiply-adds, at least 64 rows a part, on more than one intra-op
 *     thread: one-thread matmul plans, each a contiguous part of m
 *     (gemm_msplit below);
 *   - at least 2^27 multiply-adds on more than one intra-op thread, on a
 *     CPU with AVX2 and no AVX-512: OpenBLAS sgemm, per matrix;
 *   - at least 2^30 multiply-adds per matrix, or 2^27 without transposes
 *     on more than one intra-op thread: dnnl_sgemm, per matrix;
 *   - otherwise the matmul primitive, cached per shape, whole batches (with
 *     broadcasting) in one call.
 * float64 goes to OpenBLAS dgemm (oneDNN has none). A shape the matmul
 * primitive refuses is done one matrix at a time with dnnl_sgemm.
 *
 * _FusedMatMul takes the same paths: on the matmul primitive its bias and
 * activation are the primitive's bias input and an eltwise post-op; on the
 * others the reference epilogue runs over the product. */
#include <config.h>

#include "cpu_kernels.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

/* Products this small go to OpenBLAS when it runs AVX-512 kernels. */
#define SMALL_PRODUCT ((int64_t)1 << 17)
/* Products this large go to dnnl_sgemm; untransposed ones from
 * MEDIUM_PRODUCT on when they run on several threads. */
#define LARGE_PRODUCT ((int64_t)1 << 30)
#define MEDIUM_PRODUCT ((int64_t)1 << 27)

/* The library of one product. */
typedef enum backend {
  BACKEND_OPENBLAS,     /* cblas_sgemm / cblas_dgemm, per matrix */
  BACKEND_ONEDNN_SGEMM, /* dnnl_sgemm, per matrix */
  BACKEND_ONEDNN_MATMUL, /* the matmul primitive, whole batches */
  BACKEND_NARROW,        /* narrow_gemm, per matrix */
  BACKEND_SMALL,         /* the loops for batches of small matrices */
  BACKEND_KSPLIT,        /* matmul plans, one a part of k (gemm_ksplit) */
  BACKEND_MSPLIT         /* matmul plans, one a part of m (gemm_msplit) */
} backend;

/* ---- the plugin's loops for products of few columns ----------------------- */

/* Columns narrow_gemm takes at most. */
#define NARROW_N 16
/* Products summed in registers before a partial sum is added up. */
#define NARROW_KB 128
/* Multiply-adds from which the intra-op threads share its rows. */
#define NARROW_SHARE ((int64_t)1 << 18)

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NARROW_LOOPS 1
#include <immintrin.h>
#else
#define NARROW_LOOPS 0
#endif

/* c (m, n) = op(a) b for n <= NARROW_N: a stored (m, k), or (k, m) when
 * ta; b (k, n). */
typedef struct narrow_job {
  int ta;
  int64_t m, n, k;
  const float *a, *b;
  float *c;
} narrow_job;

#if NARROW_LOOPS
/* Rows [r0, r1) of c. Each row of b is read as two vectors of eight, the
 * lanes past n belonging to the next row (ignored, never stored) except
 * near b's end, where masked loads stay inside it. Four rows share each
 * load of b; a row left over sums its products in four interleaved chains
 * (added at the end), the others in one. */
__attribute__((target("avx2,fma"))) static void
narrow_rows(const narrow_job *j, int64_t r0, int64_t r1) {
  const int64_t n = j->n, k = j->k, m = j->m;
  /* rows q < kf of b can be read 16 floats wide */
  const int64_t kf = k - (16 + n - 1) / n > 0 ? k - (16 + n - 1) / n : 0;
  int32_t lanes[16];
  __m256i m0, m1;
  int64_t r = r0;

  for (int i = 0; i < 16; i++)
    lanes[i] = i < n ? -1 : 0;
  m0 = _mm256_loadu_si256((const __m256i *)lanes);
  m1 = _mm256_loadu_si256((const __m256i *)(lanes + 8));
#define NARROW_B(q, b0, b1)                                                    \
  do {                                                                         \
    const float *bq = j->b + (q) * n;                                          \
    if ((q) < kf) {                                                            \
      (b0) = _mm256_loadu_ps(bq), (b1) = _mm256_loadu_ps(bq + 8);              \
    } else {                                                                   \
      (b0) = _mm256_maskload_ps(bq, m0), (b1) = _mm256_maskload_ps(bq + 8, m1); \
    }                                                                          \
  } while (0)
  /* op(a)[row][q] is a[row * rs + q * qs]. Sums run over NARROW_KB
   * products at a time, the partial sums added up after each (an error
   * growing with k / NARROW_KB + NARROW_KB rather than with k). */
  for (; r + 4 <= r1; r += 4) {
    __m256 t00 = _mm256_setzero_ps(), t01 = t00, t10 = t00, t11 = t00;
    __m256 t20 = t00, t21 = t00, t30 = t00, t31 = t00;
    const float *a0 = j->ta ? j->a + r : j->a + r * k;
    const int64_t rs = j->ta ? 1 : k, qs = j->ta ? m : 1;

    for (int64_t q0 = 0; q0 < k; q0 += NARROW_KB) {
      __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
      __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      int64_t qe = q0 + NARROW_KB < k ? q0 + NARROW_KB : k;

      for (int64_t q = q0; q < qe; q++) {
        __m256 b0, b1, x;
        const float *aq0 = a0 + q * qs;

        NARROW_B(q, b0, b1);
        x = _mm256_broadcast_ss(aq0);
        c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(aq0 + rs);
        c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(aq0 + 2 * rs);
        c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(aq0 + 3 * rs);
        c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
      }
      t00 = _mm256_add_ps(t00, c00), t01 = _mm256_add_ps(t01, c01);
      t10 = _mm256_add_ps(t10, c10), t11 = _mm256_add_ps(t11, c11);
      t20 = _mm256_add_ps(t20, c20), t21 = _mm256_add_ps(t21, c21);
      t30 = _mm256_add_ps(t30, c30), t31 = _mm256_add_ps(t31, c31);
    }
    float *o = j->c + r * n;
    _mm256_maskstore_ps(o, m0, t00), _mm256_maskstore_ps(o + 8, m1, t01);
    _mm256_maskstore_ps(o + n, m0, t10), _mm256_maskstore_ps(o + n + 8, m1, t11);
    _mm256_maskstore_ps(o + 2 * n, m0, t20);
    _mm256_maskstore_ps(o + 2 * n + 8, m1, t21);
    _mm256_maskstore_ps(o + 3 * n, m0, t30);
    _mm256_maskstore_ps(o + 3 * n + 8, m1, t31);
  }
  for (; r < r1; r++) {
    __m256 t0 = _mm256_setzero_ps(), t1 = t0, b0, b1;
    const float *a0 = j->ta ? j->a + r : j->a + r * k;
    const int64_t qs = j->ta ? m : 1;

    for (int64_t q0 = 0; q0 < k; q0 += NARROW_KB) {
      __m256 s0[4], s1[4];
      int64_t qe = q0 + NARROW_KB < k ? q0 + NARROW_KB : k, q = q0;

      for (int i = 0; i < 4; i++)
        s0[i] = s1[i] = _mm256_setzero_ps();
      for (; q + 4 <= qe; q += 4)
        for (int i = 0; i < 4; i++) {
          __m256 x = _mm256_broadcast_ss(a0 + (q + i) * qs);
          NARROW_B(q + i, b0, b1);
          s0[i] = _mm256_fmadd_ps(x, b0, s0[i]);
          s1[i] = _mm256_fmadd_ps(x, b1, s1[i]);
        }
      for (; q < qe; q++) {
        __m256 x = _mm256_broadcast_ss(a0 + q * qs);
        NARROW_B(q, b0, b1);
        s0[0] = _mm256_fmadd_ps(x, b0, s0[0]);
        s1[0] = _mm256_fmadd_ps(x, b1, s1[0]);
      }
      t0 = _mm256_add_ps(t0, _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]),
                                           _mm256_add_ps(s0[2], s0[3])));
      t1 = _mm256_add_ps(t1, _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]),
                                           _mm256_add_ps(s1[2], s1[3])));
    }
    _mm256_maskstore_ps(j->c + r * n, m0, t0);
    _mm256_maskstore_ps(j->c + r * n + 8, m1, t1);
  }
#undef NARROW_B
}

/* cpu_team part t of nt: its share of the rows, in fours. */
static void narrow_part(void *arg, int t, int nt) {
  const narrow_job *j = arg;
  int64_t quads = (j->m + 3) / 4;
  int64_t r0 = quads * t / nt * 4, r1 = quads * (t + 1) / nt * 4;

  narrow_rows(j, r0, r1 < j->m ? r1 : j->m);
}
#endif /* NARROW_LOOPS */

static void narrow_gemm(int ta, int64_t m, int64_t n, int64_t k,
                        const float *a, const float *b, float *c) {
#if NARROW_LOOPS
  narrow_job j = {ta, m, n, k, a, b, c};

  cpu_team(narrow_part, &j, m >= 8 && m * n * k >= NARROW_SHARE);
#else
  (void)ta, (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
  assert(!"narrow_gemm chosen on a CPU it does not serve");
#endif
}

/* ---- the plugin's loops for batches of small matrices --------------------- */

/* A transformer's attention multiplies, per example and head, matrices of
 * a few dozen rows and columns: (28 x 16) by (16 x 28) and back, 256 of
 * them a node at batch 64. The matmul primitive ran those batches at about
 * 56 GFLOP/s on the 2-core AVX2 machine (0.09-0.14 ms a node, twelve
 * nodes a training step); these loops take 57-87 us (1.5-1.7x; 256 x
 * 28 x 16 x 28 products, every transpose pair; the transformer's
 * training 1.10x, five alternated pairs). They share the batch's
 * matrices among the intra-op threads and compute each in registers:
 * op(b) copied into a zero-padded block of k rows of whole vectors, then
 * blocks of rows of c against up to four vectors of columns, op(a)'s
 * elements broadcast. For
 * float32 batches of at least two matrices of at most SMALL_MNK
 * multiply-adds, n <= SMALL_N and k x (n rounded up to 8) <= SMALL_BP, on a
 * CPU with AVX2 and FMA. Each element of c is one chain of
 * fused multiply-adds over k in order. */
#define SMALL_MNK ((int64_t)1 << 16)
#define SMALL_N 64
#define SMALL_BP 8192

/* The batch: matrix i of the output reads x at xo[i] and y at yo[i]
 * (element offsets; broadcasting repeats them). */
typedef struct small_job {
  int ta, tb;
  int sixteen; /* the AVX-512 loops (small_sixteen) */
  int64_t m, n, k, count;
  const float *x, *y;
  float *out;
  const int64_t *xo, *yo;
} small_job;

#if NARROW_LOOPS
#define SMALL_TARGET __attribute__((target("avx2,fma")))

/* c[r][c0 + 8v + l] for rows [r0, r0 + R) and V vectors of columns from c0:
 * the sums over q of op(a)[r][q] * bp[q][c0 + ...] (bp: k rows of ldb
 * floats). op(a)[r][q] is a[r * rs + q * qs]. The last vector stores only
 * its first `last` lanes (mask lm). */
#define SMALL_KERNEL(R, V)                                                      \
  static SMALL_TARGET void small_##R##x##V(                                    \
      const float *a, int64_t rs, int64_t qs, const float *bp, int64_t ldb,   \
      int64_t k, float *c, int64_t ldc, int last, __m256i lm) {               \
    __m256 acc[R][V];                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                        \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] =        \
            _mm256_setzero_ps();                                               \
    for (int64_t q = 0; q < k; q++) {                                          \
      __m256 b[V];                                                             \
      _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) b[v] =               \
          _mm256_loadu_ps(bp + q * ldb + 8 * v);                               \
      _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                    \
        __m256 x = _mm256_broadcast_ss(a + r * rs + q * qs);                   \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] =        \
            _mm256_fmadd_ps(x, b[v], acc[r][v]);                               \
      }                                                                        \
    }                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                      \
      _Pragma("GCC unroll 4") for (int v = 0; v + 1 < V; v++)                  \
          _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);                    \
      if (last == 8)                                                           \
        _mm256_storeu_ps(c + r * ldc + 8 * (V - 1), acc[r][V - 1]);            \
      else                                                                     \
        _mm256_maskstore_ps(c + r * ldc + 8 * (V - 1), lm, acc[r][V - 1]);     \
    }                                                                          \
  }
SMALL_KERNEL(8, 1)
SMALL_KERNEL(6, 2)
SMALL_KERNEL(4, 3)
SMALL_KERNEL(3, 4)
SMALL_KERNEL(1, 1)
SMALL_KERNEL(1, 2)
SMALL_KERNEL(1, 3)
SMALL_KERNEL(1, 4)

typedef void small_fn(const float *a, int64_t rs, int64_t qs, const float *bp,
                      int64_t ldb, int64_t k, float *c, int64_t ldc, int last,
                      __m256i lm);
/* By vectors of columns (1 to 4): the row block and its kernels. */
static const int small_rows[4] = {8, 6, 4, 3};
static small_fn *const small_block[4] = {small_8x1, small_6x2, small_4x3,
                                         small_3x4};
static small_fn *const small_one[4] = {small_1x1, small_1x2, small_1x3,
                                       small_1x4};

/* op(b) as k rows of ldb floats (bp), zeros past n. */
static void small_pack_b(const small_job *j, const float *b, float *bp,
                         int64_t ldb) {
  const int64_t n = j->n, k = j->k;

  for (int64_t q = 0; q < k; q++) {
    float *row = bp + q * ldb;
    if (j->tb)
      for (int64_t col = 0; col < n; col++)
        row[col] = b[col * k + q];
    else
      memcpy(row, b + q * n, (size_t)n * sizeof *row);
    for (int64_t col = n; col < ldb; col++)
      row[col] = 0.0f;
  }
}

/* One matrix: c (m, n) = op(a) op(b); bp: scratch of k x ldb floats. */
static SMALL_TARGET void small_matrix(const small_job *j, const float *a,
                                      const float *b, float *c, float *bp,
                                      int64_t ldb) {
  const int64_t m = j->m, n = j->n, k = j->k;
  const int64_t rs = j->ta ? 1 : k, qs = j->ta ? m : 1;

  small_pack_b(j, b, bp, ldb);
  for (int64_t c0 = 0; c0 < n; c0 += 32) {
    int64_t cols = n - c0 < 32 ? n - c0 : 32;
    int vecs = (int)((cols + 7) / 8), last = (int)(cols - 8 * (vecs - 1));
    __m256i lm = _mm256_cmpgt_epi32(_mm256_set1_epi32(last),
                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    int rb = small_rows[vecs - 1];
    int64_t r = 0;
    for (; r + rb <= m; r += rb)
      small_block[vecs - 1](a + r * rs, rs, qs, bp + c0, ldb, k,
                            c + r * n + c0, n, last, lm);
    for (; r < m; r++)
      small_one[vecs - 1](a + r * rs, rs, qs, bp + c0, ldb, k, c + r * n + c0,
                          n, last, lm);
  }
}

/* The same loops sixteen lanes to a vector, on a CPU with AVX-512: rows
 * of c against up to four vectors of 16 columns, the column block 64
 * wide, row blocks that divide the transformer's 28 rows (14 against one
 * vector, 7 against two or three, 6 against four: each block's
 * accumulators, its vectors of b and a broadcast within the 32
 * registers). Same arithmetic as above (one chain of fused multiply-adds
 * over k in order for each element), so the same bits. On an Intel Xeon
 * with AVX-512 (2 cores), the transformer's training step (bench/train
 * --profile 100, three alternated pairs): its 12 BatchMatMul nodes took
 * 0.87-0.91 ms in the AVX2 loops, 0.62-0.71 in these. */
#define SMALL16_TARGET __attribute__((target("avx512f")))
#define SMALL16_KERNEL(R, V)                                                    \
  static SMALL16_TARGET void small16_##R##x##V(                                \
      const float *a, int64_t rs, int64_t qs, const float *bp, int64_t ldb,   \
      int64_t k, float *c, int64_t ldc, __mmask16 lm) {                        \
    __m512 acc[R][V];                                                          \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] =        \
            _mm512_setzero_ps();                                               \
    for (int64_t q = 0; q < k; q++) {                                          \
      __m512 b[V];                                                             \
      _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) b[v] =               \
          _mm512_loadu_ps(bp + q * ldb + 16 * v);                              \
      _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                   \
        __m512 x = _mm512_set1_ps(a[r * rs + q * qs]);                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] =        \
            _mm512_fmadd_ps(x, b[v], acc[r][v]);                               \
      }                                                                        \
    }                                                                          \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                     \
      _Pragma("GCC unroll 4") for (int v = 0; v + 1 < V; v++)                  \
          _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);                   \
      _mm512_mask_storeu_ps(c + r * ldc + 16 * (V - 1), lm, acc[r][V - 1]);    \
    }                                                                          \
  }
SMALL16_KERNEL(14, 1)
SMALL16_KERNEL(7, 2)
SMALL16_KERNEL(7, 3)
SMALL16_KERNEL(6, 4)
SMALL16_KERNEL(1, 1)
SMALL16_KERNEL(1, 2)
SMALL16_KERNEL(1, 3)
SMALL16_KERNEL(1, 4)

typedef void small16_fn(const float *a, int64_t rs, int64_t qs,
                        const float *bp, int64_t ldb, int64_t k, float *c,
                        int64_t ldc, __mmask16 lm);
static const int small16_rows[4] = {14, 7, 7, 6};
static small16_fn *const small16_block[4] = {small16_14x1, small16_7x2,
                                             small16_7x3, small16_6x4};
static small16_fn *const small16_one[4] = {small16_1x1, small16_1x2,
                                           small16_1x3, small16_1x4};

/* As small_matrix; bp: k x ldb floats, ldb a multiple of 16. */
static SMALL16_TARGET void small_matrix16(const small_job *j, const float *a,
                                          const float *b, float *c,
                                          float *bp, int64_t ldb) {
  const int64_t m = j->m, n = j->n, k = j->k;
  const int64_t rs = j->ta ? 1 : k, qs = j->ta ? m : 1;

  small_pack_b(j, b, bp, ldb);
  for (int64_t c0 = 0; c0 < n; c0 += 64) {
    int64_t cols = n - c0 < 64 ? n - c0 : 64;
    int vecs = (int)((cols + 15) / 16), last = (int)(cols - 16 * (vecs - 1));
    __mmask16 lm = (__mmask16)((1u << last) - 1);
    int rb = small16_rows[vecs - 1];
    int64_t r = 0;
    for (; r + rb <= m; r += rb)
      small16_block[vecs - 1](a + r * rs, rs, qs, bp + c0, ldb, k,
                              c + r * n + c0, n, lm);
    for (; r < m; r++)
      small16_one[vecs - 1](a + r * rs, rs, qs, bp + c0, ldb, k,
                            c + r * n + c0, n, lm);
  }
}

/* 1 when the batch runs the AVX-512 loops: the CPU has AVX-512 and op(b)
 * padded to whole vectors of 16 fits the scratch. */
static int small_sixteen(const small_job *j) {
  return __builtin_cpu_supports("avx512f") &&
         j->k * ((j->n + 15) & ~(int64_t)15) <= SMALL_BP;
}

/* cpu_team part t of nt: its share of the batch's matrices. */
static void small_part(void *arg, int t, int nt) {
  const small_job *j = arg;
  int64_t lo = j->count * t / nt, hi = j->count * (t + 1) / nt;
  float bp[SMALL_BP] __attribute__((aligned(64)));

  if (j->sixteen) {
    int64_t ldb = (j->n + 15) & ~(int64_t)15;
    for (int64_t i = lo; i < hi; i++)
      small_matrix16(j, j->x + j->xo[i], j->y + j->yo[i],
                     j->out + i * j->m * j->n, bp, ldb);
    return;
  }
  int64_t ldb = (j->n + 7) & ~(int64_t)7;
  for (int64_t i = lo; i < hi; i++)
    small_matrix(j, j->x + j->xo[i], j->y + j->yo[i],
                 j->out + i * j->m * j->n, bp, ldb);
}
#endif /* NARROW_LOOPS */

/* 1 when these loops take the float32 job of m, n, k and `count` output
 * matrices (on a CPU they serve). */
static int small_takes(int64_t m, int64_t n, int64_t k, int64_t count) {
  return NARROW_LOOPS && count >= 2 && m * n * k <= SMALL_MNK &&
         n <= SMALL_N && k * ((n + 7) & ~(int64_t)7) <= SMALL_BP &&
         cpu_avx2_fma();
}

/* ---- the per-matrix path ------------------------------------------------- */

/* One row-major product c (m, n) = op(a) op(b), op transposing when ta/tb:
 * a is stored (m, k) or (k, m), b (k, n) or (n, k); with OpenBLAS or
 * dnnl_sgemm (bk). */
static int sgemm(backend bk, int ta, int tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float *c, wf_status *st) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;

  if (bk == BACKEND_NARROW) {
    assert(!tb && n <= NARROW_N);
    narrow_gemm(ta, m, n, k, a, b, c);
    return 0;
  }
#ifdef HAVE_DNNL
  if (bk != BACKEND_OPENBLAS) {
    dnnl_status_t s;

    cpu_omp_threads();
    s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b,
                   ldb, 0.0f, c, n);
    return s == dnnl_success ? 0 : cpu_dnnl_fail(s, "sgemm", st);
  }
#endif
#ifdef HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
              (blasint)k, 1.0f, a, (blasint)lda, b, (blasint)ldb, 0.0f, c,
              (blasint)n);
#else
  assert(!"OpenBLAS chosen in a build without it");
#endif
  (void)bk;
  (void)st;
  return 0;
}

#ifdef HAVE_OPENBLAS
static void dgemm(int ta, int tb, int64_t m, int64_t n, int64_t k,
                  const double *a, const double *b, double *c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
              (blasint)k, 1.0, a, (blasint)(ta ? m : k), b,
              (blasint)(tb ? k : n), 0.0, c, (blasint)n);
}
#endif

/* 1 when OpenBLAS runs AVX-512 kernels here (decided once). */
static int openblas_avx512(void) {
#ifdef HAVE_OPENBLAS
  static atomic_int known = -1;
  int v = atomic_load(&known);

  if (v < 0) {
    /* OpenBLAS picks AVX-512 kernels only on a CPU that has AVX-512: on
     * another one it is not opened just to be asked. */
#if defined(__x86_64__) || defined(__i386__)
    const char *core = __builtin_cpu_supports("avx512f")
                           ? openblas_get_corename()
                           : NULL;
#else
    const char *core = openblas_get_corename();
#endif
    v = core && (strcmp(core, "SkylakeX") == 0 ||
                 strcmp(core, "Cooperlake") == 0 ||
                 strcmp(core, "SapphireRapids") == 0);
    atomic_store(&known, v);
  }
  return v;
#else
  return 0;
#endif
}

/* The geometry of one (Batch)MatMul call. */
typedef struct gemm_job {
  int dtype, ta, tb;
  int64_t m, n, k;
  wf_shape xs, ys, os; /* operand and output shapes */
  const void *x, *y;
  void *out;
  /* _FusedMatMul: its epilogue and bias (N,); NULL for a plain product. */
  const opc_fused *fused;
  const void *bias;
} gemm_job;

/* The fused epilogue on j's output, when it has one. */
static void epilogue(const gemm_job *j) {
  if (j->fused)
    opc_fused_apply(j->dtype, j->out, j->bias, j->m, j->n, 1, j->fused);
}

/* Every matrix of the (broadcast) batch, one library call each (float64:
 * OpenBLAS; float32: bk). */
static int gemm_each(const gemm_job *j, backend bk, wf_status *st) {
  wf_shape bs[2], bo;
  wfx_bcast b;
  size_t es = j->dtype == WF_FLOAT64 ? sizeof(double) : sizeof(float);
  size_t xm = (size_t)(j->m * j->k) * es, ym = (size_t)(j->k * j->n) * es;
  size_t om = (size_t)(j->m * j->n) * es;

#ifdef HAVE_OPENBLAS
  /* BLAS takes int sizes. */
  if ((bk == BACKEND_OPENBLAS || j->dtype == WF_FLOAT64) && (j->m > INT_MAX || j->n > INT_MAX || j->k > INT_MAX ||
      j->m * j->k > INT_MAX || j->k * j->n > INT_MAX))
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "matrices of %" PRId64 " x %" PRId64 " x %" PRId64
                    " exceed what BLAS indexes with int",
                    j->m, j->n, j->k);
  /* OpenBLAS is opened by its first product (cpu_lazy.c); its functions
   * return no status, so a library that cannot be opened is caught
   * here. */
  if ((bk == BACKEND_OPENBLAS || j->dtype == WF_FLOAT64) &&
      cpu_openblas_ready(st))
    return wfx_code(st);
#endif
  wfx_shape_make(&bs[0], j->xs.rank - 2, j->xs.dims);
  wfx_shape_make(&bs[1], j->ys.rank - 2, j->ys.dims);
  wfx_shape_make(&bo, j->os.rank - 2, j->os.dims);
  wfx_bcast_init(&b, &bo, 2, bs);
  for (int64_t r = 0; r < b.rows; r++, wfx_bcast_next(&b))
    for (int64_t i = 0; i < b.inner; i++) {
      const char *x = (const char *)j->x + (size_t)(b.off[0] + i * b.step[0]) * xm;
      const char *y = (const char *)j->y + (size_t)(b.off[1] + i * b.step[1]) * ym;
      char *o = (char *)j->out + (size_t)(r * b.inner + i) * om;
#ifdef HAVE_OPENBLAS
      if (j->dtype == WF_FLOAT64) {
        dgemm(j->ta, j->tb, j->m, j->n, j->k, (const double *)x,
              (const double *)y, (double *)o);
        continue;
      }
#endif
      assert(j->dtype == WF_FLOAT32);
      if (sgemm(bk, j->ta, j->tb, j->m, j->n, j->k, (const float *)x,
                (const float *)y, (float *)o, st))
        return wfx_code(st);
    }
  return 0;
}

/* The batch on the loops for small matrices: each output matrix's operand
 * offsets from the broadcast walk, then the matrices shared by the
 * intra-op threads (from 2^16 multiply-adds in all). */
static int gemm_small(const gemm_job *j, wf_status *st) {
#if NARROW_LOOPS
  wf_shape bs[2], bo;
  wfx_bcast b;
  small_job sj = {j->ta, j->tb, 0, j->m, j->n, j->k, 0, j->x, j->y, j->out,
                  NULL, NULL};
  int64_t *off, i = 0;

  wfx_shape_make(&bs[0], j->xs.rank - 2, j->xs.dims);
  wfx_shape_make(&bs[1], j->ys.rank - 2, j->ys.dims);
  wfx_shape_make(&bo, j->os.rank - 2, j->os.dims);
  sj.count = wfx_shape_count(&bo);
  if (!(off = wfx_host->alloc((size_t)(2 * sj.count) * sizeof *off, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the offsets of %" PRId64 " matrices",
                    sj.count);
  wfx_bcast_init(&b, &bo, 2, bs);
  for (int64_t r = 0; r < b.rows; r++, wfx_bcast_next(&b))
    for (int64_t e = 0; e < b.inner; e++, i++) {
      off[i] = (b.off[0] + e * b.step[0]) * j->m * j->k;
      off[sj.count + i] = (b.off[1] + e * b.step[1]) * j->k * j->n;
    }
  sj.xo = off;
  sj.yo = off + sj.count;
  sj.sixteen = small_sixteen(&sj);
  cpu_team(small_part, &sj, sj.count * j->m * j->n * j->k >= SMALL_MNK);
  wfx_host->free(off);
  return 0;
#else
  (void)j;
  return wfx_fail(st, WF_INTERNAL,
                  "the loops for small matrices are built for x86 only");
#endif
}

/* ---- the oneDNN path ------------------------------------------------------ */

#ifdef HAVE_DNNL
/* A matmul plan for the job's shapes: operands padded to the output's rank
 * with leading 1s (oneDNN broadcasts dims of 1), transposed operands
 * described by their strides. */
static int build_matmul(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const gemm_job *j = arg;
  int r = j->os.rank, perm[WF_MAX_RANK];
  int64_t xd[WF_MAX_RANK], yd[WF_MAX_RANK];
  dnnl_memory_desc_t xmd, ymd, omd;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd;
  dnnl_status_t s;
  static const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                             DNNL_ARG_BIAS};
  static const int mems[4] = {0, 1, 2, 3};
  dnnl_memory_desc_t bmd;
  int rc;

  /* Its multiply-adds, 16 to a unit as a convolution's: a product as
   * small as the cnn's dense layer at batch 1 (1 x 10 x 1568, with its
   * bias) runs on the calling thread, where it took 6 us a node against
   * 8-14 on two threads (AMD EPYC, AVX2, 2 cores, interleaved runs). */
  cpu_dnnl_plan_threads(p, wfx_shape_count(&j->os) * j->k / 16);
  for (int i = 0; i < r; i++) {
    int xi = i - (r - j->xs.rank), yi = i - (r - j->ys.rank);
    xd[i] = xi >= 0 ? j->xs.dims[xi] : 1;
    yd[i] = yi >= 0 ? j->ys.dims[yi] : 1;
  }
  /* Logical (..., M, K) and (..., K, N). */
  xd[r - 2] = j->m, xd[r - 1] = j->k;
  yd[r - 2] = j->k, yd[r - 1] = j->n;
  for (int i = 0; i < r; i++)
    perm[i] = i;
  perm[r - 2] = j->ta ? r - 1 : r - 2;
  perm[r - 1] = j->ta ? r - 2 : r - 1;
  if (cpu_dnnl_md(&xmd, r, xd, perm, st))
    return wfx_code(st);
  perm[r - 2] = j->tb ? r - 1 : r - 2;
  perm[r - 1] = j->tb ? r - 2 : r - 1;
  if (cpu_dnnl_md(&ymd, r, yd, perm, st) ||
      cpu_dnnl_md(&omd, r, j->os.dims, NULL, st))
    return wfx_code(st);
  if (j->fused) {
    /* The bias as a (1, ..., 1, N) row broadcast over the product. */
    int64_t bd[WF_MAX_RANK];
    for (int i = 0; i < r; i++)
      bd[i] = i == r - 1 ? j->n : 1;
    if (cpu_dnnl_md(&bmd, r, bd, NULL, st))
      return wfx_code(st);
  }
  s = dnnl_matmul_desc_init(&desc, &xmd, &ymd, j->fused ? &bmd : NULL, &omd);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "matmul setup", st);
  if (j->fused ? cpu_dnnl_pd_fused(&pd, &desc, j->fused, "fused matmul setup",
                                   st)
               : cpu_dnnl_pd(&pd, &desc, NULL, "matmul setup", st))
    return wfx_code(st);
  rc = cpu_dnnl_plan_mem(p, 0, &xmd, NULL, WF_DNNL_IN, st) ||
       cpu_dnnl_plan_mem(p, 1, &ymd, NULL, WF_DNNL_IN, st) ||
       cpu_dnnl_plan_mem(p, 2, &omd, NULL, WF_DNNL_OUT, st) ||
       (j->fused && cpu_dnnl_plan_mem(p, 3, &bmd, NULL, WF_DNNL_IN, st)) ||
       cpu_dnnl_plan_step(p, pd, ids, mems, j->fused ? 4 : 3, st);
  dnnl_primitive_desc_destroy(pd);
  return rc ? wfx_code(st) : 0;
}

static int gemm_dnnl(cpu_dnnl_state *s, const gemm_job *j, wf_status *st) {
  cpu_dnnl_plan *p;
  cpu_key key = {0};
  void *data[4] = {(void *)j->x, (void *)j->y, j->out, (void *)j->bias};
  int rc;

  cpu_key_shape(&key, &j->xs);
  cpu_key_shape(&key, &j->ys);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, build_matmul, (void *)j, st)))
    return wfx_code(st);
  if (p->fallback) {
    rc = gemm_each(j, BACKEND_ONEDNN_SGEMM, st);
    if (rc == 0)
      epilogue(j);
  } else {
    rc = cpu_dnnl_plan_run(p, data, NULL,
                           j->fused ? "fused matmul" : "matmul", st);
  }
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

/* ---- products split along k ---------------------------------------------- */

/* A product whose output is small beside its operands (m n at most
 * (m + n) k / 4: a weight gradient X^T dY summed over many rows, as the
 * transformer's 64 x 64 and 64 x 128 ones over its 1,792 tokens, or a
 * small batch through a wide layer, as the mlp's first) is split
 * along k: part t of the intra-op team multiplies the t-th contiguous run
 * of k on its own thread (a one-thread matmul plan of its own, with its
 * stream and scratchpad) into the output (part 0) or a buffer; then each
 * thread adds the buffers into its share of the output's rows and applies
 * _FusedMatMul's epilogue to them.
 *
 * Why: the operands were written just before by the team (X in the
 * forward pass, dY by the op before), each thread its own contiguous run
 * of their rows, the split every kernel of this plugin and oneDNN's
 * element-wise ones make. Split along k, each part reads the rows its own
 * core wrote, from that core's cache; the matmul primitive shares the
 * output's blocks instead, each thread reading every row, half of them
 * out of the other core's cache. On an Intel Xeon with AVX-512 (2 cores),
 * 64 x 128 x 1792 with A transposed, its operands just written by the two
 * threads in halves: 153 us in the primitive on two threads, 105 us split
 * along k (both 105-108 us when the operands are already in both caches).
 * In the transformer's training step the 64 x 128 weight-gradient nodes
 * went from 0.16-0.17 ms to 0.12-0.15, the 64 x 64 ones from 0.09-0.11 to
 * 0.07-0.09, and bench/train --model transformer, ten alternated pairs of
 * runs, from a median 9,541 to 9,954 samples/s (median of the pairs'
 * ratios 1.076, eight of ten faster). */
#define KSPLIT_MAX 8         /* the most parts */
#define KSPLIT_LEAST_K 256   /* the fewest rows of k a part takes */
/* Split when m n * KSPLIT_RATIO <= (m + n) k. With 4 the mlp's first
 * layer (64 x 256 x 784, fused with its bias and ReLU) is split too: its
 * node went from 0.12 to 0.10 ms and the mlp's training step from 0.47 to
 * 0.43 (three alternated profiles); bench/train --model mlp, ten
 * alternated pairs: median of pair ratios 1.138, ten of ten faster. (With
 * the reference epilogue over the summed rows instead of the loop in
 * ksplit_part, the node took 0.16 ms.) Square products are never split. */
#define KSPLIT_RATIO 4

/* The parts a float32 job of one matrix (plain or fused) is split into
 * along k (1: not split), with `width` intra-op threads. */
static int ksplit_parts(const gemm_job *j, int width) {
  int64_t parts;

  if (width < 2 || wfx_shape_count(&j->os) != j->m * j->n ||
      j->m * j->n * KSPLIT_RATIO > (j->m + j->n) * j->k ||
      j->m * j->n * j->k / 16 < WF_DNNL_SMALL_WORK)
    return 1;
  parts = j->k / KSPLIT_LEAST_K;
  if (parts > width)
    parts = width;
  if (parts > KSPLIT_MAX)
    parts = KSPLIT_MAX;
  return parts < 2 ? 1 : (int)parts;
}

typedef struct ksplit_arg {
  const gemm_job *j;
  int64_t mp, kp; /* the part's rows of m and of k */
} ksplit_arg;

/* A one-thread matmul plan for a part of kp rows of k: its operands are
 * windows of the job's (A's columns or, transposed, rows; B's rows or,
 * transposed, columns), described by the whole matrices' strides. */
static int build_ksplit(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const ksplit_arg *a = arg;
  const gemm_job *j = a->j;
  static const int ids[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  static const int mems[3] = {0, 1, 2};
  dnnl_dims_t xd = {a->mp, a->kp}, yd = {a->kp, j->n}, od = {a->mp, j->n};
  dnnl_dims_t xs = {j->ta ? 1 : j->k, j->ta ? j->m : 1};
  dnnl_dims_t ys = {j->tb ? 1 : j->n, j->tb ? j->k : 1};
  dnnl_dims_t os = {j->n, 1};
  dnnl_memory_desc_t xmd, ymd, omd;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd;
  dnnl_status_t s;
  int rc;

  cpu_dnnl_plan_threads(p, 0); /* each part is one thread's */
  s = dnnl_memory_desc_init_by_strides(&xmd, 2, xd, dnnl_f32, xs);
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_strides(&ymd, 2, yd, dnnl_f32, ys);
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_strides(&omd, 2, od, dnnl_f32, os);
  if (s != dnnl_success)
    return cpu_dnnl_fail(s, "memory descriptor setup", st);
  s = dnnl_matmul_desc_init(&desc, &xmd, &ymd, NULL, &omd);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "matmul setup", st);
  if (cpu_dnnl_pd(&pd, &desc, NULL, "matmul setup", st))
    return wfx_code(st);
  rc = cpu_dnnl_plan_mem(p, 0, &xmd, NULL, WF_DNNL_IN, st) ||
       cpu_dnnl_plan_mem(p, 1, &ymd, NULL, WF_DNNL_IN, st) ||
       cpu_dnnl_plan_mem(p, 2, &omd, NULL, WF_DNNL_OUT, st) ||
       cpu_dnnl_plan_step(p, pd, ids, mems, 3, st);
  dnnl_primitive_desc_destroy(pd);
  return rc ? wfx_code(st) : 0;
}

/* _FusedMatMul's epilogue on rows [r0, r1) of a split product's output
 * (nothing for a plain product): the bias, and ReLU as the epilogue
 * computes it (a < 0 ? 0 : a), in a loop the compiler vectorises; the
 * other activations by the epilogue itself. */
static void split_epilogue(const gemm_job *j, int64_t r0, int64_t r1) {
  int64_t n = j->n;

  if (!j->fused || r0 == r1)
    return;
  if (j->fused->act == OPC_ACT_NONE || j->fused->act == OPC_ACT_RELU) {
    const float *bias = j->bias;
    int relu = j->fused->act == OPC_ACT_RELU;
    for (int64_t r = r0; r < r1; r++) {
      float *row = (float *)j->out + r * n;
      for (int64_t i = 0; i < n; i++) {
        float v = row[i] + bias[i];
        row[i] = relu && v < 0 ? 0.0f : v;
      }
    }
    return;
  }
  opc_fused_apply(WF_FLOAT32, (float *)j->out + r0 * n, j->bias, r1 - r0, n,
                  1, j->fused);
}

typedef struct ksplit_job {
  const gemm_job *j;
  int parts;
  cpu_dnnl_plan *plan[KSPLIT_MAX];
  void *data[KSPLIT_MAX][3];
  dnnl_status_t rc[KSPLIT_MAX];
} ksplit_job;

/* cpu_team part t of nt: the parts t, t + nt, ... (all of them when the
 * team is narrower than the split); then, once every part is done, its
 * share of the output's rows: the other parts' sums added, the epilogue
 * (_FusedMatMul) applied. */
static void ksplit_part(void *arg, int t, int nt) {
  ksplit_job *kj = arg;
  const gemm_job *j = kj->j;
  int64_t r0 = j->m * t / nt, r1 = j->m * (t + 1) / nt, n = j->n;
  int ok = 1;

  for (int p = t; p < kj->parts; p += nt)
    kj->rc[p] = cpu_dnnl_plan_exec(kj->plan[p], kj->data[p]);
  cpu_team_barrier();
  for (int p = 0; p < kj->parts; p++)
    ok &= kj->rc[p] == dnnl_success;
  if (!ok || r0 == r1)
    return;
  for (int p = 1; p < kj->parts; p++) {
    float *out = (float *)j->out + r0 * n;
    const float *b = (const float *)kj->data[p][2] + r0 * n;
    for (int64_t i = 0; i < (r1 - r0) * n; i++)
      out[i] += b[i];
  }
  split_epilogue(j, r0, r1);
}

/* Takes the one-thread plans of a job split into kj->parts along k
 * (axis 'K') or m ('M') from the node's cache, and the operands' windows
 * of each part (the output's too for m; for k the caller places the
 * sums). Returns 0, -1 when oneDNN refuses a window (the job is to run
 * unsplit), or the error with st set; *got: the plans taken, to be put
 * back whatever the result. */
static int split_plans(cpu_dnnl_state *s, ksplit_job *kj, int axis, int *got,
                       wf_status *st) {
  const gemm_job *j = kj->j;
  int parts = kj->parts;

  for (*got = 0; *got < parts;) {
    int p = *got;
    int64_t len = axis == 'K' ? j->k : j->m;
    int64_t a0 = len * p / parts, a1 = len * (p + 1) / parts;
    ksplit_arg a = {j, axis == 'M' ? a1 - a0 : j->m,
                    axis == 'K' ? a1 - a0 : j->k};
    cpu_key key = {0};

    cpu_key_word(&key, axis);
    cpu_key_word(&key, j->m);
    cpu_key_word(&key, j->n);
    cpu_key_word(&key, j->k);
    cpu_key_word(&key, a1 - a0);
    cpu_key_word(&key, j->ta);
    cpu_key_word(&key, j->tb);
    if (!(kj->plan[p] = cpu_dnnl_cache_get(&s->cache, &key, build_ksplit, &a,
                                           st)))
      return wfx_code(st);
    ++*got;
    if (kj->plan[p]->fallback)
      return -1;
    if (axis == 'K') {
      kj->data[p][0] = (float *)j->x + (j->ta ? a0 * j->m : a0);
      kj->data[p][1] = (float *)j->y + (j->tb ? a0 : a0 * j->n);
      kj->data[p][2] = NULL;
    } else {
      kj->data[p][0] = (float *)j->x + (j->ta ? a0 : a0 * j->k);
      kj->data[p][1] = (void *)j->y;
      kj->data[p][2] = (float *)j->out + a0 * j->n;
    }
  }
  return 0;
}

/* The job split along k into `parts`. */
static int gemm_ksplit(cpu_dnnl_state *s, const gemm_job *j, int parts,
                       wf_status *st) {
  ksplit_job kj;
  float *buf = NULL;
  int64_t mn = j->m * j->n;
  int got = 0, rc = 0;

  memset(&kj, 0, sizeof kj);
  kj.j = j;
  kj.parts = parts;
  rc = split_plans(s, &kj, 'K', &got, st);
  if (rc == 0 && !(buf = wfx_host->alloc((size_t)((parts - 1) * mn) *
                                             sizeof(float),
                                         0)))
    rc = wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                  "out of memory for %d partial products of %" PRId64
                  " x %" PRId64,
                  parts - 1, j->m, j->n);
  if (rc == 0) {
    kj.data[0][2] = j->out;
    for (int p = 1; p < parts; p++)
      kj.data[p][2] = buf + (p - 1) * mn;
    cpu_team(ksplit_part, &kj, 1);
    for (int p = 0; p < parts && rc == 0; p++)
      if (kj.rc[p] != dnnl_success)
        rc = cpu_dnnl_fail(kj.rc[p], "matmul (a part along k)", st);
  }
  wfx_host->free(buf);
  for (int p = 0; p < got; p++)
    cpu_dnnl_cache_put(&s->cache, kj.plan[p]);
  return rc < 0 ? gemm_dnnl(s, j, st) : rc;
}

/* A weight gradient X^T dY over a small batch (A transposed, k the
 * batch: the mlp's 784 x 256 and 256 x 128 ones over 64 samples) that is
 * not split along k is split along m: part t computes the t-th contiguous
 * run of the output's rows on its own thread (a one-thread matmul plan,
 * as above) and applies _FusedMatMul's epilogue to them. The rows are then
 * in the cache of the core whose thread ApplyAdam (cpu_apply.c: its own
 * share of the elements first) gives them next, as the split along k of
 * the forward product leaves each thread the rows of the weights it
 * updates. At least 64 rows a part. bench/train --model mlp: the step's
 * MatMul nodes 0.150 -> 0.138 ms (two profiles); training, two runs of
 * ten alternated pairs: median of pair ratios 1.017 and 1.034, nine of
 * ten faster in each;
 * the transformer's products of A not transposed (1,792 rows) ran 2%
 * slower split along m than in the primitive, so only A^T products are. */
#define MSPLIT_LEAST_M 64

/* The parts a float32 job of one matrix is split into along m (1: not
 * split), with `width` intra-op threads. */
static int msplit_parts(const gemm_job *j, int width) {
  int64_t parts;
  if (width < 2 || !j->ta || wfx_shape_count(&j->os) != j->m * j->n ||
      j->m * j->n * j->k / 16 < WF_DNNL_SMALL_WORK)
    return 1;
  parts = j->m / MSPLIT_LEAST_M;
  if (parts > width)
    parts = width;
  if (parts > KSPLIT_MAX)
    parts = KSPLIT_MAX;
  return parts < 2 ? 1 : (int)parts;
}

/* cpu_team part t of nt: the parts t, t + nt, ..., each its rows' product
 * and epilogue. */
static void msplit_part(void *arg, int t, int nt) {
  ksplit_job *kj = arg;
  const gemm_job *j = kj->j;

  for (int p = t; p < kj->parts; p += nt) {
    int64_t m0 = j->m * p / kj->parts, m1 = j->m * (p + 1) / kj->parts;
    kj->rc[p] = cpu_dnnl_plan_exec(kj->plan[p], kj->data[p]);
    if (kj->rc[p] == dnnl_success)
      split_epilogue(j, m0, m1);
  }
}

/* The job split along m into `parts`. */
static int gemm_msplit(cpu_dnnl_state *s, const gemm_job *j, int parts,
                       wf_status *st) {
  ksplit_job kj;
  int got = 0, rc = 0;

  memset(&kj, 0, sizeof kj);
  kj.j = j;
  kj.parts = parts;
  rc = split_plans(s, &kj, 'M', &got, st);
  if (rc == 0) {
    cpu_team(msplit_part, &kj, 1);
    for (int p = 0; p < parts && rc == 0; p++)
      if (kj.rc[p] != dnnl_success)
        rc = cpu_dnnl_fail(kj.rc[p], "matmul (a part along m)", st);
  }
  for (int p = 0; p < got; p++)
    cpu_dnnl_cache_put(&s->cache, kj.plan[p]);
  return rc < 0 ? gemm_dnnl(s, j, st) : rc;
}
#endif

/* ---- the kernels ---------------------------------------------------------- */

/* Per-node state: the plan cache (oneDNN) and the transpose attributes. */
typedef struct gemm_state {
#ifdef HAVE_DNNL
  cpu_dnnl_state *dnnl;
#endif
  int ta, tb;
} gemm_state;

static void gemm_destroy(void *state) {
  gemm_state *g = state;

  if (!g)
    return;
#ifdef HAVE_DNNL
  cpu_dnnl_state_free(g->dnnl);
#endif
  wfx_host->free(g);
}

static int gemm_create(wf_kernel_ctx *ctx, void **state, const char *ta_name,
                       const char *tb_name, wf_status *st) {
  gemm_state *g = wfx_host->alloc(sizeof *g, 0);

  *state = NULL;
  if (!g)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(g, 0, sizeof *g);
  if (wfx_kernel_attr_bool(ctx, ta_name, &g->ta, st) ||
      wfx_kernel_attr_bool(ctx, tb_name, &g->tb, st))
    goto fail;
#ifdef HAVE_DNNL
  if (cpu_dnnl_state_new(&g->dnnl, st))
    goto fail;
#endif
  *state = g;
  return 0;

fail:
  gemm_destroy(g);
  return wfx_code(st);
}

static int matmul_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return gemm_create(ctx, state, "transpose_a", "transpose_b", st);
}

static int batch_matmul_create(wf_kernel_ctx *ctx, void **state,
                               wf_status *st) {
  return gemm_create(ctx, state, "adj_x", "adj_y", st);
}

/* Rows and columns of the last two dims of s as stored. */
static void last2(const wf_shape *s, int64_t *rows, int64_t *cols) {
  *rows = s->dims[s->rank - 2];
  *cols = s->dims[s->rank - 1];
}

/* Reads the operands and makes the output with the shape the op's shape
 * function gives (which checks the ranks, the inner dimensions and, for
 * BatchMatMul, that the batch dims broadcast). batch: BatchMatMul (rank
 * >= 2, broadcast batch dims). */
static int gemm_begin(wf_kernel_ctx *ctx, const gemm_state *g, int batch,
                      gemm_job *j, wf_tensor **out, wf_status *st) {
  const wf_tensor *x, *y;
  int64_t r, c;

  (void)batch;
  memset(j, 0, sizeof *j);
  if (wfx_kernel_input(ctx, 0, &x, &j->xs, st) ||
      wfx_kernel_input(ctx, 1, &y, &j->ys, st) ||
      !(*out = cpu_output(ctx, 0, &j->os, st)))
    return wfx_code(st);
  j->dtype = wfx_dtype(x);
  j->ta = g->ta;
  j->tb = g->tb;
  last2(&j->xs, &r, &c);
  j->m = j->ta ? c : r;
  j->k = j->ta ? r : c;
  last2(&j->ys, &r, &c);
  j->n = j->tb ? r : c;
  j->x = wfx_data(x);
  j->y = wfx_data(y);
  j->out = wfx_data(*out);
  return 0;
}

/* 1 on a CPU with AVX2 but no AVX-512: oneDNN runs its AVX2 kernels and
 * OpenBLAS its own AVX2 ones, tuned for the CPU. */
static int avx2_not_avx512(void) {
#if defined(HAVE_OPENBLAS) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_supports("avx2") && !__builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

/* The rule of the file's header for a float32 job. */
static backend choose(const gemm_job *j) {
  int64_t mnk = j->m * j->n * j->k;

  if (small_takes(j->m, j->n, j->k, wfx_shape_count(&j->os) / (j->m * j->n)))
    return BACKEND_SMALL;
  if (j->n <= NARROW_N && !j->tb && wfx_shape_count(&j->os) == j->m * j->n &&
      cpu_avx2_fma_only())
    return BACKEND_NARROW;

#ifdef HAVE_DNNL
  if (openblas_avx512() && mnk <= SMALL_PRODUCT)
    return BACKEND_OPENBLAS;
  if (ksplit_parts(j, cpu_team_width()) > 1)
    return BACKEND_KSPLIT;
  if (mnk < MEDIUM_PRODUCT && msplit_parts(j, cpu_team_width()) > 1)
    return BACKEND_MSPLIT;
  if (mnk >= MEDIUM_PRODUCT && avx2_not_avx512()) {
    int32_t inter, intra;
    cpu_threads(&inter, &intra);
    if (intra > 1)
      return BACKEND_OPENBLAS;
  }
  if (mnk >= LARGE_PRODUCT)
    return BACKEND_ONEDNN_SGEMM;
  if (mnk >= MEDIUM_PRODUCT && !j->ta && !j->tb) {
    int32_t inter, intra;
    cpu_threads(&inter, &intra);
    if (intra > 1)
      return BACKEND_ONEDNN_SGEMM;
  }
  return BACKEND_ONEDNN_MATMUL;
#else
  (void)mnk;
  return BACKEND_OPENBLAS;
#endif
}

static int gemm_compute(wf_kernel_ctx *ctx, void *state, int batch,
                        wf_status *st) {
  gemm_state *g = state;
  gemm_job j;
  wf_tensor *out;

  if (gemm_begin(ctx, g, batch, &j, &out, st))
    return wfx_code(st);
  if (wfx_count(out) == 0)
    return 0;
  if (j.k == 0) { /* empty sums */
    memset(j.out, 0, wfx_host->tensor_nbytes(out));
    return 0;
  }
  if (j.dtype == WF_FLOAT64)
    return gemm_each(&j, BACKEND_OPENBLAS, st);
  assert(j.dtype == WF_FLOAT32);
  switch (choose(&j)) {
  case BACKEND_SMALL:
    return gemm_small(&j, st);
  case BACKEND_NARROW:
    return gemm_each(&j, BACKEND_NARROW, st);
  case BACKEND_OPENBLAS:
    return gemm_each(&j, BACKEND_OPENBLAS, st);
  case BACKEND_ONEDNN_SGEMM:
    return gemm_each(&j, BACKEND_ONEDNN_SGEMM, st);
#ifdef HAVE_DNNL
  case BACKEND_KSPLIT: {
    int parts = ksplit_parts(&j, cpu_team_width());
    return parts > 1 ? gemm_ksplit(g->dnnl, &j, parts, st)
                     : gemm_dnnl(g->dnnl, &j, st);
  }
  case BACKEND_MSPLIT: {
    int parts = msplit_parts(&j, cpu_team_width());
    return parts > 1 ? gemm_msplit(g->dnnl, &j, parts, st)
                     : gemm_dnnl(g->dnnl, &j, st);
  }
#endif
  default:
#ifdef HAVE_DNNL
    return gemm_dnnl(g->dnnl, &j, st);
#else
    return gemm_each(&j, BACKEND_OPENBLAS, st);
#endif
  }
}

static int matmul_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return gemm_compute(ctx, state, 0, st);
}

static int batch_matmul_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  return gemm_compute(ctx, state, 1, st);
}

/* _FusedMatMul: the product with the bias and activation as oneDNN
 * post-ops when the matmul primitive computes it, else the product by the
 * chosen library and the reference epilogue over its output. */
static int fused_matmul_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  gemm_state *g = state;
  const wf_tensor *bias;
  opc_fused f;
  gemm_job j;
  wf_tensor *out;
  int rc;

  /* bias (N,): the op's shape function checked it against b. */
  if (opc_fused_kernel_attrs(ctx, &f, st) ||
      wfx_kernel_input(ctx, 2, &bias, NULL, st) ||
      gemm_begin(ctx, g, 0, &j, &out, st))
    return wfx_code(st);
  j.fused = &f;
  j.bias = wfx_data(bias);
  if (wfx_count(out) == 0)
    return 0;
  if (j.k == 0) { /* empty sums */
    memset(j.out, 0, wfx_host->tensor_nbytes(out));
    epilogue(&j);
    return 0;
  }
#ifdef HAVE_DNNL
  /* Past the small products OpenBLAS serves, the primitive with its
   * post-ops: dnnl_sgemm would be a few percent faster for the product
   * alone, but the epilogue after it runs on one thread (on the BERT-tiny
   * model of bench/onnx_vs_ort.py at batch 32: 12 products with bias,
   * two with GELU, 44.9 ms against 8.9 ms). */
  if (j.dtype == WF_FLOAT32 && choose(&j) == BACKEND_KSPLIT) {
    int parts = ksplit_parts(&j, cpu_team_width());
    return parts > 1 ? gemm_ksplit(g->dnnl, &j, parts, st)
                     : gemm_dnnl(g->dnnl, &j, st);
  }
  if (j.dtype == WF_FLOAT32 && choose(&j) == BACKEND_MSPLIT) {
    int parts = msplit_parts(&j, cpu_team_width());
    return parts > 1 ? gemm_msplit(g->dnnl, &j, parts, st)
                     : gemm_dnnl(g->dnnl, &j, st);
  }
  if (j.dtype == WF_FLOAT32 && choose(&j) != BACKEND_OPENBLAS &&
      choose(&j) != BACKEND_NARROW)
    return gemm_dnnl(g->dnnl, &j, st);
#endif
  /* (_FusedMatMul is one matrix: choose never gives BACKEND_SMALL) */
  rc = gemm_each(&j,
                 j.dtype == WF_FLOAT64 ? BACKEND_OPENBLAS : choose(&j), st);
  if (rc == 0)
    epilogue(&j);
  return rc;
}

#ifdef HAVE_OPENBLAS
#define GEMM_DTYPES (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#else
#define GEMM_DTYPES WF_DTYPE_BIT(WF_FLOAT32)
#endif

const wf_kernel_def cpu_k_matmul = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "MatMul",
    .device_type = "cpu",
    .type_attr = "T",
    .dtypes = GEMM_DTYPES,
    .priority = WF_CPU_FAST_PRIORITY,
    .label = "onednn/openblas",
    .create = matmul_create,
    .compute = matmul_compute,
    .destroy = gemm_destroy,
};

const wf_kernel_def cpu_k_batch_matmul = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "BatchMatMul",
    .device_type = "cpu",
    .type_attr = "T",
    .dtypes = GEMM_DTYPES,
    .priority = WF_CPU_FAST_PRIORITY,
    .label = "onednn/openblas",
    .create = batch_matmul_create,
    .compute = batch_matmul_compute,
    .destroy = gemm_destroy,
};

const wf_kernel_def cpu_k_fused_matmul = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "_FusedMatMul",
    .device_type = "cpu",
    .type_attr = "T",
    .dtypes = GEMM_DTYPES,
    .priority = WF_CPU_FAST_PRIORITY,
    .label = "onednn/openblas",
    .create = matmul_create,
    .compute = fused_matmul_compute,
    .destroy = gemm_destroy,
};
