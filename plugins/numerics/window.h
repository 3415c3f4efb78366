/* plugins/numerics/window.h — the sliding-window geometry of Conv2D and the
 * pools: the data_format, strides, dilations, ksize and padding attributes
 * (SAME, VALID, EXPLICIT) and, per spatial dimension, the output size and
 * the padding before. ops-nn's shape functions and reference kernels and
 * the device plugins' convolutions and pools use this one copy, so that a
 * window is padded (SAME's split of an odd total) alike wherever it runs.
 * Also attribute reads that work in shape and kernel contexts alike. */
#ifndef WF_NUMERICS_WINDOW_H
#define WF_NUMERICS_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin_aux.h>

/* ---- attributes in either context ---------------------------------------- */

/* Messages of this plugin do not name the node: the core puts "node 'x'
 * (op 'Y')" in front of every error of a shape function or kernel. */

/* Where attributes come from: exactly one of the two is set. */
typedef struct nn_attrs {
  const wf_shape_ctx *shape;
  const wf_kernel_ctx *kernel;
  const wf_node *node; /* read when shape and kernel are NULL (supports) */
} nn_attrs;

/* Typed reads (the errors of plugin_aux.h's wfx_*_attr_* reads). Strings and lists are
 * borrowed from the node, valid while the context is. */
int nn_attr_int(const nn_attrs *a, const char *name, int64_t *out,
                wf_status *st);
int nn_attr_float(const nn_attrs *a, const char *name, double *out,
                  wf_status *st);
int nn_attr_bool(const nn_attrs *a, const char *name, int *out, wf_status *st);
int nn_attr_ints(const nn_attrs *a, const char *name, const int64_t **out,
                 int64_t *count, wf_status *st);
int nn_attr_string(const nn_attrs *a, const char *name, const char **out,
                   wf_status *st);

/* ---- data formats and windows -------------------------------------------- */

/* Attribute data_format: 0 for "NHWC", 1 for "NCHW"; anything else is
 * INVALID_ARGUMENT. */
int nn_data_format(const nn_attrs *a, int *nchw, wf_status *st);

/* Index of the channel dimension of a rank-`rank` tensor. */
static inline int nn_channel_axis(int nchw, int rank) {
  return nchw ? 1 : rank - 1;
}

/* Positions of N, H, W and C (in that order) in a 4-D shape. */
static inline void nn_nhwc_index(int nchw, int idx[4]) {
  idx[0] = 0;
  idx[1] = nchw ? 2 : 1;
  idx[2] = nchw ? 3 : 2;
  idx[3] = nchw ? 1 : 3;
}

enum { NN_PAD_VALID = 0, NN_PAD_SAME = 1, NN_PAD_EXPLICIT = 2 };

/* The geometry shared by Conv2D and the pools: a 2-D window sliding over
 * the (H, W) dimensions of a 4-D tensor. */
typedef struct nn_window {
  int nchw;
  int padding;             /* NN_PAD_* */
  int64_t ksize[2];        /* pools: window (h, w); Conv2D: from the filter */
  int64_t stride[2];       /* (h, w) */
  int64_t dilation[2];     /* (h, w); 1 for pools */
  int64_t explicit_pad[4]; /* EXPLICIT: top, bottom, left, right */
} nn_window;

/* (Every read here returns its error code whether or not st is given: a
 * supports function, which has no status, passes NULL.)
 * Reads strides (4 entries, 1 in N and C), padding ("SAME", "VALID", and
 * "EXPLICIT" when allow_explicit, with explicit_paddings: 8 entries, pairs
 * per dimension in data_format order, 0 for N and C), data_format and, when
 * with_dilations, dilations (4 entries, 1 in N and C). Pools pass their
 * ksize name ("ksize", 4 entries, 1 in N and C) as ksize_attr; Conv2D NULL. */
int nn_window_parse(const nn_attrs *a, const char *ksize_attr,
                    int with_dilations, int allow_explicit, nn_window *w,
                    wf_status *st);

/* The max pooling of _FusedConv2DMaxPool: its pool_ksize and pool_strides
 * (4 entries in data_format order, 1 for N and C), pool_padding ("SAME" or
 * "VALID") and data_format. */
int nn_pool_window_parse(const nn_attrs *a, nn_window *w, wf_status *st);

/* One spatial dimension (d = 0 for H, 1 for W): output size and padding
 * before, from input size in (-1 unknown, which gives -1) and window size
 * k (-1 unknown, likewise). SAME: out = ceil(in / stride), the padding
 * total max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) split with
 * the smaller half before, as TensorFlow. VALID and EXPLICIT: a window that
 * does not fit is INVALID_ARGUMENT. */
int nn_window_dim(const nn_window *w, int d, int64_t in, int64_t k,
                  int64_t *out, int64_t *pad_before, wf_status *st);

#endif /* WF_NUMERICS_WINDOW_H */
