/* plugins/devices/cpu/cpu_winograd.c — 3x3 convolutions moved one element
 * at a time over NHWC float32, by Winograd's F(2x2,3x3) in the plugin's
 * own AVX2 loops: the work of the "loops/winograd" kernels of Conv2D and
 * _FusedConv2D, which cpu_conv.c registers (and which run its direct
 * kernel for a call these loops do not take).
 *
 * Each 2x2 block of outputs ("tile") reads a 4x4 block of input d; with
 * the filter g of every input/output channel pair transformed once into
 * U = G g G^T (4x4), the output is A^T [sum over input channels of
 * U . (B^T d B)] A, where . multiplies element by element. The 16
 * elementwise products summed over channels are 16 small matrix products
 * (tiles x C by C x K), 16 multiply-adds for each input/output channel
 * pair of a tile instead of the direct algorithm's 36. Per call:
 *   - input transform: V[p][t][c] = (B^T d B)[p] of each tile t of a
 *     block of six, channels eight to a vector;
 *   - 16 products M[p] = V[p] U[p], six tiles by sixteen output channels
 *     of multiply-add accumulators held in registers;
 *   - output transform: y = A^T M A + bias, ReLU, stored where the tile
 *     lies inside the output (an odd size's last tiles are half outside);
 *     for _FusedConv2DMaxPool (2x2, stride 2) each whole tile is exactly
 *     one pooling window: only its maximum is stored.
 * Blocks of six tiles are shared by the intra-op threads.
 *
 * Why: oneDNN 2.6 has Winograd kernels for AVX-512 only. On a 2-core AVX2
 * machine (AMD EPYC, 204 GFLOP/s FMA peak) the cnn's second convolution
 * (16 -> 32 channels, 14x14, SAME, batch 64) took 637 us in oneDNN's
 * direct kernel (89% of the peak) and 446-484 us here; at batch 1,
 * 13.5 us and 9.1 us. So these loops serve CPUs with AVX2 and FMA, on
 * AVX-512 ones with their products sixteen lanes to a vector, where they
 * beat oneDNN's AVX-512 direct kernel too (cpu_conv.c, own_loops_support,
 * has the figures); input
 * channels a multiple of 8 up to 64 and output channels a multiple of 16
 * up to 64, whose transformed filters (16 C K floats, at most 256 KiB) and
 * a block's products stay in the core's caches.
 *
 * Numerics: the transforms add and subtract (the filter's halves are
 * exact), so results differ from the direct sum by rounding only: within
 * 3e-7 of the largest output on the cnn's layer (outputs up to 1.3).
 *
 * The transformed filter is kept (cpu_wino_cache) for the filter's
 * address and version (or bytes, when the core gives no version), in a
 * few entries so that concurrent runs of one node each hold their own. */
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
  float *u; /* U[p][c][k], 16 x c x k */
  int64_t c, k;
  int busy, valid;
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

/* 1 when f was made from these bytes. */
static int filter_current(const wino_filter *f, const float *w,
                          uint64_t version, int64_t c, int64_t k) {
  if (!f->valid || f->src != w || f->c != c || f->k != k)
    return 0;
  if (version)
    return f->version == version;
  return f->copy &&
         memcmp(f->copy, w, (size_t)(9 * c * k) * sizeof(float)) == 0;
}

/* (Re)makes f from w; 0, or RESOURCE_EXHAUSTED. */
static int filter_make(wino_filter *f, const float *w, uint64_t version,
                       int64_t c, int64_t k, wf_status *st) {
  size_t wbytes = (size_t)(9 * c * k) * sizeof(float);

  if (!f->u || f->c != c || f->k != k) {
    wfx_host->free(f->u);
    wfx_host->free(f->copy);
    f->copy = NULL;
    f->valid = 0;
    f->u = wfx_host->alloc((size_t)(16 * c * k) * sizeof(float), 64);
    if (!f->u)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of memory for a Winograd filter of %lld x %lld "
                      "channels",
                      (long long)c, (long long)k);
  }
  f->c = c, f->k = k;
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
  float *y;
  int64_t n, h, w, c, k, oh, ow, pt, pl;
  int64_t th, tw, tiles; /* tiles per column and row of an image; all */
  int relu, pool;
  int wide; /* the products sixteen lanes to a vector (AVX-512) */
  cpu_pieces pieces; /* the tiles, in blocks of WINO_T */
} wino_job;

#if WINO_X86
#define WINO_TARGET __attribute__((target("avx2,fma")))
#define WINO_UNROLL _Pragma("GCC unroll 4")

/* V[p][t][c] for the tiles t0 .. t0 + WINO_T - 1 (zeros from end on). */
WINO_TARGET static void input_transform(const wino_job *j, int64_t t0,
                                        int64_t end, float *V) {
  const int64_t C = j->c, pstride = WINO_T * C, per_image = j->th * j->tw;

  for (int t = 0; t < WINO_T; t++) {
    int64_t ti = t0 + t;

    if (ti >= end) {
      for (int p = 0; p < 16; p++)
        memset(V + p * pstride + t * C, 0, (size_t)C * sizeof(float));
      continue;
    }
    int64_t img = ti / per_image, r = ti % per_image;
    int64_t iy0 = 2 * (r / j->tw) - j->pt, ix0 = 2 * (r % j->tw) - j->pl;
    const float *xn = j->x + img * j->h * j->w * C;
    int inside = iy0 >= 0 && iy0 + 3 < j->h && ix0 >= 0 && ix0 + 3 < j->w;

    for (int64_t c = 0; c < C; c += 8) {
      __m256 d[4][4], e[4][4];

      /* (unrolled, so that d and e stay in registers: at -O2 GCC keeps
       * the arrays in memory and the transform takes 1.8x as long) */
      if (inside) {
        const float *q = xn + (iy0 * j->w + ix0) * C + c;
        WINO_UNROLL for (int a = 0; a < 4; a++)
          WINO_UNROLL for (int b = 0; b < 4; b++)
            d[a][b] = _mm256_loadu_ps(q + (a * j->w + b) * C);
      } else {
        WINO_UNROLL for (int a = 0; a < 4; a++)
          WINO_UNROLL for (int b = 0; b < 4; b++) {
            int64_t iy = iy0 + a, ix = ix0 + b;
            d[a][b] = iy >= 0 && iy < j->h && ix >= 0 && ix < j->w
                          ? _mm256_loadu_ps(xn + (iy * j->w + ix) * C + c)
                          : _mm256_setzero_ps();
          }
      }
      /* B^T d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] */
      WINO_UNROLL for (int b = 0; b < 4; b++) {
        e[0][b] = _mm256_sub_ps(d[0][b], d[2][b]);
        e[1][b] = _mm256_add_ps(d[1][b], d[2][b]);
        e[2][b] = _mm256_sub_ps(d[2][b], d[1][b]);
        e[3][b] = _mm256_sub_ps(d[1][b], d[3][b]);
      }
      /* (B^T d) B */
      WINO_UNROLL for (int a = 0; a < 4; a++) {
        float *v = V + (a * 4) * pstride + t * C + c;
        _mm256_storeu_ps(v, _mm256_sub_ps(e[a][0], e[a][2]));
        _mm256_storeu_ps(v + pstride, _mm256_add_ps(e[a][1], e[a][2]));
        _mm256_storeu_ps(v + 2 * pstride, _mm256_sub_ps(e[a][2], e[a][1]));
        _mm256_storeu_ps(v + 3 * pstride, _mm256_sub_ps(e[a][1], e[a][3]));
      }
    }
  }
}

/* M[p] (WINO_T x K) = V[p] (WINO_T x C) U[p] (C x K) for the 16 p: six
 * tiles by sixteen output channels of accumulators. */
WINO_TARGET static void products(const wino_job *j, const float *V,
                                 float *M) {
  const int64_t C = j->c, K = j->k;

  for (int p = 0; p < 16; p++) {
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

  for (int p = 0; p < 16; p++) {
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

/* One column b of A^T m (A^T = [1 1 1 0; 0 1 -1 -1]) for output channels
 * k .. k + 7 of tile row mt. */
#define WINO_COL(b, o0, o1)                                                    \
  do {                                                                         \
    __m256 m0 = _mm256_loadu_ps(mt + (0 + (b)) * ps + k);                      \
    __m256 m1 = _mm256_loadu_ps(mt + (4 + (b)) * ps + k);                      \
    __m256 m2 = _mm256_loadu_ps(mt + (8 + (b)) * ps + k);                      \
    __m256 m3 = _mm256_loadu_ps(mt + (12 + (b)) * ps + k);                     \
    (o0) = _mm256_add_ps(m0, _mm256_add_ps(m1, m2));                           \
    (o1) = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);                           \
  } while (0)

/* y = A^T M A + bias (ReLU) for the block's tiles before end, where they
 * lie inside the output. */
WINO_TARGET static void output_transform(const wino_job *j, int64_t t0,
                                         int64_t end, const float *M) {
  const int64_t K = j->k, ps = WINO_T * K, per_image = j->th * j->tw;
  const __m256 zero = _mm256_setzero_ps();

  for (int t = 0; t < WINO_T && t0 + t < end; t++) {
    int64_t ti = t0 + t, img = ti / per_image, r = ti % per_image;
    int64_t oy = 2 * (r / j->tw), ox = 2 * (r % j->tw);
    int two_rows = oy + 1 < j->oh, two_cols = ox + 1 < j->ow;
    const float *mt = M + t * K;
    float *y0 = j->y + ((img * j->oh + oy) * j->ow + ox) * K;

    if (j->pool) {
      /* a half tile is no whole window: the pooling (no padding) drops
       * it */
      if (!two_rows || !two_cols)
        continue;
      y0 = j->y + ((img * (j->oh / 2) + oy / 2) * (j->ow / 2) + ox / 2) * K;
    }

    for (int64_t k = 0; k < K; k += 8) {
      __m256 o00, o01, o02, o03, o10, o11, o12, o13, bias;
      __m256 y00, y01, y10, y11;

      WINO_COL(0, o00, o10);
      WINO_COL(1, o01, o11);
      WINO_COL(2, o02, o12);
      WINO_COL(3, o03, o13);
      bias = j->bias ? _mm256_loadu_ps(j->bias + k) : zero;
      /* (A^T M) A */
      y00 = _mm256_add_ps(_mm256_add_ps(o00, _mm256_add_ps(o01, o02)), bias);
      y01 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(o01, o02), o03), bias);
      y10 = _mm256_add_ps(_mm256_add_ps(o10, _mm256_add_ps(o11, o12)), bias);
      y11 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(o11, o12), o13), bias);
      if (j->relu) {
        y00 = _mm256_max_ps(y00, zero), y01 = _mm256_max_ps(y01, zero);
        y10 = _mm256_max_ps(y10, zero), y11 = _mm256_max_ps(y11, zero);
      }
      if (j->pool) {
        _mm256_storeu_ps(y0 + k, cpu_max2x2(y00, y01, y10, y11));
        continue;
      }
      _mm256_storeu_ps(y0 + k, y00);
      if (two_cols)
        _mm256_storeu_ps(y0 + K + k, y01);
      if (two_rows) {
        float *y1 = y0 + j->ow * K;
        _mm256_storeu_ps(y1 + k, y10);
        if (two_cols)
          _mm256_storeu_ps(y1 + K + k, y11);
      }
    }
  }
}

/* cpu_team part t of nt: its pieces of the tiles (its own share's first,
 * cpu_pieces.h), each in blocks of WINO_T (a piece's last one short). */
static void wino_part(void *arg, int t, int nt) {
  wino_job *j = arg;
  cpu_piece_walk w = cpu_pieces_walk(&j->pieces, t);
  int64_t first, end;
  float V[16 * WINO_T * WINO_MAX_C] __attribute__((aligned(32)));
  float M[16 * WINO_T * WINO_MAX_K] __attribute__((aligned(32)));

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
                  int pool, float *y, int64_t n, int64_t h, int64_t wd,
                  int64_t c, int64_t k, int64_t oh, int64_t ow,
                  int64_t pad_top, int64_t pad_left, wf_status *st) {
#if WINO_X86
  wino_filter *f = NULL, tmp;
  int current = 0;
  int in_place = fu && (fu->act == OPC_ACT_NONE || fu->act == OPC_ACT_RELU);
  wino_job j = {.x = x,
                .bias = in_place ? bias : NULL,
                .y = y,
                .n = n,
                .h = h,
                .w = wd,
                .c = c,
                .k = k,
                .oh = oh,
                .ow = ow,
                .pt = pad_top,
                .pl = pad_left,
                .th = (oh + 1) / 2,
                .tw = (ow + 1) / 2,
                .relu = in_place && fu->act == OPC_ACT_RELU,
                .pool = pool,
                .wide = __builtin_cpu_supports("avx512f")};
  int rc = 0;

  if (pool && fu && !in_place)
    return wfx_fail(st, WF_INTERNAL,
                    "the Winograd loops pool only after ReLU or no "
                    "activation");
  j.tiles = n * j.th * j.tw;
  /* an entry for this filter: a current one, else a free one to remake,
   * else (all held by concurrent runs) one of this call's own */
  pthread_mutex_lock(&cache->lock);
  for (int i = 0; i < WINO_ENTRIES && !f; i++)
    if (!cache->e[i].busy && filter_current(&cache->e[i], w, wversion, c, k))
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
    rc = filter_make(f, w, wversion, c, k, st);
  if (rc == 0) {
    j.u = f->u;
    /* the direct kernel's rule for sharing (cpu_conv.c: a vector of
     * multiply-adds one unit) on the direct algorithm's work */
    int share = n * oh * ow * c * k * 9 / 8 >= WF_DNNL_SMALL_WORK;

    /* pieces of eight blocks at least: an image of 14 x 14 outputs (49
     * tiles) is its shares */
    cpu_pieces_init(&j.pieces, j.tiles, WINO_T, 8 * WINO_T,
                    cpu_team_size(share));
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
  (void)pool;
  (void)y, (void)n, (void)h, (void)wd, (void)c, (void)k, (void)oh, (void)ow;
  (void)pad_top, (void)pad_left;
  return wfx_fail(st, WF_INTERNAL,
                  "the Winograd loops are built for x86 only");
#endif
}
