/* plugins/ops/array/util.c — helpers of the array kernels: reading
 * index-valued tensors (shapes, perms, begins), moving bytes by strides and
 * handing out re-shaped views. No op is defined here. */
#include <config.h>

#include "array.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

int ary_read_index(const wf_tensor *t, int rank_req, int64_t max, int64_t *out,
                   int64_t *n, const char *input, wf_status *st) {
  int32_t dt = wfx_dtype(t);
  wf_shape s;
  int64_t count;
  const void *data;

  wfx_host->tensor_shape(t, &s);
  if (dt != WF_INT32 && dt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' must be int32 or int64, not %s", input,
                    wfx_dtype_name(dt));
  if (s.rank != rank_req) {
    char buf[WFX_SHAPE_STR_MAX];
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' must be %s, got shape %s", input,
                    rank_req == 0 ? "a scalar" : "a vector (rank 1)",
                    wfx_shape_str(&s, buf, sizeof buf));
  }
  count = rank_req == 0 ? 1 : s.dims[0];
  if (count > max)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has %" PRId64 " entries, at most %" PRId64
                    " are allowed",
                    input, count, max);
  data = wfx_data(t);
  for (int64_t i = 0; i < count; i++)
    out[i] = dt == WF_INT32 ? ((const int32_t *)data)[i]
                            : ((const int64_t *)data)[i];
  *n = count;
  return 0;
}

int ary_shape_index_value(const wf_shape_ctx *ctx, int32_t i, int rank_req,
                          int64_t max, int64_t *out, int64_t *n,
                          const char *input, wf_status *st) {
  const wf_tensor *t = wfx_host->shape_input_value(ctx, i);

  if (!t)
    return 0;
  if (ary_read_index(t, rank_req, max, out, n, input, st))
    return -1;
  return 1;
}

int64_t ary_shape_vector_length(const wf_shape_ctx *ctx, int32_t i,
                                const char *input, wf_status *st) {
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, i, NULL, &s, st))
    return -2;
  if (s.rank < 0)
    return -1;
  if (s.rank != 1) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "input '%s' must be a vector (rank 1), got shape %s", input,
             wfx_shape_str(&s, buf, sizeof buf));
    return -2;
  }
  return s.dims[0];
}

int ary_read_shape(const wf_tensor *t, const char *input, wf_shape *s,
                   wf_status *st) {
  int64_t dims[ARY_MAX_INDEX], n;

  if (ary_read_index(t, 1, WF_MAX_RANK, dims, &n, input, st))
    return wfx_code(st);
  for (int64_t i = 0; i < n; i++)
    if (dims[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s[%" PRId64 "] is %" PRId64 " (must be >= 0)", input, i,
                      dims[i]);
  wfx_shape_make(s, (int)n, dims);
  return 0;
}

int ary_shape_from_input(wf_shape_ctx *ctx, int32_t i, const char *input,
                         int rank_hint, wf_shape *out, wf_status *st) {
  const wf_tensor *t = wfx_host->shape_input_value(ctx, i);
  int64_t n;

  if (t)
    return ary_read_shape(t, input, out, st);
  n = ary_shape_vector_length(ctx, i, input, st);
  if (n == -2)
    return wfx_code(st);
  if (n > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has %" PRId64 " entries, at most %d are "
                    "allowed",
                    input, n, WF_MAX_RANK);
  if (n < 0)
    n = rank_hint;
  wfx_shape_set_unknown(out);
  if (n >= 0) {
    out->rank = (int32_t)n;
    for (int d = 0; d < out->rank; d++)
      out->dims[d] = WF_UNKNOWN_DIM;
  }
  return 0;
}

/* Copies one row of n elements of es bytes with element strides ds, ss. */
static void copy_row(char *dst, int64_t ds, const char *src, int64_t ss,
                     int64_t n, size_t es) {
  if (ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  switch (es) {
#define ROW(T)                                                                 \
  for (int64_t j = 0; j < n; j++)                                              \
    memcpy(dst + j * ds * (int64_t)sizeof(T),                                  \
           src + j * ss * (int64_t)sizeof(T), sizeof(T));                      \
  break;
  case 1:
    ROW(uint8_t)
  case 2:
    ROW(uint16_t)
  case 4:
    ROW(uint32_t)
  case 8:
    ROW(uint64_t)
#undef ROW
  default:
    for (int64_t j = 0; j < n; j++)
      memcpy(dst + j * ds * (int64_t)es, src + j * ss * (int64_t)es, es);
  }
}

void ary_strided_copy(void *dst, const int64_t *dstr, const void *src,
                      const int64_t *sstr, const int64_t *dims, int rank,
                      size_t es) {
  int64_t idx[ARY_COPY_MAX_RANK] = {0};
  int64_t doff = 0, soff = 0; /* element offsets of the current row */

  assert(rank >= 0 && rank <= ARY_COPY_MAX_RANK);
  for (int d = 0; d < rank; d++)
    if (dims[d] == 0)
      return;
  if (rank == 0) {
    memcpy(dst, src, es);
    return;
  }
  for (;;) {
    int d;

    copy_row((char *)dst + doff * (int64_t)es, dstr[rank - 1],
             (const char *)src + soff * (int64_t)es, sstr[rank - 1],
             dims[rank - 1], es);
    for (d = rank - 2; d >= 0; d--) {
      idx[d]++;
      doff += dstr[d];
      soff += sstr[d];
      if (idx[d] < dims[d])
        break;
      doff -= dstr[d] * dims[d];
      soff -= sstr[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}

void ary_fill_bytes(void *dst, const void *value, int64_t count, size_t es) {
  size_t total = (size_t)count * es, done;

  if (count <= 0)
    return;
  memcpy(dst, value, es);
  /* Doubling copies: log2(count) memcpy calls whatever the element size. */
  for (done = es; done < total; done *= 2)
    memcpy((char *)dst + done, dst, done <= total - done ? done : total - done);
}

int ary_output_reshaped(wf_kernel_ctx *ctx, const wf_shape *out,
                        wf_status *st) {
  const wf_tensor *x;
  wf_tensor *view;
  wf_shape xs;
  int rc;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  if (wfx_shape_count(&xs) != wfx_shape_count(out))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "cannot give input of shape %s the shape %s (element "
                    "counts differ)",
                    wfx_shape_str(&xs, a, sizeof a),
                    wfx_shape_str(out, b, sizeof b));
  /* A view, not a copy. Casting away const is safe: the view shares a
   * buffer that, like any tensor with more than one reference, is never
   * written (weft/tensor.h). */
  if (!(view = wfx_host->tensor_reshape((wf_tensor *)x, out, st)))
    return wfx_code(st);
  rc = wfx_host->kernel_output_set(ctx, 0, view, st);
  wfx_host->tensor_release(view);
  return rc;
}
