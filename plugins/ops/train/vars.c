/* plugins/ops/train/vars.c — helpers of the train plugin's kernels: locking
 * a variable and its slots in the host's variable order, and reading scalar
 * inputs. The variables themselves belong to the core (weft/plugin.h); this
 * file only locks (wfx_var_lock: in the memory of the kernel's device),
 * unlocks and orders them. */
#include <config.h>

#include "train.h"

#include <assert.h>
#include <string.h>

int trn_lock(trn_vars *v, const wf_kernel_ctx *ctx, wf_status *st) {
  char s0[WFX_SHAPE_STR_MAX], s1[WFX_SHAPE_STR_MAX];
  wf_shape vs, ss;
  int rc;

  assert(v->n >= 1 && v->n <= TRN_MAX_VARS);
  v->nlocked = 0;
  for (int i = 0; i < v->n; i++) {
    v->order[i] = i;
    v->value[i] = NULL;
  }
  /* Insertion sort by the host's order; equal handles are one variable. */
  for (int i = 1; i < v->n; i++) {
    for (int j = i; j > 0; j--) {
      int a = v->order[j - 1], b = v->order[j];
      int c = wfx_host->var_order(v->handle[a], v->handle[b]);

      if (c == 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "inputs '%s' and '%s' are the same variable '%s'; "
                        "each needs its own",
                        v->input[a < b ? a : b], v->input[a < b ? b : a],
                        wfx_host->var_name(v->handle[a]));
      if (c < 0)
        break;
      v->order[j - 1] = b;
      v->order[j] = a;
    }
  }
  for (int i = 0; i < v->n; i++) {
    int k = v->order[i];

    v->value[k] = wfx_var_lock(ctx, v->handle[k], st);
    if (!v->value[k]) {
      rc = wfx_code(st);
      goto fail;
    }
    v->nlocked++;
  }
  wfx_host->tensor_shape(v->value[0], &vs);
  for (int k = 1; k < v->n; k++) {
    wfx_host->tensor_shape(v->value[k], &ss);
    if (wfx_dtype(v->value[k]) != wfx_dtype(v->value[0]) ||
        ss.rank != vs.rank ||
        memcmp(ss.dims, vs.dims, sizeof ss.dims[0] * (size_t)ss.rank) != 0) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "slot '%s' (variable '%s') is %s %s but '%s' (variable "
                    "'%s') is %s %s; a slot has its variable's dtype and "
                    "shape",
                    v->input[k], wfx_host->var_name(v->handle[k]),
                    wfx_dtype_name(wfx_dtype(v->value[k])),
                    wfx_shape_str(&ss, s1, sizeof s1), v->input[0],
                    wfx_host->var_name(v->handle[0]),
                    wfx_dtype_name(wfx_dtype(v->value[0])),
                    wfx_shape_str(&vs, s0, sizeof s0));
      goto fail;
    }
  }
  return 0;

fail:
  trn_unlock(v);
  return rc;
}

void trn_unlock(trn_vars *v) {

  while (v->nlocked > 0) {
    int k = v->order[--v->nlocked];
    wfx_host->var_unlock(v->handle[k]);
    v->value[k] = NULL;
  }
}

int trn_scalar_input(const wf_kernel_ctx *ctx, int32_t i, const char *name,
                     double *out, wf_status *st) {
  const wf_tensor *t;
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];
  const void *p;

  if (wfx_kernel_input(ctx, i, &t, &s, st))
    return wfx_code(st);
  if (s.rank != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has shape %s; it must be a scalar", name,
                    wfx_shape_str(&s, buf, sizeof buf));
  p = wfx_data(t);
  switch (wfx_dtype(t)) {
  case WF_FLOAT32: *out = *(const float *)p; return 0;
  case WF_FLOAT64: *out = *(const double *)p; return 0;
  case WF_INT32: *out = *(const int32_t *)p; return 0;
  case WF_INT64: *out = (double)*(const int64_t *)p; return 0;
  default:
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' is %s; expected float32, float64, int32 or "
                    "int64",
                    name, wfx_dtype_name(wfx_dtype(t)));
  }
}

int trn_shape_scalar(wf_shape_ctx *ctx, int32_t i, const char *name,
                     wf_status *st) {
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, i, NULL, &s, st))
    return wfx_code(st);
  if (s.rank > 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has shape %s; it must be a scalar", name,
                    wfx_shape_str(&s, buf, sizeof buf));
  return 0;
}
