/* plugins/devices/cuda/cuda_nn.cu — device code of cuda_nn.c: MaxPool and
 * AvgPool and their gradients (one thread per output or input element,
 * accumulating in the CPU's order, so results are the CPU's), softmax,
 * log-softmax, their gradients and the cross-entropy losses (one block
 * per row, in double), batch normalisation forward and backward (one
 * block per channel, in double) and the 4-D relayout that pads, crops and
 * permutes tensors for cuDNN.
 *
 * Convolutions themselves are cuDNN's (cuda_nn.c); nothing here moves
 * memory between host and device. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

#include <math.h>

/* ---- pools --------------------------------------------------------------- */

/* The window of output (oh, ow) clipped to the input. */
__device__ static inline void window(const cuda_pool_geom &g, int64_t oh,
                                     int64_t ow, int64_t *h0, int64_t *h1,
                                     int64_t *w0, int64_t *w1) {
  int64_t hs = oh * g.sh - g.pt, ws = ow * g.sw - g.pl;
  *h0 = hs < 0 ? 0 : hs;
  *h1 = hs + g.kh < g.h ? hs + g.kh : g.h;
  *w0 = ws < 0 ? 0 : ws;
  *w1 = ws + g.kw < g.w ? ws + g.kw : g.w;
}

/* The element MaxPool picks in window (n, oh, ow, c): the first of tied
 * maxima, the last NaN (-1 for an empty window). */
template <typename T>
__device__ static int64_t max_pick(const cuda_pool_geom &g, const T *x,
                                   int64_t n, int64_t oh, int64_t ow,
                                   int64_t c) {
  int64_t h0, h1, w0, w1, best = -1, base = n * g.xs[0] + c * g.xs[3];
  T m = 0;
  window(g, oh, ow, &h0, &h1, &w0, &w1);
  for (int64_t ih = h0; ih < h1; ih++)
    for (int64_t iw = w0; iw < w1; iw++) {
      int64_t at = base + ih * g.xs[1] + iw * g.xs[2];
      T v = x[at];
      if (best < 0 || v > m || v != v) {
        m = v;
        best = at;
      }
    }
  return best;
}

template <typename T>
__global__ void pool_k(int max, cuda_pool_geom g, const T *x, T *y) {
  int64_t total = g.n * g.oh * g.ow * g.c;
  CU_FOR(i, total) {
    int64_t c = i % g.c, r = i / g.c;
    int64_t ow = r % g.ow, oh = (r / g.ow) % g.oh, n = r / (g.ow * g.oh);
    int64_t at = n * g.ys[0] + oh * g.ys[1] + ow * g.ys[2] + c * g.ys[3];
    if (max) {
      int64_t p = max_pick<T>(g, x, n, oh, ow, c);
      y[at] = p >= 0 ? x[p] : (T)0;
    } else {
      int64_t h0, h1, w0, w1, count, base = n * g.xs[0] + c * g.xs[3];
      double s = 0;
      window(g, oh, ow, &h0, &h1, &w0, &w1);
      count = (h1 - h0) * (w1 - w0);
      for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++)
          s += x[base + ih * g.xs[1] + iw * g.xs[2]];
      y[at] = (T)(count > 0 ? s / (double)count : 0);
    }
  }
}

/* Outputs whose window covers input row ih: [*lo, *hi). */
__device__ static inline void covering(int64_t i, int64_t k, int64_t s,
                                       int64_t pad, int64_t out, int64_t *lo,
                                       int64_t *hi) {
  /* o s - pad <= i < o s - pad + k */
  int64_t a = i + pad - k + 1, b = i + pad;
  int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t h = b < 0 ? -1 : b / s;
  *lo = l;
  *hi = h + 1 < out ? h + 1 : out;
}

/* One thread per input element, summing the windows that route to it in
 * the CPU's order (n, oh, ow ascending). */
template <typename T>
__global__ void pool_grad_k(int max, cuda_pool_geom g, const T *x,
                            const T *gr, T *dx) {
  int64_t total = g.n * g.h * g.w * g.c;
  CU_FOR(i, total) {
    int64_t c = i % g.c, r = i / g.c;
    int64_t iw = r % g.w, ih = (r / g.w) % g.h, n = r / (g.w * g.h);
    int64_t me = n * g.xs[0] + ih * g.xs[1] + iw * g.xs[2] + c * g.xs[3];
    int64_t oh0, oh1, ow0, ow1;
    double acc = 0;
    covering(ih, g.kh, g.sh, g.pt, g.oh, &oh0, &oh1);
    covering(iw, g.kw, g.sw, g.pl, g.ow, &ow0, &ow1);
    for (int64_t oh = oh0; oh < oh1; oh++)
      for (int64_t ow = ow0; ow < ow1; ow++) {
        T gv = gr[n * g.ys[0] + oh * g.ys[1] + ow * g.ys[2] + c * g.ys[3]];
        if (max) {
          if (max_pick<T>(g, x, n, oh, ow, c) == me)
            acc += gv;
        } else {
          int64_t h0, h1, w0, w1, count;
          window(g, oh, ow, &h0, &h1, &w0, &w1);
          count = (h1 - h0) * (w1 - w0);
          if (count > 0)
            acc += gv / (double)count;
        }
      }
    dx[me] = (T)acc;
  }
}

/* ---- softmax and losses -------------------------------------------------- */

/* Per row: m = max (NaN skipped), s = sum exp(x - m). */
template <typename T>
__device__ static void row_stats(const T *x, int64_t c, double *shared,
                                 double *m, double *s) {
  double mx = -INFINITY, sum = 0;
  CU_FOR_THREAD(j, c) mx = cu_max_skip_nan(mx, (double)x[j]);
  mx = cu_block_max(mx, shared);
  CU_FOR_THREAD(j, c) sum += exp((double)x[j] - mx);
  *s = cu_block_sum(sum, shared);
  *m = mx;
}

template <typename T>
__global__ void softmax_k(int want_log, int64_t rows, int64_t c, const T *x,
                          T *y) {
  __shared__ double shared[32];
  CU_FOR_BLOCK(r, rows) {
    const T *xr = x + r * c;
    T *yr = y + r * c;
    double m, s, ls;
    row_stats<T>(xr, c, shared, &m, &s);
    ls = log(s);
    CU_FOR_THREAD(j, c)
    yr[j] = (T)(want_log ? (double)xr[j] - m - ls
                         : exp((double)xr[j] - m) / s);
  }
}

template <typename T>
__global__ void softmax_grad_k(int want_log, int64_t rows, int64_t c,
                               const T *y, const T *dy, T *dx) {
  __shared__ double shared[32];
  CU_FOR_BLOCK(r, rows) {
    const T *yr = y + r * c, *dyr = dy + r * c;
    T *dxr = dx + r * c;
    double s = 0;
    CU_FOR_THREAD(j, c)
    s += want_log ? (double)dyr[j] : (double)dyr[j] * yr[j];
    s = cu_block_sum(s, shared);
    CU_FOR_THREAD(j, c)
    dxr[j] = (T)(want_log ? dyr[j] - exp((double)yr[j]) * s
                          : yr[j] * ((double)dyr[j] - s));
  }
}

template <typename T>
__global__ void xent_k(int64_t rows, int64_t c, const T *x, const T *lab,
                       const int64_t *cls, T *loss, T *back) {
  __shared__ double shared[32];
  CU_FOR_BLOCK(r, rows) {
    const T *xr = x + r * c;
    T *br = back + r * c;
    double m, s, ls, l = 0;
    row_stats<T>(xr, c, shared, &m, &s);
    ls = log(s);
    CU_FOR_THREAD(j, c) {
      double yv = cls ? (double)(j == cls[r]) : (double)lab[r * c + j];
      if (yv != 0)
        l -= yv * ((double)xr[j] - m - ls);
      br[j] = (T)(exp((double)xr[j] - m) / s - yv);
    }
    l = cu_block_sum(l, shared);
    if (threadIdx.x == 0)
      loss[r] = (T)l;
  }
}

/* ---- batch normalisation ------------------------------------------------- */

template <typename T>
__global__ void bn_k(int64_t outer, int64_t c, int64_t inner, int training,
                     double eps, const T *x, const T *scale, const T *offset,
                     const T *mean, const T *var, T *y, T *bm, T *bv) {
  __shared__ double shared[32];
  int64_t cnt = outer * inner;
  CU_FOR_BLOCK(k, c) {
    double m, v, mul;
    if (training) {
      double s = 0, q = 0;
      CU_FOR_THREAD(e, cnt)
      s += x[((e / inner) * c + k) * inner + e % inner];
      s = cu_block_sum(s, shared);
      m = cnt > 0 ? s / (double)cnt : NAN;
      CU_FOR_THREAD(e, cnt) {
        double d = x[((e / inner) * c + k) * inner + e % inner] - m;
        q += d * d;
      }
      q = cu_block_sum(q, shared);
      v = cnt > 0 ? q / (double)cnt : NAN;
    } else {
      m = mean[k];
      v = var[k];
    }
    if (threadIdx.x == 0) {
      bm[k] = (T)m;
      bv[k] = (T)v;
    }
    mul = scale[k] / sqrt(v + eps);
    CU_FOR_THREAD(e, cnt) {
      int64_t j = ((e / inner) * c + k) * inner + e % inner;
      y[j] = (T)((x[j] - m) * mul + offset[k]);
    }
  }
}

template <typename T>
__global__ void bn_grad_k(int64_t outer, int64_t c, int64_t inner,
                          int training, double eps, const T *dy, const T *x,
                          const T *scale, const T *mean, const T *var,
                          const T *dmean, const T *dvar, T *dx, T *ds,
                          T *doff) {
  __shared__ double shared[32];
  int64_t n = outer * inner;
  double cnt = (double)n;
  CU_FOR_BLOCK(k, c) {
    double m = mean[k], r = 1.0 / sqrt((double)var[k] + eps);
    double sdy = 0, sdyx = 0;
    CU_FOR_THREAD(e, n) {
      int64_t j = ((e / inner) * c + k) * inner + e % inner;
      sdy += dy[j];
      sdyx += dy[j] * (x[j] - m) * r;
    }
    sdy = cu_block_sum(sdy, shared);
    sdyx = cu_block_sum(sdyx, shared);
    if (threadIdx.x == 0) {
      ds[k] = (T)sdyx;
      doff[k] = (T)sdy;
    }
    CU_FOR_THREAD(e, n) {
      int64_t j = ((e / inner) * c + k) * inner + e % inner;
      double xhat = (x[j] - m) * r, gv;
      if (training)
        gv = scale[k] * r * (dy[j] - sdy / cnt - xhat * sdyx / cnt) +
             dmean[k] / cnt + dvar[k] * 2.0 * (x[j] - m) / cnt;
      else
        gv = dy[j] * scale[k] * r;
      dx[j] = (T)gv;
    }
  }
}

/* ---- relayout ------------------------------------------------------------ */

template <typename T>
__global__ void relayout_k(cuda_relayout r, T *dst, const T *src) {
  int64_t total = r.dims[0] * r.dims[1] * r.dims[2] * r.dims[3];
  CU_FOR(i, total) {
    int64_t rest = i, doff = 0, soff = 0;
    int inside = 1;
    for (int d = 3; d >= 0; d--) {
      int64_t c = rest % r.dims[d], sc;
      rest /= r.dims[d];
      doff += c * r.dstride[d];
      sc = c - r.off[d];
      if (sc < 0 || sc >= r.sdims[d])
        inside = 0;
      soff += sc * r.sstride[d];
    }
    dst[doff] = inside ? src[soff] : (T)0;
  }
}

/* ---- launchers ----------------------------------------------------------- */

#define DISPATCH_FLOAT(type, call_f, call_d)                                   \
  do {                                                                         \
    if ((type) == WF_CUDA_F32) {                                               \
      call_f;                                                                  \
    } else if ((type) == WF_CUDA_F64) {                                        \
      call_d;                                                                  \
    } else                                                                     \
      return cudaErrorInvalidValue;                                            \
    return cudaGetLastError();                                                 \
  } while (0)

extern "C" cudaError_t cuda_pool(int max, int type,
                                     const cuda_pool_geom *g,
                                     const void *x, void *y,
                                     cudaStream_t stream) {
  int64_t n = g->n * g->oh * g->ow * g->c;
  if (n == 0)
    return cudaSuccess;
  DISPATCH_FLOAT(type,
                 (pool_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     max, *g, (const float *)x, (float *)y)),
                 (pool_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     max, *g, (const double *)x, (double *)y)));
}

extern "C" cudaError_t cuda_pool_grad(int max, int type,
                                          const cuda_pool_geom *g,
                                          const void *x, const void *grad,
                                          void *dx, cudaStream_t stream) {
  int64_t n = g->n * g->h * g->w * g->c;
  if (n == 0)
    return cudaSuccess;
  if (g->sh < 1 || g->sw < 1)
    return cudaErrorInvalidValue;
  DISPATCH_FLOAT(type,
                 (pool_grad_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     max, *g, (const float *)x, (const float *)grad,
                     (float *)dx)),
                 (pool_grad_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     max, *g, (const double *)x, (const double *)grad,
                     (double *)dx)));
}

extern "C" cudaError_t cuda_softmax(int want_log, int type, int64_t rows,
                                        int64_t c, const void *x, void *y,
                                        cudaStream_t stream) {
  if (rows == 0 || c == 0)
    return cudaSuccess;
  DISPATCH_FLOAT(type,
                 (softmax_k<float>
                  <<<cu_grid_items(rows), CU_THREADS, 0, stream>>>(
                      want_log, rows, c, (const float *)x, (float *)y)),
                 (softmax_k<double>
                  <<<cu_grid_items(rows), CU_THREADS, 0, stream>>>(
                      want_log, rows, c, (const double *)x, (double *)y)));
}

extern "C" cudaError_t cuda_softmax_grad(int want_log, int type,
                                             int64_t rows, int64_t c,
                                             const void *y, const void *dy,
                                             void *dx, cudaStream_t stream) {
  if (rows == 0 || c == 0)
    return cudaSuccess;
  DISPATCH_FLOAT(type,
                 (softmax_grad_k<float>
                  <<<cu_grid_items(rows), CU_THREADS, 0, stream>>>(
                      want_log, rows, c, (const float *)y,
                      (const float *)dy, (float *)dx)),
                 (softmax_grad_k<double>
                  <<<cu_grid_items(rows), CU_THREADS, 0, stream>>>(
                      want_log, rows, c, (const double *)y,
                      (const double *)dy, (double *)dx)));
}

extern "C" cudaError_t cuda_xent(int type, int64_t rows, int64_t c,
                                     const void *x, const void *labels,
                                     const int64_t *cls, void *loss,
                                     void *back, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  DISPATCH_FLOAT(type,
                 (xent_k<float><<<cu_grid_items(rows), CU_THREADS, 0,
                                  stream>>>(rows, c, (const float *)x,
                                            (const float *)labels, cls,
                                            (float *)loss, (float *)back)),
                 (xent_k<double><<<cu_grid_items(rows), CU_THREADS, 0,
                                   stream>>>(rows, c, (const double *)x,
                                             (const double *)labels, cls,
                                             (double *)loss,
                                             (double *)back)));
}

extern "C" cudaError_t cuda_batch_norm(
    int type, int64_t outer, int64_t c, int64_t inner, int training,
    double eps, const void *x, const void *scale, const void *offset,
    const void *mean, const void *var, void *y, void *bm, void *bv,
    cudaStream_t stream) {
  if (c == 0)
    return cudaSuccess;
  if (inner < 1)
    inner = 1; /* an empty x: no element is visited */
  DISPATCH_FLOAT(
      type,
      (bn_k<float><<<cu_grid_items(c), CU_THREADS, 0, stream>>>(
          outer, c, inner, training, eps, (const float *)x,
          (const float *)scale, (const float *)offset, (const float *)mean,
          (const float *)var, (float *)y, (float *)bm, (float *)bv)),
      (bn_k<double><<<cu_grid_items(c), CU_THREADS, 0, stream>>>(
          outer, c, inner, training, eps, (const double *)x,
          (const double *)scale, (const double *)offset,
          (const double *)mean, (const double *)var, (double *)y,
          (double *)bm, (double *)bv)));
}

extern "C" cudaError_t cuda_batch_norm_grad(
    int type, int64_t outer, int64_t c, int64_t inner, int training,
    double eps, const void *dy, const void *x, const void *scale,
    const void *mean, const void *var, const void *dmean, const void *dvar,
    void *dx, void *ds, void *doff, cudaStream_t stream) {
  if (c == 0)
    return cudaSuccess;
  if (inner < 1)
    inner = 1;
  DISPATCH_FLOAT(
      type,
      (bn_grad_k<float><<<cu_grid_items(c), CU_THREADS, 0, stream>>>(
          outer, c, inner, training, eps, (const float *)dy,
          (const float *)x, (const float *)scale, (const float *)mean,
          (const float *)var, (const float *)dmean, (const float *)dvar,
          (float *)dx, (float *)ds, (float *)doff)),
      (bn_grad_k<double><<<cu_grid_items(c), CU_THREADS, 0, stream>>>(
          outer, c, inner, training, eps, (const double *)dy,
          (const double *)x, (const double *)scale, (const double *)mean,
          (const double *)var, (const double *)dmean, (const double *)dvar,
          (double *)dx, (double *)ds, (double *)doff)));
}

extern "C" cudaError_t cuda_relayout4(int type, const cuda_relayout *r,
                                          void *dst, const void *src,
                                          cudaStream_t stream) {
  int64_t n = r->dims[0] * r->dims[1] * r->dims[2] * r->dims[3];
  if (n == 0)
    return cudaSuccess;
  DISPATCH_FLOAT(type,
                 (relayout_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     *r, (float *)dst, (const float *)src)),
                 (relayout_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
                     *r, (double *)dst, (const double *)src)));
}
