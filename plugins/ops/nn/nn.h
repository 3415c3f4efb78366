/* plugins/ops/nn/nn.h — what the files of the nn op plugin share: the op
 * definitions and kernels plugin.c lists, attribute-definition initialisers
 * and shape-valued inputs. Attribute reads in either context and the
 * sliding-window arithmetic of Conv2D and the pools are
 * plugins/numerics/window.h, shared with the device plugins. */
#ifndef WF_OPS_NN_H
#define WF_OPS_NN_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"
#include "window.h"

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

/* ---- shared by the ops of several files ---------------------------------- */

/* Conv2D's output shape (conv.c) and a pool's (pool.c) for window w: the
 * ops' shape functions' results and errors. */
int nn_conv2d_out_shape(const wf_shape *xs, const wf_shape *fs,
                        const nn_window *w, wf_shape *out, wf_status *st);
int nn_pool_out_shape(const wf_shape *xs, const nn_window *w, wf_shape *out,
                      wf_status *st);
/* y = MaxPool's reference over x of shape xs and dtype dtype (pool.c). */
int nn_max_pool_values(int32_t dtype, void *y, const void *x,
                       const wf_shape *xs, const nn_window *w, wf_status *st);

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
