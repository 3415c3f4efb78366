/* plugins/numerics/window.c — attribute reads in any context, the
 * data_format attribute and the sliding-window arithmetic (strides,
 * dilations, SAME/VALID/EXPLICIT padding) of Conv2D and the pools
 * (contracts in window.h). */
#include <config.h>

#include "window.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

int nn_attr_int(const nn_attrs *a, const char *name, int64_t *out,
                wf_status *st) {
  return a->shape    ? wfx_shape_attr_int(a->shape, name, out, st)
         : a->kernel ? wfx_kernel_attr_int(a->kernel, name, out, st)
                     : wfx_node_attr_int(a->node, name, out, st);
}

int nn_attr_float(const nn_attrs *a, const char *name, double *out,
                  wf_status *st) {
  return a->shape    ? wfx_shape_attr_float(a->shape, name, out, st)
         : a->kernel ? wfx_kernel_attr_float(a->kernel, name, out, st)
                     : wfx_node_attr_float(a->node, name, out, st);
}

int nn_attr_bool(const nn_attrs *a, const char *name, int *out, wf_status *st) {
  return a->shape    ? wfx_shape_attr_bool(a->shape, name, out, st)
         : a->kernel ? wfx_kernel_attr_bool(a->kernel, name, out, st)
                     : wfx_node_attr_bool(a->node, name, out, st);
}

int nn_attr_ints(const nn_attrs *a, const char *name, const int64_t **out,
                 int64_t *count, wf_status *st) {
  return a->shape    ? wfx_shape_attr_ints(a->shape, name, out, count, st)
         : a->kernel ? wfx_kernel_attr_ints(a->kernel, name, out, count, st)
                     : wfx_node_attr_ints(a->node, name, out, count, st);
}

int nn_attr_string(const nn_attrs *a, const char *name, const char **out,
                   wf_status *st) {
  wf_attr_value v;
  int rc = a->shape    ? wfx_host->shape_attr(a->shape, name, &v)
           : a->kernel ? wfx_host->kernel_attr(a->kernel, name, &v)
                       : wfx_host->node_attr(a->node, name, &v);

  if (rc != 0 || v.type != WF_ATTR_STRING || !v.u.s)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "attribute '%s' must be a string",
                    name);
  *out = v.u.s;
  return 0;
}

int nn_data_format(const nn_attrs *a, int *nchw, wf_status *st) {
  const char *f;

  int rc = nn_attr_string(a, "data_format", &f, st);
  if (rc)
    return rc;
  if (strcmp(f, "NHWC") == 0)
    *nchw = 0;
  else if (strcmp(f, "NCHW") == 0)
    *nchw = 1;
  else
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "data_format \"%s\" is neither \"NHWC\" nor \"NCHW\"", f);
  return 0;
}

/* Reads a 4-entry list attribute whose N and C entries must be 1 and whose
 * H and W entries (>= 1) go to hw[0], hw[1]. */
static int read_hw4(const nn_attrs *a, const char *name, int nchw, int64_t *hw,
                    wf_status *st) {
  const int64_t *v;
  int64_t n;
  int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2, ic = nchw ? 1 : 3;

  int rc = nn_attr_ints(a, name, &v, &n, st);
  if (rc)
    return rc;
  if (n != 4)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' must have 4 entries (one per dimension of %s), "
                    "got %" PRId64,
                    name, nchw ? "NCHW" : "NHWC", n);
  if (v[0] != 1 || v[ic] != 1)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "'%s' must be 1 in the batch and channel dimensions, "
                    "got [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]",
                    name, v[0], v[1], v[2], v[3]);
  if (v[ih] < 1 || v[iw] < 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' must be >= 1 in H and W, got [%" PRId64 ", %" PRId64
                    ", %" PRId64 ", %" PRId64 "]",
                    name, v[0], v[1], v[2], v[3]);
  hw[0] = v[ih];
  hw[1] = v[iw];
  return 0;
}

int nn_pool_window_parse(const nn_attrs *a, nn_window *w, wf_status *st) {
  const char *pad;
  int rc;

  memset(w, 0, sizeof *w);
  w->dilation[0] = w->dilation[1] = 1;
  if ((rc = nn_data_format(a, &w->nchw, st)) ||
      (rc = read_hw4(a, "pool_ksize", w->nchw, w->ksize, st)) ||
      (rc = read_hw4(a, "pool_strides", w->nchw, w->stride, st)) ||
      (rc = nn_attr_string(a, "pool_padding", &pad, st)))
    return rc;
  if (strcmp(pad, "VALID") == 0)
    w->padding = NN_PAD_VALID;
  else if (strcmp(pad, "SAME") == 0)
    w->padding = NN_PAD_SAME;
  else
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "pool_padding \"%s\" is not one of \"SAME\", \"VALID\"",
                    pad);
  return 0;
}

int nn_window_parse(const nn_attrs *a, const char *ksize_attr,
                    int with_dilations, int allow_explicit, nn_window *w,
                    wf_status *st) {
  const char *pad;
  const int64_t *ep;
  int64_t nep;

  memset(w, 0, sizeof *w);
  w->dilation[0] = w->dilation[1] = 1;
  w->ksize[0] = w->ksize[1] = WF_UNKNOWN_DIM;
  int rc;
  if ((rc = nn_data_format(a, &w->nchw, st)) ||
      (rc = read_hw4(a, "strides", w->nchw, w->stride, st)) ||
      (with_dilations &&
       (rc = read_hw4(a, "dilations", w->nchw, w->dilation, st))) ||
      (ksize_attr && (rc = read_hw4(a, ksize_attr, w->nchw, w->ksize, st))) ||
      (rc = nn_attr_string(a, "padding", &pad, st)))
    return rc;
  if (strcmp(pad, "VALID") == 0)
    w->padding = NN_PAD_VALID;
  else if (strcmp(pad, "SAME") == 0)
    w->padding = NN_PAD_SAME;
  else if (allow_explicit && strcmp(pad, "EXPLICIT") == 0)
    w->padding = NN_PAD_EXPLICIT;
  else
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "padding \"%s\" is not one of \"SAME\", \"VALID\"%s", pad,
                    allow_explicit ? ", \"EXPLICIT\"" : "");
  if (!allow_explicit)
    return 0;
  if ((rc = nn_attr_ints(a, "explicit_paddings", &ep, &nep, st)))
    return rc;
  if (w->padding != NN_PAD_EXPLICIT) {
    if (nep != 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "explicit_paddings must be empty unless padding is "
                      "\"EXPLICIT\"");
    return 0;
  }
  if (nep != 8)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "explicit_paddings must have 8 entries (before and "
                    "after, per dimension of %s), got %" PRId64,
                    w->nchw ? "NCHW" : "NHWC", nep);
  for (int i = 0; i < 8; i++) {
    int dim = i / 2, spatial = w->nchw ? dim >= 2 : (dim == 1 || dim == 2);

    if (ep[i] < 0 || (!spatial && ep[i] != 0))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "explicit_paddings[%d] is %" PRId64 " (must be >= 0, "
                      "and 0 in the batch and channel dimensions)",
                      i, ep[i]);
  }
  /* Pairs for H then W, in data_format order. */
  {
    int ih = w->nchw ? 2 : 1, iw = w->nchw ? 3 : 2;
    w->explicit_pad[0] = ep[2 * ih];
    w->explicit_pad[1] = ep[2 * ih + 1];
    w->explicit_pad[2] = ep[2 * iw];
    w->explicit_pad[3] = ep[2 * iw + 1];
  }
  return 0;
}

int nn_window_dim(const nn_window *w, int d, int64_t in, int64_t k,
                  int64_t *out, int64_t *pad_before, wf_status *st) {
  static const char *const names[] = {"height", "width"};
  int64_t s = w->stride[d], eff, avail, lo = 0;

  assert(d == 0 || d == 1);
  *out = *pad_before = WF_UNKNOWN_DIM;
  if (w->padding == NN_PAD_SAME && in >= 0)
    *out = (in + s - 1) / s;
  if (in < 0 || k < 0)
    return 0;
  eff = (k - 1) * w->dilation[d] + 1;
  switch (w->padding) {
  case NN_PAD_SAME: {
    int64_t total = (*out - 1) * s + eff - in;
    *pad_before = total > 0 ? total / 2 : 0;
    return 0;
  }
  case NN_PAD_EXPLICIT:
    lo = w->explicit_pad[2 * d];
    avail = in + lo + w->explicit_pad[2 * d + 1];
    break;
  default:
    avail = in;
    break;
  }
  if (avail < eff)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the window's %s %" PRId64 " (%" PRId64
                    " dilated) is larger than the %sinput %s %" PRId64,
                    names[d], k, eff,
                    w->padding == NN_PAD_EXPLICIT ? "padded " : "", names[d],
                    avail);
  *out = (avail - eff) / s + 1;
  *pad_before = lo;
  return 0;
}
