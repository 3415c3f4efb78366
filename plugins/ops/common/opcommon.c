/* plugins/ops/common/opcommon.c — the shared op-plugin helpers declared in
 * opcommon.h: broadcasting, the broadcast walker, axes, attribute reads and
 * the node builders of gradient functions. Everything goes through the
 * host table; nothing here calls libweft. */
#include <config.h>

#include "opcommon.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const wf_host *host_table;

void opc_set_host(const wf_host *host) {
  assert(host);
  host_table = host;
}

const wf_host *opc_host(void) {
  assert(host_table && "opc_set_host was not called in the plugin's init");
  return host_table;
}

int opc_fail(wf_status *st, int code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;

  assert(code != WF_OK);
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  opc_host()->status_set(st, code, "%s", buf);
  return code;
}

/* ---- dtypes ------------------------------------------------------------ */

size_t opc_dtype_size(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32: return 4;
  case WF_FLOAT64: return 8;
  case WF_FLOAT16: return 2;
  case WF_BFLOAT16: return 2;
  case WF_INT8: return 1;
  case WF_UINT8: return 1;
  case WF_INT32: return 4;
  case WF_INT64: return 8;
  case WF_BOOL: return 1;
  case WF_RESOURCE: return sizeof(void *);
  default: return 0;
  }
}

const char *opc_dtype_name(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32: return "float32";
  case WF_FLOAT64: return "float64";
  case WF_FLOAT16: return "float16";
  case WF_BFLOAT16: return "bfloat16";
  case WF_INT8: return "int8";
  case WF_UINT8: return "uint8";
  case WF_INT32: return "int32";
  case WF_INT64: return "int64";
  case WF_BOOL: return "bool";
  case WF_RESOURCE: return "resource";
  default: return "invalid";
  }
}

int opc_dtype_is_float(int32_t dtype) {
  return dtype == WF_FLOAT32 || dtype == WF_FLOAT64 || dtype == WF_FLOAT16 ||
         dtype == WF_BFLOAT16;
}

/* ---- shapes ------------------------------------------------------------ */

void opc_shape_make(wf_shape *s, int rank, const int64_t *dims) {
  assert(rank >= 0 && rank <= WF_MAX_RANK);
  memset(s, 0, sizeof *s);
  s->rank = rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = dims[i];
}

void opc_shape_set_unknown(wf_shape *s) {
  memset(s, 0, sizeof *s);
  s->rank = WF_UNKNOWN_RANK;
}

void opc_shape_set_scalar(wf_shape *s) { memset(s, 0, sizeof *s); }

int opc_shape_is_known(const wf_shape *s) {
  if (s->rank < 0)
    return 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0)
      return 0;
  return 1;
}

int64_t opc_shape_count(const wf_shape *s) {
  int64_t n = 1;

  if (!opc_shape_is_known(s))
    return -1;
  for (int i = 0; i < s->rank; i++)
    n *= s->dims[i];
  return n;
}

char *opc_shape_str(const wf_shape *s, char *buf, size_t len) {
  size_t used = 0;

  assert(buf && len > 0);
  buf[0] = '\0';
  if (s->rank < 0) {
    snprintf(buf, len, "<unknown>");
    return buf;
  }
#define PUT(...)                                                               \
  do {                                                                         \
    if (used < len) {                                                          \
      int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                  \
      used += n_ > 0 ? (size_t)n_ : 0;                                         \
    }                                                                          \
  } while (0)
  PUT("(");
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0)
      PUT("%s?", i ? ", " : "");
    else
      PUT("%s%" PRId64, i ? ", " : "", s->dims[i]);
  }
  PUT(")");
#undef PUT
  return buf;
}

int opc_broadcast_shapes(const wf_shape *a, const wf_shape *b, wf_shape *out,
                         const char *what, wf_status *st) {
  wf_shape r;
  int rank;

  if (a->rank < 0 || b->rank < 0) {
    opc_shape_set_unknown(out);
    return 0;
  }
  rank = a->rank > b->rank ? a->rank : b->rank;
  opc_shape_set_scalar(&r);
  r.rank = rank;
  for (int i = 0; i < rank; i++) {
    /* i counts from the last dimension. */
    int ia = a->rank - 1 - i, ib = b->rank - 1 - i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;

    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0)
      d = db;
    else if (db < 0)
      d = da;
    else {
      char sa[OPC_SHAPE_STR_MAX], sb[OPC_SHAPE_STR_MAX];
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "%s%sshapes %s and %s cannot be broadcast together: "
                      "dimension %d from the end is %" PRId64 " in the first "
                      "and %" PRId64 " in the second (each pair must be "
                      "equal or one of them 1)",
                      what ? what : "", what ? ": " : "",
                      opc_shape_str(a, sa, sizeof sa),
                      opc_shape_str(b, sb, sizeof sb), i + 1, da, db);
    }
    r.dims[rank - 1 - i] = d;
  }
  *out = r;
  return 0;
}

int opc_shape_merge(const wf_shape *a, const wf_shape *b, wf_shape *out,
                    const char *what, wf_status *st) {
  wf_shape r;
  char sa[OPC_SHAPE_STR_MAX], sb[OPC_SHAPE_STR_MAX];

  if (a->rank < 0) {
    *out = *b;
    return 0;
  }
  if (b->rank < 0) {
    *out = *a;
    return 0;
  }
  if (a->rank != b->rank)
    goto conflict;
  r = *a;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] < 0)
      r.dims[i] = b->dims[i];
    else if (b->dims[i] >= 0 && b->dims[i] != a->dims[i])
      goto conflict;
  }
  *out = r;
  return 0;

conflict:
  return opc_fail(st, WF_INVALID_ARGUMENT,
                  "%s%sshapes %s and %s must be the same", what ? what : "",
                  what ? ": " : "", opc_shape_str(a, sa, sizeof sa),
                  opc_shape_str(b, sb, sizeof sb));
}

void opc_shape_strides(const wf_shape *s, int64_t *strides) {
  int64_t acc = 1;

  assert(s->rank >= 0);
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= s->dims[i];
  }
}

/* ---- broadcast walker -------------------------------------------------- */

void opc_bcast_init(opc_bcast *b, const wf_shape *out, int n,
                    const wf_shape *in) {
  int64_t dims[WF_MAX_RANK], strides[OPC_BCAST_MAX][WF_MAX_RANK];
  int rank = 0;

  assert(n >= 1 && n <= OPC_BCAST_MAX);
  assert(opc_shape_is_known(out));
  memset(b, 0, sizeof *b);
  b->n = n;
  b->count = opc_shape_count(out);

  /* Full-rank strides per operand, right-aligned; size-1 output dims are
   * dropped since they move nothing. */
  for (int i = 0; i < out->rank; i++) {
    if (out->dims[i] == 1)
      continue;
    dims[rank] = out->dims[i];
    for (int k = 0; k < n; k++) {
      int64_t ist[WF_MAX_RANK];
      int j = i - (out->rank - in[k].rank);

      assert(opc_shape_is_known(&in[k]) && in[k].rank <= out->rank);
      opc_shape_strides(&in[k], ist);
      if (j < 0 || in[k].dims[j] == 1)
        strides[k][rank] = 0;
      else {
        assert(in[k].dims[j] == out->dims[i]);
        strides[k][rank] = ist[j];
      }
    }
    rank++;
  }
  if (rank == 0) {
    dims[0] = 1;
    for (int k = 0; k < n; k++)
      strides[k][0] = 0;
    rank = 1;
  }

  /* Merge dimension i into i + 1 where every operand is contiguous across
   * the pair (which covers "broadcast along both"). */
  b->rank = 0;
  for (int i = 0; i < rank; i++) {
    int r = b->rank;
    int merge = r > 0;

    for (int k = 0; merge && k < n; k++)
      merge = b->strides[k][r - 1] == strides[k][i] * dims[i];
    if (merge) {
      b->dims[r - 1] *= dims[i];
      for (int k = 0; k < n; k++)
        b->strides[k][r - 1] = strides[k][i];
    } else {
      b->dims[r] = dims[i];
      for (int k = 0; k < n; k++)
        b->strides[k][r] = strides[k][i];
      b->rank++;
    }
  }

  b->inner = b->dims[b->rank - 1];
  b->rows = b->count > 0 ? b->count / b->inner : 0;
  for (int k = 0; k < n; k++) {
    b->step[k] = b->strides[k][b->rank - 1];
    assert(b->step[k] == 0 || b->step[k] == 1);
  }
}

void opc_bcast_next(opc_bcast *b) {
  for (int d = b->rank - 2; d >= 0; d--) {
    b->pos[d]++;
    for (int k = 0; k < b->n; k++)
      b->off[k] += b->strides[k][d];
    if (b->pos[d] < b->dims[d])
      return;
    for (int k = 0; k < b->n; k++)
      b->off[k] -= b->strides[k][d] * b->dims[d];
    b->pos[d] = 0;
  }
}

/* ---- axes -------------------------------------------------------------- */

int opc_axis_normalize(int64_t axis, int rank, int *out, const char *what,
                       wf_status *st) {
  assert(rank >= 0);
  if (axis < -(int64_t)rank || axis >= rank) {
    if (rank == 0)
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "%s%saxis %" PRId64 " is out of range: a scalar has no "
                      "axes",
                      what ? what : "", what ? ": " : "", axis);
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "%s%saxis %" PRId64 " is out of range for rank %d "
                    "(valid: %d to %d)",
                    what ? what : "", what ? ": " : "", axis, rank, -rank,
                    rank - 1);
  }
  *out = (int)(axis < 0 ? axis + rank : axis);
  return 0;
}

int opc_axes_mask(const int64_t *axes, int64_t n, int rank, uint32_t *mask,
                  const char *what, wf_status *st) {
  uint32_t m = 0;

  for (int64_t i = 0; i < n; i++) {
    int a;

    if (opc_axis_normalize(axes[i], rank, &a, what, st))
      return opc_host()->status_code(st);
    if (m & (UINT32_C(1) << a))
      return opc_fail(st, WF_INVALID_ARGUMENT,
                      "%s%saxis %" PRId64 " is given twice (as axis %d of "
                      "rank %d)",
                      what ? what : "", what ? ": " : "", axes[i], a, rank);
    m |= UINT32_C(1) << a;
  }
  *mask = m;
  return 0;
}

/* ---- attributes -------------------------------------------------------- */

static const char *attr_type_name(int32_t type) {
  static const char *const names[] = {"none",  "int",   "float",
                                      "bool",  "string", "dtype",
                                      "shape", "tensor"};
  static const char *const lists[] = {"list(none)",  "list(int)",
                                      "list(float)", "list(bool)",
                                      "list(string)", "list(dtype)",
                                      "list(shape)", "list(tensor)"};
  int32_t base = WF_ATTR_BASE(type);

  if (base < 0 || base > WF_ATTR_TENSOR)
    return "unknown";
  return WF_ATTR_IS_LIST(type) ? lists[base] : names[base];
}

/* Checks a looked-up attribute: found (rc 0) and of type `type`. */
static int attr_check(int rc, const wf_attr_value *v, int32_t type,
                      const char *name, wf_status *st) {
  if (rc != 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "attribute '%s' (%s) is missing", name,
                    attr_type_name(type));
  if (v->type != type)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "attribute '%s' has type %s; expected %s", name,
                    attr_type_name(v->type), attr_type_name(type));
  return 0;
}

#define SHAPE_ATTR(ctx, name, type, v)                                         \
  attr_check(opc_host()->shape_attr((ctx), (name), &(v)), &(v), (type),        \
             (name), st)
#define KERNEL_ATTR(ctx, name, type, v)                                        \
  attr_check(opc_host()->kernel_attr((ctx), (name), &(v)), &(v), (type),       \
             (name), st)

int opc_shape_attr_int(const wf_shape_ctx *ctx, const char *name,
                       int64_t *out, wf_status *st) {
  wf_attr_value v;
  int rc = SHAPE_ATTR(ctx, name, WF_ATTR_INT, v);
  if (rc == 0)
    *out = v.u.i;
  return rc;
}

int opc_shape_attr_float(const wf_shape_ctx *ctx, const char *name,
                         double *out, wf_status *st) {
  wf_attr_value v;
  int rc = SHAPE_ATTR(ctx, name, WF_ATTR_FLOAT, v);
  if (rc == 0)
    *out = v.u.f;
  return rc;
}

int opc_shape_attr_bool(const wf_shape_ctx *ctx, const char *name, int *out,
                        wf_status *st) {
  wf_attr_value v;
  int rc = SHAPE_ATTR(ctx, name, WF_ATTR_BOOL, v);
  if (rc == 0)
    *out = v.u.b != 0;
  return rc;
}

int opc_shape_attr_dtype(const wf_shape_ctx *ctx, const char *name,
                         int32_t *out, wf_status *st) {
  wf_attr_value v;
  int rc = SHAPE_ATTR(ctx, name, WF_ATTR_DTYPE, v);
  if (rc == 0)
    *out = v.u.dtype;
  return rc;
}

int opc_shape_attr_ints(const wf_shape_ctx *ctx, const char *name,
                        const int64_t **out, int64_t *count, wf_status *st) {
  wf_attr_value v;
  int rc = SHAPE_ATTR(ctx, name, WF_ATTR_LIST | WF_ATTR_INT, v);
  if (rc == 0) {
    *out = v.u.ints;
    *count = v.count;
  }
  return rc;
}

int opc_kernel_attr_int(const wf_kernel_ctx *ctx, const char *name,
                        int64_t *out, wf_status *st) {
  wf_attr_value v;
  int rc = KERNEL_ATTR(ctx, name, WF_ATTR_INT, v);
  if (rc == 0)
    *out = v.u.i;
  return rc;
}

int opc_kernel_attr_float(const wf_kernel_ctx *ctx, const char *name,
                          double *out, wf_status *st) {
  wf_attr_value v;
  int rc = KERNEL_ATTR(ctx, name, WF_ATTR_FLOAT, v);
  if (rc == 0)
    *out = v.u.f;
  return rc;
}

int opc_kernel_attr_bool(const wf_kernel_ctx *ctx, const char *name, int *out,
                         wf_status *st) {
  wf_attr_value v;
  int rc = KERNEL_ATTR(ctx, name, WF_ATTR_BOOL, v);
  if (rc == 0)
    *out = v.u.b != 0;
  return rc;
}

int opc_kernel_attr_dtype(const wf_kernel_ctx *ctx, const char *name,
                          int32_t *out, wf_status *st) {
  wf_attr_value v;
  int rc = KERNEL_ATTR(ctx, name, WF_ATTR_DTYPE, v);
  if (rc == 0)
    *out = v.u.dtype;
  return rc;
}

int opc_kernel_attr_ints(const wf_kernel_ctx *ctx, const char *name,
                         const int64_t **out, int64_t *count, wf_status *st) {
  wf_attr_value v;
  int rc = KERNEL_ATTR(ctx, name, WF_ATTR_LIST | WF_ATTR_INT, v);
  if (rc == 0) {
    *out = v.u.ints;
    *count = v.count;
  }
  return rc;
}

/* ---- inputs and names -------------------------------------------------- */

int opc_shape_input(const wf_shape_ctx *ctx, int32_t i, int32_t *dtype,
                    wf_shape *shape, wf_status *st) {
  const wf_host *h = opc_host();
  int32_t dt;
  wf_shape s;

  if (h->shape_input(ctx, i, &dt, &s) != 0)
    return opc_fail(st, WF_INTERNAL,
                    "shape inference asked for input %d, but the node has %d",
                    (int)i, (int)h->shape_num_inputs(ctx));
  if (dtype)
    *dtype = dt;
  if (shape)
    *shape = s;
  return 0;
}

int opc_kernel_input(const wf_kernel_ctx *ctx, int32_t i,
                     const wf_tensor **t, wf_shape *shape, wf_status *st) {
  const wf_host *h = opc_host();
  const wf_tensor *x = NULL;

  if (i >= 0 && i < h->kernel_num_inputs(ctx))
    x = h->kernel_input(ctx, i);
  if (!x)
    return opc_fail(st, WF_INTERNAL,
                    "kernel input %d is missing (the node has %d)", (int)i,
                    (int)h->kernel_num_inputs(ctx));
  *t = x;
  if (shape)
    h->tensor_shape(x, shape);
  return 0;
}

static char *what_str(const char *node, const char *op, char *buf,
                      size_t len) {
  if (op)
    snprintf(buf, len, "node '%s' (%s)", node ? node : "?", op);
  else
    snprintf(buf, len, "node '%s'", node ? node : "?");
  return buf;
}

char *opc_what_shape(const wf_shape_ctx *ctx, const char *op, char *buf,
                     size_t len) {
  return what_str(opc_host()->shape_node_name(ctx), op, buf, len);
}

char *opc_what_kernel(const wf_kernel_ctx *ctx, const char *op, char *buf,
                      size_t len) {
  return what_str(opc_host()->kernel_node_name(ctx), op, buf, len);
}

/* ---- gradient functions ------------------------------------------------ */

wf_output opc_grad_node(wf_grad_ctx *ctx, const char *op, const wf_output *in,
                        int n, const wf_attr_item *attrs, int nattrs,
                        wf_status *st) {
  const wf_host *h = opc_host();
  wf_output out = {NULL, 0};

  for (int i = 0; i < n; i++)
    if (!in[i].node) {
      /* an earlier builder failed and st says why; else a caller bug */
      if (h->status_code(st) == WF_OK)
        opc_fail(st, WF_INTERNAL,
                 "gradient of node '%s': input %d of the %s node to add is "
                 "missing",
                 h->grad_node_name(ctx), i, op);
      return out;
    }
  out.node = h->grad_add_node(ctx, op, in, n, attrs, nattrs, st);
  return out;
}

wf_output opc_grad_op1(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_status *st) {
  return opc_grad_node(ctx, op, &a, 1, NULL, 0, st);
}

wf_output opc_grad_op2(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_output b, wf_status *st) {
  wf_output in[2] = {a, b};

  return opc_grad_node(ctx, op, in, 2, NULL, 0, st);
}

wf_output opc_grad_op3(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_output b, wf_output c, wf_status *st) {
  wf_output in[3] = {a, b, c};

  return opc_grad_node(ctx, op, in, 3, NULL, 0, st);
}

int opc_grad_same_known_shape(const wf_grad_ctx *ctx, wf_output a,
                              wf_output b) {
  const wf_host *h = opc_host();
  wf_shape sa, sb;
  int32_t dt;

  if (!a.node || !b.node || h->grad_tensor_info(ctx, a, &dt, &sa) != 0 ||
      h->grad_tensor_info(ctx, b, &dt, &sb) != 0 || !opc_shape_is_known(&sa) ||
      !opc_shape_is_known(&sb) || sa.rank != sb.rank)
    return 0;
  for (int i = 0; i < sa.rank; i++)
    if (sa.dims[i] != sb.dims[i])
      return 0;
  return 1;
}

wf_output opc_grad_sum_to(wf_grad_ctx *ctx, wf_output g, wf_output like,
                          wf_status *st) {
  if (g.node && opc_grad_same_known_shape(ctx, g, like))
    return g;
  return opc_grad_op2(ctx, "SumToLike", g, like, st);
}

void opc_grad_set(wf_grad_ctx *ctx, int32_t i, wf_output g) {
  if (g.node)
    opc_host()->grad_set_input_grad(ctx, i, g);
}

int opc_grad_done(wf_status *st) { return opc_host()->status_code(st); }

int opc_grad_attr(const wf_grad_ctx *ctx, const char *name, int32_t type,
                  wf_attr_value *out, wf_status *st) {
  const wf_host *h = opc_host();

  if (h->grad_attr(ctx, name, out) != 0)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "gradient of node '%s': attribute '%s' (%s) is missing",
                    h->grad_node_name(ctx), name, attr_type_name(type));
  if (out->type != type)
    return opc_fail(st, WF_INVALID_ARGUMENT,
                    "gradient of node '%s': attribute '%s' has type %s; "
                    "expected %s",
                    h->grad_node_name(ctx), name, attr_type_name(out->type),
                    attr_type_name(type));
  return 0;
}
