/* plugins/ops/nn/dropout.c — Dropout over a counter-based Philox stream
 * (plugins/numerics/philox.h) keyed by the seeds or a node name and by
 * the session's step: the mask depends only on (key, step, element index),
 * never on threads or scheduling, and changes from step to step. Its
 * gradient is another Dropout node naming the forward node's stream, so
 * that it draws the very same mask (grad.c). No noise_shape (masks shared
 * along dimensions). */
#include <config.h>

#include "nn.h"
#include "philox.h"

#include <inttypes.h>
#include <string.h>

/* What decides the mask. */
typedef struct dropout_cfg {
  double rate;
  rnd_stream stream;
} dropout_cfg;

static int dropout_rate(const nn_attrs *a, double *rate, wf_status *st) {
  if (nn_attr_float(a, "rate", rate, st))
    return wfx_code(st);
  if (!(*rate >= 0 && *rate < 1))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "rate is %g (must be in [0, 1))",
                    *rate);
  return 0;
}

/* The rate and the stream of a running kernel: key from (seed, seed2) when
 * either is non-zero, else from the name in stream_name (the node's own
 * name when empty); step from the session. */
static int dropout_config(wf_kernel_ctx *ctx, dropout_cfg *c, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  int64_t seed, seed2;
  const char *name;
  uint64_t key;

  if (dropout_rate(&a, &c->rate, st) || nn_attr_int(&a, "seed", &seed, st) ||
      nn_attr_int(&a, "seed2", &seed2, st) ||
      nn_attr_string(&a, "stream_name", &name, st))
    return wfx_code(st);
  if (seed || seed2)
    key = rnd_key_from_seeds(seed, seed2);
  else
    key = rnd_key_from_name(name[0] ? name : wfx_host->kernel_node_name(ctx));
  rnd_stream_init(&c->stream, key, wfx_host->kernel_step(ctx));
  return 0;
}

static int dropout_shape(wf_shape_ctx *ctx, wf_status *st) {
  nn_attrs a = {.shape = ctx};
  double rate;
  wf_shape s;

  if (dropout_rate(&a, &rate, st) || wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* Element i is kept when the stream's float64 uniform of element i, u =
 * u53(w[2j], w[2j+1]) of block i/2 (j = i % 2), is >= rate; the kept ones
 * are scaled by 1 / (1 - rate). The same mask for float32 and float64. */
#define DEF_DROPOUT(T, sfx, dt, u)                                             \
  static void dropout_##sfx(void *yv, const void *xv, int64_t n,               \
                            const dropout_cfg *c) {                            \
    T *y = yv;                                                                 \
    const T *x = xv;                                                           \
    const T scale = (T)(1.0 / (1.0 - c->rate));                                \
    uint32_t w[4];                                                             \
    for (int64_t i = 0; i < n; i++) {                                          \
      int j = (int)(i % 2);                                                    \
      if (j == 0)                                                              \
        rnd_stream_block(&c->stream, (uint64_t)(i / 2), 0, w);                 \
      y[i] = rnd_u53(w[2 * j], w[2 * j + 1]) >= c->rate ? x[i] * scale : (T)0; \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_DROPOUT, _)

typedef void dropout_fn(void *y, const void *x, int64_t n,
                        const dropout_cfg *c);
static dropout_fn *const dropout_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_FLOAT(WFX_TABLE_ENTRY, dropout)};

static int dropout_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  dropout_cfg c;
  dropout_fn *fn;

  if (dropout_config(ctx, &c, st) || wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  if (!(fn = dropout_table[wfx_dtype(x)]))
    return wfx_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if ((uint64_t)wfx_count(x) / 2 >= RND_MAX_BLOCKS)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "x has %" PRId64 " elements, more than one stream "
                    "holds (2^49)",
                    wfx_count(x));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s, st)))
    return wfx_code(st);
  fn(wfx_data(y), wfx_data(x), wfx_count(x), &c);
  return 0;
}

static const wf_arg_def dropout_inputs[] = {
    WF_ARG_T("x", "T", "any shape, e.g. (N, D)"), WF_ARG_END};
static const wf_arg_def dropout_outputs[] = {
    WF_ARG_T("y", "T", "the shape of x"), WF_ARG_END};
static const wf_attr_def dropout_attrs_def[] = {
    NN_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_FLOAT("rate", 0.5, "probability of dropping an element, [0, 1)"),
    NN_ATTR_INT("seed", 0, "first seed of the mask (0 with seed2 0: none)"),
    NN_ATTR_INT("seed2", 0, "second seed of the mask"),
    NN_ATTR_STRING("stream_name", "",
                   "without seeds, the node name that keys the stream; "
                   "empty: this node's own (gradients name their forward "
                   "node here to draw its mask)"),
    WF_ATTR_END};

const wf_op_def nn_dropout_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Dropout",
    .inputs = dropout_inputs,
    .outputs = dropout_outputs,
    .attrs = dropout_attrs_def,
    .flags = WF_OP_RANDOM,
    .shape_fn = dropout_shape,
    .doc = "Zeroes each element of x (N, D) with probability rate and "
           "scales the others by 1 / (1 - rate). The mask comes from the "
           "Philox stream of philox.h keyed by (seed, seed2) when either is "
           "non-zero, else by the node name (stream_name, or the node's own "
           "when that is empty), and by the session's step: element i "
           "(row-major) is kept when the float64 uniform of element i, "
           "u53(w[2j], w[2j+1]) of block i/2 with j = i % 2, is >= rate, "
           "whatever the dtype. The same key and step give the same mask; "
           "each step draws a new one. The gradient is a Dropout of dy "
           "naming this node's stream, so it applies this step's mask."};

const wf_kernel_def nn_dropout_kernel =
    WFX_CPU_REFERENCE("Dropout", "T", WFX_DTYPES_FLOAT, dropout_compute);
