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
 * thread's and only their pooling is stored.
 *
 * Why: oneDNN 2.6's kernel for this shape (its "first layer" path) ran the
 * cnn's first convolution (1 -> 16 channels, 28x28, SAME, batch 64) at 81
 * GFLOP/s, 40% of this 2-core AVX2 machine's FMA peak, in 177 us. So these
 * loops serve CPUs with AVX2 and FMA and no AVX-512, as the plugin's other
 * own loops do; windows up to 7x7, any stride, no dilation, output
 * channels a multiple of 8.
 *
 * Numerics: each output is the same sum as the direct algorithm's, in the
 * window's order (rows, columns, channels), one rounding per multiply-add. */
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
  float *y;
  int64_t n, h, wd, c, k, kh, kw, sh, sw, oh, ow, pt, pl;
  int64_t ph, pw; /* the bordered image: the rows and columns windows read */
  int64_t taps;   /* kh x kw x c */
  /* where each tap reads in the bordered image, from the window's first
   * element; the taps' weights are consecutive rows of the filter */
  int64_t at[SHALLOW_MAX_K * SHALLOW_MAX_K * SHALLOW_MAX_C];
  int relu, pool;
  atomic_int failed;
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

/* Outputs ox .. ox + P - 1 of row oy, channels kb .. kb + 8 V - 1, from
 * the bordered image buf into yrow (the row's first output). P and V are
 * constants where it is inlined, so acc stays in registers. */
SHALLOW_TARGET static inline __attribute__((always_inline)) void
shallow_block(const shallow_job *j, const float *buf, int64_t oy, int64_t ox,
              int64_t kb, float *yrow, const int P, const int V) {
  const int64_t K = j->k, step = j->sw * j->c, taps = j->taps;
  const float *in = buf + (oy * j->sh * j->pw + ox * j->sw) * j->c;
  const float *wk = j->w + kb;
  const int64_t *at = j->at;
  const int relu = j->relu;
  __m256 acc[SHALLOW_P][2];

  SHALLOW_UNROLL for (int v = 0; v < V; v++) {
    __m256 b = j->bias ? _mm256_loadu_ps(j->bias + kb + 8 * v)
                       : _mm256_setzero_ps();
    SHALLOW_UNROLL for (int p = 0; p < P; p++) acc[p][v] = b;
  }
  /* one loop over the window's taps (rows, columns, channels), whose
   * weights are consecutive rows of the filter */
  for (int64_t t = 0; t < taps; t++, wk += K) {
    const float *x = in + at[t];
    __m256 wv[2];
    SHALLOW_UNROLL for (int v = 0; v < V; v++)
      wv[v] = _mm256_loadu_ps(wk + 8 * v);
    SHALLOW_UNROLL for (int p = 0; p < P; p++) {
      __m256 xb = _mm256_broadcast_ss(x + p * step);
      SHALLOW_UNROLL for (int v = 0; v < V; v++)
        acc[p][v] = _mm256_fmadd_ps(xb, wv[v], acc[p][v]);
    }
  }
  SHALLOW_UNROLL for (int p = 0; p < P; p++) {
    float *o = yrow + (ox + p) * K + kb;
    SHALLOW_UNROLL for (int v = 0; v < V; v++) {
      __m256 r = acc[p][v];
      if (relu)
        r = _mm256_max_ps(r, _mm256_setzero_ps());
      _mm256_storeu_ps(o + 8 * v, r);
    }
  }
}

/* Channels kb .. kb + 8 V - 1 of output row oy: blocks of SHALLOW_P
 * positions, then one of the positions left. */
SHALLOW_TARGET static inline __attribute__((always_inline)) void
shallow_channels(const shallow_job *j, const float *buf, int64_t oy,
                 int64_t kb, float *yrow, const int V) {
  int64_t ox = 0;

  for (; ox + SHALLOW_P <= j->ow; ox += SHALLOW_P)
    shallow_block(j, buf, oy, ox, kb, yrow, SHALLOW_P, V);
  switch (j->ow - ox) {
  case 5: shallow_block(j, buf, oy, ox, kb, yrow, 5, V); break;
  case 4: shallow_block(j, buf, oy, ox, kb, yrow, 4, V); break;
  case 3: shallow_block(j, buf, oy, ox, kb, yrow, 3, V); break;
  case 2: shallow_block(j, buf, oy, ox, kb, yrow, 2, V); break;
  case 1: shallow_block(j, buf, oy, ox, kb, yrow, 1, V); break;
  default: break;
  }
}

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

/* Row pr of the 2x2 max pooling of rows a and b (ow positions of k
 * channels each). */
SHALLOW_TARGET static void pool_rows(const float *a, const float *b,
                                     int64_t ow, int64_t k, float *pr) {
  for (int64_t px = 0; px < ow / 2; px++)
    for (int64_t c = 0; c < k; c += 8) {
      const float *a0 = a + 2 * px * k + c, *b0 = b + 2 * px * k + c;
      _mm256_storeu_ps(pr + px * k + c,
                       cpu_max2x2(_mm256_loadu_ps(a0), _mm256_loadu_ps(a0 + k),
                                  _mm256_loadu_ps(b0),
                                  _mm256_loadu_ps(b0 + k)));
    }
}

/* cpu_team part t of nt: its share of the n x oh output rows (pooled: of
 * the n x oh / 2 rows of the pooling), with its own bordered copy of each
 * image they lie in. */
static void shallow_part(void *arg, int t, int nt) {
  shallow_job *j = arg;
  int64_t per = j->pool ? j->oh / 2 : j->oh, rows = j->n * per;
  int64_t r = rows * t / nt, end = rows * (t + 1) / nt, img = -1;
  size_t image = (size_t)(j->ph * j->pw * j->c), row = (size_t)(j->ow * j->k);

  if (r >= end)
    return;
  float *buf = wfx_host->alloc((image + (j->pool ? 2 * row : 0)) *
                                   sizeof(float),
                               64);
  if (!buf) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (; r < end; r++) {
    if (r / per != img) {
      img = r / per;
      border_image(j, img, buf);
    }
    if (j->pool) {
      float *two = buf + image;
      shallow_row(j, buf, 2 * (r % per), two);
      shallow_row(j, buf, 2 * (r % per) + 1, two + row);
      pool_rows(two, two + row, j->ow, j->k,
                j->y + r * (j->ow / 2) * j->k);
    } else {
      shallow_row(j, buf, r % per, j->y + r * j->ow * j->k);
    }
  }
  wfx_host->free(buf);
}
#endif /* SHALLOW_X86 */

int cpu_shallow_conv(const float *x, const float *w, const float *bias,
                     const opc_fused *fu, int pool, float *y, int64_t n,
                     int64_t h, int64_t wd, int64_t c, int64_t k, int64_t kh,
                     int64_t kw, int64_t sh, int64_t sw, int64_t oh,
                     int64_t ow, int64_t pad_top, int64_t pad_left,
                     wf_status *st) {
#if SHALLOW_X86
  int in_place = fu && (fu->act == OPC_ACT_NONE || fu->act == OPC_ACT_RELU);
  shallow_job j = {.x = x,
                   .w = w,
                   .bias = in_place ? bias : NULL,
                   .y = y,
                   .n = n,
                   .h = h,
                   .wd = wd,
                   .c = c,
                   .k = k,
                   .kh = kh,
                   .kw = kw,
                   .sh = sh,
                   .sw = sw,
                   .oh = oh,
                   .ow = ow,
                   .pt = pad_top,
                   .pl = pad_left,
                   .ph = (oh - 1) * sh + kh,
                   .pw = (ow - 1) * sw + kw,
                   .taps = kh * kw * c,
                   .relu = in_place && fu->act == OPC_ACT_RELU,
                   .pool = pool};

  if (pool && fu && !in_place)
    return wfx_fail(st, WF_INTERNAL,
                    "the shallow loops pool only after ReLU or no activation");
  for (int64_t ky = 0, t = 0; ky < kh; ky++)
    for (int64_t kx = 0; kx < kw; kx++)
      for (int64_t ci = 0; ci < c; ci++)
        j.at[t++] = (ky * j.pw + kx) * c + ci;

  atomic_init(&j.failed, 0);
  /* the direct kernel's rule for sharing (cpu_conv.c: a vector of
   * multiply-adds one unit) */
  cpu_team(shallow_part, &j, n * oh * ow * c * k * kh * kw / 8 >=
                                 WF_DNNL_SMALL_WORK);
  if (atomic_load(&j.failed))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a convolution's bordered image "
                    "(%lld x %lld x %lld floats)",
                    (long long)j.ph, (long long)j.pw, (long long)c);
  if (fu && !in_place)
    opc_fused_apply(WF_FLOAT32, y, bias, n * oh * ow, k, 1, fu);
  return 0;
#else
  (void)x, (void)w, (void)bias, (void)fu, (void)pool, (void)y, (void)n;
  (void)h;
  (void)wd, (void)c, (void)k, (void)kh, (void)kw, (void)sh, (void)sw;
  (void)oh, (void)ow, (void)pad_top, (void)pad_left;
  return wfx_fail(st, WF_INTERNAL,
                  "the shallow convolution loops are built for x86 only");
#endif
}
