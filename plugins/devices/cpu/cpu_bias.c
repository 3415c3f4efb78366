/* plugins/devices/cpu/cpu_bias.c — fast float32 BiasAdd and BiasAddGrad,
 * the other half of a dense or convolution layer, as plain loops the
 * compiler vectorises along the contiguous dimension: channels for NHWC
 * (value viewed as (rows, C)), positions for NCHW ((N, C, rest)). One
 * thread: both are a single pass over memory.
 *
 * Not oneDNN: on the development machine (one-node graph runs, 1 thread,
 * (64, 28, 28, 16) NHWC, best of 50), oneDNN 2.6's binary add with a
 * per-channel broadcast took 308 us (4.6 ms on 2 threads) and its sum
 * reduction (a reference implementation in 2.6) 5.5 ms; these loops take
 * 200 us and 253 us, the nn plugin's reference kernels 369 us and 483 us.
 * BiasAddGrad accumulates in double in the reference kernel's order, so
 * its results are the reference's. Output shapes are the ops' shape
 * functions' (cpu_output), so bad inputs get the op's own error; empty
 * tensors are computed here. */
#include <config.h>

#include "cpu_nn.h"

#include <string.h>

/* The loops are compiled for AVX-512 and AVX2 next to the baseline, chosen
 * at load time (GCC's target_clones); each element's arithmetic is the
 * same on every one, so are the results. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_BIAS_CLONES                                                         \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_BIAS_CLONES
#endif

typedef struct bias_state {
  int nchw;
} bias_state;

static void bias_destroy(void *state) { wfx_host->free(state); }

static int bias_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  bias_state *s = wfx_host->alloc(sizeof *s, 0);
  nn_attrs a = {.kernel = ctx};

  *state = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  /* Accepted by the op's shape function when the node was added. */
  if (nn_data_format(&a, &s->nchw, st)) {
    bias_destroy(s);
    return wfx_code(st);
  }
  *state = s;
  return 0;
}

/* y = x + b over the (outer, c, inner) view; y may be x
 * (WF_KERNEL_IN_PLACE). */
static WF_BIAS_CLONES void bias_add(float *y, const float *x,
                                    const float *restrict b, int64_t outer,
                                    int64_t c, int64_t inner) {
  if (inner == 1) {
    for (int64_t o = 0; o < outer; o++, x += c, y += c)
      for (int64_t k = 0; k < c; k++)
        y[k] = x[k] + b[k];
    return;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < c; k++, x += inner, y += inner) {
      float bk = b[k];
      for (int64_t i = 0; i < inner; i++)
        y[i] = x[i] + bk;
    }
}

/* acc[k] = the sum of x over the view's outer and inner positions, in
 * the reference kernel's order (o, then i). acc is zeroed here. */
static WF_BIAS_CLONES void bias_sum(double *restrict acc, const float *restrict x,
                     int64_t outer, int64_t c, int64_t inner) {
  memset(acc, 0, (size_t)c * sizeof *acc);
  if (inner == 1) {
    for (int64_t o = 0; o < outer; o++, x += c)
      for (int64_t k = 0; k < c; k++)
        acc[k] += x[k];
    return;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < c; k++, x += inner) {
      double s = acc[k];
      for (int64_t i = 0; i < inner; i++)
        s += x[i];
      acc[k] = s;
    }
}

/* BiasAdd (value, bias); BiasAddGrad (out_backprop). The output has the
 * shape the op's shape function gives (which also refuses what the op
 * refuses: a rank below 2, a bias that is not (C,)). */
static int bias_compute(wf_kernel_ctx *ctx, bias_state *s, int grad,
                        wf_status *st) {
  const wf_tensor *x, *b = NULL;
  wf_shape xs;
  int64_t outer = 1, inner = 1, c;
  wf_tensor *y;
  double *acc;
  int axis;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      (!grad && wfx_kernel_input(ctx, 1, &b, NULL, st)))
    return wfx_code(st);
  if (!(y = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  axis = nn_channel_axis(s->nchw, xs.rank);
  c = xs.dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  if (!grad) {
    if (wfx_count(y) > 0)
      bias_add(wfx_data(y), wfx_data(x), wfx_data(b), outer, c, inner);
    return 0;
  }
  if (c == 0)
    return 0;
  if (outer == 0 || inner == 0) {
    memset(wfx_data(y), 0, (size_t)c * sizeof(float));
    return 0;
  }
  if (!(acc = wfx_host->alloc((size_t)c * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators", (long long)c);
  bias_sum(acc, wfx_data(x), outer, c, inner);
  {
    float *db = wfx_data(y);
    for (int64_t k = 0; k < c; k++)
      db[k] = (float)acc[k];
  }
  wfx_host->free(acc);
  return 0;
}

static int bias_add_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return bias_compute(ctx, state, 0, st);
}

static int bias_add_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return bias_compute(ctx, state, 1, st);
}

const wf_kernel_def cpu_k_bias_add =
    WFX_KERNEL_FOR("cpu", "loops", "BiasAdd", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   bias_add_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE, .create = bias_create,
                   .destroy = bias_destroy);
const wf_kernel_def cpu_k_bias_add_grad =
    WFX_KERNEL_FOR("cpu", "loops", "BiasAddGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   bias_add_grad_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = bias_create, .destroy = bias_destroy);
