/* plugins/ops/nn/nn.h — what the files of the nn op plugin share: the op
 * definitions and kernels plugin.c lists, attribute-definition initialisers,
 * attribute reads that work in both shape and kernel contexts, and the
 * data-format and sliding-window arithmetic of Conv2D and the pools. */
#ifndef WF_OPS_NN_H
#define WF_OPS_NN_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* ---- attribute definitions ----------------------------------------------- */

#define NN_ATTR_TYPE(nm, allowed, dc)                                          \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_DTYPE,          \
                                 .allowed_dtypes = (allowed), .doc = (dc)      \
  }
#define NN_ATTR_TYPE_DEFAULT(nm, allowed, def, dc)                             \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_DTYPE,          \
                                 .allowed_dtypes = (allowed),                  \
                                 .has_default = 1,                             \
                                 .default_value = {.type = WF_ATTR_DTYPE,      \
                                                   .count = 1,                 \
                                                   .u.dtype = (def)},          \
                                 .doc = (dc)                                   \
  }
#define NN_ATTR_INT(nm, def, dc)                                               \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_INT, .has_default = 1,                   \
        .default_value = {.type = WF_ATTR_INT, .count = 1, .u.i = (def)},      \
        .doc = (dc)                                                            \
  }
#define NN_ATTR_FLOAT(nm, def, dc)                                             \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_FLOAT, .has_default = 1,                 \
        .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = (def)},    \
        .doc = (dc)                                                            \
  }
#define NN_ATTR_BOOL(nm, def, dc)                                              \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_BOOL, .has_default = 1,                  \
        .default_value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = (def)},     \
        .doc = (dc)                                                            \
  }
#define NN_ATTR_STRING(nm, def, dc)                                            \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_STRING, .has_default = 1,                \
        .default_value = {.type = WF_ATTR_STRING, .count = 1, .u.s = (def)},   \
        .doc = (dc)                                                            \
  }
#define NN_ATTR_STRING_REQUIRED(nm, dc)                                        \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_STRING,         \
                                 .doc = (dc)                                   \
  }
/* A required list(int) attribute of at least min entries. */
#define NN_ATTR_INTS_REQUIRED(nm, min, dc)                                     \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_LIST | WF_ATTR_INT, .has_minimum = 1,    \
        .minimum = (min), .doc = (dc)                                          \
  }
/* A list(int) attribute defaulting to the n values of the array def. */
#define NN_ATTR_INTS(nm, def, n, dc)                                           \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,    \
        .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT,                  \
                          .count = (n),                                        \
                          .u.ints = (def)},                                    \
        .doc = (dc)                                                            \
  }
#define NN_ATTR_DATA_FORMAT                                                    \
  NN_ATTR_STRING("data_format", "NHWC",                                        \
                 "\"NHWC\" (channels last, the default) or \"NCHW\"")

/* ---- attributes in either context ---------------------------------------- */

/* Messages of this plugin do not name the node: the core puts "node 'x'
 * (op 'Y')" in front of every error of a shape function or kernel. */

/* Where attributes come from: exactly one of the two is set. */
typedef struct nn_attrs {
  const wf_shape_ctx *shape;
  const wf_kernel_ctx *kernel;
} nn_attrs;

/* Typed reads (see opcommon.h for the errors). Strings and lists are
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

/* ---- shape-valued inputs ------------------------------------------------- */

/* Reads the shape vector t (the op's input called `input`: int32/int64,
 * (R,) with R <= WF_MAX_RANK and entries >= 0) into *s; INVALID_ARGUMENT
 * naming input otherwise. */
int nn_read_shape(const wf_tensor *t, const char *input, wf_shape *s,
                  wf_status *st);

/* During shape inference of an op whose input i holds a shape: that shape
 * when the input is a Const (checked as nn_read_shape does), else rank
 * `rank` with unknown dims. */
int nn_shape_input_value(wf_shape_ctx *ctx, int32_t i, const char *input,
                         int rank, wf_shape *out, wf_status *st);

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

/* Reads strides (4 entries, 1 in N and C), padding ("SAME", "VALID", and
 * "EXPLICIT" when allow_explicit, with explicit_paddings: 8 entries, pairs
 * per dimension in data_format order, 0 for N and C), data_format and, when
 * with_dilations, dilations (4 entries, 1 in N and C). Pools pass their
 * ksize name ("ksize", 4 entries, 1 in N and C) as ksize_attr; Conv2D NULL. */
int nn_window_parse(const nn_attrs *a, const char *ksize_attr,
                    int with_dilations, int allow_explicit, nn_window *w,
                    wf_status *st);

/* One spatial dimension (d = 0 for H, 1 for W): output size and padding
 * before, from input size in (-1 unknown, which gives -1) and window size
 * k (-1 unknown, likewise). SAME: out = ceil(in / stride), the padding
 * total max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) split with
 * the smaller half before, as TensorFlow. VALID and EXPLICIT: a window that
 * does not fit is INVALID_ARGUMENT. */
int nn_window_dim(const nn_window *w, int d, int64_t in, int64_t k,
                  int64_t *out, int64_t *pad_before, wf_status *st);

/* ---- what plugin.c lists ------------------------------------------------- */

extern const wf_op_def nn_bias_add_op, nn_conv2d_op, nn_max_pool_op,
    nn_avg_pool_op, nn_softmax_op, nn_log_softmax_op, nn_softmax_xent_op,
    nn_sparse_softmax_xent_op, nn_batch_norm_op, nn_dropout_op;
extern const wf_kernel_def nn_bias_add_kernel, nn_conv2d_kernel,
    nn_max_pool_kernel, nn_avg_pool_kernel, nn_softmax_kernel,
    nn_log_softmax_kernel, nn_softmax_xent_kernel,
    nn_sparse_softmax_xent_kernel, nn_batch_norm_kernel, nn_dropout_kernel;

/* The backward ops of the gradients (grad.c builds them). */
extern const wf_op_def nn_bias_add_grad_op, nn_conv2d_backprop_input_op,
    nn_conv2d_backprop_filter_op, nn_max_pool_grad_op, nn_avg_pool_grad_op,
    nn_softmax_grad_op, nn_log_softmax_grad_op, nn_batch_norm_grad_op;
extern const wf_kernel_def nn_bias_add_grad_kernel,
    nn_conv2d_backprop_input_kernel, nn_conv2d_backprop_filter_kernel,
    nn_max_pool_grad_kernel, nn_avg_pool_grad_kernel, nn_softmax_grad_kernel,
    nn_log_softmax_grad_kernel, nn_batch_norm_grad_kernel;

/* layernorm.c: LayerNorm and its backward op. */
extern const wf_op_def nn_layer_norm_op, nn_layer_norm_grad_op;
extern const wf_kernel_def nn_layer_norm_kernel, nn_layer_norm_grad_kernel;

/* grad.c: every gradient definition of the plugin, NULL-terminated. */
extern const wf_gradient_def *const nn_gradients[];

#endif /* WF_OPS_NN_H */
