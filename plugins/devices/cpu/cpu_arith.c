/* plugins/devices/cpu/cpu_arith.c — float32 arithmetic, sums and
 * Transpose on the intra-op threads: Add, Sub, Mul and Div with NumPy
 * broadcasting, AddN, Sum, Mean, SumToLike, the backward ops SumGrad and
 * MeanGrad, and Transpose (float32 and float64 for the last).
 *
 * Why: the op plugins' reference kernels of these ops run on the calling
 * thread, and a transformer's training step is full of them (residual
 * sums, the gradients' AddN of a value read by several layers, the heads'
 * transposes, bias-like sums undoing a broadcast): in bench/train --model
 * transformer --profile they took about a third of the step while the
 * second core waited for the next oneDNN call.
 *
 * Results are the reference kernels' bits wherever the work is cut: each
 * output element is computed by one thread with the reference's own
 * arithmetic — the same float operation for Add, Sub, Mul and Div; for
 * AddN the sum in double, inputs in order, rounded once; for Sum, Mean and
 * SumToLike Neumaier's compensated double sum over the input in row-major
 * order; for SumGrad and MeanGrad dy times the scale in double, rounded
 * once — so tests/devices/test_cpu_kernels.c compares bit for bit. Work
 * under WF_CPU_SPLIT elements stays on the calling thread.
 *
 * Add, Sub, Mul and Div take their output shape by broadcasting the inputs
 * as the reference kernel does (not from the op's shape function: a chain
 * of small ops pays for every call); the others take it from the shape
 * function (cpu_output), so inputs the op refuses get its own error. */
#include <config.h>

#include "cpu_kernels.h"

#include <math.h>
#include <string.h>

/* The loops are compiled for AVX-512 and AVX2 next to the baseline, chosen
 * at load time; each element's arithmetic is the same on every one. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_ARITH_CLONES                                                        \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_ARITH_CLONES
#endif

/* ---- splitting a broadcast walk -------------------------------------------- */

/* Part [lo, hi) of walk b along its merged dimension d, as a walk of its
 * own (operands' offsets at lo's). */
static void walk_part(const wfx_bcast *b, int d, int64_t lo, int64_t hi,
                      wfx_bcast *p) {
  *p = *b;
  memset(p->pos, 0, sizeof p->pos);
  p->dims[d] = hi - lo;
  p->count = 1;
  for (int i = 0; i < p->rank; i++)
    p->count *= p->dims[i];
  p->inner = p->dims[p->rank - 1];
  p->rows = p->count > 0 ? p->count / p->inner : 0;
  for (int k = 0; k < p->n; k++)
    p->off[k] = b->off[k] + lo * b->strides[k][d];
}

/* Part t of nt of walk b cut along its merged dimension dim (dim < 0: b
 * whole, for the one part). */
static void walk_share(const wfx_bcast *b, int dim, int t, int nt,
                       wfx_bcast *p) {
  if (dim < 0) {
    *p = *b;
    return;
  }
  int64_t n = b->dims[dim];
  walk_part(b, dim, n * t / nt, n * (t + 1) / nt, p);
}

/* The merged dimension to cut b along among those where operand `keep`
 * moves (keep < 0: any): the outermost one with at least `parts` indices,
 * else the longest; -1 when none has two. */
static int walk_split_dim(const wfx_bcast *b, int keep, int parts) {
  int best = -1;

  for (int d = 0; d < b->rank; d++) {
    if (keep >= 0 && b->strides[keep][d] == 0)
      continue;
    if (b->dims[d] >= parts)
      return d;
    if (b->dims[d] >= 2 && (best < 0 || b->dims[d] > b->dims[best]))
      best = d;
  }
  return best;
}

/* ---- Add, Sub, Mul, Div ------------------------------------------------------ */

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV };

/* o[j] = x[j * sx] op y[j * sy] for j < n; sx and sy are 0 or 1, each
 * combination its own loop so that the compiler vectorises it. o may be x
 * (WF_KERNEL_IN_PLACE): no restrict, and the vectorised loop still runs
 * then (the compiler's overlap check admits equal pointers). */
#define ARITH_ROW(name, OPR)                                                   \
  static WF_ARITH_CLONES void name(float *o, const float *x,                   \
                                   int64_t sx, const float *y, int64_t sy,     \
                                   int64_t n) {                                \
    if (sx && sy) {                                                            \
      for (int64_t j = 0; j < n; j++)                                          \
        o[j] = x[j] OPR y[j];                                                  \
    } else if (sx) {                                                           \
      float b = y[0];                                                          \
      for (int64_t j = 0; j < n; j++)                                          \
        o[j] = x[j] OPR b;                                                     \
    } else if (sy) {                                                           \
      float a = x[0];                                                          \
      for (int64_t j = 0; j < n; j++)                                          \
        o[j] = a OPR y[j];                                                     \
    } else {                                                                   \
      float v = x[0] OPR y[0];                                                 \
      for (int64_t j = 0; j < n; j++)                                          \
        o[j] = v;                                                              \
    }                                                                          \
  }
ARITH_ROW(row_add, +)
ARITH_ROW(row_sub, -)
ARITH_ROW(row_mul, *)
ARITH_ROW(row_div, /)

typedef void arith_row_fn(float *restrict o, const float *x, int64_t sx,
                          const float *y, int64_t sy, int64_t n);
static arith_row_fn *const arith_rows[] = {row_add, row_sub, row_mul, row_div};

/* One call: flat (equal shapes, or a scalar: x and y step sx, sy along
 * count elements) or a walk over x, y and the output (operands 0, 1, 2),
 * cut along dimension `dim`. */
typedef struct arith_job {
  arith_row_fn *row;
  float *o;
  const float *x, *y;
  int64_t sx, sy, count;
  const wfx_bcast *walk;
  int dim;
} arith_job;

static void arith_part(void *arg, int t, int nt) {
  const arith_job *j = arg;
  wfx_bcast p;

  if (!j->walk) {
    int64_t lo = j->count * t / nt, hi = j->count * (t + 1) / nt;
    j->row(j->o + lo, j->x + lo * j->sx, j->sx, j->y + lo * j->sy, j->sy,
           hi - lo);
    return;
  }
  walk_share(j->walk, j->dim, t, nt, &p);
  for (int64_t r = 0; r < p.rows; r++, wfx_bcast_next(&p))
    j->row(j->o + p.off[2], j->x + p.off[0], p.step[0], j->y + p.off[1],
           p.step[1], p.inner);
}

static int arith_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *in[2];
  wf_shape s[3], so;
  wf_tensor *out;
  wfx_bcast b;
  arith_job j = {.row = arith_rows[op]};
  int32_t intra, inter;

  for (int i = 0; i < 2; i++)
    if (wfx_kernel_input(ctx, i, &in[i], &s[i], st))
      return wfx_code(st);
  if (wfx_dtype(in[1]) != wfx_dtype(in[0]))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "inputs are %s and %s; both must be of type T",
                    wfx_dtype_name(wfx_dtype(in[0])),
                    wfx_dtype_name(wfx_dtype(in[1])));
  int flat = wfx_shape_equal(&s[0], &s[1]) || s[0].rank == 0 ||
             s[1].rank == 0;
  if (flat)
    so = s[0].rank == 0 ? s[1] : s[0];
  else if (wfx_broadcast_shapes(&s[0], &s[1], &so, NULL, st))
    return wfx_code(st);
  if (!(out = wfx_host->kernel_output_new(ctx, 0, &so, st)))
    return wfx_code(st);
  j.o = wfx_data(out);
  j.x = wfx_data(in[0]);
  j.y = wfx_data(in[1]);
  j.count = wfx_shape_count(&so);
  if (j.count == 0)
    return 0;
  if (flat) {
    j.sx = s[0].rank == 0 ? 0 : 1;
    j.sy = s[1].rank == 0 ? 0 : 1;
    if (j.count < WF_CPU_SPLIT) {
      j.row(j.o, j.x, j.sx, j.y, j.sy, j.count);
      return 0;
    }
    cpu_team(arith_part, &j, 1);
    return 0;
  }
  s[2] = so;
  wfx_bcast_init(&b, &so, 3, s);
  j.walk = &b;
  cpu_threads(&inter, &intra);
  j.dim = j.count < WF_CPU_SPLIT ? -1 : walk_split_dim(&b, -1, intra);
  cpu_team(arith_part, &j, j.dim >= 0);
  return 0;
}

#define ARITH_COMPUTE(fn, op)                                                  \
  static int fn(wf_kernel_ctx *ctx, void *state, wf_status *st) {             \
    (void)state;                                                               \
    return arith_compute(ctx, op, st);                                         \
  }
ARITH_COMPUTE(add_compute, OP_ADD)
ARITH_COMPUTE(sub_compute, OP_SUB)
ARITH_COMPUTE(mul_compute, OP_MUL)
ARITH_COMPUTE(div_compute, OP_DIV)

/* ---- AddN ------------------------------------------------------------------- */

typedef struct add_n_job {
  float *o;
  const float *const *in;
  int n;
  int64_t count;
} add_n_job;

/* o[i] = (float)(in[0][i] + ... + in[n-1][i]) summed in double from 0 in
 * input order (the reference's), a block of elements at a time; o may be
 * in[0] (each block is read whole before it is written). */
static WF_ARITH_CLONES void add_n_range(float *o,
                                        const float *const *in, int n,
                                        int64_t lo, int64_t hi) {
  enum { BLOCK = 512 };
  double acc[BLOCK];

  for (int64_t b = lo; b < hi; b += BLOCK) {
    int64_t m = hi - b < BLOCK ? hi - b : BLOCK;
    for (int64_t i = 0; i < m; i++)
      acc[i] = 0.0 + (double)in[0][b + i];
    for (int k = 1; k < n; k++) {
      const float *x = in[k] + b;
      for (int64_t i = 0; i < m; i++)
        acc[i] += (double)x[i];
    }
    for (int64_t i = 0; i < m; i++)
      o[b + i] = (float)acc[i];
  }
}

static void add_n_part(void *arg, int t, int nt) {
  const add_n_job *j = arg;

  add_n_range(j->o, j->in, j->n, j->count * t / nt, j->count * (t + 1) / nt);
}

static int add_n_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  int n = wfx_host->kernel_num_inputs(ctx);
  enum { ON_STACK = 16 };
  const float *stack[ON_STACK], **in = stack;
  wf_tensor *out;
  add_n_job j;
  int rc = 0;

  (void)state;
  if (!(out = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  if (n > ON_STACK && !(in = wfx_host->alloc((size_t)n * sizeof *in, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %d input pointers", n);
  for (int k = 0; k < n; k++) {
    const wf_tensor *t;
    if (wfx_kernel_input(ctx, k, &t, NULL, st)) {
      rc = wfx_code(st);
      goto done;
    }
    in[k] = wfx_data(t);
  }
  j = (add_n_job){wfx_data(out), in, n, wfx_count(out)};
  if (j.count > 0)
    cpu_team(add_n_part, &j, j.count * n >= WF_CPU_SPLIT);
done:
  if (in != stack)
    wfx_host->free(in);
  return rc;
}

/* ---- Sum, Mean, SumToLike ----------------------------------------------------- */

/* A reduction walks the input (operand 1, contiguous) with the keep-dims
 * result as operand 0 and adds each element to its output's accumulator:
 * the reference's walk, so each accumulator sees its terms in its order. */
typedef struct reduce_job {
  const float *x;
  double *acc, *comp;
  const wfx_bcast *walk;
  int dim; /* cut along (< 0: one part) */
} reduce_job;

/* Neumaier's step for one row: ar[j * s] += xr[j] with compensation.
 * The compensation is the exact rounding error of each addition, computed
 * here without Neumaier's branch by Knuth's two-sum (six operations, exact
 * whatever the magnitudes): the same value, so the reference's bits, but
 * branch-free, so that the loop along a row (s == 1) vectorizes. With the
 * branch, which the compiler may not turn into a select (floating-point
 * arms cannot be evaluated speculatively), the transformer's Mean over its
 * 28 tokens ran one element at a time. */
static WF_ARITH_CLONES void reduce_row(double *restrict ar, double *restrict cr,
                                       int64_t s, const float *restrict xr,
                                       int64_t n) {
  if (s == 1) {
    for (int64_t j = 0; j < n; j++) {
      double v = (double)xr[j], a = ar[j], t = a + v, z = t - a;
      cr[j] += (a - (t - z)) + (v - z);
      ar[j] = t;
    }
    return;
  }
  double a = ar[0], c = cr[0];
  for (int64_t j = 0; j < n; j++) {
    double v = (double)xr[j], t = a + v, z = t - a;
    c += (a - (t - z)) + (v - z);
    a = t;
  }
  ar[0] = a;
  cr[0] = c;
}

static void reduce_part(void *arg, int t, int nt) {
  const reduce_job *j = arg;
  wfx_bcast p;

  walk_share(j->walk, j->dim, t, nt, &p);
  for (int64_t r = 0; r < p.rows; r++, wfx_bcast_next(&p))
    reduce_row(j->acc + p.off[0], j->comp + p.off[0], p.step[0],
               j->x + p.off[1], p.inner);
}

/* out (nout elements) = the sums of x (shape xs) into the keep-dims shape
 * kept, divided by the terms per output when mean. */
static int reduce_into(const wf_tensor *x, const wf_shape *xs,
                       const wf_shape *kept, wf_tensor *out, int mean,
                       wf_status *st) {
  int64_t nout = wfx_count(out), nin = wfx_shape_count(xs);
  int64_t per = nout > 0 ? nin / nout : 0;
  wf_shape s[2] = {*kept, *xs};
  wfx_bcast b;
  reduce_job j;
  int32_t inter, intra;
  float *o = wfx_data(out);

  if (nout == 0)
    return 0;
  j.acc = wfx_host->alloc((size_t)nout * 2 * sizeof(double), 0);
  if (!j.acc)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators", (long long)nout);
  j.comp = j.acc + nout;
  memset(j.acc, 0, (size_t)nout * 2 * sizeof(double));
  j.x = wfx_data(x);
  wfx_bcast_init(&b, xs, 2, s);
  j.walk = &b;
  cpu_threads(&inter, &intra);
  j.dim = nin < WF_CPU_SPLIT ? -1 : walk_split_dim(&b, 0, intra);
  cpu_team(reduce_part, &j, j.dim >= 0);
  for (int64_t i = 0; i < nout; i++) {
    /* an infinite sum leaves NaN in the compensation: ignore it */
    double v = isfinite(j.acc[i]) ? j.acc[i] + j.comp[i] : j.acc[i];
    if (mean)
      v = per > 0 ? v / (double)per : NAN;
    o[i] = (float)v;
  }
  wfx_host->free(j.acc);
  return 0;
}

static int reduce_compute(wf_kernel_ctx *ctx, int mean, wf_status *st) {
  const wf_tensor *x;
  const int64_t *axes;
  int64_t n;
  uint32_t mask = 0;
  wf_shape xs, kept;
  wf_tensor *out;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      !(out = cpu_output(ctx, 0, NULL, st)) ||
      wfx_kernel_attr_ints(ctx, "axes", &axes, &n, st))
    return wfx_code(st);
  /* the shape function accepted the axes; none means all */
  if (n == 0)
    mask = xs.rank >= 32 ? UINT32_MAX : (UINT32_C(1) << xs.rank) - 1;
  else if (wfx_axes_mask(axes, n, xs.rank, &mask, NULL, st))
    return wfx_code(st);
  kept = xs;
  for (int i = 0; i < xs.rank; i++)
    if (mask & (UINT32_C(1) << i))
      kept.dims[i] = 1;
  return reduce_into(x, &xs, &kept, out, mean, st);
}

static int sum_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return reduce_compute(ctx, 0, st);
}

static int mean_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return reduce_compute(ctx, 1, st);
}

static int sum_to_like_compute(wf_kernel_ctx *ctx, void *state,
                               wf_status *st) {
  const wf_tensor *x, *like;
  wf_shape xs, ls;
  wf_tensor *out;

  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &like, &ls, st))
    return wfx_code(st);
  /* nothing was broadcast: x is the result (as the reference does) */
  if (wfx_shape_equal(&xs, &ls) && wfx_shape_is_known(&xs))
    return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
  if (!(out = cpu_output(ctx, 0, &ls, st)))
    return wfx_code(st);
  /* `like` right-aligned against x, ones in front: the keep-dims shape */
  {
    wf_shape kept = xs;
    for (int i = 0; i < xs.rank; i++) {
      int k = i - (xs.rank - ls.rank);
      kept.dims[i] = k < 0 ? 1 : ls.dims[k];
    }
    return reduce_into(x, &xs, &kept, out, 0, st);
  }
}

/* ---- SumGrad, MeanGrad -------------------------------------------------------- */

/* dx (x's shape) = dy spread back over the reduced axes, times 1 (SumGrad)
 * or 1 / the terms per output (MeanGrad): a walk over dy (operand 0, its
 * keep-dims shape) and dx (operand 1). */
typedef struct spread_job {
  float *dx;
  const float *dy;
  double scale;
  const wfx_bcast *walk;
  int dim; /* cut along (< 0: one part) */
} spread_job;

/* o[j] = dy[j * s] * scale, in double and rounded once (s is 0 or 1). */
static WF_ARITH_CLONES void spread_row(float *restrict o,
                                       const float *restrict dy, int64_t s,
                                       double scale, int64_t n) {
  if (s == 1) {
    for (int64_t j = 0; j < n; j++)
      o[j] = (float)((double)dy[j] * scale);
    return;
  }
  float v = (float)((double)dy[0] * scale);
  for (int64_t j = 0; j < n; j++)
    o[j] = v;
}

static void spread_part(void *arg, int t, int nt) {
  const spread_job *j = arg;
  wfx_bcast p;

  walk_share(j->walk, j->dim, t, nt, &p);
  for (int64_t r = 0; r < p.rows; r++, wfx_bcast_next(&p))
    spread_row(j->dx + p.off[1], j->dy + p.off[0], p.step[0], j->scale,
               p.inner);
}

static int spread_compute(wf_kernel_ctx *ctx, int mean, wf_status *st) {
  const wf_tensor *dy, *x;
  const int64_t *axes;
  int64_t naxes, nin, nout;
  uint32_t mask = 0;
  wf_shape dys, xs, s[2];
  wf_tensor *dx;
  wfx_bcast b;
  spread_job j;
  int32_t inter, intra;

  if (wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs, st))
    return wfx_code(st);
  if (wfx_dtype(dy) != wfx_dtype(x))
    return wfx_fail(st, WF_INVALID_ARGUMENT, "dy must have x's type %s",
                    wfx_dtype_name(wfx_dtype(x)));
  /* the shape function checks dy against x reduced */
  if (!(dx = cpu_output(ctx, 0, NULL, st)) ||
      wfx_kernel_attr_ints(ctx, "axes", &axes, &naxes, st))
    return wfx_code(st);
  if (naxes == 0)
    mask = xs.rank >= 32 ? UINT32_MAX : (UINT32_C(1) << xs.rank) - 1;
  else if (wfx_axes_mask(axes, naxes, xs.rank, &mask, NULL, st))
    return wfx_code(st);
  s[0] = xs;
  for (int i = 0; i < xs.rank; i++)
    if (mask & (UINT32_C(1) << i))
      s[0].dims[i] = 1;
  s[1] = xs;
  nin = wfx_shape_count(&xs);
  nout = wfx_shape_count(&s[0]);
  if (nin == 0)
    return 0;
  j.dx = wfx_data(dx);
  j.dy = wfx_data(dy);
  /* nin > 0: every output has at least one term */
  j.scale = mean ? 1.0 / (double)(nin / nout) : 1.0;
  wfx_bcast_init(&b, &xs, 2, s);
  j.walk = &b;
  cpu_threads(&inter, &intra);
  j.dim = nin < WF_CPU_SPLIT ? -1 : walk_split_dim(&b, 1, intra);
  cpu_team(spread_part, &j, j.dim >= 0);
  return 0;
}

static int sum_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return spread_compute(ctx, 0, st);
}

static int mean_grad_compute(wf_kernel_ctx *ctx, void *state,
                             wf_status *st) {
  (void)state;
  return spread_compute(ctx, 1, st);
}

/* ---- Transpose ---------------------------------------------------------------- */

typedef struct transpose_job {
  char *y;
  const char *x;
  size_t es;                 /* element size */
  int rank;                  /* merged */
  int64_t dims[WF_MAX_RANK]; /* output dims, merged */
  int64_t xstr[WF_MAX_RANK]; /* x's element stride along each */
  int64_t rows;              /* product of all dims but the last */
} transpose_job;

/* Copies n bytes (a multiple of 4) of a row that is contiguous in x.
 * Short rows go in fixed-size pieces the compiler makes into vector moves:
 * an attention layer's heads are rows of 16 floats, thousands a call, and
 * a memcpy call each cost more than the copy. */
static inline void copy_row(char *restrict y, const char *restrict x,
                            size_t n) {
  size_t k = 0;

  if (n > 256) {
    memcpy(y, x, n);
    return;
  }
  for (; k + 32 <= n; k += 32)
    memcpy(y + k, x + k, 32);
  for (; k < n; k += 4)
    memcpy(y + k, x + k, 4);
}

/* Rows [lo, hi) of the output (its last dimension is a row). */
static WF_ARITH_CLONES void transpose_rows(const transpose_job *j, int64_t lo,
                                           int64_t hi) {
  int last = j->rank - 1;
  int64_t inner = j->dims[last], sx = j->xstr[last];
  int64_t pos[WF_MAX_RANK] = {0}, off = 0, r = lo;
  size_t es = j->es;

  for (int d = last - 1; d >= 0; d--) {
    pos[d] = r % j->dims[d];
    r /= j->dims[d];
    off += pos[d] * j->xstr[d];
  }
  for (r = lo; r < hi; r++) {
    char *yr = j->y + (size_t)(r * inner) * es;
    if (sx == 1) {
      copy_row(yr, j->x + (size_t)off * es, (size_t)inner * es);
    } else if (es == 4) {
      const uint32_t *xr = (const uint32_t *)(const void *)j->x + off;
      uint32_t *o = (uint32_t *)(void *)yr;
      for (int64_t i = 0; i < inner; i++)
        o[i] = xr[i * sx];
    } else {
      const uint64_t *xr = (const uint64_t *)(const void *)j->x + off;
      uint64_t *o = (uint64_t *)(void *)yr;
      for (int64_t i = 0; i < inner; i++)
        o[i] = xr[i * sx];
    }
    for (int d = last - 1; d >= 0; d--) {
      off += j->xstr[d];
      if (++pos[d] < j->dims[d])
        break;
      off -= j->xstr[d] * j->dims[d];
      pos[d] = 0;
    }
  }
}

static void transpose_part(void *arg, int t, int nt) {
  const transpose_job *j = arg;

  transpose_rows(j, j->rows * t / nt, j->rows * (t + 1) / nt);
}

static int transpose_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *pt;
  wf_shape xs, ys;
  wf_tensor *y;
  int64_t xstr[WF_MAX_RANK];
  transpose_job j;

  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &pt, NULL, st) ||
      !(y = cpu_output(ctx, 0, &ys, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  /* the shape function checked perm: a permutation of 0..rank-1 */
  wfx_shape_strides(&xs, xstr);
  memset(&j, 0, sizeof j);
  j.y = wfx_data(y);
  j.x = wfx_data(x);
  j.es = wfx_dtype_size(wfx_dtype(x));
  for (int i = 0; i < ys.rank; i++) {
    int64_t p = wfx_dtype(pt) == WF_INT32
                    ? ((const int32_t *)wfx_data(pt))[i]
                    : ((const int64_t *)wfx_data(pt))[i];
    int64_t d = ys.dims[i], s = xstr[p];
    if (d == 1)
      continue;
    /* an output dimension that continues the previous one in x too */
    if (j.rank > 0 && j.xstr[j.rank - 1] == s * d) {
      j.dims[j.rank - 1] *= d;
      j.xstr[j.rank - 1] = s;
      continue;
    }
    j.dims[j.rank] = d;
    j.xstr[j.rank++] = s;
  }
  if (j.rank == 0) {
    j.dims[0] = 1;
    j.xstr[0] = 1;
    j.rank = 1;
  }
  j.rows = wfx_count(y) / j.dims[j.rank - 1];
  cpu_team(transpose_part, &j, wfx_count(y) >= WF_CPU_SPLIT && j.rows > 1);
  return 0;
}

/* ---- the kernels ---------------------------------------------------------------- */

#define F32 WF_DTYPE_BIT(WF_FLOAT32)

const wf_kernel_def cpu_k_add =
    WFX_KERNEL_FOR("cpu", "threads", "Add", "T", F32, add_compute,
                   .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE);
const wf_kernel_def cpu_k_sub =
    WFX_KERNEL_FOR("cpu", "threads", "Sub", "T", F32, sub_compute,
                   .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE);
const wf_kernel_def cpu_k_mul =
    WFX_KERNEL_FOR("cpu", "threads", "Mul", "T", F32, mul_compute,
                   .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE);
const wf_kernel_def cpu_k_div =
    WFX_KERNEL_FOR("cpu", "threads", "Div", "T", F32, div_compute,
                   .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE);
const wf_kernel_def cpu_k_add_n =
    WFX_KERNEL_FOR("cpu", "threads", "AddN", "T", F32, add_n_compute,
                   .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE);
const wf_kernel_def cpu_k_sum =
    WFX_KERNEL_FOR("cpu", "threads", "Sum", "T", F32, sum_compute,
                   .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_mean =
    WFX_KERNEL_FOR("cpu", "threads", "Mean", "T", F32, mean_compute,
                   .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_sum_to_like =
    WFX_KERNEL_FOR("cpu", "threads", "SumToLike", "T", F32,
                   sum_to_like_compute, .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_sum_grad =
    WFX_KERNEL_FOR("cpu", "threads", "SumGrad", "T", F32, sum_grad_compute,
                   .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_mean_grad =
    WFX_KERNEL_FOR("cpu", "threads", "MeanGrad", "T", F32, mean_grad_compute,
                   .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_transpose = WFX_KERNEL_FOR(
    "cpu", "threads", "Transpose", "T",
    WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64), transpose_compute,
    .priority = WF_CPU_FAST_PRIORITY);
