/* plugins/ops/array/source.c — ops that make or forward whole tensors:
 * Const, Placeholder, Identity, StopGradient, CheckNumerics, NoOp, Fill,
 * ZerosLike, OnesLike, Shape and Size. Placeholder has no kernel: the executor feeds
 * it. Gradients are not defined here (plugin.c marks the ones that have
 * none). */
#include <config.h>

#include "array.h"

#include <inttypes.h>
#include <string.h>

/* ---- Const --------------------------------------------------------------- */

static int const_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  int32_t dtype;
  wf_shape s;

  if (wfx_host->shape_attr(ctx, "value", &v) != 0 || v.type != WF_ATTR_TENSOR ||
      !v.u.tensor)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'value' must be set to a tensor");
  if (wfx_shape_attr_dtype(ctx, "dtype", &dtype, st))
    return wfx_code(st);
  if (wfx_dtype(v.u.tensor) != dtype)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'value' is a %s tensor but 'dtype' says %s",
                    wfx_dtype_name(wfx_dtype(v.u.tensor)),
                    wfx_dtype_name(dtype));
  wfx_host->tensor_shape(v.u.tensor, &s);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int const_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value v;

  if (wfx_host->kernel_attr(ctx, "value", &v) != 0 ||
      v.type != WF_ATTR_TENSOR || !v.u.tensor)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'value' must be set to a tensor");
  /* The attribute's tensor becomes the output without a copy. Casting away
   * const is safe: a tensor with more than one reference is never written
   * (weft/tensor.h), and the graph keeps its own reference. */
  return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)v.u.tensor, st);
}

static const wf_arg_def const_outputs[] = {
    WF_ARG_T("output", "dtype", "the tensor of attribute 'value', same shape"),
    WF_ARG_END};
static const wf_attr_def const_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "value", .type = WF_ATTR_TENSOR,
     .doc = "the tensor to output"},
    ARY_ATTR_TYPE("dtype", ARY_TYPES_HELD,
                  "element type of the output; must be that of 'value'"),
    WF_ATTR_END};

const wf_op_def ary_const_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Const",
    .outputs = const_outputs,
    .attrs = const_attrs,
    .flags = WF_OP_CONSTANT,
    .shape_fn = const_shape,
    .doc = "Outputs the tensor held in attribute 'value' (any shape, e.g. "
           "(N, D)); the kernel hands out that tensor itself, no copy."};

const wf_kernel_def ary_const_kernel = WFX_CPU_REFERENCE(
    "Const", "dtype", ARY_TYPES_HELD, const_compute, .flags = WF_KERNEL_CHEAP);

/* ---- Placeholder --------------------------------------------------------- */

static int placeholder_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;

  if (wfx_host->shape_attr(ctx, "shape", &v) != 0 || v.type != WF_ATTR_SHAPE)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' must be a shape");
  wfx_host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

static const wf_arg_def placeholder_outputs[] = {
    WF_ARG_T("output", "dtype", "the fed tensor, of attribute 'shape'"),
    WF_ARG_END};
static const wf_attr_def placeholder_attrs[] = {
    ARY_ATTR_TYPE("dtype", ARY_TYPES_HELD, "element type of the fed tensor"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE,
                       .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}},
     .doc = "shape of the fed tensor; unknown rank or dims (-1) allowed, "
            "the default is an unknown rank"},
    WF_ATTR_END};

const wf_op_def ary_placeholder_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Placeholder",
    .outputs = placeholder_outputs,
    .attrs = placeholder_attrs,
    .flags = WF_OP_SOURCE_FED,
    .shape_fn = placeholder_shape,
    .doc = "A value fed at run time, e.g. a batch of images (N, H, W, C). "
           "It has no kernel: running it without a feed is an error of the "
           "executor."};

/* ---- Identity, StopGradient
 * -------------------------------------------------- */

static int forward_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st))
    return wfx_code(st);
  /* Forwarded, not copied; see const_compute for why the cast is safe. */
  return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
}

static const wf_arg_def unary_inputs[] = {
    WF_ARG_T("input", "T", "any shape, e.g. (N, D)"), WF_ARG_END};
static const wf_arg_def unary_outputs[] = {
    WF_ARG_T("output", "T", "the shape of input"), WF_ARG_END};
static const wf_attr_def any_type_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"), WF_ATTR_END};
static const wf_attr_def held_type_attrs[] = {
    ARY_ATTR_TYPE("T", ARY_TYPES_HELD, "element type"), WF_ATTR_END};

const wf_op_def ary_identity_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Identity",
    .inputs = unary_inputs,
    .outputs = unary_outputs,
    .attrs = held_type_attrs,
    .shape_fn = wfx_shape_like_input0,
    .doc = "Outputs its input unchanged (the same tensor, not a copy)."};

const wf_kernel_def ary_identity_kernel = WFX_CPU_REFERENCE(
    "Identity", "T", ARY_TYPES_HELD, forward_compute, .flags = WF_KERNEL_CHEAP);

const wf_op_def ary_stop_gradient_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "StopGradient",
    .inputs = unary_inputs,
    .outputs = unary_outputs,
    .attrs = any_type_attrs,
    .shape_fn = wfx_shape_like_input0,
    .doc = "Outputs its input unchanged; no gradient flows through it."};

const wf_kernel_def ary_stop_gradient_kernel =
    WFX_CPU_REFERENCE("StopGradient", "T", WF_DTYPES_ALL, forward_compute,
                      .flags = WF_KERNEL_CHEAP);

/* ---- CheckNumerics -------------------------------------------------------- */

/* The NaN and Inf elements of x (a float dtype), by the bits: an all-ones
 * exponent. *first: the index of the first (-1 when none). */
static int64_t count_nonfinite(const wf_tensor *x, int64_t *first) {
  const wf_host *h = wfx_host;
  int64_t n = h->tensor_count(x), bad = 0;
  const unsigned char *p = h->tensor_data(x);
  int32_t dtype = h->tensor_dtype(x);

  *first = -1;
  for (int64_t i = 0; i < n; i++) {
    int nf;
    if (dtype == WF_FLOAT32) {
      uint32_t b;
      memcpy(&b, p + i * 4, 4);
      nf = (b & 0x7F800000u) == 0x7F800000u;
    } else if (dtype == WF_FLOAT64) {
      uint64_t b;
      memcpy(&b, p + i * 8, 8);
      nf = (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull;
    } else {
      uint16_t b;
      memcpy(&b, p + i * 2, 2);
      nf = dtype == WF_FLOAT16 ? (b & 0x7C00) == 0x7C00
                               : (b & 0x7F80) == 0x7F80;
    }
    if (nf && bad++ == 0)
      *first = i;
  }
  return bad;
}

static int check_numerics_compute(wf_kernel_ctx *ctx, void *state,
                                  wf_status *st) {
  const wf_host *h = wfx_host;
  const wf_tensor *x;
  wf_attr_value v;
  int64_t first, bad;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st))
    return wfx_code(st);
  bad = count_nonfinite(x, &first);
  if (bad > 0) {
    const char *msg = h->kernel_attr(ctx, "message", &v) == 0 &&
                              v.type == WF_ATTR_STRING && v.u.s
                          ? v.u.s
                          : "";
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s%s%" PRId64 " NaN or Inf values of %" PRId64
                    " (the first at element %" PRId64 ")",
                    msg, *msg ? ": " : "", bad, h->tensor_count(x), first);
  }
  /* Forwarded, not copied, as Identity. */
  return h->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
}

static const wf_arg_def float_inputs[] = {
    WF_ARG_T("input", "T", "any shape, e.g. (N, D)"), WF_ARG_END};
static const wf_attr_def check_numerics_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_FLOAT, "element type"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "message", .type = WF_ATTR_STRING,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_STRING, .count = 1, .u.s = ""},
     .doc = "put before the count in the error"},
    WF_ATTR_END};

const wf_op_def ary_check_numerics_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "CheckNumerics",
    .inputs = float_inputs,
    .outputs = unary_outputs,
    .attrs = check_numerics_attrs,
    .shape_fn = wfx_shape_like_input0,
    .doc = "Outputs its input unchanged (the same tensor) when it holds no "
           "NaN or Inf; otherwise fails the step with INVALID_ARGUMENT, "
           "'message' followed by the count of such values and the index "
           "of the first. Its gradient passes the incoming one through "
           "unchecked."};

const wf_kernel_def ary_check_numerics_kernel = WFX_CPU_REFERENCE(
    "CheckNumerics", "T", WF_DTYPES_FLOAT, check_numerics_compute);

/* ---- NoOp
 * --------------------------------------------------------------------- */

static int noop_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return 0;
}

const wf_op_def ary_noop_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "NoOp",
    .doc = "Does nothing; with control inputs it groups other nodes into one "
           "target."};

const wf_kernel_def ary_noop_kernel =
    WFX_CPU_REFERENCE("NoOp", NULL, 0, noop_compute, .flags = WF_KERNEL_CHEAP);

/* ---- Fill
 * ----------------------------------------------------------------------- */

/* Checks dims[0..n-1] (from input 'dims') are not negative. */
static int check_dims(const int64_t *dims, int64_t n, wf_status *st) {
  for (int64_t i = 0; i < n; i++)
    if (dims[i] < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dims[%" PRId64 "] is %" PRId64
                      ", dimensions must not be negative",
                      i, dims[i]);
  return 0;
}

static int fill_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t dims[ARY_MAX_INDEX], n;
  wf_shape vs, out;
  char buf[WFX_SHAPE_STR_MAX];
  int known;

  if (wfx_shape_input(ctx, 1, NULL, &vs, st))
    return wfx_code(st);
  if (vs.rank > 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'value' must be a scalar, got shape %s",
                    wfx_shape_str(&vs, buf, sizeof buf));
  known = ary_shape_index_value(ctx, 0, 1, WF_MAX_RANK, dims, &n, "dims", st);
  if (known < 0 || (known && check_dims(dims, n, st)))
    return wfx_code(st);
  if (known) {
    wfx_shape_make(&out, (int)n, dims);
  } else {
    n = ary_shape_vector_length(ctx, 0, "dims", st);
    if (n == -2)
      return wfx_code(st);
    if (n > WF_MAX_RANK)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input 'dims' has %" PRId64
                      " entries, at most %d are allowed",
                      n, WF_MAX_RANK);
    wfx_shape_set_unknown(&out);
    if (n >= 0) {
      out.rank = (int32_t)n;
      for (int i = 0; i < out.rank; i++)
        out.dims[i] = WF_UNKNOWN_DIM;
    }
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int fill_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *dt, *vt;
  wf_tensor *y;
  wf_shape vs, out;
  int64_t dims[ARY_MAX_INDEX], n;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &dt, NULL, st) ||
      wfx_kernel_input(ctx, 1, &vt, &vs, st))
    return wfx_code(st);
  if (vs.rank != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'value' must be a scalar, got shape %s",
                    wfx_shape_str(&vs, buf, sizeof buf));
  if (ary_read_index(dt, 1, WF_MAX_RANK, dims, &n, "dims", st) ||
      check_dims(dims, n, st))
    return wfx_code(st);
  wfx_shape_make(&out, (int)n, dims);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  ary_fill_bytes(wfx_data(y), wfx_data(vt), wfx_count(y),
                 wfx_dtype_size(wfx_dtype(vt)));
  return 0;
}

static const wf_arg_def fill_inputs[] = {
    WF_ARG_T("dims", "index_type", "(R,) the output's dimensions"),
    WF_ARG_T("value", "T", "() the value of every element"), WF_ARG_END};
static const wf_arg_def fill_outputs[] = {
    WF_ARG_T("output", "T", "(dims[0], ..., dims[R-1])"), WF_ARG_END};
static const wf_attr_def fill_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("index_type", "int32 or int64: the type of 'dims'"),
    WF_ATTR_END};

const wf_op_def ary_fill_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Fill",
    .inputs = fill_inputs,
    .outputs = fill_outputs,
    .attrs = fill_attrs,
    .shape_fn = fill_shape,
    .doc = "A tensor of shape 'dims' (R,) whose every element is the scalar "
           "'value'. The shape is known while building when 'dims' is a "
           "Const."};

const wf_kernel_def ary_fill_kernel =
    WFX_CPU_REFERENCE("Fill", "T", WF_DTYPES_ALL, fill_compute);

/* ---- ZerosLike, OnesLike
 * ----------------------------------------------------- */

/* The bytes of the value 1 in dtype dt (es bytes written to one). */
static void one_bytes(int32_t dt, unsigned char *one) {
  union {
    float f32;
    double f64;
    int8_t i8;
    uint8_t u8;
    int32_t i32;
    int64_t i64;
    uint16_t u16;
  } u;

  memset(&u, 0, sizeof u);
  switch (dt) {
  case WF_FLOAT32:
    u.f32 = 1.0f;
    break;
  case WF_FLOAT64:
    u.f64 = 1.0;
    break;
  case WF_FLOAT16:
    u.u16 = 0x3c00;
    break; /* IEEE binary16 1.0 */
  case WF_BFLOAT16:
    u.u16 = 0x3f80;
    break; /* top half of binary32 1.0 */
  case WF_INT8:
    u.i8 = 1;
    break;
  case WF_UINT8:
    u.u8 = 1;
    break;
  case WF_INT32:
    u.i32 = 1;
    break;
  case WF_INT64:
    u.i64 = 1;
    break;
  case WF_BOOL:
    u.u8 = 1;
    break;
  default:
    break;
  }
  memcpy(one, &u, wfx_dtype_size(dt));
}

static int constant_like(wf_kernel_ctx *ctx, int one, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s;
  unsigned char value[8];
  int32_t dt;

  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s, st)))
    return wfx_code(st);
  dt = wfx_dtype(y);
  if (!one) {
    /* All-zero bytes are 0 (or false) in every dtype. */
    memset(wfx_data(y), 0, wfx_host->tensor_nbytes(y));
    return 0;
  }
  one_bytes(dt, value);
  ary_fill_bytes(wfx_data(y), value, wfx_count(y), wfx_dtype_size(dt));
  return 0;
}

static int zeros_like_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return constant_like(ctx, 0, st);
}

static int ones_like_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return constant_like(ctx, 1, st);
}

static const wf_arg_def like_inputs[] = {
    WF_ARG_T("x", "T", "any shape, e.g. (N, D); only its shape is used"),
    WF_ARG_END};
static const wf_arg_def like_outputs[] = {WF_ARG_T("y", "T", "the shape of x"),
                                          WF_ARG_END};

const wf_op_def ary_zeros_like_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ZerosLike",
    .inputs = like_inputs,
    .outputs = like_outputs,
    .attrs = any_type_attrs,
    .shape_fn = wfx_shape_like_input0,
    .doc = "Zeros (false for bool) of the shape and type of x."};

const wf_kernel_def ary_zeros_like_kernel =
    WFX_CPU_REFERENCE("ZerosLike", "T", WF_DTYPES_ALL, zeros_like_compute);

const wf_op_def ary_ones_like_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnesLike",
    .inputs = like_inputs,
    .outputs = like_outputs,
    .attrs = any_type_attrs,
    .flags = WF_OP_ONES_LIKE,
    .shape_fn = wfx_shape_like_input0,
    .doc = "Ones (true for bool) of the shape and type of x."};

const wf_kernel_def ary_ones_like_kernel =
    WFX_CPU_REFERENCE("OnesLike", "T", WF_DTYPES_ALL, ones_like_compute);

/* ---- Shape, Size --------------------------------------------------------- */

static int shape_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s, out;
  int64_t rank;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  rank = s.rank < 0 ? WF_UNKNOWN_DIM : s.rank;
  wfx_shape_make(&out, 1, &rank);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* Stores v (a `name` for messages) into element i of an int32 or int64
 * buffer; INVALID_ARGUMENT when v does not fit int32. */
static int store_index(void *data, int32_t dt, int64_t i, int64_t v,
                       const char *name, wf_status *st) {
  if (dt == WF_INT64) {
    ((int64_t *)data)[i] = v;
    return 0;
  }
  if (v > INT32_MAX)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s %" PRId64 " does not fit out_type int32; use "
                    "int64",
                    name, v);
  ((int32_t *)data)[i] = (int32_t)v;
  return 0;
}

static int shape_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape s, out;
  int64_t rank;

  if (wfx_kernel_input(ctx, 0, &x, &s, st))
    return wfx_code(st);
  rank = s.rank;
  wfx_shape_make(&out, 1, &rank);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  for (int i = 0; i < s.rank; i++)
    if (store_index(wfx_data(y), wfx_dtype(y), i, s.dims[i], "dimension", st))
      return wfx_code(st);
  return 0;
}

static int scalar_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape out;

  wfx_shape_set_scalar(&out);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int size_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape out;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st))
    return wfx_code(st);
  wfx_shape_set_scalar(&out);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  return store_index(wfx_data(y), wfx_dtype(y), 0, wfx_count(x),
                     "element count", st);
}

static const wf_arg_def shape_inputs[] = {
    WF_ARG_T("input", "T", "any shape (D0, ..., DR-1); only its shape is used"),
    WF_ARG_END};
static const wf_arg_def shape_outputs[] = {
    WF_ARG_T("output", "out_type", "(R,) the dimensions of input"), WF_ARG_END};
static const wf_arg_def size_outputs[] = {
    WF_ARG_T("output", "out_type", "() the element count of input"),
    WF_ARG_END};
static const wf_attr_def shape_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type of input"),
    ARY_ATTR_INDEX("out_type", "int32 (default) or int64"), WF_ATTR_END};

const wf_op_def ary_shape_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Shape",
    .inputs = shape_inputs,
    .outputs = shape_outputs,
    .attrs = shape_attrs,
    .shape_fn = shape_shape,
    .doc = "The dimensions of input as a vector (R,); a dimension that does "
           "not fit int32 is an error with out_type int32."};

const wf_kernel_def ary_shape_kernel = WFX_CPU_REFERENCE(
    "Shape", "T", WF_DTYPES_ALL, shape_compute, .flags = WF_KERNEL_CHEAP);

const wf_op_def ary_size_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Size",
    .inputs = shape_inputs,
    .outputs = size_outputs,
    .attrs = shape_attrs,
    .shape_fn = scalar_shape,
    .doc = "The number of elements of input as a scalar (); a count that "
           "does not fit int32 is an error with out_type int32."};

const wf_kernel_def ary_size_kernel = WFX_CPU_REFERENCE(
    "Size", "T", WF_DTYPES_ALL, size_compute, .flags = WF_KERNEL_CHEAP);
