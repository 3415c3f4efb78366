/* plugins/importers/onnx/onnx_internal.h — what the files of the ONNX
 * importer share: the import state (values by name, the node being
 * mapped), the node builders the op mappings use, TensorProto decoding,
 * and the plugin's own ops (ONNX semantics that weft's op plugins do not
 * have). Not an SDK header: nothing outside this directory includes it. */
#ifndef ONNX_INTERNAL_H
#define ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin_aux.h>

#include "onnx.pb-c.h"

/* The opsets of the default domain ("" or "ai.onnx") the mappings follow. */
#define OX_OPSET_MIN 1
#define OX_OPSET_MAX 18

#define OX_MAX_IO 64 /* inputs or outputs of one ONNX node we map */

/* One named ONNX value: a weft output, its static dtype and shape, and,
 * when known while importing (an initializer, a Constant, a folded
 * shape), its value. */
typedef struct ox_val {
  char *name;
  wf_output out;     /* node NULL until made (constants are made lazily) */
  int32_t dtype;     /* wf_dtype */
  wf_shape shape;    /* static, rank -1 when unknown */
  wf_tensor *konst;  /* owned, or NULL */
  int weight;        /* an initializer that becomes a variable when used */
  /* A sequence (ONNX's list of tensors) of a length known while importing:
   * its tensors' outputs (elements chosen at run time are OnnxPick nodes);
   * dtype is the elements'. */
  int is_seq;
  int nseq;
  wf_output *seq;
  struct ox_val *next; /* hash chain */
} ox_val;

typedef struct ox_imp {
  wf_import_ctx *ctx;
  const char *path;
  char dir[4096];     /* the model's directory, for external data */
  int opset;          /* of the default domain */
  int preview_training; /* of ai.onnx.preview.training (Gradient), or 0 */
  int64_t ir_version;
  ox_val **table;     /* hash of values by name */
  size_t table_size;
  int64_t counter;    /* unique node names */
} ox_imp;

/* The ONNX node being mapped. */
typedef struct ox_node {
  ox_imp *im;
  const Onnx__NodeProto *p;
  int nin, nout;
  ox_val *in[OX_MAX_IO]; /* NULL for an absent optional input */
  char base[96];         /* sanitised name, the prefix of its weft nodes */
} ox_node;

/* ---- values and nodes (onnx_import.c) ---------------------------------- */

ox_val *ox_find(ox_imp *im, const char *name);
/* Output i of the node is out (dtype and shape read from the graph). */
int ox_set_out(ox_node *n, int i, wf_output out, wf_status *st);
/* Output i of the node is a sequence of k tensors (elems copied). */
int ox_set_seq_out(ox_node *n, int i, const wf_output *elems, int k,
                   int32_t dtype, wf_status *st);
/* Output i of the node is a value known now (t is taken over). */
int ox_set_const_out(ox_node *n, int i, wf_tensor *t, wf_status *st);
/* The weft output of v, made now when v is a constant or weight. */
wf_output ox_use(ox_node *n, ox_val *v, wf_status *st);
/* Adds a node of op to the graph, named after the ONNX node. Passes
 * failure along: with st already failed, or an input's node NULL, adds
 * nothing and returns a NULL output, so builders check once at the end. */
wf_output ox_add(ox_node *n, const char *op, const wf_output *in, int nin,
                 const wf_attr_item *a, int na, wf_status *st);
wf_output ox_add1(ox_node *n, const char *op, wf_output x, wf_status *st);
wf_output ox_add2(ox_node *n, const char *op, wf_output x, wf_output y,
                  wf_status *st);
/* output index k of the node made by ox_add */
static inline wf_output ox_out(wf_output o, int k) {
  o.index = k;
  return o;
}
/* A variable named after name holding t (taken over), given its value
 * once (a weight the importer rearranged, e.g. a filter's layout). */
wf_output ox_weight(ox_node *n, const char *name, wf_tensor *t,
                    wf_status *st);
/* A Const node holding t (taken over). */
wf_output ox_const(ox_node *n, wf_tensor *t, wf_status *st);
/* Consts of int64 values: a vector of n, and a scalar. */
wf_output ox_const_i64(ox_node *n, const int64_t *v, int count, wf_status *st);
wf_output ox_scalar_i64(ox_node *n, int64_t v, wf_status *st);
/* A scalar of dtype holding v (converted). */
wf_output ox_scalar(ox_node *n, int32_t dtype, double v, wf_status *st);
/* Static dtype and shape of a weft output. */
int32_t ox_dtype_of(wf_output o);
void ox_shape_of(wf_output o, wf_shape *s);
/* A failure of the node being mapped: INVALID_ARGUMENT (or code) with a
 * message; the import then names the file and the node. */
int ox_fail(ox_node *n, wf_status *st, int code, const char *fmt, ...)
    WF_PRINTF_LIKE(4, 5);

/* ---- attributes -------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(const ox_node *n, const char *name);
int64_t ox_attr_i(const ox_node *n, const char *name, int64_t dflt);
double ox_attr_f(const ox_node *n, const char *name, double dflt);
/* A string attribute into buf (dflt when absent). */
const char *ox_attr_s(const ox_node *n, const char *name, const char *dflt,
                      char *buf, size_t len);
/* An ints attribute: its count, -1 when absent; *v borrowed. */
int ox_attr_ints(const ox_node *n, const char *name, const int64_t **v);
int ox_attr_floats(const ox_node *n, const char *name, const float **v);

/* Ints of input i known now (an initializer or a Constant): count, or -1
 * when input i is absent or not known now (then *v untouched). At most
 * max values are copied. */
int ox_const_ints(ox_node *n, int i, int64_t *v, int max, wf_status *st);

/* ---- tensors (onnx_tensor.c) ------------------------------------------- */

/* The weft dtype of an ONNX element type, or WF_DTYPE_INVALID. */
int32_t ox_dtype(int32_t onnx_type);
const char *ox_onnx_type_name(int32_t onnx_type);
/* A new tensor holding the TensorProto's value; external data is read
 * from files under dir (paths that leave it are refused). NULL with st
 * set, the message saying what of the tensor is wrong. */
wf_tensor *ox_tensor(const Onnx__TensorProto *tp, const char *dir,
                     wf_status *st);
/* A string tensor of shape s holding the k byte strings at v (k the
 * shape's count); NULL with st set (a core before ABI 1.6 has none). */
wf_tensor *ox_strings(const ProtobufCBinaryData *v, size_t k,
                      const wf_shape *s, wf_status *st);

/* ---- the op mappings (onnx_ops.c) -------------------------------------- */

typedef int ox_build_fn(ox_node *n, wf_status *st);
/* The mapping of an op type at the model's opset, or NULL. */
ox_build_fn *ox_mapping(const char *op_type, int opset);
/* The mapping of an optimizer op of ai.onnx.preview.training, or NULL
 * (onnx_train.c). */
ox_build_fn *ox_training_mapping(const char *op_type);

/* ---- the plugin's own ops (onnx_kernels.c) ----------------------------- */

extern const wf_op_def *const ox_plugin_ops[];
/* onnx_kernels_index.c */
extern const wf_op_def ox_gather_el_op, ox_trilu_op, ox_range_op, ox_mod_op,
    ox_cumsum_op, ox_reduce_sum_op, ox_axes_reshape_op, ox_slice_op, ox_nll_op,
    ox_resize_op, ox_conv_op, ox_conv_transpose_op, ox_pool_op, ox_pick_op,
    ox_layer_norm_op;
extern const wf_kernel_def ox_gather_el_kernel, ox_trilu_kernel,
    ox_range_kernel, ox_mod_kernel, ox_cumsum_kernel, ox_reduce_sum_kernel,
    ox_axes_reshape_kernel, ox_slice_kernel, ox_nll_kernel, ox_resize_kernel,
    ox_conv_kernel, ox_conv_transpose_kernel, ox_pool_kernel, ox_pick_kernel,
    ox_layer_norm_kernel;
/* onnx_kernels_more.c */
extern const wf_op_def ox_cast_op, ox_scatter_el_op, ox_gather_nd_op,
    ox_scatter_nd_op, ox_eye_op, ox_topk_op, ox_padrt_op, ox_lrn_op,
    ox_nonzero_op, ox_compress_op, ox_revseq_op, ox_einsum_op, ox_window_op,
    ox_det_op;
extern const wf_kernel_def ox_cast_kernel, ox_scatter_el_kernel,
    ox_gather_nd_kernel, ox_scatter_nd_kernel, ox_eye_kernel, ox_topk_kernel,
    ox_padrt_kernel, ox_lrn_kernel, ox_nonzero_kernel, ox_compress_kernel,
    ox_revseq_kernel, ox_einsum_kernel, ox_window_kernel, ox_det_kernel;
/* onnx_rnn.c */
extern const wf_op_def ox_rnn_op, ox_unpool_op;
extern const wf_kernel_def ox_rnn_kernel, ox_unpool_kernel;
/* onnx_kernels_extra.c */
extern const wf_op_def ox_nms_op, ox_grid_op, ox_unique_op, ox_tfidf_op,
    ox_dft_op, ox_dropout_op;
extern const wf_kernel_def ox_nms_kernel, ox_grid_kernel, ox_unique_kernel,
    ox_tfidf_kernel, ox_dft_kernel, ox_dropout_kernel;
/* onnx_fuse.c */
extern const wf_pass_def ox_fuse_layer_norm_pass, ox_fuse_gelu_pass,
    ox_fuse_bias_pass;
/* onnx_layout.c */
extern const wf_pass_def ox_nhwc_pass;
extern const wf_kernel_def *const ox_plugin_kernels[];

#endif
