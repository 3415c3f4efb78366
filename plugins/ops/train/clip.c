/* plugins/ops/train/clip.c — ClipByGlobalNorm: scales a list of tensors
 * (usually gradients) so that their joint L2 norm is at most clip_norm.
 * Registered as not differentiable (plugin.c): it sits after the gradients,
 * never on a path autodiff walks. */
#include <config.h>

#include "train.h"

#include <math.h>

static int clip_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx) - 1;
  wf_shape s;

  for (int32_t i = 0; i < n; i++) {
    if (wfx_shape_input(ctx, i, NULL, &s, st))
      return wfx_code(st);
    wfx_host->shape_set_output(ctx, i, &s);
  }
  if (trn_shape_scalar(ctx, n, "clip_norm", st))
    return wfx_code(st);
  wfx_shape_set_scalar(&s);
  wfx_host->shape_set_output(ctx, n, &s);
  return 0;
}

/* Sum of squares of t's elements, in double. */
static double sum_squares(const wf_tensor *t) {
  int64_t n = wfx_count(t);
  const void *p = wfx_data(t);
  double s = 0;

  if (wfx_dtype(t) == WF_FLOAT32)
    for (int64_t i = 0; i < n; i++)
      s += (double)((const float *)p)[i] * ((const float *)p)[i];
  else
    for (int64_t i = 0; i < n; i++)
      s += ((const double *)p)[i] * ((const double *)p)[i];
  return s;
}

static int clip_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int32_t n = wfx_host->kernel_num_inputs(ctx) - 1;
  int32_t dt = wfx_host->kernel_output_dtype(ctx, n);
  double clip, total = 0, norm, scale;
  wf_shape s;
  wf_tensor *out;

  if (dt != WF_FLOAT32 && dt != WF_FLOAT64)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no kernel for %s",
                    wfx_dtype_name(dt));
  if (trn_scalar_input(ctx, n, "clip_norm", &clip, st))
    return wfx_code(st);
  if (!(clip > 0) || isinf(clip))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "clip_norm is %g; it must be positive and finite", clip);
  for (int32_t i = 0; i < n; i++) {
    const wf_tensor *t;
    if (wfx_kernel_input(ctx, i, &t, NULL, st))
      return wfx_code(st);
    total += sum_squares(t);
  }
  norm = sqrt(total);
  /* A non-finite norm poisons every output, as in TensorFlow. */
  scale = isfinite(norm) ? clip / fmax(norm, clip) : NAN;

  for (int32_t i = 0; i < n; i++) {
    const wf_tensor *t = wfx_host->kernel_input(ctx, i);
    int64_t count = wfx_count(t);
    const void *x = wfx_data(t);
    void *y;

    if (scale == 1.0) {
      /* Nothing to clip: forward the input. A shared tensor is never
       * written in place, so the const view may be handed on. */
      if (wfx_host->kernel_output_set(ctx, i, (wf_tensor *)t, st))
        return wfx_code(st);
      continue;
    }
    wfx_host->tensor_shape(t, &s);
    out = wfx_host->kernel_output_new(ctx, i, &s, st);
    if (!out)
      return wfx_code(st);
    y = wfx_data(out);
    if (dt == WF_FLOAT32)
      for (int64_t j = 0; j < count; j++)
        ((float *)y)[j] = (float)(((const float *)x)[j] * scale);
    else
      for (int64_t j = 0; j < count; j++)
        ((double *)y)[j] = ((const double *)x)[j] * scale;
  }
  wfx_shape_set_scalar(&s);
  out = wfx_host->kernel_output_new(ctx, n, &s, st);
  if (!out)
    return wfx_code(st);
  if (dt == WF_FLOAT32)
    *(float *)wfx_data(out) = (float)norm;
  else
    *(double *)wfx_data(out) = norm;
  return 0;
}

static const wf_arg_def clip_inputs[] = {
    WF_ARG_LIST("t_list", "T", "N", "N tensors (...) of any shapes"),
    WF_ARG_T("clip_norm", "T", "() the largest global norm let through"),
    WF_ARG_END};
static const wf_arg_def clip_outputs[] = {
    WF_ARG_LIST("output", "T", "N", "the N tensors scaled, same shapes"),
    WF_ARG_T("global_norm", "T", "() the global norm before clipping"),
    WF_ARG_END};
static const wf_attr_def clip_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = TRN_DTYPES, .doc = "element type"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1, .doc = "number of tensors (>= 1)"},
    WF_ATTR_END};

const wf_op_def trn_clip_by_global_norm_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ClipByGlobalNorm",
    .inputs = clip_inputs,
    .outputs = clip_outputs,
    .attrs = clip_attrs,
    .shape_fn = clip_shape,
    .doc = "global_norm = sqrt(sum over the list of sum(t^2)) (accumulated "
           "in double); output[i] = t_list[i] * clip_norm / max(global_norm, "
           "clip_norm), so the tensors are unchanged (and forwarded without "
           "a copy) when global_norm <= clip_norm. A non-finite global norm "
           "makes every output NaN, as in TensorFlow's clip_by_global_norm. "
           "clip_norm must be positive and finite (INVALID_ARGUMENT)."};

const wf_kernel_def trn_clip_by_global_norm_kernel = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "ClipByGlobalNorm",
    .device_type = "cpu",
    .type_attr = "T",
    .dtypes = TRN_DTYPES,
    .priority = 0,
    .label = "reference",
    .compute = clip_compute};
