/* plugins/numerics/labels.c — the sparse cross-entropy's class labels
 * (contract in labels.h). */
#include <config.h>

#include "labels.h"

#include <inttypes.h>

int nx_sparse_labels(const wf_tensor *labels, int64_t n, int64_t classes,
                     int64_t **cls, wf_status *st) {
  int32_t dt = wfx_dtype(labels);
  const void *d = wfx_data(labels);
  int64_t *out;

  *cls = NULL;
  if (dt != WF_INT32 && dt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "labels must be int32 or int64, not %s",
                    wfx_dtype_name(dt));
  if (n <= 0)
    return 0;
  if (!(out = wfx_host->alloc((size_t)n * sizeof *out, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " labels", n);
  for (int64_t i = 0; i < n; i++) {
    out[i] = dt == WF_INT32 ? ((const int32_t *)d)[i] : ((const int64_t *)d)[i];
    if (out[i] < 0 || out[i] >= classes) {
      int64_t v = out[i];
      wfx_host->free(out);
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "labels[%" PRId64 "] = %" PRId64
                      " is out of range [0, %" PRId64
                      ") (the number of classes)",
                      i, v, classes);
    }
  }
  *cls = out;
  return 0;
}
