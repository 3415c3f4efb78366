/* plugins/devices/cpu/cpu_winograd.c — 3x3 convolutions moved one element
 * at a time over NHWC float32, by Winograd's F(2x2,3x3) or F(4x4,3x3) in
 * the plugin's own AVX2 loops: the work of the "loops/winograd" kernels
 * of Conv2D and _FusedConv2D, which cpu_conv.c registers (and which run
 * its direct kernel for a call these loops do not take).
 *
 * Each m x m block of outputs ("tile", m = 2 or 4) reads an (m + 2)^2
 * block of input d; with the filter g of every input/output channel pair
 * transformed once into U = G g G^T ((m + 2)^2), the output is
 * A^T [sum over input channels of U . (B^T d B)] A, where . multiplies
 * element by element. The (m + 2)^2 elementwise products summed over
 * channels are that many small matrix products (tiles x C by C x K): for
 * each input/output channel pair, 16 multiply-adds for 4 outputs (F2) or
 * 36 for 16 (F4) instead of the direct algorithm's 9 an output. Per call:
 *   - input transform: V[p][t][c] = (B^T d B)[p] of each tile t of a
 *     block of six, channels eight or sixteen to a vector;
 *   - the products M[p] = V[p] U[p], six tiles by sixteen (or 32) output
 *     channels of multiply-add accumulators held in registers;
 *   - output transform: y = A^T M A + bias, ReLU, stored where the tile
 *     lies inside the output (the last tiles may reach past it); for
 *     _FusedConv2DMaxPool (2x2, stride 2) the tiles start on even rows
 *     and columns, so each pooling window lies in one tile: only the
 *     maxima of the windows wholly inside the output are stored (for
 *     _FusedConv2DAndMaxPool, the output too).
 * Blocks of six tiles are shared by the intra-op threads, each with its
 * own V and M blocks (held by the filter's cache entry).
 *
 * F(4x4,3x3) is taken where its products, the tiles reaching past the
 * output included, are fewer than 0.8 times F(2x2,3x3)'s (its transforms
 * cost more a product): the cnn's 14x14 layer has 16 tiles of 36 against
 * 49 of 16 (0.73). On an Intel Xeon with AVX-512 (2 cores), bench/cnn_infer
 * at batch 64, best batch of alternated runs: 0.415-0.424 -> 0.370-0.374
 * ms.
 *
 * Why: oneDNN 2.6 has Winograd kernels for AVX-512 only. On a 2-core AVX2
 * machine (AMD EPYC, 204 GFLOP/s FMA peak) the cnn's second convolution
 * (16 -> 32 channels, 14x14, SAME, batch 64) took 637 us in oneDNN's
 * direct kernel (89% of the peak) and 446-484 us here (F2); at batch 1,
 * 13.5 us and 9.1 us. So these loops serve CPUs with AVX2 and FMA, on
 * AVX-512 ones with their products and transforms sixteen lanes to a
 * vector, where they beat oneDNN's AVX-512 direct kernel too (cpu_conv.c,
 * own_loops_support, has the figures); input channels a multiple of 8 up
 * to 64 and output channels a multiple of 16 up to 64, whose transformed
 * filters (36 C K floats, at most 576 KiB) and a block's products stay in
 * the core's caches.
 *
 * Numerics: F2's transforms add and subtract (the filter's halves are
 * exact), so its results differ from the direct sum by rounding only:
 * within 3e-7 of the largest output on the cnn's layer (outputs up to
 * 1.3). F4's multiply by 2, 4, 5 and 8 and its filter by sixths (made in
 * double, rounded once): in a float32 model of these transforms on random
 * tiles, within 2e-6 of the largest output for 16 -> 32 channels and
 * 4e-6 for 64 -> 64, an order of magnitude above F2 and well inside the
 * tests' tolerance (1e-4 relative and 1e-5 of the largest output).
 *
 * The transformed filter is kept (cpu_wino_cache) for the filter's
 * address and version (or bytes, when the core gives no version) and the
 * tile size, in a few entries so that concurrent runs of one node each
 * hold their own. */
#include <config.h>

#include "cpu_nn.h"
#include "epilogue.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define WINO_X86 1
#include <immintrin.h>
#else
#define WINO_X86 0
#endif

/* Tiles of a block (the rows of the products' register block), and the
 * largest channel counts taken. */
#define WINO_T 6
#define WINO_MAX_C 64
#define WINO_MAX_K 64
/* Transformed filters kept per node. */
#define WINO_ENTRIES 4

int cpu_wino_shape(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                   int64_t dh, int64_t dw, int64_t c, int64_t k, int nchw) {
  return !nchw && kh == 3 && kw == 3 && sh == 1 && sw == 1 && dh == 1 &&
         dw == 1 && c >= 8 && c <= WINO_MAX_C && c % 8 == 0 && k >= 16 &&
         k <= WINO_MAX_K && k % 16 == 0;
}

/* ---- transformed filters ---------------------------------------------- */

typedef struct wino_filter {
  const void *src; /* the filter the transform was made from */
  uint64_t version; /* its version, or 0: then copy holds its bytes */
  float *copy;
  float *u; /* U[p][c][k], (m + 2)^2 x c x k */
  int64_t c, k;
  int m; /* the tiles' side: 2 or 4 */
  int busy, valid;
  /* the V and M blocks of the parts of the call holding the entry */
  float *scratch;
  size_t scratch_floats;
} wino_filter;

struct cpu_wino_cache {
  pthread_mutex_t lock;
  wino_filter e[WINO_ENTRIES];
};

cpu_wino_cache *cpu_wino_cache_new(void) {
  cpu_wino_cache *c = wfx_host->alloc(sizeof *c, 0);

  if (!c)
    return NULL;
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

static void filter_clear(wino_filter *f) {
  wfx_host->free(f->copy);
  wfx_host->free(f->u);
  wfx_host->free(f->scratch);
  memset(f, 0, sizeof *f);
}

void cpu_wino_cache_free(cpu_wino_cache *c) {
  if (!c)
    return;
  for (int i = 0; i < WINO_ENTRIES; i++)
    filter_clear(&c->e[i]);
  pthread_mutex_destroy(&c->lock);
  wfx_host->free(c);
}

/* U = G g G^T for every channel pair of the HWIO filter w (3, 3, c, k),
 * G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. */
static void filter_transform(const float *w, int64_t c, int64_t k, float *u) {
  const int64_t ck = c * k;

  for (int64_t ci = 0; ci < c; ci++)
    for (int64_t ki = 0; ki < k; ki++) {
      float g[3][3], t[4][3];

      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
          g[a][b] = w[(a * 3 + b) * ck + ci * k + ki];
      for (int b = 0; b < 3; b++) {
        t[0][b] = g[0][b];
        t[1][b] = 0.5f * (g[0][b] + g[1][b] + g[2][b]);
        t[2][b] = 0.5f * (g[0][b] - g[1][b] + g[2][b]);
        t[3][b] = g[2][b];
      }
      for (int a = 0; a < 4; a++) {
        float *o = u + (int64_t)(a * 4) * ck + ci * k + ki;
        o[0] = t[a][0];
        o[ck] = 0.5f * (t[a][0] + t[a][1] + t[a][2]);
        o[2 * ck] = 0.5f * (t[a][0] - t[a][1] + t[a][2]);
        o[3 * ck] = t[a][2];
      }
    }
}

/* The same for F(4x4,3x3): U = G g G^T (6x6) with
 * G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
 *      1/24 -1/12 1/6; 0 0 1], in double, rounded once; four output
 * channels to a vector (k is a multiple of 16), since a training step
 * remakes it: 59 -> 16 us for the cnn's 16 x 32 filter (as F2's). */
typedef float wino_v4f __attribute__((vector_size(16)));
typedef double wino_v4d __attribute__((vector_size(32)));

static void filter_transform4(const float *w, int64_t c, int64_t k,
                              float *u) {
  static const double G[6][3] = {{1.0 / 4, 0, 0},
                                 {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                 {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                 {0, 0, 1}};
  const int64_t ck = c * k;

  for (int64_t ci = 0; ci < c; ci++)
    for (int64_t ki = 0; ki + 4 <= k; ki += 4) {
      wino_v4d g[3][3], t[6][3];

      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
          wino_v4f x;
          memcpy(&x, w + (a * 3 + b) * ck + ci * k + ki, sizeof x);
          g[a][b] = __builtin_convertvector(x, wino_v4d);
        }
      for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++)
          t[a][b] = G[a][0] * g[0][b] + G[a][1] * g[1][b] + G[a][2] * g[2][b];
      for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
          wino_v4f r = __builtin_convertvector(
              t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2],
              wino_v4f);
          memcpy(u + (int64_t)(a * 6 + b) * ck + ci * k + ki, &r, sizeof r);
        }
    }
}

/* 1 when f was made from these bytes. */
static int filter_current(const wino_filter *f, const float *w,
                          uint64_t version, int64_t c, int64_t k, int m) {
  if (!f->valid || f->src != w || f->c != c || f->k != k || f->m != m)
    return 0;
  if (version)
    return f->version == version;
  return f->copy &&
         memcmp(f->copy, w, (size_t)(9 * c * k) * sizeof(float)) == 0;
}

/* (Re)makes f from w; 0, or RESOURCE_EXHAUSTED. */
static int filter_make(wino_filter *f, const float *w, uint64_t version,
                       int64_t c, int64_t k, int m, wf_status *st) {
  size_t wbytes = (size_t)(9 * c * k) * sizeof(float);
  int64_t np = (m + 2) * (m + 2);

  if (!f->u || f->c != c || f->k != k || f->m != m) {
    wfx_host->free(f->u);
    wfx_host->free(f->copy);
    f->copy = NULL;
    f->valid = 0;
    f->u = wfx_host->alloc((size_t)(np * c * k) * sizeof(float), 64);
    if (!f->u)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of memory for a Winograd filter of %lld x %lld "
                      "channels",
                      (long long)c, (long long)k);
  }
  f->c = c, f->k = k, f->m = m;
  if (m == 4)
    filter_transform4(w, c, k, f->u);
  else
    filter_transform(w, c, k, f->u);
  f->src = w;
  f->version = version;
  if (!version) {
    if (!f->copy)
      f->copy = wfx_host->alloc(wbytes, 0);
    if (f->copy)
      memcpy(f->copy, w, wbytes);
  }
  /* without a version or a copy the entry cannot be vouched for later */
  f->valid = version || f->copy;
  return 0;
}

/* ---- the loops --------------------------------------------------------- */

typedef struct wino_job {
  const float *x, *u, *bias;
  float *y;  /* the output, or NULL (pool: the pooling alone is stored) */
  float *py; /* pool: the pooling's output */
  int64_t n, h, w, c, k, oh, ow, pt, pl;
  int64_t th, tw, tiles; /* tiles per column and row of an image; all */
  int m, np; /* the tiles' side (2 or 4) and products (16 or 36) */
  int relu, pool;
  int wide; /* products and transforms sixteen lanes to a vector
             * (AVX-512) */
  cpu_pieces pieces; /* the tiles, in blocks of WINO_T */
  float *scratch;    /* part t's V at scratch + t * part_floats, M after */
  int64_t part_floats;
} wino_job;

#if WINO_X86
#define WINO_TARGET __attribute__((target("avx2,fma")))
#define WINO_UNROLL _Pragma("GCC unroll 4")
#define WINO_UNROLL6 _Pragma("GCC unroll 6")

/* The transforms, eight lanes to a vector (AVX2) and sixteen (AVX-512):
 * cpu_winograd_lanes.h. Sixteen, on an Intel Xeon with AVX-512 (2 cores),
 * took the transforms' share of bench/cnn_infer's batch-64 time from 24%
 * to 19% (the throughput 5-10% up, alternated runs). */
#define WL_NAME(f) f##8
#define WL_TARGET WINO_TARGET
#define WL_LANES 8
#define WL_VEC __m256
#define WL_LOAD(p) _mm256_loadu_ps(p)
#define WL_STORE(p, v) _mm256_storeu_ps(p, v)
#define WL_ZERO() _mm256_setzero_ps()
#define WL_ADD(a, b) _mm256_add_ps(a, b)
#define WL_SUB(a, b) _mm256_sub_ps(a, b)
#define WL_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define WL_SET1(x) _mm256_set1_ps(x)
#define WL_RELU(v) _mm256_max_ps(v, _mm256_setzero_ps())
#define WL_MAX4(a, b, c, d) cpu_max2x2(a, b, c, d)
#define WL_MAX(a, b) _mm256_max_ps(a, b)
#include "cpu_winograd_lanes.h"

#define WINO_TARGET512 __attribute__((target("avx512f,fma")))
#define WL_NAME(f) f##16
#define WL_TARGET WINO_TARGET512
#define WL_LANES 16
#define WL_VEC __m512
#define WL_LOAD(p) _mm512_loadu_ps(p)
#define WL_STORE(p, v) _mm512_storeu_ps(p, v)
#define WL_ZERO() _mm512_setzero_ps()
#define WL_ADD(a, b) _mm512_add_ps(a, b)
#define WL_SUB(a, b) _mm512_sub_ps(a, b)
#define WL_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define WL_SET1(x) _mm512_set1_ps(x)
#define WL_RELU(v) _mm512_max_ps(v, _mm512_setzero_ps())
#define WL_MAX4(a, b, c, d) cpu_max2x2_16(a, b, c, d)
#define WL_MAX(a, b) _mm512_max_ps(a, b)
#include "cpu_winograd_lanes.h"

/* V[p][t][c] for the tiles t0 .. t0 + WINO_T - 1 (zeros from end on):
 * whole vectors of sixteen channels on AVX-512, the rest eight at a
 * time. */
static void input_transform(const wino_job *j, int64_t t0, int64_t end,
                            float *V) {
  int64_t c = 0;

  if (j->m == 4) {
    if (j->wide)
      c = input4_lanes16(j, t0, end, V, 0);
    if (c < j->c)
      input4_lanes8(j, t0, end, V, c);
    return;
  }
  if (j->wide)
    c = input_lanes16(j, t0, end, V, 0);
  if (c < j->c)
    input_lanes8(j, t0, end, V, c);
}

/* y = A^T M A + bias (ReLU), stored where the block's tiles lie inside
 * the output: the same split of the output channels. */
static void output_transform(const wino_job *j, int64_t t0, int64_t end,
                             const float *M) {
  int64_t k = 0;

  if (j->m == 4) {
    if (j->wide)
      k = output4_lanes16(j, t0, end, M, 0);
    if (k < j->k)
      output4_lanes8(j, t0, end, M, k);
    return;
  }
  if (j->wide)
    k = output_lanes16(j, t0, end, M, 0);
  if (k < j->k)
    output_lanes8(j, t0, end, M, k);
}

/* M[p] (WINO_T x K) = V[p] (WINO_T x C) U[p] (C x K) for the 16 p: six
 * tiles by sixteen output channels of accumulators. */
WINO_TARGET static void products(const wino_job *j, const float *V,
                                 float *M) {
  const int64_t C = j->c, K = j->k;

  for (int p = 0; p < j->np; p++) {
    const float *v = V + p * WINO_T * C, *up = j->u + p * C * K;
    float *mp = M + p * WINO_T * K;

    for (int64_t k = 0; k < K; k += 16) {
      __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
      __m256 a20 = a00, a21 = a00, a30 = a00, a31 = a00, a40 = a00;
      __m256 a41 = a00, a50 = a00, a51 = a00;

      for (int64_t c = 0; c < C; c++) {
        __m256 u0 = _mm256_loadu_ps(up + c * K + k);
        __m256 u1 = _mm256_loadu_ps(up + c * K + k + 8), b;

        b = _mm256_broadcast_ss(v + c);
        a00 = _mm256_fmadd_ps(b, u0, a00), a01 = _mm256_fmadd_ps(b, u1, a01);
        b = _mm256_broadcast_ss(v + C + c);
        a10 = _mm256_fmadd_ps(b, u0, a10), a11 = _mm256_fmadd_ps(b, u1, a11);
        b = _mm256_broadcast_ss(v + 2 * C + c);
        a20 = _mm256_fmadd_ps(b, u0, a20), a21 = _mm256_fmadd_ps(b, u1, a21);
        b = _mm256_broadcast_ss(v + 3 * C + c);
        a30 = _mm256_fmadd_ps(b, u0, a30), a31 = _mm256_fmadd_ps(b, u1, a31);
        b = _mm256_broadcast_ss(v + 4 * C + c);
        a40 = _mm256_fmadd_ps(b, u0, a40), a41 = _mm256_fmadd_ps(b, u1, a41);
        b = _mm256_broadcast_ss(v + 5 * C + c);
        a50 = _mm256_fmadd_ps(b, u0, a50), a51 = _mm256_fmadd_ps(b, u1, a51);
      }
      float *m = mp + k;
      _mm256_storeu_ps(m, a00), _mm256_storeu_ps(m + 8, a01);
      _mm256_storeu_ps(m + K, a10), _mm256_storeu_ps(m + K + 8, a11);
      _mm256_storeu_ps(m + 2 * K, a20), _mm256_storeu_ps(m + 2 * K + 8, a21);
      _mm256_storeu_ps(m + 3 * K, a30), _mm256_storeu_ps(m + 3 * K + 8, a31);
      _mm256_storeu_ps(m + 4 * K, a40), _mm256_storeu_ps(m + 4 * K + 8, a41);
      _mm256_storeu_ps(m + 5 * K, a50), _mm256_storeu_ps(m + 5 * K + 8, a51);
    }
  }
}

/* The same products sixteen lanes to a vector, on CPUs with AVX-512:
 * every element of M is the same chain of multiply-adds over c in order,
 * so the bits are products()'s. Six tiles by 32 output channels (two
 * vectors) of accumulators, then six by the last 16. On an Intel Xeon
 * with AVX-512 (2 cores) the cnn's second layer, pooled, at batch 64:
 * 0.382 -> 0.30 ms. */
#define WINO_ROW16(t, acc0, acc1)                                              \
  do {                                                                         \
    __m512 b_ = _mm512_set1_ps(v[(t) * C + c]);                                \
    (acc0) = _mm512_fmadd_ps(b_, u0, (acc0));                                  \
    (acc1) = _mm512_fmadd_ps(b_, u1, (acc1));                                  \
  } while (0)

__attribute__((target("avx512f"))) static void
products16(const wino_job *j, const float *V, float *M) {
  const int64_t C = j->c, K = j->k;

  for (int p = 0; p < j->np; p++) {
    const float *v = V + p * WINO_T * C, *up = j->u + p * C * K;
    float *m = M + p * WINO_T * K;
    int64_t k = 0;

    for (; k + 32 <= K; k += 32) {
      __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
      __m512 a20 = a00, a21 = a00, a30 = a00, a31 = a00, a40 = a00;
      __m512 a41 = a00, a50 = a00, a51 = a00;

      for (int64_t c = 0; c < C; c++) {
        __m512 u0 = _mm512_loadu_ps(up + c * K + k);
        __m512 u1 = _mm512_loadu_ps(up + c * K + k + 16);
        WINO_ROW16(0, a00, a01);
        WINO_ROW16(1, a10, a11);
        WINO_ROW16(2, a20, a21);
        WINO_ROW16(3, a30, a31);
        WINO_ROW16(4, a40, a41);
        WINO_ROW16(5, a50, a51);
      }
      _mm512_storeu_ps(m + k, a00), _mm512_storeu_ps(m + k + 16, a01);
      _mm512_storeu_ps(m + K + k, a10), _mm512_storeu_ps(m + K + k + 16, a11);
      _mm512_storeu_ps(m + 2 * K + k, a20);
      _mm512_storeu_ps(m + 2 * K + k + 16, a21);
      _mm512_storeu_ps(m + 3 * K + k, a30);
      _mm512_storeu_ps(m + 3 * K + k + 16, a31);
      _mm512_storeu_ps(m + 4 * K + k, a40);
      _mm512_storeu_ps(m + 4 * K + k + 16, a41);
      _mm512_storeu_ps(m + 5 * K + k, a50);
      _mm512_storeu_ps(m + 5 * K + k + 16, a51);
    }
    if (k < K) { /* the last 16 */
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0;
      __m512 a5 = a0;

      for (int64_t c = 0; c < C; c++) {
        __m512 u0 = _mm512_loadu_ps(up + c * K + k);
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(v[c]), u0, a0);
        a1 = _mm512_fmadd_ps(_mm512_set1_ps(v[C + c]), u0, a1);
        a2 = _mm512_fmadd_ps(_mm512_set1_ps(v[2 * C + c]), u0, a2);
        a3 = _mm512_fmadd_ps(_mm512_set1_ps(v[3 * C + c]), u0, a3);
        a4 = _mm512_fmadd_ps(_mm512_set1_ps(v[4 * C + c]), u0, a4);
        a5 = _mm512_fmadd_ps(_mm512_set1_ps(v[5 * C + c]), u0, a5);
      }
      _mm512_storeu_ps(m + k, a0), _mm512_storeu_ps(m + K + k, a1);
      _mm512_storeu_ps(m + 2 * K + k, a2), _mm512_storeu_ps(m + 3 * K + k, a3);
      _mm512_storeu_ps(m + 4 * K + k, a4), _mm512_storeu_ps(m + 5 * K + k, a5);
    }
  }
}

/* cpu_team part t of nt: its pieces of the tiles (its own share's first,
 * cpu_pieces.h), each in blocks of WINO_T (a piece's last one short). */
static void wino_part(void *arg, int t, int nt) {
  wino_job *j = arg;
  cpu_piece_walk w = cpu_pieces_walk(&j->pieces, t);
  int64_t first, end;
  float *V = j->scratch + t * j->part_floats, *M = V + j->np * WINO_T * j->c;

  (void)nt;
  while (cpu_pieces_take(&w, &first, &end)) {
    for (int64_t b = first; b < end; b += WINO_T) {
      input_transform(j, b, end, V);
      if (j->wide)
        products16(j, V, M);
      else
        products(j, V, M);
      output_transform(j, b, end, M);
    }
  }
}
#endif /* WINO_X86 */

int cpu_wino_conv(cpu_wino_cache *cache, const float *x, const float *w,
                  uint64_t wversion, const float *bias, const opc_fused *fu,
                  float *y, float *py, int64_t n, int64_t h, int64_t wd,
                  int64_t c, int64_t k, int64_t oh, int64_t ow,
                  int64_t pad_top, int64_t pad_left, wf_status *st) {
#if WINO_X86
  wino_filter *f = NULL, tmp;
  int current = 0;
  /* F(4x4,3x3) where its products (36 a tile of 16 outputs, the tiles
   * half outside included) are fewer than 0.8 times F(2x2,3x3)'s (16 a
   * tile of 4): its transforms cost more per product */
  int64_t t2 = ((oh + 1) / 2) * ((ow + 1) / 2);
  int64_t t4 = ((oh + 3) / 4) * ((ow + 3) / 4);
  int m = 36 * t4 * 5 < 16 * t2 * 4 ? 4 : 2;
  int in_place = fu && (fu->act == OPC_ACT_NONE || fu->act == OPC_ACT_RELU);
  wino_job j = {.x = x,
                .bias = in_place ? bias : NULL,
                .y = y,
                .py = py,
                .n = n,
                .h = h,
                .w = wd,
                .c = c,
                .k = k,
                .oh = oh,
                .ow = ow,
                .pt = pad_top,
                .pl = pad_left,
                .th = (oh + m - 1) / m,
                .tw = (ow + m - 1) / m,
                .m = m,
                .np = (m + 2) * (m + 2),
                .relu = in_place && fu->act == OPC_ACT_RELU,
                .pool = py != NULL,
                .wide = __builtin_cpu_supports("avx512f")};
  int rc = 0;

  if (py && fu && !in_place)
    return wfx_fail(st, WF_INTERNAL,
                    "the Winograd loops pool only after ReLU or no "
                    "activation");
  j.tiles = n * j.th * j.tw;
  /* an entry for this filter: a current one, else a free one to remake,
   * else (all held by concurrent runs) one of this call's own */
  pthread_mutex_lock(&cache->lock);
  for (int i = 0; i < WINO_ENTRIES && !f; i++)
    if (!cache->e[i].busy && filter_current(&cache->e[i], w, wversion, c, k, m))
      f = &cache->e[i], current = 1;
  for (int i = 0; i < WINO_ENTRIES && !f; i++)
    if (!cache->e[i].busy)
      f = &cache->e[i];
  if (f)
    f->busy = 1;
  pthread_mutex_unlock(&cache->lock);
  if (!f) {
    memset(&tmp, 0, sizeof tmp);
    f = &tmp;
  }
  if (!current)
    rc = filter_make(f, w, wversion, c, k, m, st);
  int share = cpu_loops_share(n * oh * ow * c * k * 9, j.wide);
  int parts = cpu_team_size(share);
  /* each part's V (np x WINO_T x c) and M (np x WINO_T x k) */
  j.part_floats = ((int64_t)j.np * WINO_T * (c + k) + 15) / 16 * 16;
  if (rc == 0 && f->scratch_floats < (size_t)(parts * j.part_floats)) {
    wfx_host->free(f->scratch);
    f->scratch_floats = 0;
    f->scratch = wfx_host->alloc(
        (size_t)(parts * j.part_floats) * sizeof(float), 64);
    if (!f->scratch)
      rc = wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the Winograd loops' blocks (%lld "
                    "bytes)",
                    (long long)(parts * j.part_floats * 4));
    else
      f->scratch_floats = (size_t)(parts * j.part_floats);
  }
  if (rc == 0) {
    j.u = f->u;
    j.scratch = f->scratch;
    /* pieces of 192 outputs at least (eight blocks of F(2x2,3x3), two of
     * F(4x4,3x3)): an image of 14 x 14 outputs is its shares */
    cpu_pieces_init(&j.pieces, j.tiles, WINO_T,
                    (m == 4 ? 2 : 8) * WINO_T, parts);
    cpu_team(wino_part, &j, share);
    if (fu && !in_place)
      opc_fused_apply(WF_FLOAT32, y, bias, n * oh * ow, k, 1, fu);
  }
  if (f == &tmp) {
    filter_clear(&tmp);
  } else {
    pthread_mutex_lock(&cache->lock);
    f->busy = 0;
    pthread_mutex_unlock(&cache->lock);
  }
  return rc;
#else
  (void)cache, (void)x, (void)w, (void)wversion, (void)bias, (void)fu;
  (void)py;
  (void)y, (void)n, (void)h, (void)wd, (void)c, (void)k, (void)oh, (void)ow;
  (void)pad_top, (void)pad_left;
  return wfx_fail(st, WF_INTERNAL,
                  "the Winograd loops are built for x86 only");
#endif
}
