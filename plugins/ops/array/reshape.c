/* plugins/ops/array/reshape.c — ops that rearrange a tensor without changing
 * its elements: Reshape, Squeeze, ExpandDims and Transpose, and
 * InvertPermutation (for Transpose's gradient). Reshape, Squeeze and
 * ExpandDims hand out views of their input (no copy); Transpose copies.
 * Gradients are in grad.c. */
#include <config.h>

#include "array.h"

#include <inttypes.h>

/* *s = rank `rank` with every dimension unknown. */
static void shape_of_rank(wf_shape *s, int rank) {
  wfx_shape_set_unknown(s);
  s->rank = rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = WF_UNKNOWN_DIM;
}

/* ---- Reshape ------------------------------------------------------------- */

/* Resolves the requested shape req[0..n-1] (one entry may be -1) for an
 * input of `count` elements (-1: unknown, which leaves the -1 unknown) into
 * out. INVALID_ARGUMENT when the request is malformed or does
 * not match count. */
static int reshape_resolve(const int64_t *req, int64_t n, int64_t count,
                           wf_shape *out, wf_status *st) {
  int64_t known = 1;
  int infer = -1;

  if (n > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the requested shape has %" PRId64
                    " dimensions, at most %d are allowed",
                    n, WF_MAX_RANK);
  for (int i = 0; i < (int)n; i++) {
    if (req[i] == -1) {
      if (infer >= 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "only one dimension of the requested shape may "
                        "be -1 (dimensions %d and %d are)",
                        infer, i);
      infer = i;
    } else if (req[i] < 0) {
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dimension %d of the requested shape is %" PRId64
                      " (must be >= 0, or -1 to infer it)",
                      i, req[i]);
    } else if (__builtin_mul_overflow(known, req[i], &known)) {
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the requested shape has more than 2^63 elements");
    }
  }
  wfx_shape_make(out, (int)n, req);
  if (count < 0)
    return 0;
  if (infer < 0) {
    if (known != count)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "cannot reshape %" PRId64 " elements into a shape "
                      "of %" PRId64 " elements",
                      count, known);
    return 0;
  }
  if (known == 0 || count % known != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "cannot infer dimension %d: %" PRId64 " elements are "
                    "not a multiple of the other dimensions' product %" PRId64,
                    infer, count, known);
  out->dims[infer] = count / known;
  return 0;
}

static int reshape_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t req[ARY_MAX_INDEX], n;
  wf_shape xs, out;
  int known;

  if (wfx_shape_input(ctx, 0, NULL, &xs, st))
    return wfx_code(st);
  known = ary_shape_index_value(ctx, 1, 1, ARY_MAX_INDEX, req, &n, "shape", st);
  if (known < 0)
    return wfx_code(st);
  if (known) {
    if (reshape_resolve(req, n, wfx_shape_count(&xs), &out, st))
      return wfx_code(st);
  } else {
    n = ary_shape_vector_length(ctx, 1, "shape", st);
    if (n == -2)
      return wfx_code(st);
    if (n > WF_MAX_RANK)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the requested shape has %" PRId64
                      " dimensions, at most %d are allowed",
                      n, WF_MAX_RANK);
    if (n >= 0)
      shape_of_rank(&out, (int)n);
    else
      wfx_shape_set_unknown(&out);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int reshape_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *shape;
  int64_t req[ARY_MAX_INDEX], n;
  wf_shape out;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      wfx_kernel_input(ctx, 1, &shape, NULL, st) ||
      ary_read_index(shape, 1, ARY_MAX_INDEX, req, &n, "shape", st) ||
      reshape_resolve(req, n, wfx_count(x), &out, st))
    return wfx_code(st);
  return ary_output_reshaped(ctx, &out, st);
}

static const wf_arg_def reshape_inputs[] = {
    WF_ARG_T("tensor", "T", "any shape with C elements"),
    WF_ARG_T("shape", "Tshape",
             "(R,) the new dimensions; one may be -1 (inferred)"),
    WF_ARG_END};
static const wf_arg_def reshape_outputs[] = {
    WF_ARG_T("output", "T", "(shape[0], ..., shape[R-1]), C elements"),
    WF_ARG_END};
static const wf_attr_def reshape_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tshape", "int32 or int64: the type of 'shape'"),
    WF_ATTR_END};

const wf_op_def ary_reshape_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Reshape",
    .inputs = reshape_inputs,
    .outputs = reshape_outputs,
    .attrs = reshape_attrs,
    .shape_fn = reshape_shape,
    .doc = "The elements of tensor in row-major order with the dimensions of "
           "'shape', e.g. (N, H, W, C) -> (N, H*W*C) with shape [N, -1]. At "
           "most one entry may be -1. The shape is known while building when "
           "'shape' is a Const."};

const wf_kernel_def ary_reshape_kernel = WFX_CPU_REFERENCE(
    "Reshape", "T", WF_DTYPES_ALL, reshape_compute, .flags = WF_KERNEL_CHEAP);

/* ---- Squeeze ------------------------------------------------------------- */

/* The shape of squeezing s (rank known) by the axes in `axes` (empty: every
 * dimension of size 1). An unknown dimension named in axes is assumed to be
 * 1; an empty axes list meeting an unknown dimension gives an unknown rank.
 * Kernels pass fully known shapes, so neither case arises there. */
static int squeeze_dims(const wf_shape *s, const int64_t *axes, int64_t naxes,
                        wf_shape *out, wf_status *st) {
  uint32_t mask = 0;
  wf_shape r;

  wfx_shape_set_scalar(&r);
  if (naxes > 0) {
    if (wfx_axes_mask(axes, naxes, s->rank, &mask, NULL, st))
      return wfx_code(st);
  }
  for (int i = 0; i < s->rank; i++) {
    if (naxes == 0) {
      if (s->dims[i] < 0) {
        /* Whether it goes depends on its value. */
        wfx_shape_set_unknown(out);
        return 0;
      }
      if (s->dims[i] == 1)
        continue;
    } else if (mask & (UINT32_C(1) << i)) {
      if (s->dims[i] >= 0 && s->dims[i] != 1)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "cannot squeeze dimension %d of size %" PRId64
                        " (only size-1 dimensions can be squeezed)",
                        i, s->dims[i]);
      continue;
    }
    r.dims[r.rank++] = s->dims[i];
  }
  *out = r;
  return 0;
}

static int squeeze_shape(wf_shape_ctx *ctx, wf_status *st) {
  const int64_t *axes;
  int64_t naxes;
  wf_shape xs, out;

  if (wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_attr_ints(ctx, "squeeze_dims", &axes, &naxes, st))
    return wfx_code(st);
  if (xs.rank < 0)
    wfx_shape_set_unknown(&out);
  else if (squeeze_dims(&xs, axes, naxes, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int squeeze_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  const int64_t *axes;
  int64_t naxes;
  wf_shape xs, out;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_attr_ints(ctx, "squeeze_dims", &axes, &naxes, st) ||
      squeeze_dims(&xs, axes, naxes, &out, st))
    return wfx_code(st);
  return ary_output_reshaped(ctx, &out, st);
}

static const wf_arg_def squeeze_inputs[] = {
    WF_ARG_T("input", "T", "e.g. (N, 1, D)"), WF_ARG_END};
static const wf_arg_def squeeze_outputs[] = {
    WF_ARG_T("output", "T", "input without the squeezed dims, e.g. (N, D)"),
    WF_ARG_END};
static const wf_attr_def squeeze_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INTS_EMPTY("squeeze_dims",
                        "axes to remove (negative count from the end); each "
                        "must have size 1. Empty: every size-1 axis"),
    WF_ATTR_END};

const wf_op_def ary_squeeze_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Squeeze",
    .inputs = squeeze_inputs,
    .outputs = squeeze_outputs,
    .attrs = squeeze_attrs,
    .shape_fn = squeeze_shape,
    .doc = "Removes size-1 dimensions: (N, 1, D) -> (N, D). With an empty "
           "'squeeze_dims' every size-1 dimension goes (and the output rank "
           "is unknown while any input dimension is)."};

const wf_kernel_def ary_squeeze_kernel = WFX_CPU_REFERENCE(
    "Squeeze", "T", WF_DTYPES_ALL, squeeze_compute, .flags = WF_KERNEL_CHEAP);

/* ---- ExpandDims ---------------------------------------------------------- */

/* s (rank known) with a size-1 dimension inserted at axis. */
static int expand_dims(const wf_shape *s, int64_t axis, wf_shape *out,
                       wf_status *st) {
  int a;

  if (s->rank >= WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the input already has rank %d, the most allowed",
                    (int)s->rank);
  if (wfx_axis_normalize(axis, s->rank + 1, &a, NULL, st))
    return wfx_code(st);
  wfx_shape_set_scalar(out);
  out->rank = s->rank + 1;
  for (int i = 0, j = 0; i < out->rank; i++)
    out->dims[i] = i == a ? 1 : s->dims[j++];
  return 0;
}

static int expand_dims_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t axis;
  wf_shape xs, out;

  if (wfx_shape_input(ctx, 0, NULL, &xs, st) ||
      wfx_shape_attr_int(ctx, "axis", &axis, st))
    return wfx_code(st);
  if (xs.rank < 0)
    wfx_shape_set_unknown(&out);
  else if (expand_dims(&xs, axis, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int expand_dims_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  int64_t axis;
  wf_shape xs, out;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      expand_dims(&xs, axis, &out, st))
    return wfx_code(st);
  return ary_output_reshaped(ctx, &out, st);
}

static const wf_arg_def expand_dims_inputs[] = {
    WF_ARG_T("input", "T", "e.g. (N, D)"), WF_ARG_END};
static const wf_arg_def expand_dims_outputs[] = {
    WF_ARG_T("output", "T", "input with a size-1 axis, e.g. (N, 1, D)"),
    WF_ARG_END};
static const wf_attr_def expand_dims_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axis", .type = WF_ATTR_INT,
     .doc = "position of the new axis in the output, -R-1 <= axis <= R "
            "(negative counts from the end)"},
    WF_ATTR_END};

const wf_op_def ary_expand_dims_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ExpandDims",
    .inputs = expand_dims_inputs,
    .outputs = expand_dims_outputs,
    .attrs = expand_dims_attrs,
    .shape_fn = expand_dims_shape,
    .doc = "Inserts a size-1 dimension at 'axis': (N, D) with axis 1 -> "
           "(N, 1, D). Unlike TensorFlow the axis is an attribute, not an "
           "input."};

const wf_kernel_def ary_expand_dims_kernel =
    WFX_CPU_REFERENCE("ExpandDims", "T", WF_DTYPES_ALL, expand_dims_compute,
                      .flags = WF_KERNEL_CHEAP);

/* ---- Transpose ----------------------------------------------------------- */

/* Checks perm[0..n-1] is a permutation of 0..n-1 for an input of rank
 * `rank` (-1: unknown). */
static int check_perm(const int64_t *perm, int64_t n, int rank, wf_status *st) {
  uint32_t seen = 0;

  if (rank >= 0 && n != rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'perm' has %" PRId64 " entries for an input of rank "
                    "%d",
                    n, rank);
  if (n > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'perm' has %" PRId64 " entries, at most %d are "
                    "allowed",
                    n, WF_MAX_RANK);
  for (int64_t i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || (seen & (UINT32_C(1) << perm[i])))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'perm' is not a permutation of 0..%" PRId64
                      ": entry %" PRId64 " is %" PRId64,
                      n - 1, i, perm[i]);
    seen |= UINT32_C(1) << perm[i];
  }
  return 0;
}

static int transpose_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t perm[ARY_MAX_INDEX], n;
  wf_shape xs, out;
  int known;

  if (wfx_shape_input(ctx, 0, NULL, &xs, st))
    return wfx_code(st);
  known = ary_shape_index_value(ctx, 1, 1, ARY_MAX_INDEX, perm, &n, "perm", st);
  if (known < 0 || (known && check_perm(perm, n, xs.rank, st)))
    return wfx_code(st);
  if (known) {
    shape_of_rank(&out, (int)n);
    if (xs.rank >= 0)
      for (int i = 0; i < (int)n; i++)
        out.dims[i] = xs.dims[perm[i]];
  } else {
    n = ary_shape_vector_length(ctx, 1, "perm", st);
    if (n == -2)
      return wfx_code(st);
    if (xs.rank >= 0 && n >= 0 && n != xs.rank)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'perm' has %" PRId64 " entries for an input of "
                      "rank %d",
                      n, (int)xs.rank);
    if (xs.rank >= 0)
      shape_of_rank(&out, xs.rank);
    else if (n >= 0 && n <= WF_MAX_RANK)
      shape_of_rank(&out, (int)n);
    else
      wfx_shape_set_unknown(&out);
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int transpose_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *pt;
  wf_tensor *y;
  int64_t perm[ARY_MAX_INDEX], n, xstr[WF_MAX_RANK], ystr[WF_MAX_RANK],
      sstr[WF_MAX_RANK];
  wf_shape xs, out;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &pt, NULL, st) ||
      ary_read_index(pt, 1, ARY_MAX_INDEX, perm, &n, "perm", st) ||
      check_perm(perm, n, xs.rank, st))
    return wfx_code(st);
  wfx_shape_set_scalar(&out);
  out.rank = xs.rank;
  for (int i = 0; i < xs.rank; i++)
    out.dims[i] = xs.dims[perm[i]];
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  wfx_shape_strides(&xs, xstr);
  wfx_shape_strides(&out, ystr);
  for (int i = 0; i < xs.rank; i++)
    sstr[i] = xstr[perm[i]];
  ary_strided_copy(wfx_data(y), ystr, wfx_data(x), sstr, out.dims, out.rank,
                   wfx_dtype_size(wfx_dtype(x)));
  return 0;
}

static const wf_arg_def transpose_inputs[] = {
    WF_ARG_T("x", "T", "(D0, ..., DR-1)"),
    WF_ARG_T("perm", "Tperm", "(R,) a permutation of 0..R-1"), WF_ARG_END};
static const wf_arg_def transpose_outputs[] = {
    WF_ARG_T("y", "T", "(D[perm[0]], ..., D[perm[R-1]])"), WF_ARG_END};
static const wf_attr_def transpose_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tperm", "int32 or int64: the type of 'perm'"), WF_ATTR_END};

const wf_op_def ary_transpose_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Transpose",
    .inputs = transpose_inputs,
    .outputs = transpose_outputs,
    .attrs = transpose_attrs,
    .shape_fn = transpose_shape,
    .doc = "Permutes dimensions: y[i0, ..., iR-1] = x indexed so that "
           "dimension perm[k] of x takes index ik, e.g. (N, H, W, C) with "
           "perm [0, 3, 1, 2] -> (N, C, H, W). 'perm' is an input, as in "
           "TensorFlow; the shape is known while building when it is a "
           "Const."};

const wf_kernel_def ary_transpose_kernel =
    WFX_CPU_REFERENCE("Transpose", "T", WF_DTYPES_ALL, transpose_compute);

/* ---- InvertPermutation --------------------------------------------------- */

static int invert_permutation_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t n = ary_shape_vector_length(ctx, 0, "x", st);
  wf_shape out;

  if (n == -2)
    return wfx_code(st);
  wfx_shape_make(&out, 1, &n);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int invert_permutation_compute(wf_kernel_ctx *ctx, void *state,
                                      wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  int64_t perm[ARY_MAX_INDEX], n;
  wf_shape out;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      ary_read_index(x, 1, WF_MAX_RANK, perm, &n, "x", st) ||
      check_perm(perm, n, -1, st))
    return wfx_code(st);
  wfx_shape_make(&out, 1, &n);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  for (int64_t i = 0; i < n; i++) {
    if (wfx_dtype(y) == WF_INT32)
      ((int32_t *)wfx_data(y))[perm[i]] = (int32_t)i;
    else
      ((int64_t *)wfx_data(y))[perm[i]] = i;
  }
  return 0;
}

static const wf_arg_def invert_permutation_inputs[] = {
    WF_ARG_T("x", "T", "(R,) a permutation of 0..R-1, R <= 8"), WF_ARG_END};
static const wf_arg_def invert_permutation_outputs[] = {
    WF_ARG_T("y", "T", "(R,) the inverse: y[x[i]] = i"), WF_ARG_END};
static const wf_attr_def invert_permutation_attrs[] = {
    ARY_ATTR_INDEX("T", "int32 or int64"), WF_ATTR_END};

const wf_op_def ary_invert_permutation_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "InvertPermutation",
    .inputs = invert_permutation_inputs,
    .outputs = invert_permutation_outputs,
    .attrs = invert_permutation_attrs,
    .shape_fn = invert_permutation_shape,
    .doc = "The inverse of a permutation (R,): y[x[i]] = i, so that "
           "Transpose by x then by y is the identity. Used by Transpose's "
           "gradient; perms are at most 8 long (WF_MAX_RANK)."};

const wf_kernel_def ary_invert_permutation_kernel =
    WFX_CPU_REFERENCE("InvertPermutation", "T", ARY_DTYPES_INDEX,
                      invert_permutation_compute, .flags = WF_KERNEL_CHEAP);
