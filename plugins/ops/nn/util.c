/* plugins/ops/nn/util.c — helpers of the nn ops: reading shape-valued
 * inputs. No op is defined here. */
#include <config.h>

#include "nn.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

int nn_read_shape(const wf_tensor *t, const char *input, wf_shape *s,
                  wf_status *st) {
  int32_t dt = wfx_dtype(t);
  wf_shape ts;
  int64_t dims[WF_MAX_RANK];
  char buf[WFX_SHAPE_STR_MAX];

  wfx_host->tensor_shape(t, &ts);
  if (dt != WF_INT32 && dt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' must be int32 or int64, not %s", input,
                    wfx_dtype_name(dt));
  if (ts.rank != 1 || ts.dims[0] > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' must be a vector of at most %d entries, got "
                    "shape %s",
                    input, WF_MAX_RANK, wfx_shape_str(&ts, buf, sizeof buf));
  for (int64_t i = 0; i < ts.dims[0]; i++) {
    dims[i] = dt == WF_INT32 ? ((const int32_t *)wfx_data(t))[i]
                             : ((const int64_t *)wfx_data(t))[i];
    if (dims[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s[%" PRId64 "] is %" PRId64 " (must be >= 0)", input, i,
                      dims[i]);
  }
  wfx_shape_make(s, (int)ts.dims[0], dims);
  return 0;
}

int nn_shape_input_value(wf_shape_ctx *ctx, int32_t i, const char *input,
                         int rank, wf_shape *out, wf_status *st) {
  const wf_tensor *t = wfx_host->shape_input_value(ctx, i);

  if (t)
    return nn_read_shape(t, input, out, st);
  wfx_shape_set_unknown(out);
  out->rank = rank;
  for (int d = 0; d < rank; d++)
    out->dims[d] = WF_UNKNOWN_DIM;
  return 0;
}

