/* plugins/ops/math/matmul.c — shape inference and reference CPU kernels of
 * MatMul, BatchMatMul (batch dimensions broadcast as in NumPy's matmul) and
 * _FusedMatMul (MatMul, then the epilogue of plugins/numerics/epilogue.c).
 * Plain C with an i-k-j loop over row-major operands (transposed operands
 * are copied into that layout first); no blocking, no BLAS: the fast
 * backends register higher-priority kernels. */
#include <config.h>

#include "math_ops.h"
#include "epilogue.h"

#include <string.h>

/* Row count and column count of operand s's last two dims, swapped when
 * transposed; -1 for unknown. */
static void mat_dims(const wf_shape *s, int transposed, int64_t *rows,
                     int64_t *cols) {
  int64_t r = s->rank >= 2 ? s->dims[s->rank - 2] : -1;
  int64_t c = s->rank >= 2 ? s->dims[s->rank - 1] : -1;

  *rows = transposed ? c : r;
  *cols = transposed ? r : c;
}

/* Checks the inner dimensions k1 (a's columns) and k2 (b's rows). */
static int check_inner(const wf_shape *a, const wf_shape *b, int64_t k1,
                       int64_t k2, const char *ta, const char *tb,
                       wf_status *st) {
  char sa[WFX_SHAPE_STR_MAX], sb[WFX_SHAPE_STR_MAX];

  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "inner dimensions differ: %s%s has %lld columns but "
                    "%s%s has %lld rows",
                    wfx_shape_str(a, sa, sizeof sa), ta, (long long)k1,
                    wfx_shape_str(b, sb, sizeof sb), tb, (long long)k2);
  return 0;
}

int math_shape_matmul(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape a, b, out;
  int ta, tb;
  int64_t m, k1, k2, n;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 0, NULL, &a, st) ||
      wfx_shape_input(ctx, 1, NULL, &b, st) ||
      wfx_shape_attr_bool(ctx, "transpose_a", &ta, st) ||
      wfx_shape_attr_bool(ctx, "transpose_b", &tb, st))
    return wfx_code(st);
  for (int i = 0; i < 2; i++) {
    const wf_shape *s = i ? &b : &a;
    if (s->rank >= 0 && s->rank != 2)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input %s has shape %s; MatMul takes matrices "
                      "(rank 2)",
                      i ? "b" : "a", wfx_shape_str(s, buf, sizeof buf));
  }
  mat_dims(&a, ta, &m, &k1);
  mat_dims(&b, tb, &k2, &n);
  if (check_inner(&a, &b, k1, k2, ta ? " transposed" : "",
                  tb ? " transposed" : "", st))
    return wfx_code(st);
  wfx_shape_make(&out, 2, (int64_t[]){m, n});
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* out = batch dims of x and y broadcast, then (M, N). */
static int batch_shape(const wf_shape *x, const wf_shape *y, int adj_x,
                       int adj_y, wf_shape *out, wf_status *st) {
  wf_shape bx, by, bo;
  int64_t m, k1, k2, n;
  char buf[WFX_SHAPE_STR_MAX];

  for (int i = 0; i < 2; i++) {
    const wf_shape *s = i ? y : x;
    if (s->rank >= 0 && s->rank < 2)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input %s has shape %s; BatchMatMul needs rank 2 "
                      "or more",
                      i ? "y" : "x", wfx_shape_str(s, buf, sizeof buf));
  }
  mat_dims(x, adj_x, &m, &k1);
  mat_dims(y, adj_y, &k2, &n);
  if (check_inner(x, y, k1, k2, adj_x ? " adjoint" : "",
                  adj_y ? " adjoint" : "", st))
    return wfx_code(st);
  if (x->rank < 0 || y->rank < 0) {
    wfx_shape_set_unknown(out);
    return 0;
  }
  wfx_shape_make(&bx, x->rank - 2, x->dims);
  wfx_shape_make(&by, y->rank - 2, y->dims);
  if (wfx_broadcast_shapes(&bx, &by, &bo, "batch dimensions", st))
    return wfx_code(st);
  bo.dims[bo.rank++] = m;
  bo.dims[bo.rank++] = n;
  *out = bo;
  return 0;
}

int math_shape_batch_matmul(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape x, y, out;
  int adj_x, adj_y;

  if (wfx_shape_input(ctx, 0, NULL, &x, st) ||
      wfx_shape_input(ctx, 1, NULL, &y, st) ||
      wfx_shape_attr_bool(ctx, "adj_x", &adj_x, st) ||
      wfx_shape_attr_bool(ctx, "adj_y", &adj_y, st) ||
      batch_shape(&x, &y, adj_x, adj_y, &out, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* ---- kernels ----------------------------------------------------------- */

/* Accumulators: float32 and float64 in double; integers in the unsigned
 * type, so that overflow wraps. */
#define ACC_(sfx) ACC_##sfx
#define ACC_f32 double
#define ACC_f64 double
#define ACC_i8 uint8_t
#define ACC_u8 uint8_t
#define ACC_i32 uint32_t
#define ACC_i64 uint64_t

/* c(M, N) = a(M, K) b(K, N), all row-major; row holds N accumulators. */
typedef void mm_fn(void *c, const void *a, const void *b, int64_t m,
                   int64_t k, int64_t n, void *row);

#define MM(T, sfx, dt, u)                                                      \
  static void mm_##sfx(void *c_, const void *a_, const void *b_, int64_t m,    \
                       int64_t k, int64_t n, void *row_) {                     \
    T *c = c_;                                                                 \
    const T *a = a_, *b = b_;                                                  \
    ACC_(sfx) *row = row_;                                                     \
    for (int64_t i = 0; i < m; i++) {                                          \
      for (int64_t j = 0; j < n; j++)                                          \
        row[j] = 0;                                                            \
      for (int64_t p = 0; p < k; p++) {                                        \
        ACC_(sfx) av = (ACC_(sfx))a[i * k + p];                                \
        const T *br = b + p * n;                                               \
        for (int64_t j = 0; j < n; j++)                                        \
          row[j] = (ACC_(sfx))(row[j] + av * (ACC_(sfx))br[j]);                \
      }                                                                        \
      for (int64_t j = 0; j < n; j++)                                          \
        c[i * n + j] = (T)row[j];                                              \
    }                                                                          \
  }
WFX_TYPES_NUMBER(MM, _)
static mm_fn *const mm_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, mm)};

/* dst(C, R) = src(R, C) transposed, elements of sz bytes. */
static void transpose(void *dst, const void *src, int64_t r, int64_t c,
                      size_t sz) {
  const char *s = src;
  char *d = dst;

  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      memcpy(d + (size_t)(j * r + i) * sz, s + (size_t)(i * c + j) * sz, sz);
}

/* Multiplies `count` pairs of matrices: pair i is x at matrix index xi[i]
 * and y at yi[i] (element offsets are index * matrix size), into output
 * matrix i. Matrices are stored (M, K) / (K, M) when tx, and (K, N) /
 * (N, K) when ty. */
typedef struct mm_job {
  int32_t dtype;
  int64_t m, k, n;
  int tx, ty;
  const char *x, *y;
  char *out;
  /* scratch: transposed x, transposed y, one accumulator row */
  char *xt, *yt, *row;
} mm_job;

static void mm_one(const mm_job *j, int64_t xi, int64_t yi, int64_t oi) {
  size_t sz = wfx_dtype_size(j->dtype);
  const char *a = j->x + (size_t)(xi * j->m * j->k) * sz;
  const char *b = j->y + (size_t)(yi * j->k * j->n) * sz;

  if (j->tx) {
    transpose(j->xt, a, j->k, j->m, sz);
    a = j->xt;
  }
  if (j->ty) {
    transpose(j->yt, b, j->n, j->k, sz);
    b = j->yt;
  }
  mm_table[j->dtype](j->out + (size_t)(oi * j->m * j->n) * sz, a, b, j->m,
                     j->k, j->n, j->row);
}

/* Allocates j's scratch (freed with h->free(j->xt)). */
static int mm_scratch(mm_job *j, wf_status *st) {
  size_t sz = wfx_dtype_size(j->dtype);
  size_t xb = j->tx ? (size_t)(j->m * j->k) * sz : 0;
  size_t yb = j->ty ? (size_t)(j->k * j->n) * sz : 0;
  size_t rb = (size_t)j->n * sizeof(double);
  /* each part rounded up to 64 bytes to keep every part aligned */
  size_t xr = (xb + 63) & ~(size_t)63, yr = (yb + 63) & ~(size_t)63;

  j->xt = wfx_host->alloc(xr + yr + rb + 64, 0);
  if (!j->xt)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %zu bytes of scratch", xr + yr + rb);
  j->yt = j->xt + xr;
  j->row = j->yt + yr;
  return 0;
}

/* MatMul of the node's inputs 0 and 1 into output 0 (*outp). */
static int matmul_run(wf_kernel_ctx *ctx, wf_tensor **outp, wf_status *st) {
  const wf_tensor *x, *y;
  wf_tensor *out;
  wf_shape a, b, os;
  mm_job j = {0};
  int64_t k2;

  if (wfx_kernel_input(ctx, 0, &x, &a, st) ||
      wfx_kernel_input(ctx, 1, &y, &b, st) ||
      wfx_kernel_attr_bool(ctx, "transpose_a", &j.tx, st) ||
      wfx_kernel_attr_bool(ctx, "transpose_b", &j.ty, st))
    return wfx_code(st);
  j.dtype = wfx_dtype(x);
  if (j.dtype <= WF_DTYPE_INVALID || j.dtype >= WF_DTYPE_COUNT ||
      !mm_table[j.dtype])
    return math_unsupported_dtype(j.dtype, st);
  if (a.rank != 2 || b.rank != 2 || wfx_dtype(y) != j.dtype)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "inputs must be two %s matrices",
                    wfx_dtype_name(j.dtype));
  mat_dims(&a, j.tx, &j.m, &j.k);
  mat_dims(&b, j.ty, &k2, &j.n);
  if (check_inner(&a, &b, j.k, k2, j.tx ? " transposed" : "",
                  j.ty ? " transposed" : "", st))
    return wfx_code(st);
  wfx_shape_make(&os, 2, (int64_t[]){j.m, j.n});
  out = *outp = wfx_host->kernel_output_new(ctx, 0, &os, st);
  if (!out)
    return wfx_code(st);
  if (j.m == 0 || j.n == 0)
    return 0;
  if (j.k == 0) { /* empty sums */
    memset(wfx_data(out), 0, wfx_host->tensor_nbytes(out));
    return 0;
  }
  if (mm_scratch(&j, st))
    return wfx_code(st);
  j.x = wfx_data(x);
  j.y = wfx_data(y);
  j.out = wfx_data(out);
  mm_one(&j, 0, 0, 0);
  wfx_host->free(j.xt);
  return 0;
}

int math_matmul(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_tensor *out;

  return matmul_run(ctx, &out, st);
}

int math_shape_fused_matmul(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape b, bias;
  int tb;
  opc_fused f;
  char s1[WFX_SHAPE_STR_MAX], s2[WFX_SHAPE_STR_MAX];

  if (opc_fused_shape_attrs(ctx, &f, st) ||
      wfx_shape_input(ctx, 1, NULL, &b, st) ||
      wfx_shape_input(ctx, 2, NULL, &bias, st) ||
      wfx_shape_attr_bool(ctx, "transpose_b", &tb, st))
    return wfx_code(st);
  if (bias.rank >= 0 && bias.rank != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "bias must have rank 1 (N,), got shape %s",
                    wfx_shape_str(&bias, s1, sizeof s1));
  if (b.rank == 2 && bias.rank == 1) {
    int64_t n = b.dims[tb ? 0 : 1];
    if (n >= 0 && bias.dims[0] >= 0 && n != bias.dims[0])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "bias %s does not match b%s %s's %lld columns",
                      wfx_shape_str(&bias, s1, sizeof s1),
                      tb ? " transposed" : "", wfx_shape_str(&b, s2, sizeof s2),
                      (long long)n);
  }
  return math_shape_matmul(ctx, st);
}

int math_fused_matmul(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *bias;
  wf_tensor *out;
  wf_shape bs, os;
  opc_fused f;

  if (opc_fused_kernel_attrs(ctx, &f, st) ||
      wfx_kernel_input(ctx, 2, &bias, &bs, st))
    return wfx_code(st);
  if (!wfx_dtype_is_float(wfx_dtype(bias)))
    return math_unsupported_dtype(wfx_dtype(bias), st);
  if (matmul_run(ctx, &out, st))
    return wfx_code(st);
  wfx_host->tensor_shape(out, &os);
  if (bs.rank != 1 || bs.dims[0] != os.dims[1] ||
      wfx_dtype(bias) != wfx_dtype(out))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "bias must be (%lld,) of the operands' dtype",
                    (long long)os.dims[1]);
  opc_fused_apply(wfx_dtype(out), wfx_data(out), wfx_data(bias), os.dims[0],
                  os.dims[1], 1, &f);
  return 0;
}

int math_batch_matmul(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *y;
  wf_tensor *out;
  wf_shape xs, ys, os, bs[2], bo;
  mm_job j = {0};
  wfx_bcast b;
  int64_t k2;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &y, &ys, st) ||
      wfx_kernel_attr_bool(ctx, "adj_x", &j.tx, st) ||
      wfx_kernel_attr_bool(ctx, "adj_y", &j.ty, st))
    return wfx_code(st);
  j.dtype = wfx_dtype(x);
  if (j.dtype <= WF_DTYPE_INVALID || j.dtype >= WF_DTYPE_COUNT ||
      !mm_table[j.dtype])
    return math_unsupported_dtype(j.dtype, st);
  if (wfx_dtype(y) != j.dtype)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "x is %s but y is %s",
                    wfx_dtype_name(j.dtype), wfx_dtype_name(wfx_dtype(y)));
  if (batch_shape(&xs, &ys, j.tx, j.ty, &os, st))
    return wfx_code(st);
  mat_dims(&xs, j.tx, &j.m, &j.k);
  mat_dims(&ys, j.ty, &k2, &j.n);
  out = wfx_host->kernel_output_new(ctx, 0, &os, st);
  if (!out)
    return wfx_code(st);
  if (wfx_shape_count(&os) == 0)
    return 0;
  if (j.k == 0) { /* empty sums */
    memset(wfx_data(out), 0, wfx_host->tensor_nbytes(out));
    return 0;
  }
  if (mm_scratch(&j, st))
    return wfx_code(st);
  j.x = wfx_data(x);
  j.y = wfx_data(y);
  j.out = wfx_data(out);
  /* Walk the broadcast batch: each "element" is one matrix. */
  wfx_shape_make(&bs[0], xs.rank - 2, xs.dims);
  wfx_shape_make(&bs[1], ys.rank - 2, ys.dims);
  wfx_shape_make(&bo, os.rank - 2, os.dims);
  wfx_bcast_init(&b, &bo, 2, bs);
  for (int64_t r = 0; r < b.rows; r++, wfx_bcast_next(&b))
    for (int64_t i = 0; i < b.inner; i++)
      mm_one(&j, b.off[0] + i * b.step[0], b.off[1] + i * b.step[1],
             r * b.inner + i);
  wfx_host->free(j.xt);
  return 0;
}
