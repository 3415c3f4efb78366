/* plugins/ops/array/grad.c — the gradient functions of the array ops and
 * the list of those through which no gradient flows. Each builds its part
 * of the backward graph from ops of this plugin (and Sum from ops-math for
 * Fill); shapes are Consts when the forward shapes are fully known while
 * building, Shape nodes otherwise. Gather's gradient along axis 0 is
 * sparse; along other axes it is dense (GatherGrad). */
#include <config.h>

#include "array.h"

#include <string.h>

/* ---- building blocks ----------------------------------------------------- */

/* A Const node holding the int64 vector v[0..n-1]. */
static wf_output const_i64(wf_grad_ctx *ctx, const int64_t *v, int n,
                           wf_status *st) {
  wf_output out = {NULL, 0};
  wf_attr_item attrs[2];
  wf_tensor *t;
  wf_shape s;
  int64_t len = n;

  if (wfx_code(st))
    return out;
  wfx_shape_make(&s, 1, &len);
  if (!(t = wfx_host->tensor_new(WF_INT64, &s, st)))
    return out;
  if (n > 0)
    memcpy(wfx_data(t), v, (size_t)n * sizeof *v);
  attrs[0] = (wf_attr_item){
      "value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}};
  attrs[1] = WFX_ITEM_DTYPE("dtype", WF_INT64);
  out = wfx_grad_node(ctx, "Const", NULL, 0, attrs, 2, st);
  wfx_host->tensor_release(t);
  return out;
}

/* x's shape as an int64 vector: a Const when it is fully known while
 * building, else a Shape node. */
static wf_output shape_of(wf_grad_ctx *ctx, wf_output x, wf_status *st) {
  wf_attr_item out_type = WFX_ITEM_DTYPE("out_type", WF_INT64);
  wf_shape s;

  if (x.node && wfx_host->grad_tensor_info(ctx, x, NULL, &s) == 0 &&
      wfx_shape_is_known(&s))
    return const_i64(ctx, s.dims, s.rank, st);
  return wfx_grad_node(ctx, "Shape", &x, 1, &out_type, 1, st);
}

/* g given x's shape (g has x's element count): g itself when both shapes
 * are known and equal, else Reshape(g, shape_of(x)). */
static wf_output reshape_like(wf_grad_ctx *ctx, wf_output g, wf_output x,
                              wf_status *st) {
  if (g.node && wfx_grad_same_known_shape(ctx, g, x))
    return g;
  return wfx_grad_op2(ctx, "Reshape", g, shape_of(ctx, x, st), st);
}

/* The gradient arriving at output i, or zeros of that output when none
 * does. */
static wf_output grad_or_zeros(wf_grad_ctx *ctx, int32_t i, wf_status *st) {
  wf_output g = wfx_host->grad_output_grad(ctx, i);

  if (g.node)
    return g;
  return wfx_grad_op1(ctx, "ZerosLike", wfx_host->grad_output(ctx, i), st);
}

/* An int attribute item copied from the forward node. */
static int copy_int_attr(const wf_grad_ctx *ctx, const char *name,
                         wf_attr_item *item, wf_status *st) {
  wf_attr_value v;

  if (wfx_grad_attr(ctx, name, WF_ATTR_INT, &v, st))
    return wfx_code(st);
  *item = WFX_ITEM_VALUE(name, v);
  return 0;
}

#define IN(i) (wfx_host->grad_input(ctx, (i)))
#define DY(i) (wfx_host->grad_output_grad(ctx, (i)))

/* ---- ops that only move elements ----------------------------------------- */

/* Identity: dx = dy. */
static int grad_identity(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, DY(0));
  return wfx_grad_done(st);
}

/* Reshape, Squeeze, ExpandDims: dx = dy in x's shape. The shape input of
 * Reshape gets none. */
static int grad_reshape(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, reshape_like(ctx, DY(0), IN(0), st));
  return wfx_grad_done(st);
}

/* Transpose: dx = Transpose(dy, InvertPermutation(perm)). */
static int grad_transpose(wf_grad_ctx *ctx, wf_status *st) {
  wf_output inv = wfx_grad_op1(ctx, "InvertPermutation", IN(1), st);

  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "Transpose", DY(0), inv, st));
  return wfx_grad_done(st);
}

/* Concat: input i's gradient is the block of dy it filled, Slice(dy,
 * offset_i, shape_i). Offsets are Consts when every input's shape is known
 * while building, else the outputs of one ConcatOffset node. */
static int grad_concat(wf_grad_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->grad_num_inputs(ctx);
  wf_output *shapes = NULL;
  wf_node *offsets = NULL;
  wf_attr_item axis_item;
  int64_t at = 0;
  int known = 1, axis = -1;

  if (copy_int_attr(ctx, "axis", &axis_item, st))
    return wfx_code(st);
  for (int32_t i = 0; i < n && known; i++) {
    wf_shape s;

    known = wfx_host->grad_tensor_info(ctx, IN(i), NULL, &s) == 0 &&
            wfx_shape_is_known(&s);
    if (known && axis < 0 &&
        wfx_axis_normalize(axis_item.value.u.i, s.rank, &axis, NULL, st))
      return wfx_code(st);
  }
  if (!(shapes = wfx_host->alloc((size_t)n * sizeof *shapes, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "gradient of node '%s': out of memory for %d shapes",
                    wfx_host->grad_node_name(ctx), (int)n);
  for (int32_t i = 0; i < n; i++)
    shapes[i] = shape_of(ctx, IN(i), st);
  if (!known && wfx_code(st) == WF_OK)
    offsets = wfx_host->grad_add_node(ctx, "ConcatOffset", shapes, n,
                                      &axis_item, 1, st);
  for (int32_t i = 0; i < n && wfx_code(st) == WF_OK; i++) {
    wf_output begin;

    if (known) {
      wf_shape s;
      int64_t off[WF_MAX_RANK] = {0};

      wfx_host->grad_tensor_info(ctx, IN(i), NULL, &s);
      off[axis] = at;
      at += s.dims[axis];
      begin = const_i64(ctx, off, s.rank, st);
    } else {
      begin = (wf_output){offsets, i};
    }
    wfx_grad_set(ctx, i,
                 wfx_grad_op3(ctx, "Slice", DY(0), begin, shapes[i], st));
  }
  wfx_host->free(shapes);
  return wfx_grad_done(st);
}

/* Split: dx = the output gradients joined along the axis, zeros for the
 * outputs that receive none. */
static int grad_split(wf_grad_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->grad_num_outputs(ctx);
  wf_output *parts;
  wf_attr_item axis_item;

  if (copy_int_attr(ctx, "axis", &axis_item, st))
    return wfx_code(st);
  if (!(parts = wfx_host->alloc((size_t)n * sizeof *parts, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "gradient of node '%s': out of memory for %d parts",
                    wfx_host->grad_node_name(ctx), (int)n);
  for (int32_t i = 0; i < n; i++)
    parts[i] = grad_or_zeros(ctx, i, st);
  wfx_grad_set(ctx, 0,
               wfx_grad_node(ctx, "Concat", parts, n, &axis_item, 1, st));
  wfx_host->free(parts);
  return wfx_grad_done(st);
}

/* Slice: dx = SliceGrad(shape(x), begin, dy). */
static int grad_slice(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0,
               wfx_grad_op3(ctx, "SliceGrad", shape_of(ctx, IN(0), st), IN(1),
                            DY(0), st));
  return wfx_grad_done(st);
}

/* StridedSlice: dx = StridedSliceGrad(shape(x), begin, end, strides, dy)
 * with the forward masks. */
static int grad_strided_slice(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const masks[] = {"begin_mask", "end_mask", "ellipsis_mask",
                                      "new_axis_mask", "shrink_axis_mask"};
  wf_attr_item attrs[5];
  wf_output in[5];

  for (int i = 0; i < 5; i++)
    if (copy_int_attr(ctx, masks[i], &attrs[i], st))
      return wfx_code(st);
  in[0] = shape_of(ctx, IN(0), st);
  in[1] = IN(1);
  in[2] = IN(2);
  in[3] = IN(3);
  in[4] = DY(0);
  wfx_grad_set(ctx, 0,
               wfx_grad_node(ctx, "StridedSliceGrad", in, 5, attrs, 5, st));
  return wfx_grad_done(st);
}

/* Pad: dx = PadGrad(dy, paddings), the unpadded block. */
static int grad_pad(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "PadGrad", DY(0), IN(1), st));
  return wfx_grad_done(st);
}

/* Tile: dx = TileGrad(shape(x), multiples, dy), summed over the copies. */
static int grad_tile(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0,
               wfx_grad_op3(ctx, "TileGrad", shape_of(ctx, IN(0), st), IN(1),
                            DY(0), st));
  return wfx_grad_done(st);
}

/* Fill: the value gets the sum of dy (Sum over all axes, from ops-math);
 * dims none. */
static int grad_fill(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 1, wfx_grad_op1(ctx, "Sum", DY(0), st));
  return wfx_grad_done(st);
}

/* ---- gathering and scattering -------------------------------------------- */

/* Gather along axis 0: a sparse gradient, rows indices (flattened to (K,))
 * of a tensor of params' shape holding dy's slices (K, P1, ..., PR-1).
 * Along any other axis (or a negative axis on params of unknown rank):
 * the dense GatherGrad. Indices get none. */
static int grad_gather(wf_grad_ctx *ctx, wf_status *st) {
  wf_output params = IN(0), indices = IN(1), dy = DY(0);
  wf_attr_item axis_item;
  wf_shape ps, is;
  int axis = -1;

  if (copy_int_attr(ctx, "axis", &axis_item, st))
    return wfx_code(st);
  if (wfx_host->grad_tensor_info(ctx, params, NULL, &ps) != 0)
    wfx_shape_set_unknown(&ps);
  if (wfx_host->grad_tensor_info(ctx, indices, NULL, &is) != 0)
    wfx_shape_set_unknown(&is);
  if (axis_item.value.u.i >= 0)
    axis = (int)axis_item.value.u.i;
  else if (ps.rank >= 0 &&
           wfx_axis_normalize(axis_item.value.u.i, ps.rank, &axis, NULL, st))
    return wfx_code(st);

  if (axis == 0) {
    static const int64_t minus_one = -1;
    wf_output flat = indices, values = dy, dense_shape;
    int inner_known = ps.rank >= 1;

    for (int i = 1; i < ps.rank; i++)
      inner_known &= ps.dims[i] >= 0;
    if (is.rank != 1) {
      flat = wfx_grad_op2(ctx, "Reshape", indices,
                          const_i64(ctx, &minus_one, 1, st), st);
      if (inner_known) {
        int64_t v[WF_MAX_RANK];

        v[0] = -1;
        for (int i = 1; i < ps.rank; i++)
          v[i] = ps.dims[i];
        values = wfx_grad_op2(ctx, "Reshape", dy,
                              const_i64(ctx, v, ps.rank, st), st);
      } else {
        /* [-1] followed by params' shape without its first dimension. */
        static const int64_t one = 1, zero = 0;
        wf_attr_item end_mask = {"end_mask",
                                 {.type = WF_ATTR_INT, .count = 1, .u.i = 1}};
        wf_attr_item axis0 = {"axis",
                              {.type = WF_ATTR_INT, .count = 1, .u.i = 0}};
        wf_output ss[4], parts[2];

        ss[0] = shape_of(ctx, params, st);
        ss[1] = const_i64(ctx, &one, 1, st);
        ss[2] = const_i64(ctx, &zero, 1, st);
        ss[3] = const_i64(ctx, &one, 1, st);
        parts[0] = const_i64(ctx, &minus_one, 1, st);
        parts[1] = wfx_grad_node(ctx, "StridedSlice", ss, 4, &end_mask, 1, st);
        values = wfx_grad_op2(
            ctx, "Reshape", dy,
            wfx_grad_node(ctx, "Concat", parts, 2, &axis0, 1, st), st);
      }
    }
    dense_shape = shape_of(ctx, params, st);
    if (wfx_code(st) == WF_OK && flat.node && values.node && dense_shape.node)
      wfx_host->grad_set_input_grad_sparse(ctx, 0, flat, values, dense_shape);
    return wfx_grad_done(st);
  }

  {
    wf_output in[3] = {shape_of(ctx, params, st), indices, dy};
    wfx_grad_set(ctx, 0,
                 wfx_grad_node(ctx, "GatherGrad", in, 3, &axis_item, 1, st));
  }
  return wfx_grad_done(st);
}

/* UnsortedSegmentSumToShape: values get the rows of dy their indices name,
 * Gather(dy, indices). */
static int grad_unsorted_segment_sum(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "Gather", DY(0), IN(1), st));
  return wfx_grad_done(st);
}

/* ---- the backward ops' own gradients (second order) ---------------------- */

/* These ops are linear in dy; the gradient of each is the forward op it
 * undoes, applied to the incoming gradient. */

/* SliceGrad(shape, begin, dy): d dy = Slice(g, begin, shape(dy)). */
static int grad_slice_grad(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(
      ctx, 2,
      wfx_grad_op3(ctx, "Slice", DY(0), IN(1), shape_of(ctx, IN(2), st), st));
  return wfx_grad_done(st);
}

/* StridedSliceGrad(shape, begin, end, strides, dy): d dy =
 * StridedSlice(g, begin, end, strides) with the same masks. */
static int grad_strided_slice_grad(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const masks[] = {"begin_mask", "end_mask", "ellipsis_mask",
                                      "new_axis_mask", "shrink_axis_mask"};
  wf_attr_item attrs[5];
  wf_output in[4] = {DY(0), IN(1), IN(2), IN(3)};

  for (int i = 0; i < 5; i++)
    if (copy_int_attr(ctx, masks[i], &attrs[i], st))
      return wfx_code(st);
  wfx_grad_set(ctx, 4, wfx_grad_node(ctx, "StridedSlice", in, 4, attrs, 5, st));
  return wfx_grad_done(st);
}

/* PadGrad(dy, paddings): d dy = Pad(g, paddings) with zeros. */
static int grad_pad_grad(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "Pad", DY(0), IN(1), st));
  return wfx_grad_done(st);
}

/* TileGrad(shape, multiples, dy): d dy = Tile(g, multiples). */
static int grad_tile_grad(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 2, wfx_grad_op2(ctx, "Tile", DY(0), IN(1), st));
  return wfx_grad_done(st);
}

/* GatherGrad(params_shape, indices, dy): d dy = Gather(g, indices) along
 * the same axis. */
static int grad_gather_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item axis_item;
  wf_output in[2] = {DY(0), IN(1)};

  if (copy_int_attr(ctx, "axis", &axis_item, st))
    return wfx_code(st);
  wfx_grad_set(ctx, 2, wfx_grad_node(ctx, "Gather", in, 2, &axis_item, 1, st));
  return wfx_grad_done(st);
}

/* ---- the table ----------------------------------------------------------- */

#define GRADIENT(opname, func)                                                 \
  { WF_STRUCT_INIT(wf_gradient_def), .op = (opname), .fn = (func) }
#define NOT_DIFFERENTIABLE(opname)                                             \
  {                                                                            \
    WF_STRUCT_INIT(wf_gradient_def), .op = (opname),                           \
                                     .flags = WF_GRAD_NOT_DIFFERENTIABLE       \
  }

static const wf_gradient_def gradient_defs[] = {
    GRADIENT("Identity", grad_identity),
    GRADIENT("CheckNumerics", grad_identity),
    GRADIENT("Reshape", grad_reshape),
    GRADIENT("Squeeze", grad_reshape),
    GRADIENT("ExpandDims", grad_reshape),
    GRADIENT("Transpose", grad_transpose),
    GRADIENT("Concat", grad_concat),
    GRADIENT("Split", grad_split),
    GRADIENT("Slice", grad_slice),
    GRADIENT("StridedSlice", grad_strided_slice),
    GRADIENT("Pad", grad_pad),
    GRADIENT("Tile", grad_tile),
    GRADIENT("Fill", grad_fill),
    GRADIENT("Gather", grad_gather),
    GRADIENT("UnsortedSegmentSumToShape", grad_unsorted_segment_sum),
    GRADIENT("SliceGrad", grad_slice_grad),
    GRADIENT("StridedSliceGrad", grad_strided_slice_grad),
    GRADIENT("PadGrad", grad_pad_grad),
    GRADIENT("TileGrad", grad_tile_grad),
    GRADIENT("GatherGrad", grad_gather_grad),
    /* Outputs that do not depend differentiably on the inputs: shapes,
     * indices, constants of an input's shape, and StopGradient itself. */
    NOT_DIFFERENTIABLE("StopGradient"),
    NOT_DIFFERENTIABLE("Shape"),
    NOT_DIFFERENTIABLE("Size"),
    NOT_DIFFERENTIABLE("ZerosLike"),
    NOT_DIFFERENTIABLE("OnesLike"),
    NOT_DIFFERENTIABLE("OneHot"),
    NOT_DIFFERENTIABLE("InvertPermutation"),
    NOT_DIFFERENTIABLE("ConcatOffset"),
};

#define NGRADS (sizeof gradient_defs / sizeof gradient_defs[0])
_Static_assert(NGRADS == 28, "list every entry of gradient_defs below");

const wf_gradient_def *const ary_gradients[NGRADS + 1] = {
    &gradient_defs[0],  &gradient_defs[1],
    &gradient_defs[2],  &gradient_defs[3],
    &gradient_defs[4],  &gradient_defs[5],
    &gradient_defs[6],  &gradient_defs[7],
    &gradient_defs[8],  &gradient_defs[9],
    &gradient_defs[10], &gradient_defs[11],
    &gradient_defs[12], &gradient_defs[13],
    &gradient_defs[14], &gradient_defs[15],
    &gradient_defs[16], &gradient_defs[17],
    &gradient_defs[18], &gradient_defs[19],
    &gradient_defs[20], &gradient_defs[21],
    &gradient_defs[22], &gradient_defs[23],
    &gradient_defs[24], &gradient_defs[25],
    &gradient_defs[26], &gradient_defs[27], NULL};
