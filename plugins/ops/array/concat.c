/* plugins/ops/array/concat.c — ops that join, cut, repeat or surround
 * tensors along axes: Concat, Split, Tile and Pad (constant mode only; no
 * REFLECT/SYMMETRIC), and the backward ops of their gradients: ConcatOffset,
 * TileGrad and PadGrad. Gradient functions are in grad.c. */
#include <config.h>

#include "array.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* *s = rank `rank` with every dimension unknown. */
static void shape_of_rank(wf_shape *s, int rank) {
  wfx_shape_set_unknown(s);
  s->rank = rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = WF_UNKNOWN_DIM;
}

/* Product of dims[from..to-1] (all known). */
static int64_t dims_product(const int64_t *dims, int from, int to) {
  int64_t p = 1;

  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* ---- Concat -------------------------------------------------------------- */

static int concat_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx);
  int64_t axis_attr, sum = 0;
  wf_shape out, s;
  int rank = -1, axis;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_shape_attr_int(ctx, "axis", &axis_attr, st))
    return wfx_code(st);
  for (int32_t i = 0; i < n; i++) {
    if (wfx_shape_input(ctx, i, NULL, &s, st))
      return wfx_code(st);
    if (s.rank < 0)
      continue;
    if (rank < 0) {
      rank = s.rank;
      if (rank == 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "cannot concatenate scalars (input %d has rank 0)",
                        (int)i);
      if (wfx_axis_normalize(axis_attr, rank, &axis, NULL, st))
        return wfx_code(st);
      shape_of_rank(&out, rank);
    } else if (s.rank != rank) {
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "all inputs must have the same rank: input %d has "
                      "shape %s, an earlier one rank %d",
                      (int)i, wfx_shape_str(&s, a, sizeof a), rank);
    }
    for (int d = 0; d < rank; d++) {
      if (d == axis || s.dims[d] < 0)
        continue;
      if (out.dims[d] >= 0 && out.dims[d] != s.dims[d])
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "input %d has shape %s, which differs from the "
                        "others' %s in dimension %d (only dimension %d, the "
                        "axis, may differ)",
                        (int)i, wfx_shape_str(&s, a, sizeof a),
                        wfx_shape_str(&out, b, sizeof b), d, axis);
      out.dims[d] = s.dims[d];
    }
  }
  if (rank < 0) {
    wfx_shape_set_unknown(&out);
    wfx_host->shape_set_output(ctx, 0, &out);
    return 0;
  }
  for (int32_t i = 0; i < n && sum >= 0; i++) {
    if (wfx_shape_input(ctx, i, NULL, &s, st))
      return wfx_code(st);
    sum = s.rank < 0 || s.dims[axis] < 0 ? -1 : sum + s.dims[axis];
  }
  out.dims[axis] = sum;
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int concat_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int32_t n = wfx_host->kernel_num_inputs(ctx);
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s0, s, out;
  int64_t axis_attr, outer, inner;
  size_t es, row_out, off;
  char *dst;
  int axis;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      wfx_kernel_input(ctx, 0, &x, &s0, st))
    return wfx_code(st);
  if (s0.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "cannot concatenate scalars (input 0 has rank 0)");
  if (wfx_axis_normalize(axis_attr, s0.rank, &axis, NULL, st))
    return wfx_code(st);
  out = s0;
  out.dims[axis] = 0;
  for (int32_t i = 0; i < n; i++) {
    int same;

    if (wfx_kernel_input(ctx, i, &x, &s, st))
      return wfx_code(st);
    same = s.rank == s0.rank;
    for (int d = 0; same && d < s.rank; d++)
      same = d == axis || s.dims[d] == s0.dims[d];
    if (!same)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input %d has shape %s but input 0 has %s; they "
                      "may differ only in dimension %d",
                      (int)i, wfx_shape_str(&s, a, sizeof a),
                      wfx_shape_str(&s0, b, sizeof b), axis);
    out.dims[axis] += s.dims[axis];
  }
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  es = wfx_dtype_size(wfx_dtype(y));
  outer = dims_product(out.dims, 0, axis);
  inner = dims_product(out.dims, axis + 1, out.rank);
  row_out = (size_t)(out.dims[axis] * inner) * es;
  dst = wfx_data(y);
  off = 0;
  for (int32_t i = 0; i < n; i++) {
    size_t row;
    const char *src;

    wfx_kernel_input(ctx, i, &x, &s, st);
    row = (size_t)(s.dims[axis] * inner) * es;
    src = wfx_data(x);
    if (row > 0)
      for (int64_t o = 0; o < outer; o++)
        memcpy(dst + (size_t)o * row_out + off, src + (size_t)o * row, row);
    off += row;
  }
  return 0;
}

static const wf_arg_def concat_inputs[] = {
    WF_ARG_LIST("values", "T", "N",
                "N tensors (D0, ..., Daxis_i, ..., DR-1), equal but for "
                "dimension 'axis'"),
    WF_ARG_END};
static const wf_arg_def concat_outputs[] = {
    WF_ARG_T("output", "T", "(D0, ..., sum of Daxis_i, ..., DR-1)"),
    WF_ARG_END};
static const wf_attr_def concat_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INT_MIN("N", 1, "number of inputs"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axis", .type = WF_ATTR_INT,
     .doc = "dimension to join along, -R <= axis < R"},
    WF_ATTR_END};

const wf_op_def ary_concat_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Concat",
    .inputs = concat_inputs,
    .outputs = concat_outputs,
    .attrs = concat_attrs,
    .flags = WF_OP_CONCAT,
    .shape_fn = concat_shape,
    .doc = "Joins N tensors along 'axis': (N, A) and (N, B) with axis 1 -> "
           "(N, A + B). Unlike TensorFlow's ConcatV2 the axis is an "
           "attribute, not an input."};

const wf_kernel_def ary_concat_kernel =
    WFX_CPU_REFERENCE("Concat", "T", WF_DTYPES_ALL, concat_compute);

/* ---- Split --------------------------------------------------------------- */

/* The shape of each of num_split pieces of s (rank known) along axis. */
static int split_piece(const wf_shape *s, int64_t axis_attr, int64_t num_split,
                       wf_shape *piece, int *axis, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (s->rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "cannot split a scalar");
  if (wfx_axis_normalize(axis_attr, s->rank, axis, NULL, st))
    return wfx_code(st);
  *piece = *s;
  if (s->dims[*axis] < 0)
    return 0;
  if (s->dims[*axis] % num_split != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "dimension %d of shape %s (size %" PRId64
                    ") does not split evenly into %" PRId64 " pieces",
                    *axis, wfx_shape_str(s, buf, sizeof buf), s->dims[*axis],
                    num_split);
  piece->dims[*axis] = s->dims[*axis] / num_split;
  return 0;
}

static int split_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_outputs(ctx);
  int64_t axis_attr;
  wf_shape s, piece;
  int axis;

  if (wfx_shape_input(ctx, 0, NULL, &s, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis_attr, st))
    return wfx_code(st);
  if (s.rank < 0)
    wfx_shape_set_unknown(&piece);
  else if (split_piece(&s, axis_attr, n, &piece, &axis, st))
    return wfx_code(st);
  for (int32_t i = 0; i < n; i++)
    wfx_host->shape_set_output(ctx, i, &piece);
  return 0;
}

static int split_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int32_t n = wfx_host->kernel_num_outputs(ctx);
  const wf_tensor *x;
  wf_shape s, piece;
  int64_t axis_attr, outer, inner;
  size_t es, row, row_in;
  const char *src;
  int axis;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      split_piece(&s, axis_attr, n, &piece, &axis, st))
    return wfx_code(st);
  es = wfx_dtype_size(wfx_dtype(x));
  outer = dims_product(s.dims, 0, axis);
  inner = dims_product(s.dims, axis + 1, s.rank);
  row = (size_t)(piece.dims[axis] * inner) * es;
  row_in = row * (size_t)n;
  src = wfx_data(x);
  for (int32_t i = 0; i < n; i++) {
    wf_tensor *y = wfx_host->kernel_output_new(ctx, i, &piece, st);
    char *dst;

    if (!y)
      return wfx_code(st);
    dst = wfx_data(y);
    if (row > 0)
      for (int64_t o = 0; o < outer; o++)
        memcpy(dst + (size_t)o * row, src + (size_t)o * row_in + i * row, row);
  }
  return 0;
}

static const wf_arg_def split_inputs[] = {
    WF_ARG_T("value", "T", "(D0, ..., Daxis, ..., DR-1)"), WF_ARG_END};
static const wf_arg_def split_outputs[] = {
    WF_ARG_LIST("output", "T", "num_split",
                "num_split tensors (D0, ..., Daxis / num_split, ..., DR-1)"),
    WF_ARG_END};
static const wf_attr_def split_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INT_MIN("num_split", 1,
                     "number of equal pieces; must divide dimension 'axis'"),
    ARY_ATTR_INT("axis", 0, "dimension to cut along, -R <= axis < R"),
    WF_ATTR_END};

const wf_op_def ary_split_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Split",
    .inputs = split_inputs,
    .outputs = split_outputs,
    .attrs = split_attrs,
    .shape_fn = split_shape,
    .doc = "Cuts value into num_split equal pieces along 'axis': (N, 6) with "
           "num_split 3 and axis 1 -> three (N, 2). Unlike TensorFlow the "
           "axis is an attribute, not an input."};

const wf_kernel_def ary_split_kernel =
    WFX_CPU_REFERENCE("Split", "T", WF_DTYPES_ALL, split_compute);

/* ---- Tile ---------------------------------------------------------------- */

static int check_multiples(const int64_t *mult, int64_t n, int rank,
                           wf_status *st) {
  if (rank >= 0 && n != rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'multiples' has %" PRId64 " entries for an input of "
                    "rank %d",
                    n, rank);
  if (n > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'multiples' has %" PRId64 " entries, at most %d are "
                    "allowed",
                    n, WF_MAX_RANK);
  for (int64_t i = 0; i < n; i++)
    if (mult[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "multiples[%" PRId64 "] is %" PRId64 " (must be >= 0)", i,
                      mult[i]);
  return 0;
}

/* out = s (rank known) tiled by mult (checked); unknown dims stay unknown. */
static int tile_dims(const wf_shape *s, const int64_t *mult, wf_shape *out,
                     wf_status *st) {
  *out = *s;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0)
      continue;
    if (__builtin_mul_overflow(s->dims[i], mult[i], &out->dims[i]))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dimension %d (%" PRId64 " times %" PRId64 ") overflows",
                      i, s->dims[i], mult[i]);
  }
  return 0;
}

static int tile_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t mult[ARY_MAX_INDEX], n;
  wf_shape s, out;
  int known;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  known = ary_shape_index_value(ctx, 1, 1, ARY_MAX_INDEX, mult, &n, "multiples",
                                st);
  if (known < 0 || (known && check_multiples(mult, n, s.rank, st)))
    return wfx_code(st);
  if (!known) {
    n = ary_shape_vector_length(ctx, 1, "multiples", st);
    if (n == -2)
      return wfx_code(st);
    if (n >= 0 && s.rank >= 0 && n != s.rank)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'multiples' has %" PRId64 " entries for an input "
                      "of rank %d",
                      n, (int)s.rank);
    if (s.rank >= 0)
      shape_of_rank(&out, s.rank);
    else if (n >= 0 && n <= WF_MAX_RANK)
      shape_of_rank(&out, (int)n);
    else
      wfx_shape_set_unknown(&out);
  } else if (s.rank < 0) {
    shape_of_rank(&out, (int)n);
  } else if (tile_dims(&s, mult, &out, st)) {
    return wfx_code(st);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int tile_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *mt;
  wf_tensor *y;
  int64_t mult[ARY_MAX_INDEX], n, xstr[WF_MAX_RANK], ystr[WF_MAX_RANK];
  int64_t dims[ARY_COPY_MAX_RANK], dstr[ARY_COPY_MAX_RANK],
      sstr[ARY_COPY_MAX_RANK];
  wf_shape s, out;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &mt, NULL, st) ||
      ary_read_index(mt, 1, ARY_MAX_INDEX, mult, &n, "multiples", st) ||
      check_multiples(mult, n, s.rank, st) || tile_dims(&s, mult, &out, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  /* The output seen as (m0, d0, m1, d1, ...): copy k of the input sits at
   * output offset sum(mk * dk * ystr[k]); the input repeats (stride 0). */
  wfx_shape_strides(&s, xstr);
  wfx_shape_strides(&out, ystr);
  for (int i = 0; i < s.rank; i++) {
    dims[2 * i] = mult[i];
    dims[2 * i + 1] = s.dims[i];
    dstr[2 * i] = s.dims[i] * ystr[i];
    dstr[2 * i + 1] = ystr[i];
    sstr[2 * i] = 0;
    sstr[2 * i + 1] = xstr[i];
  }
  ary_strided_copy(wfx_data(y), dstr, wfx_data(x), sstr, dims, 2 * s.rank,
                   wfx_dtype_size(wfx_dtype(x)));
  return 0;
}

static const wf_arg_def tile_inputs[] = {
    WF_ARG_T("input", "T", "(D0, ..., DR-1)"),
    WF_ARG_T("multiples", "Tmultiples", "(R,) repetitions per dimension"),
    WF_ARG_END};
static const wf_arg_def tile_outputs[] = {
    WF_ARG_T("output", "T", "(D0 * multiples[0], ..., DR-1 * multiples[R-1])"),
    WF_ARG_END};
static const wf_attr_def tile_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tmultiples", "int32 or int64: the type of 'multiples'"),
    WF_ATTR_END};

const wf_op_def ary_tile_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Tile",
    .inputs = tile_inputs,
    .outputs = tile_outputs,
    .attrs = tile_attrs,
    .shape_fn = tile_shape,
    .doc = "Repeats input multiples[i] times along each dimension i: (2, 3) "
           "with multiples [2, 1] -> (4, 3). The shape is known while "
           "building when 'multiples' is a Const."};

const wf_kernel_def ary_tile_kernel =
    WFX_CPU_REFERENCE("Tile", "T", WF_DTYPES_ALL, tile_compute);

/* ---- Pad ----------------------------------------------------------------- */

/* Reads paddings t, which must be (rank, 2) int32/int64 with entries >= 0,
 * into pads[2 * rank]. */
static int read_paddings(const wf_tensor *t, int rank, int64_t *pads,
                         wf_status *st) {
  int32_t dt = wfx_dtype(t);
  const void *data = wfx_data(t);
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  wfx_host->tensor_shape(t, &s);
  if (dt != WF_INT32 && dt != WF_INT64)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'paddings' must be int32 or int64, not %s",
                    wfx_dtype_name(dt));
  if (s.rank != 2 || s.dims[0] != rank || s.dims[1] != 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'paddings' must have shape (%d, 2) for an "
                    "input of rank %d, got %s",
                    rank, rank, wfx_shape_str(&s, buf, sizeof buf));
  for (int i = 0; i < 2 * rank; i++) {
    pads[i] = dt == WF_INT32 ? ((const int32_t *)data)[i]
                             : ((const int64_t *)data)[i];
    if (pads[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "paddings[%d, %d] is %" PRId64 " (must be >= 0)", i / 2,
                      i % 2, pads[i]);
  }
  return 0;
}

/* Checks that constant v is a value of dtype dt: INVALID_ARGUMENT for a
 * fraction or an out-of-range value for an integer type, or anything but 0
 * and 1 for bool. Float types take any value. */
static int check_constant(int32_t dt, double v, wf_status *st) {
  double lo, hi;

  switch (dt) {
  case WF_INT8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case WF_UINT8:
    lo = 0, hi = UINT8_MAX;
    break;
  case WF_INT32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  case WF_INT64:
    lo = -0x1p63, hi = 0x1p63;
    break; /* hi itself excluded */
  case WF_BOOL:
    lo = 0, hi = 1;
    break;
  default:
    return 0;
  }
  if (v != floor(v) || v < lo || v > hi || (dt == WF_INT64 && v == hi))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "constant_values %g is not representable in %s", v,
                    wfx_dtype_name(dt));
  return 0;
}

/* The bytes of v (checked by check_constant) in dtype dt, one of
 * WFX_DTYPES_ALL. */
static void constant_bytes(int32_t dt, double v, unsigned char *out) {
  union {
    float f32;
    int8_t i8;
    uint8_t u8;
    int32_t i32;
    int64_t i64;
  } u;

  switch (dt) {
  case WF_FLOAT32:
    u.f32 = (float)v;
    break;
  case WF_FLOAT64:
    memcpy(out, &v, sizeof v);
    return;
  case WF_INT8:
    u.i8 = (int8_t)v;
    break;
  case WF_UINT8:
  case WF_BOOL:
    u.u8 = (uint8_t)v;
    break;
  case WF_INT32:
    u.i32 = (int32_t)v;
    break;
  default:
    u.i64 = (int64_t)v;
    break;
  }
  memcpy(out, &u, wfx_dtype_size(dt));
}

static int pad_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_tensor *pt;
  int64_t pads[2 * WF_MAX_RANK];
  int32_t dt;
  double cv;
  wf_shape s, ps, out;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 0, &dt, &s, st) ||
      wfx_shape_input(ctx, 1, NULL, &ps, st) ||
      wfx_shape_attr_float(ctx, "constant_values", &cv, st) ||
      check_constant(dt, cv, st))
    return wfx_code(st);
  if (ps.rank >= 0 &&
      (ps.rank != 2 || (ps.dims[1] >= 0 && ps.dims[1] != 2) ||
       (s.rank >= 0 && ps.dims[0] >= 0 && ps.dims[0] != s.rank)))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'paddings' must have shape (R, 2) for an input "
                    "of rank R, got %s",
                    wfx_shape_str(&ps, buf, sizeof buf));
  if (s.rank < 0) {
    if (ps.rank == 2 && ps.dims[0] >= 0 && ps.dims[0] <= WF_MAX_RANK)
      shape_of_rank(&out, (int)ps.dims[0]);
    else
      wfx_shape_set_unknown(&out);
  } else if ((pt = wfx_host->shape_input_value(ctx, 1)) != NULL) {
    if (read_paddings(pt, s.rank, pads, st))
      return wfx_code(st);
    out = s;
    for (int i = 0; i < s.rank; i++)
      if (s.dims[i] >= 0)
        out.dims[i] = s.dims[i] + pads[2 * i] + pads[2 * i + 1];
  } else {
    shape_of_rank(&out, s.rank);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int pad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *pt;
  wf_tensor *y;
  int64_t pads[2 * WF_MAX_RANK], xstr[WF_MAX_RANK], ystr[WF_MAX_RANK], base = 0;
  double cv;
  unsigned char cbytes[8];
  int32_t dt;
  size_t es;
  wf_shape s, out;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &pt, NULL, st) ||
      read_paddings(pt, s.rank, pads, st) ||
      wfx_kernel_attr_float(ctx, "constant_values", &cv, st))
    return wfx_code(st);
  dt = wfx_dtype(x);
  if (check_constant(dt, cv, st))
    return wfx_code(st);
  constant_bytes(dt, cv, cbytes);
  out = s;
  for (int i = 0; i < s.rank; i++)
    out.dims[i] = s.dims[i] + pads[2 * i] + pads[2 * i + 1];
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  es = wfx_dtype_size(dt);
  ary_fill_bytes(wfx_data(y), cbytes, wfx_count(y), es);
  wfx_shape_strides(&s, xstr);
  wfx_shape_strides(&out, ystr);
  for (int i = 0; i < s.rank; i++)
    base += pads[2 * i] * ystr[i];
  if (wfx_count(x) > 0)
    ary_strided_copy((char *)wfx_data(y) + base * (int64_t)es, ystr,
                     wfx_data(x), xstr, s.dims, s.rank, es);
  return 0;
}

static const wf_arg_def pad_inputs[] = {
    WF_ARG_T("input", "T", "(D0, ..., DR-1)"),
    WF_ARG_T("paddings", "Tpaddings",
             "(R, 2): elements added before and after each dimension"),
    WF_ARG_END};
static const wf_arg_def pad_outputs[] = {
    WF_ARG_T("output", "T",
             "(D0 + paddings[0, 0] + paddings[0, 1], ..., DR-1 + ...)"),
    WF_ARG_END};
static const wf_attr_def pad_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tpaddings", "int32 or int64: the type of 'paddings'"),
    ARY_ATTR_FLOAT("constant_values", 0.0,
                   "value of the added elements; must be a value of T"),
    WF_ATTR_END};

const wf_op_def ary_pad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Pad",
    .inputs = pad_inputs,
    .outputs = pad_outputs,
    .attrs = pad_attrs,
    .shape_fn = pad_shape,
    .doc = "Surrounds input with constant_values (constant mode): (N, H, W, C) "
           "with paddings [[0, 0], [1, 1], [1, 1], [0, 0]] -> (N, H+2, W+2, "
           "C). The shape is known while building when 'paddings' is a "
           "Const."};

const wf_kernel_def ary_pad_kernel =
    WFX_CPU_REFERENCE("Pad", "T", WFX_DTYPES_ALL, pad_compute);

/* ---- ConcatOffset -------------------------------------------------------- */

static int concat_offset_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx);
  int64_t len = -1;

  for (int32_t i = 0; i < n; i++) {
    int64_t k = ary_shape_vector_length(ctx, i, "shapes", st);

    if (k == -2)
      return wfx_code(st);
    if (k >= 0 && len >= 0 && k != len)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "shape %d has %" PRId64 " entries, an earlier one "
                      "%" PRId64 " (all must have the same rank)",
                      (int)i, k, len);
    if (k >= 0)
      len = k;
  }
  for (int32_t i = 0; i < n; i++) {
    wf_shape out;

    wfx_shape_make(&out, 1, &len);
    wfx_host->shape_set_output(ctx, i, &out);
  }
  return 0;
}

static int concat_offset_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  int32_t n = wfx_host->kernel_num_inputs(ctx);
  int64_t axis_attr, s0[ARY_MAX_INDEX], s[ARY_MAX_INDEX], r0, r, at = 0;
  const wf_tensor *t;
  int axis;

  if (wfx_kernel_attr_int(ctx, "axis", &axis_attr, st) ||
      wfx_kernel_input(ctx, 0, &t, NULL, st) ||
      ary_read_index(t, 1, WF_MAX_RANK, s0, &r0, "shapes", st))
    return wfx_code(st);
  if (r0 == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "cannot concatenate scalars (shape 0 is empty)");
  if (wfx_axis_normalize(axis_attr, (int)r0, &axis, NULL, st))
    return wfx_code(st);
  for (int32_t i = 0; i < n; i++) {
    wf_tensor *y;
    wf_shape out;

    if (wfx_kernel_input(ctx, i, &t, NULL, st) ||
        ary_read_index(t, 1, WF_MAX_RANK, s, &r, "shapes", st))
      return wfx_code(st);
    if (r != r0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "shape %d has %" PRId64 " entries but shape 0 has "
                      "%" PRId64,
                      (int)i, r, r0);
    for (int d = 0; d < (int)r; d++)
      if (d != axis && s[d] != s0[d])
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "shape %d differs from shape 0 in dimension %d "
                        "(%" PRId64 " vs %" PRId64 "); only dimension %d, "
                        "the axis, may differ",
                        (int)i, d, s[d], s0[d], axis);
    wfx_shape_make(&out, 1, &r);
    if (!(y = wfx_host->kernel_output_new(ctx, i, &out, st)))
      return wfx_code(st);
    for (int d = 0; d < (int)r; d++) {
      int64_t v = d == axis ? at : 0;
      if (wfx_dtype(y) == WF_INT32)
        ((int32_t *)wfx_data(y))[d] = (int32_t)v;
      else
        ((int64_t *)wfx_data(y))[d] = v;
    }
    at += s[axis];
  }
  return 0;
}

static const wf_arg_def concat_offset_inputs[] = {
    WF_ARG_LIST("shapes", "T", "N",
                "N shapes (R,) of Concat's inputs, equal but for 'axis'"),
    WF_ARG_END};
static const wf_arg_def concat_offset_outputs[] = {
    WF_ARG_LIST("offsets", "T", "N",
                "N vectors (R,): where input i starts in the output, 0 "
                "but along 'axis'"),
    WF_ARG_END};
static const wf_attr_def concat_offset_attrs[] = {
    ARY_ATTR_INDEX("T", "int32 or int64: the type of shapes and offsets"),
    ARY_ATTR_INT_MIN("N", 1, "number of shapes"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axis", .type = WF_ATTR_INT,
     .doc = "Concat's axis, -R <= axis < R"},
    WF_ATTR_END};

const wf_op_def ary_concat_offset_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ConcatOffset",
    .inputs = concat_offset_inputs,
    .outputs = concat_offset_outputs,
    .attrs = concat_offset_attrs,
    .shape_fn = concat_offset_shape,
    .doc = "The offsets at which Concat along 'axis' places each of N "
           "inputs of the given shapes: offset i is 0 everywhere but at "
           "'axis', where it is the sum of the earlier shapes' sizes there. "
           "With Slice it cuts Concat's gradient into the inputs' parts."};

const wf_kernel_def ary_concat_offset_kernel =
    WFX_CPU_REFERENCE("ConcatOffset", "T", ARY_DTYPES_INDEX,
                      concat_offset_compute, .flags = WF_KERNEL_CHEAP);

/* ---- TileGrad ------------------------------------------------------------ */

static int tile_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape dy, out;

  if (wfx_shape_input(ctx, 2, NULL, &dy, st) ||
      ary_shape_from_input(ctx, 0, "shape", dy.rank, &out, st))
    return wfx_code(st);
  if (out.rank >= 0 && dy.rank >= 0 && out.rank != dy.rank) {
    char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "dy %s and shape %s differ in rank",
        wfx_shape_str(&dy, a, sizeof a), wfx_shape_str(&out, b, sizeof b));
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* dx[j] = sum of dy over the copies of element j: dy seen as (m0, d0, m1,
 * d1, ...), summed over the m axes. Accumulates in double into acc (count
 * of x's elements, zeroed by the caller). */
#define DEF_TILE_GRAD(T, sfx, dt, u)                                           \
  static void tile_grad_##sfx(void *dxv, const void *dyv, double *acc,         \
                              const wf_shape *xs, const int64_t *mult) {       \
    T *dx = dxv;                                                               \
    const T *dy = dyv;                                                         \
    int64_t xstr[WF_MAX_RANK], pos[WF_MAX_RANK] = {0}, n = 1, off = 0;         \
    int r = xs->rank;                                                          \
    for (int i = 0; i < r; i++)                                                \
      n *= xs->dims[i] * mult[i];                                              \
    wfx_shape_strides(xs, xstr);                                               \
    for (int64_t k = 0; k < n; k++) {                                          \
      acc[off] += dy[k];                                                       \
      /* Advance the dy index (pos) and the x offset it maps to. */            \
      for (int d = r - 1; d >= 0; d--) {                                       \
        int64_t full = xs->dims[d] * mult[d];                                  \
        pos[d]++;                                                              \
        off += xstr[d];                                                        \
        if (pos[d] % xs->dims[d] == 0)                                         \
          off -= xstr[d] * xs->dims[d];                                        \
        if (pos[d] < full)                                                     \
          break;                                                               \
        pos[d] = 0;                                                            \
      }                                                                        \
    }                                                                          \
    n = wfx_shape_count(xs);                                                   \
    for (int64_t j = 0; j < n; j++)                                            \
      dx[j] = (T)acc[j];                                                       \
  }
WFX_TYPES_FLOAT(DEF_TILE_GRAD, _)

static int tile_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *shape, *mt, *dy;
  wf_tensor *dx;
  int64_t mult[ARY_MAX_INDEX], n;
  wf_shape xs, dys, want;
  double *acc = NULL;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX], c[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &shape, NULL, st) ||
      wfx_kernel_input(ctx, 1, &mt, NULL, st) ||
      wfx_kernel_input(ctx, 2, &dy, &dys, st) ||
      ary_read_shape(shape, "shape", &xs, st) ||
      ary_read_index(mt, 1, ARY_MAX_INDEX, mult, &n, "multiples", st) ||
      check_multiples(mult, n, xs.rank, st) || tile_dims(&xs, mult, &want, st))
    return wfx_code(st);
  if (dys.rank != want.rank ||
      wfx_shape_count(&dys) != wfx_shape_count(&want) ||
      memcmp(dys.dims, want.dims, sizeof(int64_t) * (size_t)want.rank) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "dy has shape %s; tiling shape %s by multiples gives %s",
                    wfx_shape_str(&dys, a, sizeof a),
                    wfx_shape_str(&xs, b, sizeof b),
                    wfx_shape_str(&want, c, sizeof c));
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(dx) == 0)
    return 0;
  if (wfx_count(dy) == 0) {
    memset(wfx_data(dx), 0, wfx_host->tensor_nbytes(dx));
    return 0;
  }
  if (!(acc = wfx_host->alloc((size_t)wfx_count(dx) * sizeof *acc, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " accumulators",
                    wfx_count(dx));
  memset(acc, 0, (size_t)wfx_count(dx) * sizeof *acc);
  if (wfx_dtype(dy) == WF_FLOAT32)
    tile_grad_f32(wfx_data(dx), wfx_data(dy), acc, &xs, mult);
  else
    tile_grad_f64(wfx_data(dx), wfx_data(dy), acc, &xs, mult);
  wfx_host->free(acc);
  return 0;
}

static const wf_arg_def tile_grad_inputs[] = {
    WF_ARG_T("shape", "Tshape", "(R,) the shape of Tile's input"),
    WF_ARG_T("multiples", "Tmultiples", "(R,) Tile's multiples"),
    WF_ARG_T("dy", "T", "(D0 * multiples[0], ..., DR-1 * multiples[R-1])"),
    WF_ARG_END};
static const wf_arg_def tile_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(D0, ..., DR-1): dy summed over the copies"),
    WF_ARG_END};
static const wf_attr_def tile_grad_attrs[] = {
    ARY_ATTR_TYPE("T", WFX_DTYPES_FLOAT, "float32 or float64"),
    ARY_ATTR_INDEX("Tshape", "int32 or int64: the type of 'shape'"),
    ARY_ATTR_INDEX("Tmultiples", "int32 or int64: the type of 'multiples'"),
    WF_ATTR_END};

const wf_op_def ary_tile_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TileGrad",
    .inputs = tile_grad_inputs,
    .outputs = tile_grad_outputs,
    .attrs = tile_grad_attrs,
    .shape_fn = tile_grad_shape,
    .doc = "The gradient of Tile: each element of dx (shape) is the sum of "
           "dy over the multiples[0] * ... * multiples[R-1] copies of it, "
           "accumulated in double. The shape is known while building when "
           "'shape' is a Const."};

const wf_kernel_def ary_tile_grad_kernel =
    WFX_CPU_REFERENCE("TileGrad", "T", WFX_DTYPES_FLOAT, tile_grad_compute);

/* ---- PadGrad ------------------------------------------------------------- */

/* out = dy (rank known) with the paddings (checked) cut off; INVALID_ARGUMENT
 * when a dimension would be negative. Unknown dims stay unknown. */
static int pad_grad_dims(const wf_shape *dy, const int64_t *pads, wf_shape *out,
                         wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  *out = *dy;
  for (int i = 0; i < dy->rank; i++) {
    if (dy->dims[i] < 0)
      continue;
    out->dims[i] = dy->dims[i] - pads[2 * i] - pads[2 * i + 1];
    if (out->dims[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dimension %d of dy %s (%" PRId64 ") is smaller than "
                      "its paddings %" PRId64 " + %" PRId64,
                      i, wfx_shape_str(dy, buf, sizeof buf), dy->dims[i],
                      pads[2 * i], pads[2 * i + 1]);
  }
  return 0;
}

static int pad_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_tensor *pt;
  int64_t pads[2 * WF_MAX_RANK];
  wf_shape dy, ps, out;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 0, NULL, &dy, st) ||
      wfx_shape_input(ctx, 1, NULL, &ps, st))
    return wfx_code(st);
  if (ps.rank >= 0 &&
      (ps.rank != 2 || (ps.dims[1] >= 0 && ps.dims[1] != 2) ||
       (dy.rank >= 0 && ps.dims[0] >= 0 && ps.dims[0] != dy.rank)))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'paddings' must have shape (R, 2) for a dy of "
                    "rank R, got %s",
                    wfx_shape_str(&ps, buf, sizeof buf));
  if (dy.rank < 0) {
    if (ps.rank == 2 && ps.dims[0] >= 0 && ps.dims[0] <= WF_MAX_RANK)
      shape_of_rank(&out, (int)ps.dims[0]);
    else
      wfx_shape_set_unknown(&out);
  } else if ((pt = wfx_host->shape_input_value(ctx, 1)) != NULL) {
    if (read_paddings(pt, dy.rank, pads, st) ||
        pad_grad_dims(&dy, pads, &out, st))
      return wfx_code(st);
  } else {
    shape_of_rank(&out, dy.rank);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int pad_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *dy, *pt;
  wf_tensor *dx;
  int64_t pads[2 * WF_MAX_RANK], ystr[WF_MAX_RANK], xstr[WF_MAX_RANK], base = 0;
  size_t es;
  wf_shape dys, out;

  if (wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &pt, NULL, st) ||
      read_paddings(pt, dys.rank, pads, st) ||
      pad_grad_dims(&dys, pads, &out, st))
    return wfx_code(st);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  if (wfx_count(dx) == 0)
    return 0;
  es = wfx_dtype_size(wfx_dtype(dy));
  wfx_shape_strides(&dys, ystr);
  wfx_shape_strides(&out, xstr);
  for (int i = 0; i < dys.rank; i++)
    base += pads[2 * i] * ystr[i];
  ary_strided_copy(wfx_data(dx), xstr,
                   (const char *)wfx_data(dy) + base * (int64_t)es, ystr,
                   out.dims, out.rank, es);
  return 0;
}

static const wf_arg_def pad_grad_inputs[] = {
    WF_ARG_T("dy", "T", "(D0 + paddings[0, 0] + paddings[0, 1], ...)"),
    WF_ARG_T("paddings", "Tpaddings", "(R, 2) Pad's paddings"), WF_ARG_END};
static const wf_arg_def pad_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(D0, ..., DR-1): the unpadded block of dy"),
    WF_ARG_END};
static const wf_attr_def pad_grad_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tpaddings", "int32 or int64: the type of 'paddings'"),
    WF_ATTR_END};

const wf_op_def ary_pad_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "PadGrad",
    .inputs = pad_grad_inputs,
    .outputs = pad_grad_outputs,
    .attrs = pad_grad_attrs,
    .shape_fn = pad_grad_shape,
    .doc = "The gradient of Pad: the block of dy that Pad filled from its "
           "input, i.e. dy with paddings[i, 0] elements cut before and "
           "paddings[i, 1] after each dimension i."};

const wf_kernel_def ary_pad_grad_kernel =
    WFX_CPU_REFERENCE("PadGrad", "T", WF_DTYPES_ALL, pad_grad_compute);
