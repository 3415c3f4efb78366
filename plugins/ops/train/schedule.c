/* plugins/ops/train/schedule.c — learning-rate schedules: ops computing a
 * float scalar from the int64 global step (ExponentialDecay,
 * PiecewiseConstant, CosineDecay) and a linear warmup in front of any
 * learning rate (LinearWarmup). The formulas are Keras's
 * (keras.optimizers.schedules) and are written in each op's doc. They hold
 * no state: the step is an input, typically read from a variable. */
#include <config.h>

#include "train.h"

#include <inttypes.h>
#include <math.h>

/* ---- attributes -------------------------------------------------------- */

static int kernel_float(const wf_kernel_ctx *ctx, const char *name,
                        double *out, wf_status *st) {
  return wfx_kernel_attr_float(ctx, name, out, st);
}

/* The piecewise lists, validated: boundaries strictly increasing, one more
 * value than boundaries. */
typedef struct piecewise {
  const int64_t *boundaries;
  int64_t nb;
  const double *values;
  int64_t nv;
} piecewise;

static int check_piecewise(const wf_attr_value *b, int rb,
                           const wf_attr_value *v, int rv, piecewise *out,
                           wf_status *st) {
  if (rb != 0 || b->type != (WF_ATTR_LIST | WF_ATTR_INT))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'boundaries' (list(int)) is missing");
  if (rv != 0 || v->type != (WF_ATTR_LIST | WF_ATTR_FLOAT))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'values' (list(float)) is missing");
  if (v->count != b->count + 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%" PRId64 " boundaries need %" PRId64 " values; "
                    "'values' has %" PRId64,
                    b->count, b->count + 1, v->count);
  for (int64_t i = 1; i < b->count; i++)
    if (b->u.ints[i] <= b->u.ints[i - 1])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "boundaries must increase strictly: boundaries[%" PRId64
                      "] = %" PRId64 " follows %" PRId64,
                      i, b->u.ints[i], b->u.ints[i - 1]);
  out->boundaries = b->u.ints;
  out->nb = b->count;
  out->values = v->u.floats;
  out->nv = v->count;
  return 0;
}

/* ---- shape functions --------------------------------------------------- */

static int scalar_out(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;

  if (trn_shape_scalar(ctx, 0, "step", st))
    return wfx_code(st);
  wfx_shape_set_scalar(&s);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int piecewise_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value b, v;
  piecewise pw;
  int rb = wfx_host->shape_attr(ctx, "boundaries", &b);
  int rv = wfx_host->shape_attr(ctx, "values", &v);

  if (check_piecewise(&b, rb, &v, rv, &pw, st))
    return wfx_code(st);
  return scalar_out(ctx, st);
}

static int warmup_shape(wf_shape_ctx *ctx, wf_status *st) {
  if (trn_shape_scalar(ctx, 1, "lr", st))
    return wfx_code(st);
  return scalar_out(ctx, st);
}

/* ---- kernels ----------------------------------------------------------- */

/* The step input: a non-negative int64 scalar. */
static int read_step(const wf_kernel_ctx *ctx, int64_t *step, wf_status *st) {
  const wf_tensor *t;
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &t, &s, st))
    return wfx_code(st);
  if (s.rank != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'step' has shape %s; it must be a scalar",
                    wfx_shape_str(&s, buf, sizeof buf));
  *step = *(const int64_t *)wfx_data(t);
  if (*step < 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'step' is %" PRId64 "; a global step is never "
                    "negative",
                    *step);
  return 0;
}

static int put_scalar(wf_kernel_ctx *ctx, double v, wf_status *st) {
  wf_shape s;
  wf_tensor *out;

  wfx_shape_set_scalar(&s);
  out = wfx_host->kernel_output_new(ctx, 0, &s, st);
  if (!out)
    return wfx_code(st);
  if (wfx_host->kernel_output_dtype(ctx, 0) == WF_FLOAT32)
    *(float *)wfx_data(out) = (float)v;
  else
    *(double *)wfx_data(out) = v;
  return 0;
}

static int exponential_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int64_t step, decay_steps;
  double lr, rate, p;
  int staircase;

  if (read_step(ctx, &step, st) ||
      kernel_float(ctx, "learning_rate", &lr, st) ||
      kernel_float(ctx, "decay_rate", &rate, st) ||
      wfx_kernel_attr_int(ctx, "decay_steps", &decay_steps, st) ||
      wfx_kernel_attr_bool(ctx, "staircase", &staircase, st))
    return wfx_code(st);
  p = (double)step / (double)decay_steps;
  if (staircase)
    p = floor(p);
  return put_scalar(ctx, lr * pow(rate, p), st);
}

static int piecewise_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value b, v;
  piecewise pw;
  int64_t step, i = 0;
  int rb = wfx_host->kernel_attr(ctx, "boundaries", &b);
  int rv = wfx_host->kernel_attr(ctx, "values", &v);

  if (check_piecewise(&b, rb, &v, rv, &pw, st) || read_step(ctx, &step, st))
    return wfx_code(st);
  while (i < pw.nb && step > pw.boundaries[i])
    i++;
  return put_scalar(ctx, pw.values[i], st);
}

static int cosine_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int64_t step, decay_steps;
  double lr, alpha, cosine;

  if (read_step(ctx, &step, st) ||
      kernel_float(ctx, "learning_rate", &lr, st) ||
      kernel_float(ctx, "alpha", &alpha, st) ||
      wfx_kernel_attr_int(ctx, "decay_steps", &decay_steps, st))
    return wfx_code(st);
  if (step > decay_steps)
    step = decay_steps;
  cosine = 0.5 * (1 + cos(M_PI * (double)step / (double)decay_steps));
  return put_scalar(ctx, lr * ((1 - alpha) * cosine + alpha), st);
}

static int warmup_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int64_t step, warmup;
  double lr, f0;

  if (read_step(ctx, &step, st) || trn_scalar_input(ctx, 1, "lr", &lr, st) ||
      kernel_float(ctx, "initial_fraction", &f0, st) ||
      wfx_kernel_attr_int(ctx, "warmup_steps", &warmup, st))
    return wfx_code(st);
  if (step < warmup)
    lr *= f0 + (1 - f0) * (double)step / (double)warmup;
  return put_scalar(ctx, lr, st);
}

/* ---- definitions ------------------------------------------------------- */

#define ATTR_DTYPE                                                             \
  {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,        \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_DTYPE, .count = 1,                        \
                     .u = {.dtype = WF_FLOAT32}},                              \
   .allowed_dtypes = TRN_DTYPES, .doc = "element type of the learning rate"}
#define ATTR_FLOAT(nm, dc)                                                     \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_FLOAT,           \
   .doc = (dc)}
#define ATTR_FLOAT_DEF(nm, def, dc)                                            \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_FLOAT,           \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = (def)}},    \
   .doc = (dc)}
#define ATTR_STEPS(nm, min, dc)                                                \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_INT,             \
   .has_minimum = 1, .minimum = (min), .doc = (dc)}

static const wf_attr_def exponential_attrs[] = {
    ATTR_DTYPE,
    ATTR_FLOAT("learning_rate", "the rate at step 0"),
    ATTR_STEPS("decay_steps", 1, "steps per decay by decay_rate (>= 1)"),
    ATTR_FLOAT("decay_rate", "factor applied every decay_steps"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "staircase", .type = WF_ATTR_BOOL,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_BOOL, .count = 1, .u = {.b = 0}},
     .doc = "true: decay in whole steps of decay_steps"},
    WF_ATTR_END};
static const wf_attr_def piecewise_attrs[] = {
    ATTR_DTYPE,
    {WF_STRUCT_INIT(wf_attr_def), .name = "boundaries",
     .type = WF_ATTR_LIST | WF_ATTR_INT,
     .doc = "strictly increasing steps where the rate changes"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "values",
     .type = WF_ATTR_LIST | WF_ATTR_FLOAT, .has_minimum = 1, .minimum = 1,
     .doc = "the rates: one more than boundaries"},
    WF_ATTR_END};
static const wf_attr_def cosine_attrs[] = {
    ATTR_DTYPE,
    ATTR_FLOAT("learning_rate", "the rate at step 0"),
    ATTR_STEPS("decay_steps", 1, "steps to decay over (>= 1)"),
    ATTR_FLOAT_DEF("alpha", 0.0,
                   "the final rate as a fraction of learning_rate"),
    WF_ATTR_END};
static const wf_attr_def warmup_attrs[] = {
    ATTR_DTYPE,
    ATTR_STEPS("warmup_steps", 0, "length of the warmup (>= 0; 0: none)"),
    ATTR_FLOAT_DEF("initial_fraction", 0.0,
                   "the rate at step 0 as a fraction of lr"),
    WF_ATTR_END};

static const wf_arg_def step_input[] = {
    WF_ARG_FIXED("step", WF_INT64, "() the global step, >= 0"), WF_ARG_END};
static const wf_arg_def warmup_inputs[] = {
    WF_ARG_FIXED("step", WF_INT64, "() the global step, >= 0"),
    WF_ARG_T("lr", "dtype", "() the rate after the warmup (any schedule)"),
    WF_ARG_END};
static const wf_arg_def lr_output[] = {
    WF_ARG_T("learning_rate", "dtype", "() the rate at this step"),
    WF_ARG_END};

#define NEG_DOC " A negative step is INVALID_ARGUMENT."

const wf_op_def trn_exponential_decay_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ExponentialDecay",
    .inputs = step_input,
    .outputs = lr_output,
    .attrs = exponential_attrs,
    .shape_fn = scalar_out,
    .doc = "learning_rate * decay_rate ^ (step / decay_steps), the exponent "
           "floored to a whole number with staircase (Keras's "
           "ExponentialDecay)." NEG_DOC};
const wf_op_def trn_piecewise_constant_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "PiecewiseConstant",
    .inputs = step_input,
    .outputs = lr_output,
    .attrs = piecewise_attrs,
    .shape_fn = piecewise_shape,
    .doc = "values[0] while step <= boundaries[0], values[i] while "
           "boundaries[i-1] < step <= boundaries[i], values[n] once step > "
           "boundaries[n-1] (Keras's PiecewiseConstantDecay)." NEG_DOC};
const wf_op_def trn_cosine_decay_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "CosineDecay",
    .inputs = step_input,
    .outputs = lr_output,
    .attrs = cosine_attrs,
    .shape_fn = scalar_out,
    .doc = "With s = min(step, decay_steps): learning_rate * ((1 - alpha) * "
           "c + alpha), c = (1 + cos(pi * s / decay_steps)) / 2; so "
           "learning_rate at step 0 and alpha * learning_rate from "
           "decay_steps on (Keras's CosineDecay without warmup)." NEG_DOC};
const wf_op_def trn_linear_warmup_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "LinearWarmup",
    .inputs = warmup_inputs,
    .outputs = lr_output,
    .attrs = warmup_attrs,
    .shape_fn = warmup_shape,
    .doc = "lr * (f + (1 - f) * step / warmup_steps) while step < "
           "warmup_steps, with f = initial_fraction; lr from then on. The "
           "ramp goes linearly from f * lr at step 0 to lr at warmup_steps, "
           "as Keras's CosineDecay warmup from initial_learning_rate = f * "
           "lr to warmup_target = lr." NEG_DOC};

const wf_kernel_def trn_exponential_decay_kernel =
    WFX_CPU_REFERENCE("ExponentialDecay", "dtype", TRN_DTYPES,
                      exponential_compute, .flags = WF_KERNEL_CHEAP);
const wf_kernel_def trn_piecewise_constant_kernel =
    WFX_CPU_REFERENCE("PiecewiseConstant", "dtype", TRN_DTYPES,
                      piecewise_compute, .flags = WF_KERNEL_CHEAP);
const wf_kernel_def trn_cosine_decay_kernel =
    WFX_CPU_REFERENCE("CosineDecay", "dtype", TRN_DTYPES, cosine_compute,
                      .flags = WF_KERNEL_CHEAP);
const wf_kernel_def trn_linear_warmup_kernel =
    WFX_CPU_REFERENCE("LinearWarmup", "dtype", TRN_DTYPES, warmup_compute,
                      .flags = WF_KERNEL_CHEAP);
