/* plugins/ops/nn/dropout.c — Dropout with a documented counter-based hash,
 * so that the mask depends only on (seed, seed2, element index): never on
 * threads, scheduling or who implements it. Not yet keyed by node and step
 * (the core's Philox streams will replace the hash): every run of a node
 * draws the same mask. */
#include <config.h>

#include "nn.h"

#include <inttypes.h>

/* SplitMix64's output function (Stafford's Mix13) after adding the golden
 * gamma: a bijection of 64-bit words with full avalanche. */
static uint64_t mix64(uint64_t z) {
  z += UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* The uniform number of element i in [0, 1) with 53 random bits:
 *   key = mix64(mix64(seed) ^ seed2)   (seeds as two's-complement uint64)
 *   u_i = (mix64(key ^ i) >> 11) * 2^-53
 * Element i is kept when u_i >= rate. */
static double uniform_at(uint64_t key, uint64_t i) {
  return (double)(mix64(key ^ i) >> 11) * 0x1p-53;
}

static int dropout_attrs(const nn_attrs *a, double *rate, uint64_t *key,
                         wf_status *st) {
  int64_t seed, seed2;

  if (nn_attr_float(a, "rate", rate, st) || nn_attr_int(a, "seed", &seed, st) ||
      nn_attr_int(a, "seed2", &seed2, st))
    return opc_host()->status_code(st);
  if (!(*rate >= 0 && *rate < 1))
    return opc_fail(st, WF_INVALID_ARGUMENT, "rate is %g (must be in [0, 1))",
                    *rate);
  *key = mix64(mix64((uint64_t)seed) ^ (uint64_t)seed2);
  return 0;
}

static int dropout_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.shape = ctx};
  double rate;
  uint64_t key;
  wf_shape s;

  if (dropout_attrs(&a, &rate, &key, st) ||
      opc_shape_input(ctx, 0, NULL, &s, st))
    return h->status_code(st);
  h->shape_set_output(ctx, 0, &s);
  return 0;
}

#define DEF_DROPOUT(T, sfx, dt, u)                                             \
  static void dropout_##sfx(void *yv, const void *xv, int64_t n, double rate,  \
                            uint64_t key) {                                    \
    T *y = yv;                                                                 \
    const T *x = xv;                                                           \
    const T scale = (T)(1.0 / (1.0 - rate));                                   \
    for (int64_t i = 0; i < n; i++)                                            \
      y[i] = uniform_at(key, (uint64_t)i) >= rate ? x[i] * scale : (T)0;       \
  }
OPC_TYPES_FLOAT(DEF_DROPOUT, _)

typedef void dropout_fn(void *y, const void *x, int64_t n, double rate,
                        uint64_t key);
static dropout_fn *const dropout_table[WF_DTYPE_COUNT] = {
    OPC_TYPES_FLOAT(OPC_TABLE_ENTRY, dropout)};

static int dropout_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_host *h = opc_host();
  nn_attrs a = {.kernel = ctx};
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  double rate;
  uint64_t key;
  dropout_fn *fn;

  if (dropout_attrs(&a, &rate, &key, st) ||
      opc_kernel_input(ctx, 0, &x, &s, st))
    return h->status_code(st);
  if (!(fn = dropout_table[h->tensor_dtype(x)]))
    return opc_fail(st, WF_UNIMPLEMENTED, "no reference kernel for %s",
                    opc_dtype_name(h->tensor_dtype(x)));
  if (!(y = h->kernel_output_new(ctx, 0, &s, st)))
    return h->status_code(st);
  fn(h->tensor_data(y), h->tensor_data(x), h->tensor_count(x), rate, key);
  return 0;
}

static const wf_arg_def dropout_inputs[] = {
    WF_ARG_T("x", "T", "any shape, e.g. (N, D)"), WF_ARG_END};
static const wf_arg_def dropout_outputs[] = {
    WF_ARG_T("y", "T", "the shape of x"), WF_ARG_END};
static const wf_attr_def dropout_attrs_def[] = {
    NN_ATTR_TYPE("T", OPC_DTYPES_FLOAT, "float32 or float64"),
    NN_ATTR_FLOAT("rate", 0.5, "probability of dropping an element, [0, 1)"),
    NN_ATTR_INT("seed", 0, "first seed of the mask"),
    NN_ATTR_INT("seed2", 0, "second seed of the mask"), WF_ATTR_END};

const wf_op_def nn_dropout_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Dropout",
    .inputs = dropout_inputs,
    .outputs = dropout_outputs,
    .attrs = dropout_attrs_def,
    .flags = WF_OP_RANDOM,
    .shape_fn = dropout_shape,
    .doc = "Zeroes each element of x (N, D) with probability rate and "
           "scales the others by 1 / (1 - rate). Element i (row-major) is "
           "kept when u_i >= rate, where with mix64 = SplitMix64's "
           "finaliser applied to z + 0x9E3779B97F4A7C15, key = "
           "mix64(mix64(seed) ^ seed2) and u_i = (mix64(key ^ i) >> 11) * "
           "2^-53: the same mask for the same seeds whatever the threads. "
           "Every run currently draws the same mask; per-step streams come "
           "with the core's Philox generator."};

const wf_kernel_def nn_dropout_kernel =
    NN_KERNEL("Dropout", OPC_DTYPES_FLOAT, dropout_compute);
