/* plugins/ops/array/slice.c — Slice and StridedSlice, and the backward ops
 * of their gradients, SliceGrad and StridedSliceGrad. StridedSlice follows
 * TensorFlow's semantics: begin/end/strides with begin_mask, end_mask,
 * ellipsis_mask, new_axis_mask and shrink_axis_mask, negative indices and
 * strides, clamping of out-of-range bounds. One exception, documented on the
 * op: a shrunk axis takes element begin whatever the sign of its stride.
 * Gradient functions are in grad.c. */
#include <config.h>

#include "array.h"

#include <inttypes.h>
#include <string.h>

/* *s = rank `rank` with every dimension unknown. */
static void shape_of_rank(wf_shape *s, int rank) {
  wfx_shape_set_unknown(s);
  s->rank = rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = WF_UNKNOWN_DIM;
}

/* ---- Slice --------------------------------------------------------------- */

/* The output of slicing s (rank known) with begin and size (rank entries
 * each; either may be NULL when unknown). Unknown input dims give unknown
 * output dims where they matter. */
static int slice_dims(const wf_shape *s, const int64_t *begin,
                      const int64_t *size, wf_shape *out, wf_status *st) {
  shape_of_rank(out, s->rank);
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[i];

    if (begin && (begin[i] < 0 || (d >= 0 && begin[i] > d)))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "begin[%d] is %" PRId64 ", outside [0, %" PRId64 "]"
                      " (dimension %d)",
                      i, begin[i], d, i);
    if (size && size[i] < -1)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "size[%d] is %" PRId64
                      " (must be >= 0, or -1 for the rest)",
                      i, size[i]);
    if (begin && size && d >= 0 && size[i] > d - begin[i])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "begin[%d] + size[%d] = %" PRId64 " + %" PRId64
                      " exceeds dimension %d of size %" PRId64,
                      i, i, begin[i], size[i], i, d);
    if (size && size[i] >= 0)
      out->dims[i] = size[i];
    else if (size && begin && d >= 0)
      out->dims[i] = d - begin[i];
  }
  return 0;
}

/* Checks a begin/size vector of n entries against the input rank. */
static int slice_check_len(int64_t n, int rank, const char *input,
                           wf_status *st) {
  if (rank >= 0 && n >= 0 && n != rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' has %" PRId64 " entries for an input of rank %d",
                    input, n, rank);
  if (n > WF_MAX_RANK)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'%s' has %" PRId64 " entries, at most %d are allowed",
                    input, n, WF_MAX_RANK);
  return 0;
}

static int slice_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t begin[ARY_MAX_INDEX], size[ARY_MAX_INDEX], nb, ns;
  wf_shape s, out;
  int kb, ks;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  kb = ary_shape_index_value(ctx, 1, 1, ARY_MAX_INDEX, begin, &nb, "begin", st);
  if (kb < 0)
    return wfx_code(st);
  ks = ary_shape_index_value(ctx, 2, 1, ARY_MAX_INDEX, size, &ns, "size", st);
  if (ks < 0)
    return wfx_code(st);
  if (!kb && (nb = ary_shape_vector_length(ctx, 1, "begin", st)) == -2)
    return wfx_code(st);
  if (!ks && (ns = ary_shape_vector_length(ctx, 2, "size", st)) == -2)
    return wfx_code(st);
  if (slice_check_len(nb, s.rank, "begin", st) ||
      slice_check_len(ns, s.rank, "size", st))
    return wfx_code(st);
  if (nb >= 0 && ns >= 0 && nb != ns)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "'begin' has %" PRId64 " entries but 'size' %" PRId64, nb,
                    ns);
  if (s.rank < 0) {
    int64_t n = nb >= 0 ? nb : ns;

    if (n < 0) {
      wfx_shape_set_unknown(&out);
      wfx_host->shape_set_output(ctx, 0, &out);
      return 0;
    }
    shape_of_rank(&s, (int)n);
  }
  if (slice_dims(&s, kb ? begin : NULL, ks ? size : NULL, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int slice_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *bt, *zt;
  wf_tensor *y;
  int64_t begin[ARY_MAX_INDEX], size[ARY_MAX_INDEX], nb, ns, xstr[WF_MAX_RANK],
      ystr[WF_MAX_RANK], base = 0;
  size_t es;
  wf_shape s, out;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &bt, NULL, st) ||
      wfx_kernel_input(ctx, 2, &zt, NULL, st) ||
      ary_read_index(bt, 1, ARY_MAX_INDEX, begin, &nb, "begin", st) ||
      ary_read_index(zt, 1, ARY_MAX_INDEX, size, &ns, "size", st) ||
      slice_check_len(nb, s.rank, "begin", st) ||
      slice_check_len(ns, s.rank, "size", st) ||
      slice_dims(&s, begin, size, &out, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  es = wfx_dtype_size(wfx_dtype(x));
  wfx_shape_strides(&s, xstr);
  wfx_shape_strides(&out, ystr);
  for (int i = 0; i < s.rank; i++)
    base += begin[i] * xstr[i];
  ary_strided_copy(wfx_data(y), ystr,
                   (const char *)wfx_data(x) + base * (int64_t)es, xstr,
                   out.dims, out.rank, es);
  return 0;
}

static const wf_arg_def slice_inputs[] = {
    WF_ARG_T("input", "T", "(D0, ..., DR-1)"),
    WF_ARG_T("begin", "Index", "(R,) first index per dimension, 0 <= b <= D"),
    WF_ARG_T("size", "Index", "(R,) elements per dimension; -1 takes the rest"),
    WF_ARG_END};
static const wf_arg_def slice_outputs[] = {
    WF_ARG_T("output", "T", "(size[0], ..., size[R-1]), -1 resolved"),
    WF_ARG_END};
static const wf_attr_def slice_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Index", "int32 or int64: the type of 'begin' and 'size'"),
    WF_ATTR_END};

const wf_op_def ary_slice_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Slice",
    .inputs = slice_inputs,
    .outputs = slice_outputs,
    .attrs = slice_attrs,
    .shape_fn = slice_shape,
    .doc = "The block of input starting at 'begin' with extent 'size': "
           "(N, D) with begin [0, 2] and size [-1, 3] -> (N, 3). The shape "
           "is known while building when 'begin' and 'size' are Consts "
           "('size' alone suffices without -1 entries)."};

const wf_kernel_def ary_slice_kernel =
    WFX_CPU_REFERENCE("Slice", "T", WF_DTYPES_ALL, slice_compute);

/* ---- StridedSlice -------------------------------------------------------- */

#define GATHER_NEW (-1)    /* final dimension is a new axis of size 1 */
#define GATHER_SHRINK (-2) /* dense dimension that the output drops */

/* A strided slice resolved against an input of known rank: per input
 * ("dense") dimension its first index, stride and extent (-1 unknown), and
 * the output shape. */
typedef struct ss_plan {
  int rank;                   /* input rank */
  int64_t begin[WF_MAX_RANK]; /* first index (valid when size > 0) */
  int64_t stride[WF_MAX_RANK];
  int64_t size[WF_MAX_RANK]; /* elements taken; -1 unknown */
  wf_shape out;
} ss_plan;

typedef struct ss_masks {
  int64_t begin, end, ellipsis, new_axis, shrink;
} ss_masks;

/* Resolves the sparse spec (n entries of begin/end/strides, each array NULL
 * when unknown) against s (rank known) into *p, following TensorFlow's
 * ValidateStridedSliceOp. Unknown values or input dims give unknown output
 * dims; a fully known input and spec give a fully known plan. */
static int ss_resolve(const wf_shape *s, int64_t n, const int64_t *begin,
                      const int64_t *end, const int64_t *strides,
                      const ss_masks *m, ss_plan *p, wf_status *st) {
  int dense = s->rank, full = 0, sparse_dims = (int)n, add_after = 0;
  int seen = 0, nfinal = 0;
  uint64_t ell = (uint64_t)m->ellipsis, newm = (uint64_t)m->new_axis;
  uint64_t bmask = 0, emask = 0, shrink = 0;
  /* Per dense dim: spec values and whether they are known. */
  int64_t db[WF_MAX_RANK], de[WF_MAX_RANK], ds[WF_MAX_RANK];
  int kb[WF_MAX_RANK], ke[WF_MAX_RANK], ks[WF_MAX_RANK];
  int gather[ARY_MAX_INDEX + WF_MAX_RANK];
  int ngather = 0;

  if (n > ARY_MAX_INDEX)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the slice spec has %" PRId64
                    " entries, at most %d are allowed",
                    n, ARY_MAX_INDEX);
  ell &= (UINT64_C(1) << n) - 1;
  if (ell & (ell - 1))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "ellipsis_mask %" PRId64 " marks more than one "
                    "ellipsis",
                    m->ellipsis);
  for (int i = 0; i < (int)n; i++) {
    if (seen && (newm >> i & 1))
      add_after++;
    if (ell >> i & 1)
      seen = 1;
  }
  if (!seen) {
    /* An implicit ellipsis at the end covers the dimensions not named. */
    ell |= UINT64_C(1) << n;
    sparse_dims++;
  }
  for (int i = 0; i < sparse_dims; i++) {
    if (ell >> i & 1) {
      int next = dense - (sparse_dims - i) + 1 + add_after;

      if (next > dense)
        next = dense;
      for (; full < next; full++) {
        db[full] = de[full] = 0;
        ds[full] = 1;
        kb[full] = ke[full] = ks[full] = 1;
        bmask |= UINT64_C(1) << full;
        emask |= UINT64_C(1) << full;
        gather[ngather++] = full;
      }
    } else if (newm >> i & 1) {
      gather[ngather++] = GATHER_NEW;
    } else {
      if (full == dense)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "the slice spec indexes more dimensions than the "
                        "input's %d",
                        dense);
      kb[full] = begin != NULL;
      ke[full] = end != NULL;
      ks[full] = strides != NULL;
      db[full] = begin ? begin[i] : 0;
      de[full] = end ? end[i] : 0;
      ds[full] = strides ? strides[i] : 1;
      if ((uint64_t)m->begin >> i & 1)
        bmask |= UINT64_C(1) << full;
      if ((uint64_t)m->end >> i & 1)
        emask |= UINT64_C(1) << full;
      if ((uint64_t)m->shrink >> i & 1) {
        shrink |= UINT64_C(1) << full;
        gather[ngather++] = GATHER_SHRINK;
      } else {
        gather[ngather++] = full;
      }
      full++;
    }
  }

  p->rank = dense;
  for (int i = 0; i < dense; i++) {
    int64_t dim = s->dims[i], stride = ds[i], b = 0, e = 0, len = 0;
    int is_shrink = (int)(shrink >> i & 1);
    int bm = (int)(bmask >> i & 1), em = (int)(emask >> i & 1);
    int known = 0;

    if (ks[i] && stride == 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the stride of dimension %d is 0", i);
    p->begin[i] = 0;
    p->stride[i] = stride;
    p->size[i] = is_shrink ? 1 : -1;
    if (dim < 0 || !ks[i])
      continue;
    if (is_shrink) {
      /* One element: begin, counted from the end when negative. */
      if (kb[i]) {
        b = db[i] < 0 ? dim + db[i] : db[i];
        if (b < 0 || b >= dim)
          return wfx_fail(st, WF_INVALID_ARGUMENT,
                          "index %" PRId64 " of shrunk dimension %d is "
                          "out of range for size %" PRId64,
                          db[i], i, dim);
        p->begin[i] = b;
        p->stride[i] = 1;
      }
      continue;
    }
    /* Valid index range for this stride direction: [0, dim] forwards,
     * [-1, dim - 1] backwards (-1 meaning "before the first"). */
    int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
    if ((kb[i] || bm) && (ke[i] || em)) {
      if (bm)
        b = stride > 0 ? lo : hi;
      else {
        b = db[i] < 0 ? dim + db[i] : db[i];
        b = b < lo ? lo : b > hi ? hi : b;
      }
      if (em)
        e = stride > 0 ? hi : lo;
      else {
        e = de[i] < 0 ? dim + de[i] : de[i];
        e = e < lo ? lo : e > hi ? hi : e;
      }
      len = e - b;
      known = 1;
    }
    if (!known)
      continue;
    p->begin[i] = b;
    if (len == 0 || (len < 0) != (stride < 0))
      p->size[i] = 0;
    else
      p->size[i] = len / stride + (len % stride != 0);
  }

  wfx_shape_set_scalar(&p->out);
  for (int g = 0; g < ngather; g++) {
    if (gather[g] == GATHER_SHRINK)
      continue;
    if (nfinal == WF_MAX_RANK)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the output would have more than %d dimensions",
                      WF_MAX_RANK);
    p->out.dims[nfinal++] = gather[g] == GATHER_NEW ? 1 : p->size[gather[g]];
  }
  p->out.rank = nfinal;
  return 0;
}

static int ss_masks_get(const wf_shape_ctx *sctx, const wf_kernel_ctx *kctx,
                        ss_masks *m, wf_status *st) {
  static const char *const names[] = {"begin_mask", "end_mask", "ellipsis_mask",
                                      "new_axis_mask", "shrink_axis_mask"};
  int64_t *dst[] = {&m->begin, &m->end, &m->ellipsis, &m->new_axis, &m->shrink};

  for (int i = 0; i < 5; i++) {
    int rc = sctx ? wfx_shape_attr_int(sctx, names[i], dst[i], st)
                  : wfx_kernel_attr_int(kctx, names[i], dst[i], st);
    if (rc)
      return rc;
  }
  return 0;
}

static int strided_slice_shape(wf_shape_ctx *ctx, wf_status *st) {
  static const char *const inputs[] = {"begin", "end", "strides"};
  int64_t vals[3][ARY_MAX_INDEX], len[3], n = -1;
  int known[3];
  ss_masks m;
  ss_plan p;
  wf_shape s, out;

  if (wfx_shape_input(ctx, 0, NULL, &s, st) || ss_masks_get(ctx, NULL, &m, st))
    return wfx_code(st);
  for (int k = 0; k < 3; k++) {
    known[k] = ary_shape_index_value(ctx, k + 1, 1, ARY_MAX_INDEX, vals[k],
                                     &len[k], inputs[k], st);
    if (known[k] < 0)
      return wfx_code(st);
    if (!known[k] &&
        (len[k] = ary_shape_vector_length(ctx, k + 1, inputs[k], st)) == -2)
      return wfx_code(st);
    if (len[k] < 0)
      continue;
    if (n >= 0 && len[k] != n)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'begin', 'end' and 'strides' must have the same "
                      "length; '%s' has %" PRId64 ", an earlier one %" PRId64,
                      inputs[k], len[k], n);
    n = len[k];
  }
  if (s.rank < 0 || n < 0) {
    wfx_shape_set_unknown(&out);
  } else {
    if (ss_resolve(&s, n, known[0] ? vals[0] : NULL, known[1] ? vals[1] : NULL,
                   known[2] ? vals[2] : NULL, &m, &p, st))
      return wfx_code(st);
    out = p.out;
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int strided_slice_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  static const char *const inputs[] = {"begin", "end", "strides"};
  const wf_tensor *x, *t;
  wf_tensor *y;
  int64_t vals[3][ARY_MAX_INDEX], len[3], xstr[WF_MAX_RANK], sstr[WF_MAX_RANK],
      dstr[WF_MAX_RANK], base = 0;
  ss_masks m;
  ss_plan p;
  size_t es;
  wf_shape s, proc;

  if (wfx_kernel_input(ctx, 0, &x, &s, st) || ss_masks_get(NULL, ctx, &m, st))
    return wfx_code(st);
  for (int k = 0; k < 3; k++) {
    if (wfx_kernel_input(ctx, k + 1, &t, NULL, st) ||
        ary_read_index(t, 1, ARY_MAX_INDEX, vals[k], &len[k], inputs[k], st))
      return wfx_code(st);
    if (len[k] != len[0])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'begin', 'end' and 'strides' must have the same "
                      "length; '%s' has %" PRId64 ", 'begin' %" PRId64,
                      inputs[k], len[k], len[0]);
  }
  if (ss_resolve(&s, len[0], vals[0], vals[1], vals[2], &m, &p, st))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &p.out, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  /* Walk the input-rank "processing" shape; new and shrunk axes have size 1
   * and do not change the row-major order of what is copied. */
  wfx_shape_make(&proc, p.rank, p.size);
  wfx_shape_strides(&s, xstr);
  wfx_shape_strides(&proc, dstr);
  for (int i = 0; i < p.rank; i++) {
    base += p.begin[i] * xstr[i];
    sstr[i] = p.stride[i] * xstr[i];
  }
  es = wfx_dtype_size(wfx_dtype(x));
  ary_strided_copy(wfx_data(y), dstr,
                   (const char *)wfx_data(x) + base * (int64_t)es, sstr,
                   proc.dims, proc.rank, es);
  return 0;
}

static const wf_arg_def strided_slice_inputs[] = {
    WF_ARG_T("input", "T", "(D0, ..., DR-1)"),
    WF_ARG_T("begin", "Index", "(K,) first index per spec entry"),
    WF_ARG_T("end", "Index", "(K,) end (exclusive) per spec entry"),
    WF_ARG_T("strides", "Index", "(K,) non-zero step per spec entry"),
    WF_ARG_END};
static const wf_arg_def strided_slice_outputs[] = {
    WF_ARG_T("output", "T",
             "one dimension per kept input dimension and per new axis"),
    WF_ARG_END};
static const wf_attr_def strided_slice_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Index", "int32 or int64: type of begin, end, strides"),
    ARY_ATTR_INT("begin_mask", 0, "bit i: ignore begin[i], start at the edge"),
    ARY_ATTR_INT("end_mask", 0, "bit i: ignore end[i], run to the edge"),
    ARY_ATTR_INT("ellipsis_mask", 0,
                 "bit i: entry i is '...' (all dimensions not named)"),
    ARY_ATTR_INT("new_axis_mask", 0, "bit i: entry i inserts a size-1 axis"),
    ARY_ATTR_INT("shrink_axis_mask", 0,
                 "bit i: take element begin[i] and drop the dimension"),
    WF_ATTR_END};

const wf_op_def ary_strided_slice_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "StridedSlice",
    .inputs = strided_slice_inputs,
    .outputs = strided_slice_outputs,
    .attrs = strided_slice_attrs,
    .shape_fn = strided_slice_shape,
    .doc = "Python-style slicing, input[b0:e0:s0, ..., ...] as in "
           "TensorFlow: e.g. x[:, 1:-1:2, tf.newaxis, ..., 0] on (N, H, W, "
           "C) -> (N, ceil((H-2)/2), 1, W). Negative indices count from the "
           "end, out-of-range bounds are clamped, a shrunk index out of "
           "range is an error. A shrunk axis takes element begin whatever "
           "its stride's sign. The shape is known while building when begin, "
           "end and strides are Consts."};

const wf_kernel_def ary_strided_slice_kernel = WFX_CPU_REFERENCE(
    "StridedSlice", "T", WF_DTYPES_ALL, strided_slice_compute);

/* ---- SliceGrad ----------------------------------------------------------- */

/* 1 when a and b (ranks known) have the same rank and no known dim of one
 * differs from a known dim of the other. */
static int shapes_compatible(const wf_shape *a, const wf_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

/* Checks that a block of shape dy at begin (rank entries) fits in x (rank
 * known; dims of either may be unknown where nothing can be said). */
static int slice_grad_check(const wf_shape *x, const int64_t *begin,
                            const wf_shape *dy, wf_status *st) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];

  if (dy->rank >= 0 && dy->rank != x->rank)
    return wfx_fail(
        st, WF_INVALID_ARGUMENT, "dy %s and shape %s differ in rank",
        wfx_shape_str(dy, a, sizeof a), wfx_shape_str(x, b, sizeof b));
  for (int i = 0; i < x->rank && begin; i++) {
    int64_t size = dy->rank >= 0 ? dy->dims[i] : WF_UNKNOWN_DIM;

    if (begin[i] < 0 ||
        (x->dims[i] >= 0 && size >= 0 && begin[i] + size > x->dims[i]))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "a block of shape %s at begin[%d] = %" PRId64
                      " does not fit dimension %d of shape %s",
                      wfx_shape_str(dy, a, sizeof a), i, begin[i], i,
                      wfx_shape_str(x, b, sizeof b));
  }
  return 0;
}

static int slice_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  int64_t begin[ARY_MAX_INDEX], nb;
  wf_shape dy, out;
  int kb;

  if (wfx_shape_input(ctx, 2, NULL, &dy, st) ||
      ary_shape_from_input(ctx, 0, "shape", dy.rank, &out, st))
    return wfx_code(st);
  kb = ary_shape_index_value(ctx, 1, 1, ARY_MAX_INDEX, begin, &nb, "begin", st);
  if (kb < 0 ||
      (kb && out.rank >= 0 && slice_check_len(nb, out.rank, "begin", st)))
    return wfx_code(st);
  if (out.rank >= 0 && slice_grad_check(&out, kb ? begin : NULL, &dy, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int slice_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *shape, *bt, *dy;
  wf_tensor *dx;
  int64_t begin[ARY_MAX_INDEX], nb, xstr[WF_MAX_RANK], ystr[WF_MAX_RANK],
      base = 0;
  size_t es;
  wf_shape xs, dys;

  if (wfx_kernel_input(ctx, 0, &shape, NULL, st) ||
      wfx_kernel_input(ctx, 1, &bt, NULL, st) ||
      wfx_kernel_input(ctx, 2, &dy, &dys, st) ||
      ary_read_shape(shape, "shape", &xs, st) ||
      ary_read_index(bt, 1, ARY_MAX_INDEX, begin, &nb, "begin", st) ||
      slice_check_len(nb, xs.rank, "begin", st) ||
      slice_grad_check(&xs, begin, &dys, st))
    return wfx_code(st);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  memset(wfx_data(dx), 0, wfx_host->tensor_nbytes(dx));
  if (wfx_count(dy) == 0)
    return 0;
  es = wfx_dtype_size(wfx_dtype(dy));
  wfx_shape_strides(&xs, xstr);
  wfx_shape_strides(&dys, ystr);
  for (int i = 0; i < xs.rank; i++)
    base += begin[i] * xstr[i];
  ary_strided_copy((char *)wfx_data(dx) + base * (int64_t)es, xstr,
                   wfx_data(dy), ystr, dys.dims, dys.rank, es);
  return 0;
}

static const wf_arg_def slice_grad_inputs[] = {
    WF_ARG_T("shape", "Tshape", "(R,) the shape of Slice's input"),
    WF_ARG_T("begin", "Index", "(R,) Slice's begin"),
    WF_ARG_T("dy", "T", "(S0, ..., SR-1) the gradient of Slice's output"),
    WF_ARG_END};
static const wf_arg_def slice_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(shape[0], ..., shape[R-1])"), WF_ARG_END};
static const wf_attr_def slice_grad_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tshape", "int32 or int64: the type of 'shape'"),
    ARY_ATTR_INDEX("Index", "int32 or int64: the type of 'begin'"),
    WF_ATTR_END};

const wf_op_def ary_slice_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "SliceGrad",
    .inputs = slice_grad_inputs,
    .outputs = slice_grad_outputs,
    .attrs = slice_grad_attrs,
    .shape_fn = slice_grad_shape,
    .doc = "The gradient of Slice: zeros of 'shape' with dy written at "
           "'begin' (the block Slice read). The block must fit. The shape is "
           "known while building when 'shape' is a Const."};

const wf_kernel_def ary_slice_grad_kernel =
    WFX_CPU_REFERENCE("SliceGrad", "T", WF_DTYPES_ALL, slice_grad_compute);

/* ---- StridedSliceGrad ---------------------------------------------------- */

static int strided_slice_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  static const char *const inputs[] = {"begin", "end", "strides"};
  int64_t vals[3][ARY_MAX_INDEX], len[3], n = -1;
  int known[3];
  ss_masks m;
  ss_plan p;
  wf_shape dy, out;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX], c[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 4, NULL, &dy, st) ||
      ary_shape_from_input(ctx, 0, "shape", -1, &out, st) ||
      ss_masks_get(ctx, NULL, &m, st))
    return wfx_code(st);
  for (int k = 0; k < 3; k++) {
    known[k] = ary_shape_index_value(ctx, k + 1, 1, ARY_MAX_INDEX, vals[k],
                                     &len[k], inputs[k], st);
    if (known[k] < 0)
      return wfx_code(st);
    if (!known[k] &&
        (len[k] = ary_shape_vector_length(ctx, k + 1, inputs[k], st)) == -2)
      return wfx_code(st);
    if (len[k] < 0)
      continue;
    if (n >= 0 && len[k] != n)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'begin', 'end' and 'strides' must have the same "
                      "length; '%s' has %" PRId64 ", an earlier one %" PRId64,
                      inputs[k], len[k], n);
    n = len[k];
  }
  /* With the whole spec known, dy must be what StridedSlice makes. */
  if (out.rank >= 0 && n >= 0 && dy.rank >= 0) {
    if (ss_resolve(&out, n, known[0] ? vals[0] : NULL,
                   known[1] ? vals[1] : NULL, known[2] ? vals[2] : NULL, &m, &p,
                   st))
      return wfx_code(st);
    if (!shapes_compatible(&p.out, &dy))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dy has shape %s but the slice of shape %s has %s",
                      wfx_shape_str(&dy, a, sizeof a),
                      wfx_shape_str(&out, b, sizeof b),
                      wfx_shape_str(&p.out, c, sizeof c));
  }
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

static int strided_slice_grad_compute(wf_kernel_ctx *ctx, void *state,
                                      wf_status *st) {
  static const char *const inputs[] = {"begin", "end", "strides"};
  const wf_tensor *shape, *dy, *t;
  wf_tensor *dx;
  int64_t vals[3][ARY_MAX_INDEX], len[3], xstr[WF_MAX_RANK], dstr[WF_MAX_RANK],
      sstr[WF_MAX_RANK], base = 0;
  ss_masks m;
  ss_plan p;
  size_t es;
  wf_shape xs, dys, proc;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX], c[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &shape, NULL, st) ||
      wfx_kernel_input(ctx, 4, &dy, &dys, st) ||
      ary_read_shape(shape, "shape", &xs, st) ||
      ss_masks_get(NULL, ctx, &m, st))
    return wfx_code(st);
  for (int k = 0; k < 3; k++) {
    if (wfx_kernel_input(ctx, k + 1, &t, NULL, st) ||
        ary_read_index(t, 1, ARY_MAX_INDEX, vals[k], &len[k], inputs[k], st))
      return wfx_code(st);
    if (len[k] != len[0])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "'begin', 'end' and 'strides' must have the same "
                      "length; '%s' has %" PRId64 ", 'begin' %" PRId64,
                      inputs[k], len[k], len[0]);
  }
  if (ss_resolve(&xs, len[0], vals[0], vals[1], vals[2], &m, &p, st))
    return wfx_code(st);
  if (!shapes_compatible(&p.out, &dys))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "dy has shape %s but the slice of shape %s has %s",
                    wfx_shape_str(&dys, a, sizeof a),
                    wfx_shape_str(&xs, b, sizeof b),
                    wfx_shape_str(&p.out, c, sizeof c));
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  memset(wfx_data(dx), 0, wfx_host->tensor_nbytes(dx));
  if (wfx_count(dy) == 0)
    return 0;
  /* StridedSlice's copy run backwards: dy, walked in the input-rank
   * "processing" shape (new and shrunk axes have size 1 and do not change
   * its row-major order), lands on the sliced elements of dx. */
  wfx_shape_make(&proc, p.rank, p.size);
  wfx_shape_strides(&xs, xstr);
  wfx_shape_strides(&proc, sstr);
  for (int i = 0; i < p.rank; i++) {
    base += p.begin[i] * xstr[i];
    dstr[i] = p.stride[i] * xstr[i];
  }
  es = wfx_dtype_size(wfx_dtype(dy));
  ary_strided_copy((char *)wfx_data(dx) + base * (int64_t)es, dstr,
                   wfx_data(dy), sstr, proc.dims, proc.rank, es);
  return 0;
}

static const wf_arg_def strided_slice_grad_inputs[] = {
    WF_ARG_T("shape", "Tshape", "(R,) the shape of StridedSlice's input"),
    WF_ARG_T("begin", "Index", "(K,) StridedSlice's begin"),
    WF_ARG_T("end", "Index", "(K,) StridedSlice's end"),
    WF_ARG_T("strides", "Index", "(K,) StridedSlice's strides"),
    WF_ARG_T("dy", "T", "the shape of StridedSlice's output"),
    WF_ARG_END};
static const wf_arg_def strided_slice_grad_outputs[] = {
    WF_ARG_T("dx", "T", "(shape[0], ..., shape[R-1])"), WF_ARG_END};
static const wf_attr_def strided_slice_grad_attrs[] = {
    ARY_ATTR_TYPE("T", WF_DTYPES_ALL, "element type"),
    ARY_ATTR_INDEX("Tshape", "int32 or int64: the type of 'shape'"),
    ARY_ATTR_INDEX("Index", "int32 or int64: type of begin, end, strides"),
    ARY_ATTR_INT("begin_mask", 0, "as StridedSlice's"),
    ARY_ATTR_INT("end_mask", 0, "as StridedSlice's"),
    ARY_ATTR_INT("ellipsis_mask", 0, "as StridedSlice's"),
    ARY_ATTR_INT("new_axis_mask", 0, "as StridedSlice's"),
    ARY_ATTR_INT("shrink_axis_mask", 0, "as StridedSlice's"),
    WF_ATTR_END};

const wf_op_def ary_strided_slice_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "StridedSliceGrad",
    .inputs = strided_slice_grad_inputs,
    .outputs = strided_slice_grad_outputs,
    .attrs = strided_slice_grad_attrs,
    .shape_fn = strided_slice_grad_shape,
    .doc = "The gradient of StridedSlice: zeros of 'shape' with each element "
           "of dy written where StridedSlice (same begin, end, strides and "
           "masks) read it. The slice's elements are distinct, so nothing "
           "adds up. The shape is known while building when 'shape' is a "
           "Const."};

const wf_kernel_def ary_strided_slice_grad_kernel = WFX_CPU_REFERENCE(
    "StridedSliceGrad", "T", WF_DTYPES_ALL, strided_slice_grad_compute);
