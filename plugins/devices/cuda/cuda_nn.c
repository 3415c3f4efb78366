/* plugins/devices/cuda/cuda_nn.c — the nn ops on the GPU: Conv2D,
 * Conv2DBackpropInput and Conv2DBackpropFilter with cuDNN; MaxPool,
 * AvgPool, their gradients, Softmax, LogSoftmax, their gradients, the two
 * softmax cross-entropy losses, BatchNorm, BatchNormGrad, BiasAdd and
 * BiasAddGrad with the plugin's own device code (cuda_nn.cu,
 * cuda_reduce.cu), for float32 and float64.
 *
 * Output shapes are the ops' own (kernel_output_shape: their shape
 * functions, which also refuse what the ops refuse), and the window
 * geometry is plugins/numerics/window.h's (nn_window_parse,
 * nn_window_dim: the one copy ops-nn uses), so every convolution and pool
 * pads and sizes as the CPU's. cuDNN pads
 * symmetrically and reads filters as (C_out, C, KH, KW) or (C_out, KH,
 * KW, C): asymmetric padding (SAME with an odd total, EXPLICIT) is made
 * symmetric by copying the input into a padded buffer, filters are
 * permuted from weft's (KH, KW, C, C_out), and float64 runs in NCHW. The
 * pools, softmax and batch normalisation keep the CPU's exact rules
 * (AvgPool's count of elements inside the input, MaxPoolGrad's pick of
 * the first maximum and the last NaN, biased batch variance, any epsilon
 * >= 0), which cuDNN's do not, so they are not cuDNN's. Dropout and the
 * fused ops stay on the CPU. */
#include <config.h>

#include "cuda_work.h"
#include "labels.h"
#include "window.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cuDNN handle ---------------------------------------------------- */

/* Guards every device's cudnn member and serialises the calls that use
 * it: a cuDNN handle must not be used by two threads at once. */
static pthread_mutex_t cudnn_mu = PTHREAD_MUTEX_INITIALIZER;

static int cudnn_fail(wf_status *st, const cudev *dev, const char *call,
                      cudnnStatus_t s) {
  return wfx_fail(st, WF_INTERNAL, "%s: %s failed (%s)", dev->label, call,
                  cudnnGetErrorString(s));
}

/* Locks cudnn_mu and makes dev's handle if it has none; on failure
 * unlocks and sets st. */
static int cudnn_enter(cudev *dev, wf_status *st) {
  cudnnStatus_t s;

  pthread_mutex_lock(&cudnn_mu);
  if (dev->cudnn)
    return 0;
  if ((s = cudnnCreate(&dev->cudnn)) != CUDNN_STATUS_SUCCESS) {
    dev->cudnn = NULL;
    pthread_mutex_unlock(&cudnn_mu);
    return cudnn_fail(st, dev, "cudnnCreate", s);
  }
  if ((s = cudnnSetStream(dev->cudnn, dev->stream)) != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(dev->cudnn);
    dev->cudnn = NULL;
    pthread_mutex_unlock(&cudnn_mu);
    return cudnn_fail(st, dev, "cudnnSetStream", s);
  }
  return 0;
}

static void cudnn_leave(void) { pthread_mutex_unlock(&cudnn_mu); }

void cuda_nn_release(cudev *dev) {
  pthread_mutex_lock(&cudnn_mu);
  if (dev->cudnn) {
    cudnnDestroy(dev->cudnn);
    dev->cudnn = NULL;
  }
  pthread_mutex_unlock(&cudnn_mu);
}

/* ---- convolutions -------------------------------------------------------- */

enum { CONV_FWD = 0, CONV_BWD_DATA = 1, CONV_BWD_FILTER = 2 };

/* Algorithms chosen per shape, kept in the kernel's state. */
#define ALGO_SLOTS 8
#define KEY_LEN 8

typedef struct algo_entry {
  int64_t key[KEY_LEN];
  int algo;
  cudnnMathType_t math;
  size_t workspace;
} algo_entry;

typedef struct conv_state {
  pthread_mutex_t mu;
  algo_entry e[ALGO_SLOTS];
  int n, next; /* entries used; the one replaced next */
} conv_state;

static int conv_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  conv_state *s = wfx_host->alloc(sizeof *s, 0);

  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the convolution's state");
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  *state = s;
  return 0;
}

static void conv_destroy(void *state) {
  conv_state *s = state;

  if (!s)
    return;
  pthread_mutex_destroy(&s->mu);
  wfx_host->free(s);
}

static int algo_lookup(conv_state *s, const int64_t *key, algo_entry *out) {
  int found = 0;

  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->n && !found; i++)
    if (memcmp(s->e[i].key, key, sizeof s->e[i].key) == 0) {
      *out = s->e[i];
      found = 1;
    }
  pthread_mutex_unlock(&s->mu);
  return found;
}

static void algo_store(conv_state *s, const algo_entry *e) {
  pthread_mutex_lock(&s->mu);
  if (s->n < ALGO_SLOTS)
    s->e[s->n++] = *e;
  else {
    s->e[s->next] = *e;
    s->next = (s->next + 1) % ALGO_SLOTS;
  }
  pthread_mutex_unlock(&s->mu);
}

/* The largest workspace an algorithm may ask for. */
#define MAX_WORKSPACE ((size_t)1 << 30)

/* Picks the first algorithm of cuDNN's heuristic list that works, does not
 * use tensor-op (TF32) math and fits MAX_WORKSPACE. */
#define PICK(perf, count, e)                                                   \
  do {                                                                         \
    for (int i_ = 0; i_ < (count); i_++) {                                     \
      if ((perf)[i_].status != CUDNN_STATUS_SUCCESS ||                         \
          (perf)[i_].mathType == CUDNN_TENSOR_OP_MATH ||                       \
          (perf)[i_].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||      \
          (perf)[i_].memory > MAX_WORKSPACE)                                   \
        continue;                                                              \
      (e)->algo = (int)(perf)[i_].algo;                                        \
      (e)->math = (perf)[i_].mathType;                                         \
      (e)->workspace = (perf)[i_].memory;                                      \
      found = 1;                                                               \
      break;                                                                   \
    }                                                                          \
  } while (0)

/* Everything one convolution call needs, in elements. */
typedef struct conv_geom {
  int64_t n, h, w, c, kh, kw, co, oh, ow;
  int64_t ph, pw;               /* cuDNN's symmetric padding */
  int64_t ehb, eha, ewb, ewa;   /* extra padding copied in: h/w before/after */
  int64_t hp, wp;               /* the padded input's height and width */
  int nchw;                     /* weft's data_format */
  int cnchw;                    /* the layout cuDNN runs in */
  nn_window win;
} conv_geom;

/* The geometry of xs (N, H, W, C or N, C, H, W) convolved with fs (KH, KW,
 * C, C_out), shapes the op's shape function accepted; *out gets the
 * output shape. */
static int conv_dims(const wf_shape *xs, const wf_shape *fs,
                     const nn_window *w, wf_shape *out, conv_geom *g,
                     int32_t dtype, wf_status *st) {
  int ix[4];
  int64_t x[4], oh, ow, pt, pl, pb, pr;

  nn_nhwc_index(w->nchw, ix);
  for (int i = 0; i < 4; i++)
    x[i] = xs->dims[ix[i]];
  if (nn_window_dim(w, 0, x[1], fs->dims[0], &oh, &pt, st) ||
      nn_window_dim(w, 1, x[2], fs->dims[1], &ow, &pl, st))
    return wfx_code(st);
  wfx_shape_set_scalar(out);
  out->rank = 4;
  out->dims[ix[0]] = x[0];
  out->dims[ix[1]] = oh;
  out->dims[ix[2]] = ow;
  out->dims[ix[3]] = fs->dims[3];
  memset(g, 0, sizeof *g);
  g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
  g->kh = fs->dims[0], g->kw = fs->dims[1], g->co = fs->dims[3];
  g->oh = oh, g->ow = ow;
  g->nchw = w->nchw;
  g->cnchw = dtype == WF_FLOAT64 ? 1 : w->nchw;
  g->win = *w;
  /* The padding after that the last window reaches (negative: input rows
   * no window reads). */
  pb = (oh - 1) * w->stride[0] + (g->kh - 1) * w->dilation[0] + 1 - g->h - pt;
  pr = (ow - 1) * w->stride[1] + (g->kw - 1) * w->dilation[1] + 1 - g->w - pl;
  if (pb < 0)
    pb = 0;
  if (pr < 0)
    pr = 0;
  g->ph = pt < pb ? pt : pb;
  g->pw = pl < pr ? pl : pr;
  g->ehb = pt - g->ph, g->eha = pb - g->ph;
  g->ewb = pl - g->pw, g->ewa = pr - g->pw;
  g->hp = g->h + g->ehb + g->eha;
  g->wp = g->w + g->ewb + g->ewa;
  return 0;
}

/* Element strides of the logical (N, C, H, W) in a layout. */
static void act_strides(int nchw, int64_t c, int64_t h, int64_t w,
                        int64_t s[4]) {
  if (nchw) {
    s[0] = c * h * w, s[1] = h * w, s[2] = w, s[3] = 1;
  } else {
    s[0] = h * w * c, s[1] = 1, s[2] = w * c, s[3] = c;
  }
}

/* Element strides of the logical filter (K, C, R, S): weft's (KH, KW, C,
 * C_out) for layout -1, cuDNN's KCRS (1) or KRSC (0). */
static void filter_strides(int layout, const conv_geom *g, int64_t s[4]) {
  if (layout < 0) {
    s[0] = 1, s[1] = g->co, s[2] = g->kw * g->c * g->co, s[3] = g->c * g->co;
  } else if (layout) {
    s[0] = g->c * g->kh * g->kw, s[1] = g->kh * g->kw, s[2] = g->kw, s[3] = 1;
  } else {
    s[0] = g->kh * g->kw * g->c, s[1] = 1, s[2] = g->kw * g->c, s[3] = g->c;
  }
}

static int relayout(cuw *w, int type, void *dst, const int64_t dims[4],
                    const int64_t dstride[4], const void *src,
                    const int64_t sdims[4], const int64_t sstride[4],
                    const int64_t off[4], wf_status *st) {
  cuda_relayout r;

  for (int i = 0; i < 4; i++) {
    r.dims[i] = dims[i];
    r.dstride[i] = dstride[i];
    r.sdims[i] = sdims[i];
    r.sstride[i] = sstride[i];
    r.off[i] = off[i];
  }
  return cuw_check(w, "the relayout kernel",
                       cuda_relayout4(type, &r, dst, src, w->dev->stream),
                       st);
}

/* Descriptors of one call. */
typedef struct conv_desc {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t conv;
} conv_desc;

static void conv_desc_free(conv_desc *d) {
  if (d->x)
    cudnnDestroyTensorDescriptor(d->x);
  if (d->y)
    cudnnDestroyTensorDescriptor(d->y);
  if (d->f)
    cudnnDestroyFilterDescriptor(d->f);
  if (d->conv)
    cudnnDestroyConvolutionDescriptor(d->conv);
}

static int conv_desc_make(const cudev *dev, const conv_geom *g, int type,
                          conv_desc *d, wf_status *st) {
  cudnnDataType_t dt = type == WF_CUDA_F64 ? CUDNN_DATA_DOUBLE
                                           : CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t fmt = g->cnchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  int on, oc, oh, ow;
  cudnnStatus_t s;

  memset(d, 0, sizeof *d);
  if ((s = cudnnCreateTensorDescriptor(&d->x)) ||
      (s = cudnnCreateTensorDescriptor(&d->y)) ||
      (s = cudnnCreateFilterDescriptor(&d->f)) ||
      (s = cudnnCreateConvolutionDescriptor(&d->conv)))
    return cudnn_fail(st, dev, "creating the descriptors", s);
  if ((s = cudnnSetTensor4dDescriptor(d->x, fmt, dt, (int)g->n, (int)g->c,
                                      (int)g->hp, (int)g->wp)) ||
      (s = cudnnSetTensor4dDescriptor(d->y, fmt, dt, (int)g->n, (int)g->co,
                                      (int)g->oh, (int)g->ow)) ||
      (s = cudnnSetFilter4dDescriptor(d->f, dt, fmt, (int)g->co, (int)g->c,
                                      (int)g->kh, (int)g->kw)) ||
      (s = cudnnSetConvolution2dDescriptor(
           d->conv, (int)g->ph, (int)g->pw, (int)g->win.stride[0],
           (int)g->win.stride[1], (int)g->win.dilation[0],
           (int)g->win.dilation[1], CUDNN_CROSS_CORRELATION, dt)) ||
      (s = cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH)))
    return cudnn_fail(st, dev, "setting the descriptors", s);
  if ((s = cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->f, &on,
                                                  &oc, &oh, &ow)))
    return cudnn_fail(st, dev, "cudnnGetConvolution2dForwardOutputDim", s);
  if (on != g->n || oc != g->co || oh != g->oh || ow != g->ow)
    return wfx_fail(st, WF_INTERNAL,
                    "%s: cuDNN sizes the output (%d, %d, %d, %d) but the "
                    "convolution's is (%" PRId64 ", %" PRId64 ", %" PRId64
                    ", %" PRId64 ") in NCHW order",
                    dev->label, on, oc, oh, ow, g->n, g->co, g->oh, g->ow);
  return 0;
}

/* The algorithm for this call, from the cache or cuDNN's heuristics. */
static int conv_algo(conv_state *cs, cudev *dev, int kind, int type,
                     const conv_geom *g, const conv_desc *d, algo_entry *e,
                     wf_status *st) {
  int64_t key[KEY_LEN] = {kind * 2 + (type == WF_CUDA_F64), g->n, g->c,
                          g->hp, g->wp, g->co, g->kh, g->kw};
  int count = 0, found = 0;
  cudnnStatus_t s;

  if (algo_lookup(cs, key, e))
    return 0;
  memcpy(e->key, key, sizeof key);
  if (kind == CONV_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    s = cudnnGetConvolutionForwardAlgorithm_v7(
        dev->cudnn, d->x, d->f, d->conv, d->y,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS)
      PICK(perf, count, e);
  } else if (kind == CONV_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    s = cudnnGetConvolutionBackwardDataAlgorithm_v7(
        dev->cudnn, d->f, d->y, d->conv, d->x,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS)
      PICK(perf, count, e);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        dev->cudnn, d->x, d->y, d->conv, d->f,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS)
      PICK(perf, count, e);
  }
  if (s != CUDNN_STATUS_SUCCESS)
    return cudnn_fail(st, dev, "choosing a convolution algorithm", s);
  if (!found)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "%s: cuDNN offers no algorithm without tensor-op math "
                    "and with at most %zu bytes of workspace for this "
                    "convolution (%d candidates)",
                    dev->label, MAX_WORKSPACE, count);
  algo_store(cs, e);
  return 0;
}

static const char *const conv_what[] = {"cudnnConvolutionForward",
                                        "cudnnConvolutionBackwardData",
                                        "cudnnConvolutionBackwardFilter"};

/* Conv2D (kind CONV_FWD: input, filter), Conv2DBackpropInput (input_sizes
 * on the host, filter, out_backprop) and Conv2DBackpropFilter (input,
 * filter_sizes on the host, out_backprop). */
static int conv_run(wf_kernel_ctx *ctx, conv_state *cs, int kind,
                    wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *in[3] = {NULL, NULL, NULL};
  wf_shape xs, fs, ys, out;
  nn_window win;
  conv_geom g;
  conv_desc d = {0};
  algo_entry e;
  wf_tensor *res;
  cuw w = {0};
  int type, rc, nin = kind == CONV_FWD ? 2 : 3, entered = 0;
  int64_t xd[4], xst[4], xcst[4], fd[4], fst[4], fcst[4], yd[4], yst[4],
      ycst[4], xpd[4], zero[4] = {0, 0, 0, 0}, pad[4];
  void *xc = NULL, *fc = NULL, *yc = NULL, *ws = NULL;
  char s1[WFX_SHAPE_STR_MAX], s2[WFX_SHAPE_STR_MAX];
  size_t esz;
  cudnnStatus_t s;

  memset(&g, 0, sizeof g);
  if (nn_window_parse(&a, NULL, 1, 1, &win, st))
    return wfx_code(st);
  for (int i = 0; i < nin; i++)
    if (wfx_kernel_input(ctx, i, &in[i], NULL, st))
      return wfx_code(st);
  /* The output's shape as the op's shape function gives it (reading
   * input_sizes or filter_sizes, which are in host memory); it also
   * refuses inputs the op refuses. dx has the input's shape, df the
   * filter's. */
  if (wfx_host->kernel_output_shape(ctx, 0, &out, st))
    return wfx_code(st);
  if (kind == CONV_BWD_DATA)
    xs = out;
  else
    wfx_host->tensor_shape(in[0], &xs);
  if (kind == CONV_BWD_FILTER)
    fs = out;
  else
    wfx_host->tensor_shape(in[1], &fs);
  if (cuw_float_type(wfx_dtype(in[kind == CONV_BWD_DATA ? 1 : 0]), &type, st) ||
      conv_dims(&xs, &fs, &win, &ys, &g,
                wfx_dtype(in[kind == CONV_BWD_DATA ? 1 : 0]), st))
    return wfx_code(st);
  if (!(res = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  if (wfx_count(res) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto done;
  /* An empty sum: zeros (cuDNN is not asked about empty tensors). */
  if (wfx_shape_count(&xs) == 0 || wfx_shape_count(&fs) == 0 ||
      wfx_shape_count(&ys) == 0) {
    rc = cuw_check(&w, "cudaMemsetAsync",
                   cudaMemsetAsync(wfx_data(res), 0,
                                   wfx_host->tensor_nbytes(res), w.dev->stream),
                   st);
    goto done;
  }
  {
    int64_t big = INT_MAX;
    if (g.n > big || g.c > big || g.hp > big || g.wp > big || g.co > big ||
        g.oh > big || g.ow > big || g.n * g.c * g.hp * g.wp > big ||
        g.n * g.co * g.oh * g.ow > big || g.co * g.c * g.kh * g.kw > big) {
      rc = wfx_fail(st, WF_UNIMPLEMENTED,
                    "input %s with filter %s: the CUDA convolution takes "
                    "tensors below 2^31 elements",
                    wfx_shape_str(&xs, s1, sizeof s1),
                    wfx_shape_str(&fs, s2, sizeof s2));
      goto done;
    }
  }
  esz = type == WF_CUDA_F64 ? sizeof(double) : sizeof(float);

  /* Logical (N, C, H, W) and (K, C, R, S) shapes and strides. */
  xd[0] = g.n, xd[1] = g.c, xd[2] = g.h, xd[3] = g.w;
  xpd[0] = g.n, xpd[1] = g.c, xpd[2] = g.hp, xpd[3] = g.wp;
  yd[0] = g.n, yd[1] = g.co, yd[2] = g.oh, yd[3] = g.ow;
  fd[0] = g.co, fd[1] = g.c, fd[2] = g.kh, fd[3] = g.kw;
  act_strides(g.nchw, g.c, g.h, g.w, xst);
  act_strides(g.cnchw, g.c, g.hp, g.wp, xcst);
  act_strides(g.nchw, g.co, g.oh, g.ow, yst);
  act_strides(g.cnchw, g.co, g.oh, g.ow, ycst);
  filter_strides(-1, &g, fst);
  filter_strides(g.cnchw, &g, fcst);
  pad[0] = 0, pad[1] = 0, pad[2] = g.ehb, pad[3] = g.ewb;
  {
    int xcopy = g.ehb || g.eha || g.ewb || g.ewa || g.cnchw != g.nchw;
    int ycopy = g.cnchw != g.nchw;
    size_t xbytes = (size_t)(g.n * g.c * g.hp * g.wp) * esz;
    size_t ybytes = (size_t)(g.n * g.co * g.oh * g.ow) * esz;
    size_t fbytes = (size_t)(g.co * g.c * g.kh * g.kw) * esz;

    /* The input side (x for forward and filter gradient, dx for data). */
    if (kind == CONV_BWD_DATA)
      xc = xcopy ? NULL : wfx_data(res);
    else
      xc = xcopy ? NULL : wfx_data(in[0]);
    if (xcopy && (rc = cuw_scratch(&w, xbytes, &xc, st)))
      goto done;
    if (xcopy && kind != CONV_BWD_DATA &&
        (rc = relayout(&w, type, xc, xpd, xcst, wfx_data(in[0]), xd, xst, pad,
                       st)))
      goto done;
    /* The filter, always permuted. */
    if ((rc = cuw_scratch(&w, fbytes, &fc, st)))
      goto done;
    if (kind != CONV_BWD_FILTER &&
        (rc = relayout(&w, type, fc, fd, fcst, wfx_data(in[1]), fd, fst, zero,
                       st)))
      goto done;
    /* The output side (y for forward, dy for the gradients). */
    if (kind == CONV_FWD)
      yc = ycopy ? NULL : wfx_data(res);
    else
      yc = ycopy ? NULL : wfx_data(in[2]);
    if (ycopy && (rc = cuw_scratch(&w, ybytes, &yc, st)))
      goto done;
    if (ycopy && kind != CONV_FWD &&
        (rc = relayout(&w, type, yc, yd, ycst, wfx_data(in[2]), yd, yst, zero,
                       st)))
      goto done;

    if ((rc = cudnn_enter(w.dev, st)) != 0)
      goto done;
    entered = 1;
    if ((rc = conv_desc_make(w.dev, &g, type, &d, st)) ||
        (rc = conv_algo(cs, w.dev, kind, type, &g, &d, &e, st)))
      goto done;
    if ((s = cudnnSetConvolutionMathType(d.conv, e.math))) {
      rc = cudnn_fail(st, w.dev, "cudnnSetConvolutionMathType", s);
      goto done;
    }
    if (e.workspace && (rc = cuw_scratch(&w, e.workspace, &ws, st)))
      goto done;
    {
      const double one_d = 1, zero_d = 0;
      const float one_f = 1, zero_f = 0;
      const void *one = type == WF_CUDA_F64 ? (const void *)&one_d
                                            : (const void *)&one_f;
      const void *zer = type == WF_CUDA_F64 ? (const void *)&zero_d
                                            : (const void *)&zero_f;
      if (kind == CONV_FWD)
        s = cudnnConvolutionForward(w.dev->cudnn, one, d.x, xc, d.f, fc,
                                    d.conv, (cudnnConvolutionFwdAlgo_t)e.algo,
                                    ws, e.workspace, zer, d.y, yc);
      else if (kind == CONV_BWD_DATA)
        s = cudnnConvolutionBackwardData(
            w.dev->cudnn, one, d.f, fc, d.y, yc, d.conv,
            (cudnnConvolutionBwdDataAlgo_t)e.algo, ws, e.workspace, zer, d.x,
            xc);
      else
        s = cudnnConvolutionBackwardFilter(
            w.dev->cudnn, one, d.x, xc, d.y, yc, d.conv,
            (cudnnConvolutionBwdFilterAlgo_t)e.algo, ws, e.workspace, zer,
            d.f, fc);
    }
    if (s != CUDNN_STATUS_SUCCESS) {
      rc = cudnn_fail(st, w.dev, conv_what[kind], s);
      goto done;
    }
    cudnn_leave();
    entered = 0;

    /* Results back into weft's layouts. */
    if (kind == CONV_FWD && ycopy)
      rc = relayout(&w, type, wfx_data(res), yd, yst, yc, yd, ycst, zero, st);
    else if (kind == CONV_BWD_DATA && xcopy) {
      int64_t crop[4] = {0, 0, -g.ehb, -g.ewb};
      rc = relayout(&w, type, wfx_data(res), xd, xst, xc, xpd, xcst, crop, st);
    } else if (kind == CONV_BWD_FILTER)
      rc = relayout(&w, type, wfx_data(res), fd, fst, fc, fd, fcst, zero, st);
  }

done:
  if (entered)
    cudnn_leave();
  conv_desc_free(&d);
  cuw_end(&w);
  return rc;
}

static int conv2d_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return conv_run(ctx, state, CONV_FWD, st);
}

static int conv_bp_input_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return conv_run(ctx, state, CONV_BWD_DATA, st);
}

static int conv_bp_filter_compute(wf_kernel_ctx *ctx, void *state,
                                  wf_status *st) {
  return conv_run(ctx, state, CONV_BWD_FILTER, st);
}

/* ---- pools --------------------------------------------------------------- */

/* The pool geometry of input xs (rank 4, as the op's shape function
 * checked); *out gets the output shape. */
static int pool_geom(const wf_shape *xs, const nn_window *w, wf_shape *out,
                     cuda_pool_geom *g, wf_status *st) {
  int ix[4];
  int64_t x[4], oh, ow, pt, pl, xst[4], yst[4];

  nn_nhwc_index(w->nchw, ix);
  for (int i = 0; i < 4; i++)
    x[i] = xs->dims[ix[i]];
  if (nn_window_dim(w, 0, x[1], w->ksize[0], &oh, &pt, st) ||
      nn_window_dim(w, 1, x[2], w->ksize[1], &ow, &pl, st))
    return wfx_code(st);
  wfx_shape_set_scalar(out);
  out->rank = 4;
  out->dims[ix[0]] = x[0];
  out->dims[ix[1]] = oh;
  out->dims[ix[2]] = ow;
  out->dims[ix[3]] = x[3];
  memset(g, 0, sizeof *g);
  g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
  g->oh = oh, g->ow = ow, g->pt = pt, g->pl = pl;
  g->kh = w->ksize[0], g->kw = w->ksize[1];
  g->sh = w->stride[0], g->sw = w->stride[1];
  wfx_shape_strides(xs, xst);
  wfx_shape_strides(out, yst);
  for (int i = 0; i < 4; i++) {
    g->xs[i] = xst[ix[i]];
    g->ys[i] = yst[ix[i]];
  }
  return 0;
}

static int pool_compute(wf_kernel_ctx *ctx, int max, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x;
  wf_tensor *y;
  nn_window win;
  cuda_pool_geom g;
  wf_shape xs, out;
  cuw w = {0};
  int type, rc;

  if (nn_window_parse(&a, "ksize", 0, 1, &win, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &out, st) ||
      pool_geom(&xs, &win, &out, &g, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(
        &w, "the pooling kernel",
        cuda_pool(max, type, &g, wfx_data(x), wfx_data(y), w.dev->stream), st);
  cuw_end(&w);
  return rc;
}

static int max_pool_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return pool_compute(ctx, 1, st);
}

static int avg_pool_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return pool_compute(ctx, 0, st);
}

/* MaxPoolGrad (orig_input, grad) and AvgPoolGrad (orig_input_shape on the
 * host, grad). */
static int pool_grad_compute(wf_kernel_ctx *ctx, int max, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *first, *grad;
  wf_tensor *dx;
  nn_window win;
  cuda_pool_geom g;
  wf_shape xs, out;
  cuw w = {0};
  int type, rc;

  if (nn_window_parse(&a, "ksize", 0, 1, &win, st) ||
      wfx_kernel_input(ctx, 0, &first, NULL, st) ||
      wfx_kernel_input(ctx, 1, &grad, NULL, st) ||
      cuw_float_type(wfx_dtype(grad), &type, st))
    return wfx_code(st);
  /* dx has the pooled input's shape, as the op's shape function gives it
   * (reading orig_input_shape, in host memory, for AvgPoolGrad); it also
   * checks grad against the pool's output. */
  if (wfx_host->kernel_output_shape(ctx, 0, &xs, st) ||
      pool_geom(&xs, &win, &out, &g, st))
    return wfx_code(st);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(dx) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the pooling gradient kernel",
                   cuda_pool_grad(max, type, &g, max ? wfx_data(first) : NULL,
                                  wfx_data(grad), wfx_data(dx), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int max_pool_grad_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return pool_grad_compute(ctx, 1, st);
}

static int avg_pool_grad_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return pool_grad_compute(ctx, 0, st);
}

/* ---- softmax and losses -------------------------------------------------- */

static int softmax_compute(wf_kernel_ctx *ctx, int want_log, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  int64_t c;
  cuw w = {0};
  int type, rc;

  /* The op's shape function gives y's shape (x's; it refuses a scalar). */
  if (wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &s, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s, st)))
    return wfx_code(st);
  c = s.dims[s.rank - 1];
  if (c == 0 || wfx_count(x) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the softmax kernel",
                   cuda_softmax(want_log, type, wfx_count(x) / c, c,
                                wfx_data(x), wfx_data(y), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int softmax_fwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return softmax_compute(ctx, 0, st);
}

static int log_softmax_fwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return softmax_compute(ctx, 1, st);
}

static int softmax_grad_compute(wf_kernel_ctx *ctx, int want_log,
                                wf_status *st) {
  const wf_tensor *y, *dy;
  wf_tensor *dx;
  wf_shape ys;
  int64_t c;
  cuw w = {0};
  int type, rc;

  /* The op's shape function checks y and dy against each other. */
  (void)want_log;
  if (wfx_kernel_input(ctx, 0, &y, NULL, st) ||
      wfx_kernel_input(ctx, 1, &dy, NULL, st) ||
      cuw_float_type(wfx_dtype(y), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &ys, st))
    return wfx_code(st);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &ys, st)))
    return wfx_code(st);
  c = ys.dims[ys.rank - 1];
  if (c == 0 || wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the softmax gradient kernel",
                   cuda_softmax_grad(want_log, type, wfx_count(y) / c, c,
                                     wfx_data(y), wfx_data(dy), wfx_data(dx),
                                     w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int softmax_bwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return softmax_grad_compute(ctx, 0, st);
}

static int log_softmax_bwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return softmax_grad_compute(ctx, 1, st);
}

/* SoftmaxCrossEntropyWithLogits (dense labels on the device) and the
 * sparse form (labels on the host, checked, then copied as int64). */
static int xent_compute(wf_kernel_ctx *ctx, int sparse, wf_status *st) {
  const wf_tensor *x, *lab;
  wf_tensor *loss, *back;
  wf_shape fs, s;
  int64_t n, c, *cls = NULL;
  void *dcls = NULL;
  cuw w = {0};
  int type, rc;

  /* The op's shape function checks features (N, C) against the labels
   * and gives the loss (N,) and the backprop (N, C). Only the label values
   * are left to check here. */
  if (wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      wfx_kernel_input(ctx, 1, &lab, NULL, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &s, st) ||
      wfx_host->kernel_output_shape(ctx, 1, &fs, st))
    return wfx_code(st);
  n = fs.dims[0], c = fs.dims[1];
  if (sparse && nx_sparse_labels(lab, n, c, &cls, st))
    return wfx_code(st);
  if (!(loss = wfx_host->kernel_output_new(ctx, 0, &s, st)) ||
      !(back = wfx_host->kernel_output_new(ctx, 1, &fs, st))) {
    rc = wfx_code(st);
    goto done;
  }
  rc = 0;
  if (n == 0)
    goto done;
  if ((rc = cuw_begin(&w, ctx, st)) ||
      (sparse && (rc = cuw_upload(&w, cls, (size_t)n * sizeof *cls,
                                      &dcls, "the labels", st))))
    goto done;
  rc = cuw_check(&w, "the cross-entropy kernel",
                 cuda_xent(type, n, c, wfx_data(x),
                           sparse ? NULL : wfx_data(lab), dcls, wfx_data(loss),
                           wfx_data(back), w.dev->stream),
                 st);

done:
  cuw_end(&w);
  wfx_host->free(cls);
  return rc;
}

static int xent_fwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return xent_compute(ctx, 0, st);
}

static int sparse_xent_fwd(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return xent_compute(ctx, 1, st);
}

/* ---- batch normalisation ------------------------------------------------- */

static int bn_attrs(wf_kernel_ctx *ctx, int *nchw, int *training, double *eps,
                    wf_status *st) {
  nn_attrs a = {.kernel = ctx};

  if (nn_data_format(&a, nchw, st) ||
      nn_attr_bool(&a, "is_training", training, st) ||
      nn_attr_float(&a, "epsilon", eps, st))
    return wfx_code(st);
  return 0;
}

/* x (rank >= 2, the vectors (C,) or where allowed (0,): the op's shape
 * function checked them) viewed as (outer, c, inner) by its channel
 * axis. */
static void bn_view(const wf_shape *xs, int nchw, int64_t *outer, int64_t *c,
                    int64_t *inner) {
  int axis;

  axis = nn_channel_axis(nchw, xs->rank);
  *c = xs->dims[axis];
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; i++)
    *outer *= xs->dims[i];
  for (int i = axis + 1; i < xs->rank; i++)
    *inner *= xs->dims[i];
}

static int batch_norm_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  const wf_tensor *x, *v[4];
  wf_tensor *y, *bm, *bv;
  wf_shape xs, cs;
  int nchw, training, type, rc;
  double eps;
  int64_t outer, c, inner;
  cuw w = {0};

  if (bn_attrs(ctx, &nchw, &training, &eps, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      cuw_float_type(wfx_dtype(x), &type, st))
    return wfx_code(st);
  for (int i = 0; i < 4; i++)
    if (wfx_kernel_input(ctx, i + 1, &v[i], NULL, st))
      return wfx_code(st);
  /* y has x's shape; the op's shape function checks the vectors. */
  if (wfx_host->kernel_output_shape(ctx, 0, &xs, st))
    return wfx_code(st);
  bn_view(&xs, nchw, &outer, &c, &inner);
  wfx_shape_make(&cs, 1, &c);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(bm = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(bv = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  if (c == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the batch normalisation kernel",
                   cuda_batch_norm(type, outer, c, inner, training, eps,
                                   wfx_data(x), wfx_data(v[0]), wfx_data(v[1]),
                                   wfx_data(v[2]), wfx_data(v[3]), wfx_data(y),
                                   wfx_data(bm), wfx_data(bv), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int batch_norm_grad_compute(wf_kernel_ctx *ctx, void *s,
                                   wf_status *st) {
  const wf_tensor *dy, *x, *v[5];
  wf_tensor *dx, *ds, *doff;
  wf_shape xs, cs;
  int nchw, training, type, rc;
  double eps;
  int64_t outer, c, inner;
  cuw w = {0};

  if (bn_attrs(ctx, &nchw, &training, &eps, st) ||
      wfx_kernel_input(ctx, 0, &dy, NULL, st) ||
      wfx_kernel_input(ctx, 1, &x, NULL, st) ||
      cuw_float_type(wfx_dtype(x), &type, st))
    return wfx_code(st);
  for (int i = 0; i < 5; i++)
    if (wfx_kernel_input(ctx, i + 2, &v[i], NULL, st))
      return wfx_code(st);
  /* dx has x's shape; the op's shape function checks dy and the vectors. */
  if (wfx_host->kernel_output_shape(ctx, 0, &xs, st))
    return wfx_code(st);
  bn_view(&xs, nchw, &outer, &c, &inner);
  wfx_shape_make(&cs, 1, &c);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(doff = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  if (c == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(
        &w, "the batch normalisation gradient kernel",
        cuda_batch_norm_grad(type, outer, c, inner, training, eps, wfx_data(dy),
                             wfx_data(x), wfx_data(v[0]), wfx_data(v[1]),
                             wfx_data(v[2]), wfx_data(v[3]), wfx_data(v[4]),
                             wfx_data(dx), wfx_data(ds), wfx_data(doff),
                             w.dev->stream),
        st);
  cuw_end(&w);
  return rc;
}

/* ---- BiasAdd ------------------------------------------------------------- */

static int bias_add_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x, *bias;
  wf_shape xs;
  wf_tensor *y;
  cuda_bcast b;
  int nchw, axis, type, rc;
  int64_t outer = 1, inner = 1, c;
  cuw w = {0};

  /* y has value's shape; the op's shape function checks bias against it. */
  if (nn_data_format(&a, &nchw, st) ||
      wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      wfx_kernel_input(ctx, 1, &bias, NULL, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &xs, st))
    return wfx_code(st);
  axis = nn_channel_axis(nchw, xs.rank);
  c = xs.dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  memset(&b, 0, sizeof b);
  b.rank = 3;
  b.dims[0] = outer, b.dims[1] = c, b.dims[2] = inner;
  b.xstride[0] = c * inner, b.xstride[1] = inner, b.xstride[2] = 1;
  b.ystride[1] = 1;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the bias kernel",
                   cuda_binary(WF_CUDA_ADD, type, &b, wfx_count(y), wfx_data(x),
                               wfx_data(bias), wfx_data(y), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int bias_add_grad_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *dy;
  wf_shape dys, cs;
  wf_tensor *db;
  cuda_reduce_geom g;
  int nchw, axis, type, rc;
  uint32_t mask;
  cuw w = {0};

  /* The op's shape function refuses a rank below 2 and gives (C,). */
  if (nn_data_format(&a, &nchw, st) ||
      wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      cuw_float_type(wfx_dtype(dy), &type, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &cs, st))
    return wfx_code(st);
  axis = nn_channel_axis(nchw, dys.rank);
  if (!(db = wfx_host->kernel_output_new(ctx, 0, &cs, st)))
    return wfx_code(st);
  if (dys.dims[axis] == 0)
    return 0;
  mask = ((UINT32_C(1) << dys.rank) - 1) & ~(UINT32_C(1) << axis);
  cuw_reduce_geom(&dys, mask, &g);
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the bias gradient kernel",
                   cuda_reduce(WF_CUDA_SUM, type, &g, wfx_data(dy),
                               wfx_data(db), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

/* ---- the table ----------------------------------------------------------- */

#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define B WF_CUW_BIT

static const wf_kernel_def k_conv2d = WFX_KERNEL_FOR(
    "cuda", "cudnn", "Conv2D", "T", FLT, conv2d_compute,
    .flags = WF_KERNEL_CHEAP, .create = conv_create, .destroy = conv_destroy);
static const wf_kernel_def k_conv_bp_input = WFX_KERNEL_FOR(
    "cuda", "cudnn", "Conv2DBackpropInput", "T", FLT, conv_bp_input_compute,
    .flags = WF_KERNEL_CHEAP, .create = conv_create, .destroy = conv_destroy,
    .host_inputs = B(0));
static const wf_kernel_def k_conv_bp_filter = WFX_KERNEL_FOR(
    "cuda", "cudnn", "Conv2DBackpropFilter", "T", FLT, conv_bp_filter_compute,
    .flags = WF_KERNEL_CHEAP, .create = conv_create, .destroy = conv_destroy,
    .host_inputs = B(1));
static const wf_kernel_def k_max_pool =
    WFX_KERNEL_FOR("cuda", "cuda", "MaxPool", "T", FLT, max_pool_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_avg_pool =
    WFX_KERNEL_FOR("cuda", "cuda", "AvgPool", "T", FLT, avg_pool_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_max_pool_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "MaxPoolGrad", "T", FLT,
                   max_pool_grad_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_avg_pool_grad = WFX_KERNEL_FOR(
    "cuda", "cuda", "AvgPoolGrad", "T", FLT, avg_pool_grad_compute,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(0));
static const wf_kernel_def k_softmax = WFX_KERNEL_FOR(
    "cuda", "cuda", "Softmax", "T", FLT, softmax_fwd, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_log_softmax =
    WFX_KERNEL_FOR("cuda", "cuda", "LogSoftmax", "T", FLT, log_softmax_fwd,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_softmax_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "SoftmaxGrad", "T", FLT, softmax_bwd,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_log_softmax_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "LogSoftmaxGrad", "T", FLT, log_softmax_bwd,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_xent =
    WFX_KERNEL_FOR("cuda", "cuda", "SoftmaxCrossEntropyWithLogits", "T", FLT,
                   xent_fwd, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sparse_xent = WFX_KERNEL_FOR(
    "cuda", "cuda", "SparseSoftmaxCrossEntropyWithLogits", "T", FLT,
    sparse_xent_fwd, .flags = WF_KERNEL_CHEAP, .host_inputs = B(1));
static const wf_kernel_def k_batch_norm =
    WFX_KERNEL_FOR("cuda", "cuda", "BatchNorm", "T", FLT, batch_norm_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_batch_norm_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "BatchNormGrad", "T", FLT,
                   batch_norm_grad_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_bias_add =
    WFX_KERNEL_FOR("cuda", "cuda", "BiasAdd", "T", FLT, bias_add_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_bias_add_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "BiasAddGrad", "T", FLT,
                   bias_add_grad_compute, .flags = WF_KERNEL_CHEAP);

const wf_kernel_def *const cuda_nn_kernels[] = {
    &k_conv2d,       &k_conv_bp_input,   &k_conv_bp_filter,
    &k_max_pool,     &k_avg_pool,        &k_max_pool_grad,
    &k_avg_pool_grad, &k_softmax,        &k_log_softmax,
    &k_softmax_grad, &k_log_softmax_grad, &k_xent,
    &k_sparse_xent,  &k_batch_norm,      &k_batch_norm_grad,
    &k_bias_add,     &k_bias_add_grad,   NULL};
