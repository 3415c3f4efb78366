/* plugins/devices/cpu/cpu_conv_shallow.c — convolutions of an input with
 * at most four channels (an image's first layer: grey or RGB) over NHWC
 * float32, in the plugin's own AVX2 loops: the work of the "loops/shallow"
 * kernels of Conv2D and _FusedConv2D, which cpu_conv.c registers (and
 * which run its direct kernel for a call these loops do not take).
 *
 * With so few input channels there is nothing to sum over in a vector:
 * each output position is a sum over the window's kh x kw x c taps of a
 * broadcast input value times a vector of eight output channels' weights.
 * A block of six output positions by sixteen output channels (twelve
 * multiply-add accumulators) is held in registers while the taps go by;
 * bias, ReLU and the store follow. The image is first copied into a
 * zero-bordered buffer of the thread's, so that the loops never test a
 * border. Rows of output are shared by the intra-op threads. For
 * _FusedConv2DMaxPool (2x2, stride 2) two rows go to a buffer of the
 * thread's and only their pooling is stored (sixteen lanes to a vector on
 * AVX-512, a plain maximum after a ReLU: bench/cnn_infer at batch 64
 * 4-10% faster than eight lanes and the NaN-aware maximum); on AVX-512
 * with output channels a multiple of sixteen, the two rows are computed
 * together and pooled in registers instead (pooled_block16: best batch of
 * 64 0.370 -> 0.338 ms). For _FusedConv2DAndMaxPool the two rows go to
 * the output and are pooled from there while they are in the cache.
 *
 * Why: oneDNN 2.6's kernel for this shape (its "first layer" path) ran the
 * cnn's first convolution (1 -> 16 channels, 28x28, SAME, batch 64) at 81
 * GFLOP/s, 40% of this 2-core AVX2 machine's FMA peak, in 177 us. So these
 * loops serve CPUs with AVX2 and FMA and no AVX-512, and on AVX-512 ones
 * _FusedConv2DMaxPool's calls (cpu_conv.c, own_loops_support); windows up to 7x7, any stride, no dilation, output
 * channels a multiple of 8.
 *
 * Numerics: each output is the same sum as the direct algorithm's, in the
 * window's order (rows, columns, channels), one rounding per multiply-add.
 *
 * The filter's gradient (Conv2DBackpropFilter, "loops/shallow" too) sums,
 * for each tap and output channel, a broadcast input value times a vector
 * of the output gradient's channels over every position: blocks of five
 * taps by sixteen channels (nine by eight for the last eight) in
 * registers over one image, then into doubles per image, the images
 * shared by the intra-op threads (each its own doubles, added in order).
 * The cnn's first layer (64 x 28 x 28 x 1, 3x3 -> 16): 150 -> 100 us a
 * call on its own (best of 500, oneDNN's direct kernel against these),
 * 0.18-0.23 -> 0.15-0.17 ms a training step (bench/train --profile
 * --by-node, alternated). */
#include <config.h>

#include "cpu_nn.h"
#include "epilogue.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SHALLOW_X86 1
#include <immintrin.h>
#else
#define SHALLOW_X86 0
#endif

/* The largest input channel count and window side taken. */
#define SHALLOW_MAX_C 4
#define SHALLOW_MAX_K 7
/* Output positions of a register block. */
#define SHALLOW_P 6

int cpu_shallow_shape(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                      int64_t dh, int64_t dw, int64_t c, int64_t k,
                      int nchw) {
  return !nchw && kh >= 1 && kh <= SHALLOW_MAX_K && kw >= 1 &&
         kw <= SHALLOW_MAX_K && sh >= 1 && sw >= 1 && dh == 1 && dw == 1 &&
         c >= 1 && c <= SHALLOW_MAX_C && k >= 8 && k % 8 == 0;
}

#if SHALLOW_X86
typedef struct shallow_job {
  const float *x, *w, *bias; /* bias: only when added here */
  float *y;  /* the output, or NULL (pool: the pooling alone is stored) */
  float *py; /* pool: the pooling's output */
  int64_t n, h, wd, c, k, kh, kw, sh, sw, oh, ow, pt, pl;
  int64_t ph, pw; /* the bordered image: the rows and columns windows read */
  int64_t taps;   /* kh x kw x c */
  /* where each tap reads in the bordered image, from the window's first
   * element; the taps' weights are consecutive rows of the filter */
  int64_t at[SHALLOW_MAX_K * SHALLOW_MAX_K * SHALLOW_MAX_C];
  int relu, pool;
  int wide; /* the forward rows sixteen lanes to a vector (AVX-512) */
  atomic_int failed;
  cpu_pieces pieces; /* the forward's rows */
} shallow_job;

#define SHALLOW_TARGET __attribute__((target("avx2,fma")))
#define SHALLOW_UNROLL _Pragma("GCC unroll 8")

/* The bordered copy of image img: row py, column px of buf is input row
 * py - pt, column px - pl, or zeros outside the input. */
static void border_image(const shallow_job *j, int64_t img, float *buf) {
  const int64_t c = j->c;
  const float *xn = j->x + img * j->h * j->wd * c;
  /* the columns of buf the input covers */
  int64_t lo = j->pl > 0 ? j->pl : 0;
  int64_t hi = j->pl + j->wd < j->pw ? j->pl + j->wd : j->pw;

  for (int64_t py = 0; py < j->ph; py++) {
    float *row = buf + py * j->pw * c;
    int64_t iy = py - j->pt;

    if (iy < 0 || iy >= j->h || hi <= lo) {
      memset(row, 0, (size_t)(j->pw * c) * sizeof(float));
      continue;
    }
    memset(row, 0, (size_t)(lo * c) * sizeof(float));
    memcpy(row + lo * c, xn + (iy * j->wd + lo - j->pl) * c,
           (size_t)((hi - lo) * c) * sizeof(float));
    memset(row + hi * c, 0, (size_t)((j->pw - hi) * c) * sizeof(float));
  }
}

/* Defines BLOCK(j, buf, oy, ox, kb, yrow, P, V): outputs ox .. ox + P - 1
 * of row oy, channels kb .. kb + LANES V - 1, from the bordered image buf
 * into yrow (the row's first output), and CHANNELS(j, buf, oy, kb, yrow,
 * V): those channels of the whole row, blocks of PMAX positions, then the
 * positions left in blocks of 4, 2 and 1. P and V are constants where
 * BLOCK is inlined, so the accumulators stay in registers; each output is
 * one chain of multiply-adds over the window's taps (rows, columns,
 * channels, whose weights are consecutive rows of the filter), the same
 * at every vector width. The vector operations: VEC of LANES floats,
 * LOAD, SET1, FMA, MAX, ZERO, STORE. */
#define SHALLOW_LOOPS(TARGET, BLOCK, CHANNELS, PMAX, VEC, LANES, LOAD, SET1,  \
                      FMA, MAX, ZERO, STORE)                                 \
  TARGET static inline __attribute__((always_inline)) void BLOCK(            \
      const shallow_job *j, const float *buf, int64_t oy, int64_t ox,        \
      int64_t kb, float *yrow, const int P, const int V) {                   \
    const int64_t K = j->k, step = j->sw * j->c, taps = j->taps;             \
    const float *in = buf + (oy * j->sh * j->pw + ox * j->sw) * j->c;        \
    const float *wk = j->w + kb;                                             \
    const int64_t *at = j->at;                                               \
    VEC acc[PMAX][2];                                                        \
                                                                             \
    SHALLOW_UNROLL for (int v = 0; v < V; v++) {                             \
      VEC b = j->bias ? LOAD(j->bias + kb + LANES * v) : ZERO();             \
      SHALLOW_UNROLL for (int p = 0; p < P; p++) acc[p][v] = b;              \
    }                                                                        \
    for (int64_t t = 0; t < taps; t++, wk += K) {                            \
      const float *x = in + at[t];                                           \
      VEC wv[2];                                                             \
      SHALLOW_UNROLL for (int v = 0; v < V; v++) wv[v] = LOAD(wk + LANES * v); \
      SHALLOW_UNROLL for (int p = 0; p < P; p++) {                           \
        VEC xb = SET1(x[p * step]);                                          \
        SHALLOW_UNROLL for (int v = 0; v < V; v++)                           \
            acc[p][v] = FMA(xb, wv[v], acc[p][v]);                           \
      }                                                                      \
    }                                                                        \
    SHALLOW_UNROLL for (int p = 0; p < P; p++) {                             \
      float *o = yrow + (ox + p) * K + kb;                                   \
      SHALLOW_UNROLL for (int v = 0; v < V; v++)                             \
          STORE(o + LANES * v, j->relu ? MAX(acc[p][v], ZERO()) : acc[p][v]); \
    }                                                                        \
  }                                                                          \
  TARGET static inline __attribute__((always_inline)) void CHANNELS(         \
      const shallow_job *j, const float *buf, int64_t oy, int64_t kb,        \
      float *yrow, const int V) {                                            \
    int64_t ox = 0;                                                          \
                                                                             \
    for (; ox + PMAX <= j->ow; ox += PMAX)                                   \
      BLOCK(j, buf, oy, ox, kb, yrow, PMAX, V);                              \
    if (j->ow - ox >= 4) {                                                   \
      BLOCK(j, buf, oy, ox, kb, yrow, 4, V);                                 \
      ox += 4;                                                               \
    }                                                                        \
    if (j->ow - ox >= 2) {                                                   \
      BLOCK(j, buf, oy, ox, kb, yrow, 2, V);                                 \
      ox += 2;                                                               \
    }                                                                        \
    if (j->ow - ox >= 1)                                                     \
      BLOCK(j, buf, oy, ox, kb, yrow, 1, V);                                 \
  }

/* Eight lanes (AVX2), blocks of six positions by one or two vectors. */
SHALLOW_LOOPS(SHALLOW_TARGET, shallow_block, shallow_channels, SHALLOW_P,
              __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps,
              _mm256_max_ps, _mm256_setzero_ps, _mm256_storeu_ps)

/* Output row oy of the image in buf, into yrow: sixteen channels at a
 * time, then the last eight. */
SHALLOW_TARGET static void shallow_row(const shallow_job *j, const float *buf,
                                       int64_t oy, float *yrow) {
  for (int64_t kb = 0; kb < j->k; kb += 16) {
    if (j->k - kb >= 16)
      shallow_channels(j, buf, oy, kb, yrow, 2);
    else
      shallow_channels(j, buf, oy, kb, yrow, 1);
  }
}

/* The last eight channels of row oy (for shallow_row16). */
SHALLOW_TARGET static void shallow_row_tail(const shallow_job *j,
                                            const float *buf, int64_t oy,
                                            int64_t kb, float *yrow) {
  shallow_channels(j, buf, oy, kb, yrow, 1);
}

/* The forward rows sixteen lanes to a vector, on CPUs with AVX-512: the
 * same chains of multiply-adds, so the bits are the AVX2 loops'. Blocks of
 * SHALLOW_P16 positions by one or two vectors of channels. On an Intel
 * Xeon with AVX-512 (2 cores) the cnn's first layer, pooled, at batch 64:
 * 0.152 -> 0.134 ms. */
#define SHALLOW_P16 8
#define SHALLOW_TARGET16 __attribute__((target("avx512f,fma")))

SHALLOW_LOOPS(SHALLOW_TARGET16, shallow_block16, shallow_channels16,
              SHALLOW_P16, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps,
              _mm512_fmadd_ps, _mm512_max_ps, _mm512_setzero_ps,
              _mm512_storeu_ps)

/* Output row oy: 32 channels at a time, then 16, then the last eight. */
SHALLOW_TARGET16 static void shallow_row16(const shallow_job *j,
                                           const float *buf, int64_t oy,
                                           float *yrow) {
  int64_t kb = 0;

  for (; kb + 32 <= j->k; kb += 32)
    shallow_channels16(j, buf, oy, kb, yrow, 2);
  if (kb + 16 <= j->k) {
    shallow_channels16(j, buf, oy, kb, yrow, 1);
    kb += 16;
  }
  if (kb < j->k)
    shallow_row_tail(j, buf, oy, kb, yrow);
}

/* A forward row, in the widest loops the CPU has. */
static void shallow_any_row(const shallow_job *j, const float *buf,
                            int64_t oy, float *yrow) {
  if (j->wide)
    shallow_row16(j, buf, oy, yrow);
  else
    shallow_row(j, buf, oy, yrow);
}

/* Row pr of the 2x2 max pooling of rows a and b (ow positions of k
 * channels each), channels from c0 (eight at a time). After a ReLU no
 * value is NaN or -0, so the plain maximum gives cpu_max2x2's bits. */
SHALLOW_TARGET static void pool_rows(const float *a, const float *b,
                                     int64_t ow, int64_t k, int64_t c0,
                                     int relu, float *pr) {
  for (int64_t px = 0; px < ow / 2; px++)
    for (int64_t c = c0; c < k; c += 8) {
      const float *a0 = a + 2 * px * k + c, *b0 = b + 2 * px * k + c;
      __m256 v00 = _mm256_loadu_ps(a0), v01 = _mm256_loadu_ps(a0 + k);
      __m256 v10 = _mm256_loadu_ps(b0), v11 = _mm256_loadu_ps(b0 + k);

      _mm256_storeu_ps(pr + px * k + c,
                       relu ? _mm256_max_ps(_mm256_max_ps(v00, v01),
                                            _mm256_max_ps(v10, v11))
                            : cpu_max2x2(v00, v01, v10, v11));
    }
}

/* The same sixteen channels to a vector (AVX-512), then pool_rows for
 * the last eight. */
SHALLOW_TARGET16 static void pool_rows16(const float *a, const float *b,
                                         int64_t ow, int64_t k, int relu,
                                         float *pr) {
  const int64_t k16 = k / 16 * 16;

  for (int64_t px = 0; px < ow / 2; px++)
    for (int64_t c = 0; c < k16; c += 16) {
      const float *a0 = a + 2 * px * k + c, *b0 = b + 2 * px * k + c;
      __m512 v00 = _mm512_loadu_ps(a0), v01 = _mm512_loadu_ps(a0 + k);
      __m512 v10 = _mm512_loadu_ps(b0), v11 = _mm512_loadu_ps(b0 + k);

      _mm512_storeu_ps(pr + px * k + c,
                       relu ? _mm512_max_ps(_mm512_max_ps(v00, v01),
                                            _mm512_max_ps(v10, v11))
                            : cpu_max2x2_16(v00, v01, v10, v11));
    }
  if (k16 < k)
    pool_rows(a, b, ow, k, k16, relu, pr);
}

/* Pooled outputs of rows oy and oy + 1, sixteen channels from kb, from
 * positions ox .. ox + P - 1 (P even) of both rows at once, pooled in
 * registers (AVX-512): twice the accumulators of a one-row block, so the
 * multiply-adds' latency is hidden and each weight vector serves both
 * rows. Each output is the same chain as shallow_block16's, each maximum
 * pool_rows16's. prow: the pooled row's first output. */
SHALLOW_TARGET16 static inline __attribute__((always_inline)) void
pooled_block16(const shallow_job *j, const float *buf, int64_t oy,
               int64_t ox, int64_t kb, float *prow, const int P) {
  const int64_t K = j->k, step = j->sw * j->c, taps = j->taps;
  const float *in0 = buf + (oy * j->sh * j->pw + ox * j->sw) * j->c;
  const float *in1 = in0 + j->sh * j->pw * j->c;
  const float *wk = j->w + kb;
  __m512 a0[SHALLOW_P16], a1[SHALLOW_P16];
  __m512 b = j->bias ? _mm512_loadu_ps(j->bias + kb) : _mm512_setzero_ps();

  SHALLOW_UNROLL for (int p = 0; p < P; p++) a0[p] = a1[p] = b;
  for (int64_t t = 0; t < taps; t++, wk += K) {
    const float *x0 = in0 + j->at[t], *x1 = in1 + j->at[t];
    __m512 wv = _mm512_loadu_ps(wk);

    SHALLOW_UNROLL for (int p = 0; p < P; p++) {
      a0[p] = _mm512_fmadd_ps(_mm512_set1_ps(x0[p * step]), wv, a0[p]);
      a1[p] = _mm512_fmadd_ps(_mm512_set1_ps(x1[p * step]), wv, a1[p]);
    }
  }
  if (j->relu)
    SHALLOW_UNROLL for (int p = 0; p < P; p++) {
      a0[p] = _mm512_max_ps(a0[p], _mm512_setzero_ps());
      a1[p] = _mm512_max_ps(a1[p], _mm512_setzero_ps());
    }
  SHALLOW_UNROLL for (int q = 0; q < P / 2; q++) {
    __m512 v00 = a0[2 * q], v01 = a0[2 * q + 1];
    __m512 v10 = a1[2 * q], v11 = a1[2 * q + 1];
    _mm512_storeu_ps(prow + (ox / 2 + q) * K + kb,
                     j->relu ? _mm512_max_ps(_mm512_max_ps(v00, v01),
                                             _mm512_max_ps(v10, v11))
                             : cpu_max2x2_16(v00, v01, v10, v11));
  }
}

/* Pooled row pr of the image in buf into prow, output channels a multiple
 * of sixteen (AVX-512): blocks of SHALLOW_P16 positions of both rows,
 * then of 4 and 2 (an odd last position no window takes is skipped). */
SHALLOW_TARGET16 static void shallow_pooled_row16(const shallow_job *j,
                                                  const float *buf,
                                                  int64_t pr, float *prow) {
  const int64_t ow2 = j->ow / 2 * 2;

  for (int64_t kb = 0; kb < j->k; kb += 16) {
    int64_t ox = 0;

    for (; ox + SHALLOW_P16 <= ow2; ox += SHALLOW_P16)
      pooled_block16(j, buf, 2 * pr, ox, kb, prow, SHALLOW_P16);
    if (ow2 - ox >= 4) {
      pooled_block16(j, buf, 2 * pr, ox, kb, prow, 4);
      ox += 4;
    }
    if (ow2 - ox >= 2)
      pooled_block16(j, buf, 2 * pr, ox, kb, prow, 2);
  }
}

/* The rows of the forward's loop: the n x oh output rows; pooled alone,
 * the n x oh / 2 rows of the pooling; pooled and stored, the n x (oh + 1)
 * / 2 pairs of output rows (the last one short when oh is odd). */
static int64_t shallow_rows_per_image(const shallow_job *j) {
  return !j->pool ? j->oh : j->y ? (j->oh + 1) / 2 : j->oh / 2;
}

/* cpu_team part t of nt: its pieces of the rows (its own share's first),
 * with its own bordered copy of each image they lie in. */
static void shallow_part(void *arg, int t, int nt) {
  shallow_job *j = arg;
  int64_t per = shallow_rows_per_image(j), img = -1, r, end;
  size_t image = (size_t)(j->ph * j->pw * j->c), row = (size_t)(j->ow * j->k);
  cpu_piece_walk w = cpu_pieces_walk(&j->pieces, t);
  float *buf = NULL;

  (void)nt;
  while (cpu_pieces_take(&w, &r, &end)) {
    if (!buf && !(buf = wfx_host->alloc((image + (j->pool ? 2 * row : 0)) *
                                            sizeof(float),
                                        64))) {
      /* the pieces taken go unwritten: the kernel fails */
      atomic_store(&j->failed, 1);
      return;
    }
    for (; r < end; r++) {
      if (r / per != img) {
        img = r / per;
        border_image(j, img, buf);
      }
      if (j->pool && j->y) {
        /* both rows stored, then pooled while they are in the cache */
        int64_t oy = 2 * (r % per);
        float *a = j->y + (img * j->oh + oy) * (int64_t)row;
        float *pr = j->py + (img * (j->oh / 2) + oy / 2) * (j->ow / 2) * j->k;

        shallow_any_row(j, buf, oy, a);
        if (oy + 1 < j->oh) {
          shallow_any_row(j, buf, oy + 1, a + row);
          if (j->wide)
            pool_rows16(a, a + row, j->ow, j->k, j->relu, pr);
          else
            pool_rows(a, a + row, j->ow, j->k, 0, j->relu, pr);
        }
      } else if (j->pool && j->wide && j->k % 16 == 0) {
        shallow_pooled_row16(j, buf, r % per,
                             j->py + r * (j->ow / 2) * j->k);
      } else if (j->pool) {
        float *two = buf + image;
        shallow_any_row(j, buf, 2 * (r % per), two);
        shallow_any_row(j, buf, 2 * (r % per) + 1, two + row);
        float *pr = j->py + r * (j->ow / 2) * j->k;
        if (j->wide)
          pool_rows16(two, two + row, j->ow, j->k, j->relu, pr);
        else
          pool_rows(two, two + row, j->ow, j->k, 0, j->relu, pr);
      } else {
        shallow_any_row(j, buf, r % per, j->y + r * j->ow * j->k);
      }
    }
  }
  wfx_host->free(buf);
}

/* ---- the filter's gradient ---------------------------------------------- */

/* The most taps of a register block of the filter's gradient: nine (a
 * 3x3 window of one channel) accumulators of eight output channels, or
 * five of sixteen, with a broadcast and the gradient's vectors. */
#define SHALLOW_GT 9
#define SHALLOW_UNROLL_GT _Pragma("GCC unroll 9")

typedef struct shallow_grad_job {
  shallow_job g; /* the geometry; g.y is the output's gradient (n, oh, ow, k) */
  double *part;  /* per part: taps x k sums, part p at part + p * taps * k */
  int parts;
} shallow_grad_job;

/* Adds to part the sums over one image's positions of taps t0 .. t0 + nt
 * - 1 (nt <= GT) by channels kb .. kb + 8 V - 1: the bordered image buf
 * against the image's output gradient dy (oh, ow, k), one multiply-add
 * per tap, channel and position in registers, then to the doubles. GT and
 * V are constants where it is inlined, so acc stays in registers; each
 * broadcast of the image serves V vectors of channels. */
SHALLOW_TARGET static inline __attribute__((always_inline)) void
grad_block(const shallow_job *j, const float *buf, const float *dy,
           double *part, int64_t t0, int64_t nt, int64_t kb, const int GT,
           const int V) {
  const int64_t K = j->k, step = j->sw * j->c;
  int64_t at[SHALLOW_GT];
  __m256 acc[SHALLOW_GT][2];

  /* a block's taps past the last read the first's place; their sums are
   * dropped */
  SHALLOW_UNROLL_GT for (int u = 0; u < GT; u++) {
    at[u] = j->at[t0 + (u < nt ? u : 0)];
    SHALLOW_UNROLL_GT for (int v = 0; v < V; v++) acc[u][v] =
        _mm256_setzero_ps();
  }
  for (int64_t oy = 0; oy < j->oh; oy++) {
    const float *in = buf + oy * j->sh * j->pw * j->c;
    const float *d = dy + oy * j->ow * K + kb;
    for (int64_t ox = 0; ox < j->ow; ox++, in += step, d += K) {
      __m256 dv[2];
      SHALLOW_UNROLL_GT for (int v = 0; v < V; v++) dv[v] =
          _mm256_loadu_ps(d + 8 * v);
      SHALLOW_UNROLL_GT for (int u = 0; u < GT; u++) {
        __m256 xb = _mm256_broadcast_ss(in + at[u]);
        SHALLOW_UNROLL_GT for (int v = 0; v < V; v++) acc[u][v] =
            _mm256_fmadd_ps(xb, dv[v], acc[u][v]);
      }
    }
  }
  SHALLOW_UNROLL_GT for (int u = 0; u < GT; u++) {
    if (u >= nt)
      break;
    SHALLOW_UNROLL_GT for (int v = 0; v < V; v++) {
      double *o = part + (t0 + u) * K + kb + 8 * v;
      __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(acc[u][v]));
      __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(acc[u][v], 1));
      _mm256_storeu_pd(o, _mm256_add_pd(_mm256_loadu_pd(o), lo));
      _mm256_storeu_pd(o + 4, _mm256_add_pd(_mm256_loadu_pd(o + 4), hi));
    }
  }
}

/* Adds one image's terms of the filter gradient to part (taps x k):
 * blocks of five taps by sixteen channels, then of nine taps by the last
 * eight. */
SHALLOW_TARGET static void grad_image(const shallow_job *j, const float *buf,
                                      const float *dy, double *part) {
  const int64_t K = j->k, taps = j->taps;
  int64_t kb = 0;

  for (; kb + 16 <= K; kb += 16)
    for (int64_t t0 = 0; t0 < taps; t0 += 5)
      grad_block(j, buf, dy, part, t0, taps - t0 < 5 ? taps - t0 : 5, kb, 5,
                 2);
  for (; kb < K; kb += 8)
    for (int64_t t0 = 0; t0 < taps; t0 += SHALLOW_GT)
      grad_block(j, buf, dy, part, t0,
                 taps - t0 < SHALLOW_GT ? taps - t0 : SHALLOW_GT, kb,
                 SHALLOW_GT, 1);
}

/* cpu_team part t of nt: the images of parts t, t + nt, ... (the parts
 * depend on the images alone, not on the team's size), each part's sums
 * into its own doubles. */
static void shallow_grad_part(void *arg, int t, int nt) {
  shallow_grad_job *gj = arg;
  shallow_job *j = &gj->g;
  size_t image = (size_t)(j->ph * j->pw * j->c), sums = (size_t)(j->taps * j->k);
  float *buf = NULL;

  for (int p = t; p < gj->parts; p += nt) {
    double *part = gj->part + (size_t)p * sums;
    int64_t i0 = j->n * p / gj->parts, i1 = j->n * (p + 1) / gj->parts;

    memset(part, 0, sums * sizeof *part);
    if (i0 < i1 && !buf && !(buf = wfx_host->alloc(image * sizeof(float), 64))) {
      atomic_store(&j->failed, 1);
      return;
    }
    for (int64_t img = i0; img < i1; img++) {
      border_image(j, img, buf);
      grad_image(j, buf, j->y + img * j->oh * j->ow * j->k, part);
    }
  }
  wfx_host->free(buf);
}
#endif /* SHALLOW_X86 */

#if SHALLOW_X86
/* A job's geometry: sizes, the bordered image's, the taps' offsets in it
 * (rows, columns, channels: the HWIO filter's order); everything else
 * zero. */
static void shallow_geometry(shallow_job *j, const float *x, float *y,
                             int64_t n, int64_t h, int64_t wd, int64_t c,
                             int64_t k, int64_t kh, int64_t kw, int64_t sh,
                             int64_t sw, int64_t oh, int64_t ow,
                             int64_t pad_top, int64_t pad_left) {
  memset(j, 0, sizeof *j);
  j->x = x, j->y = y, j->n = n, j->h = h, j->wd = wd, j->c = c, j->k = k;
  j->kh = kh, j->kw = kw, j->sh = sh, j->sw = sw, j->oh = oh, j->ow = ow;
  j->pt = pad_top, j->pl = pad_left;
  j->ph = (oh - 1) * sh + kh;
  j->pw = (ow - 1) * sw + kw;
  j->taps = kh * kw * c;
  for (int64_t ky = 0, t = 0; ky < kh; ky++)
    for (int64_t kx = 0; kx < kw; kx++)
      for (int64_t ci = 0; ci < c; ci++)
        j->at[t++] = (ky * j->pw + kx) * c + ci;
  atomic_init(&j->failed, 0);
}
#endif

int cpu_shallow_conv(const float *x, const float *w, const float *bias,
                     const opc_fused *fu, float *y, float *py, int64_t n,
                     int64_t h, int64_t wd, int64_t c, int64_t k, int64_t kh,
                     int64_t kw, int64_t sh, int64_t sw, int64_t oh,
                     int64_t ow, int64_t pad_top, int64_t pad_left,
                     wf_status *st) {
#if SHALLOW_X86
  int in_place = fu && (fu->act == OPC_ACT_NONE || fu->act == OPC_ACT_RELU);
  shallow_job j;
  int share;

  if (py && fu && !in_place)
    return wfx_fail(st, WF_INTERNAL,
                    "the shallow loops pool only after ReLU or no activation");
  shallow_geometry(&j, x, y, n, h, wd, c, k, kh, kw, sh, sw, oh, ow, pad_top,
                   pad_left);
  j.w = w;
  j.bias = in_place ? bias : NULL;
  j.relu = in_place && fu->act == OPC_ACT_RELU;
  j.py = py;
  j.pool = py != NULL;
  j.wide = __builtin_cpu_supports("avx512f");
  /* pieces of an image's rows at least, so that one image is its
   * shares */
  share = cpu_loops_share(n * oh * ow * c * k * kh * kw, j.wide);
  cpu_pieces_init(&j.pieces, n * shallow_rows_per_image(&j), 1,
                  shallow_rows_per_image(&j), cpu_team_size(share));
  cpu_team(shallow_part, &j, share);
  if (atomic_load(&j.failed))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a convolution's bordered image "
                    "(%lld x %lld x %lld floats)",
                    (long long)j.ph, (long long)j.pw, (long long)c);
  if (fu && !in_place)
    opc_fused_apply(WF_FLOAT32, y, bias, n * oh * ow, k, 1, fu);
  return 0;
#else
  (void)x, (void)w, (void)bias, (void)fu, (void)py, (void)y, (void)n;
  (void)h;
  (void)wd, (void)c, (void)k, (void)kh, (void)kw, (void)sh, (void)sw;
  (void)oh, (void)ow, (void)pad_top, (void)pad_left;
  return wfx_fail(st, WF_INTERNAL,
                  "the shallow convolution loops are built for x86 only");
#endif
}

int cpu_shallow_filter_grad(const float *x, const float *dy, float *dw,
                            int64_t n, int64_t h, int64_t wd, int64_t c,
                            int64_t k, int64_t kh, int64_t kw, int64_t sh,
                            int64_t sw, int64_t oh, int64_t ow,
                            int64_t pad_top, int64_t pad_left, wf_status *st) {
#if SHALLOW_X86
  int32_t inter, intra;
  shallow_grad_job gj = {.part = NULL};
  shallow_job *j = &gj.g;
  int64_t sums = kh * kw * c * k;
  int share = cpu_loops_share(n * oh * ow * c * k * kh * kw, 0);

  /* g.y is the output's gradient, read only */
  shallow_geometry(j, x, (float *)dy, n, h, wd, c, k, kh, kw, sh, sw, oh, ow,
                   pad_top, pad_left);
  cpu_threads(&inter, &intra);
  gj.parts = share && intra > 1 ? (int)(intra < n ? intra : n) : 1;
  if (!(gj.part = wfx_host->alloc((size_t)gj.parts * (size_t)sums *
                                      sizeof *gj.part,
                                  0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a filter gradient's sums (%d x %lld "
                    "doubles)",
                    gj.parts, (long long)sums);
  cpu_team(shallow_grad_part, &gj, gj.parts > 1);
  if (atomic_load(&j->failed)) {
    wfx_host->free(gj.part);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a convolution's bordered image "
                    "(%lld x %lld x %lld floats)",
                    (long long)j->ph, (long long)j->pw, (long long)c);
  }
  /* the HWIO filter's order is the taps' (rows, columns, channels) by k */
  for (int64_t i = 0; i < sums; i++) {
    double v = gj.part[i];
    for (int p = 1; p < gj.parts; p++)
      v += gj.part[(size_t)p * (size_t)sums + (size_t)i];
    dw[i] = (float)v;
  }
  wfx_host->free(gj.part);
  return 0;
#else
  (void)x, (void)dy, (void)dw, (void)n, (void)h, (void)wd, (void)c, (void)k;
  (void)kh, (void)kw, (void)sh, (void)sw, (void)oh, (void)ow;
  (void)pad_top, (void)pad_left;
  return wfx_fail(st, WF_INTERNAL,
                  "the shallow convolution loops are built for x86 only");
#endif
}
