/* plugins/transports/mpi/mpi_collectives.c — the collective ops of the MPI
 * plugin: AllReduce, Broadcast, AllGather, ReduceScatter, and the helpers
 * of their gradients, Reduce and CollectiveSize; definitions, shape
 * functions, "cpu" kernels and gradient functions.
 *
 * Every task of the job runs the same graph; a collective node joins the
 * tasks' values of its inputs. The kernels are asynchronous: compute
 * allocates the outputs, packs a list's tensors into one buffer (so a list
 * is one MPI call: a fused bucket of gradients) and hands the run to the
 * engine (mpi_coll_progress.c), whose progress thread moves the data with
 * nonblocking MPI calls and completes the kernel.
 *
 * Ordering guarantee: on every task, a node's run of step k exchanges data
 * with the same node's run of step k on the other tasks, and with nothing
 * else, whatever order the executor starts nodes in. Each node of each
 * executor gets a communicator of its own, named by the node's name and
 * how many nodes of that name the process set up before (the tasks agree
 * on the names before duplicating, so kernels may be set up in different
 * orders on different tasks), and its runs go one at a time in an order of
 * steps the tasks agree on before moving data (see mpi_coll_progress.c).
 * Two nodes may become ready in any order on different tasks, and steps of
 * a session may overlap. Limits: every task must set up the same
 * collective nodes (build the same executors, nodes of one name in the
 * same order) and run the same steps of each; a step that fails on one
 * task before reaching a collective leaves the other tasks waiting in it
 * (MPI collectives cannot be cancelled); at most INT_MAX elements per call.
 *
 * In a job of one task (no mpirun) every op is an identity: its outputs
 * are its inputs. The collective ops are stateful (never merged, folded or
 * run while a graph is optimised), since they talk to other processes. */
#include <config.h>

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_coll_progress.h"

/* ---- helpers ----------------------------------------------------------------
 */

#define REDUCE_DTYPES                                                          \
  (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64) |                       \
   WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))
#define MOVE_DTYPES WF_DTYPES_ALL

static int is_float(int32_t dtype) {
  return dtype == WF_FLOAT32 || dtype == WF_FLOAT64;
}

/* Reads "reduction" (NULL: the default, "sum"): *mean = 0 for "sum", 1
 * for "mean", which needs a float dtype. */
static int parse_reduction(const char *v, int32_t dtype, int *mean,
                           wf_status *st) {
  if (!v || strcmp(v, "sum") == 0) {
    *mean = 0;
    return 0;
  }
  if (strcmp(v, "mean") != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'reduction' is '%s'; it must be 'sum' or "
                    "'mean'",
                    v);
  if (!is_float(dtype))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "reduction 'mean' needs a float type (float32 or "
                    "float64), but T is %s; use 'sum'",
                    wfx_dtype_name(dtype));
  *mean = 1;
  return 0;
}

/* ---- shape functions
 * ---------------------------------------------------------- */

/* Checks "reduction" against "T" while the graph is built. */
static int shape_check_reduction(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value red, t;
  int mean;
  if (wfx_host->shape_attr(ctx, "reduction", &red) ||
      wfx_host->shape_attr(ctx, "T", &t))
    return wfx_fail(st, WF_INTERNAL,
                    "attributes 'reduction' and 'T' must be set");
  return parse_reduction(red.u.s, t.u.dtype, &mean, st);
}

/* Output i has input i's shape. */
static int shape_same(wf_shape_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->shape_num_inputs(ctx);
  (void)st;
  for (int32_t i = 0; i < n; i++) {
    int32_t dt;
    wf_shape s;
    if (wfx_host->shape_input(ctx, i, &dt, &s) == 0)
      wfx_host->shape_set_output(ctx, i, &s);
  }
  return 0;
}

static int allreduce_shape(wf_shape_ctx *ctx, wf_status *st) {
  if (shape_check_reduction(ctx, st))
    return wfx_code(st);
  return shape_same(ctx, st);
}

/* Root must be a task of the job when the job is known already. */
static int shape_check_root(wf_shape_ctx *ctx, wf_status *st) {
  const mpt_job *job = mpt_joined();
  wf_attr_value root;
  if (wfx_host->shape_attr(ctx, "root", &root))
    return 0;
  if (job && root.u.i >= job->size)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "root %lld is not a task of this job of %d tasks",
                    (long long)root.u.i, job->size);
  return 0;
}

static int broadcast_shape(wf_shape_ctx *ctx, wf_status *st) {
  if (shape_check_root(ctx, st))
    return wfx_code(st);
  return shape_same(ctx, st);
}

static int reduce_shape(wf_shape_ctx *ctx, wf_status *st) {
  if (shape_check_reduction(ctx, st) || shape_check_root(ctx, st))
    return wfx_code(st);
  return shape_same(ctx, st);
}

/* AllGather (gather = 1) and ReduceScatter (0): dimension 0 times or
 * divided by the job size, unknown (-1) while no job is joined. */
static int dim0_shape(wf_shape_ctx *ctx, int gather, wf_status *st) {
  const mpt_job *job = mpt_joined();
  int32_t dt;
  wf_shape s;
  if (!gather && shape_check_reduction(ctx, st))
    return wfx_code(st);
  if (wfx_host->shape_input(ctx, 0, &dt, &s) || s.rank < 0)
    return 0;
  if (s.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "x is a scalar; it needs rank >= 1 (the tasks' "
                    "tensors are %s along dimension 0)",
                    gather ? "joined" : "split");
  if (s.dims[0] >= 0 && job) {
    if (gather) {
      s.dims[0] *= job->size;
    } else if (s.dims[0] % job->size != 0) {
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "dimension 0 of x (%lld) is not divisible by the "
                      "%d tasks of the job",
                      (long long)s.dims[0], job->size);
    } else {
      s.dims[0] /= job->size;
    }
  } else {
    s.dims[0] = WF_UNKNOWN_DIM;
  }
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int allgather_shape(wf_shape_ctx *ctx, wf_status *st) {
  return dim0_shape(ctx, 1, st);
}

static int reduce_scatter_shape(wf_shape_ctx *ctx, wf_status *st) {
  return dim0_shape(ctx, 0, st);
}

static int size_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s = {.rank = 0};
  (void)st;
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* ---- kernels: set-up
 * ------------------------------------------------------------ */

static int setup(wf_kernel_ctx *ctx, coll_kind kind, void **state,
                 wf_status *st) {
  coll_config cfg = {.kind = kind, .n = 1};
  wf_attr_value v;
  int mean = 0;
  if (wfx_host->kernel_attr(ctx, "T", &v))
    return wfx_fail(st, WF_INTERNAL, "attribute 'T' is not set");
  cfg.dtype = v.u.dtype;
  if ((kind == WF__COLL_ALLREDUCE || kind == WF__COLL_REDUCE ||
       kind == WF__COLL_BROADCAST) &&
      wfx_host->kernel_attr(ctx, "N", &v) == 0)
    cfg.n = (int32_t)v.u.i;
  if (kind == WF__COLL_ALLREDUCE || kind == WF__COLL_REDUCE ||
      kind == WF__COLL_REDUCE_SCATTER) {
    if (parse_reduction(wfx_host->kernel_attr(ctx, "reduction", &v) ? NULL
                                                                    : v.u.s,
                        cfg.dtype, &mean, st))
      return wfx_code(st);
    cfg.mean = mean;
  }
  if ((kind == WF__COLL_BROADCAST || kind == WF__COLL_REDUCE) &&
      wfx_host->kernel_attr(ctx, "root", &v) == 0)
    cfg.root = (int32_t)v.u.i;
  coll_node *nd = coll_node_new(wfx_host->kernel_node_name(ctx), &cfg, st);
  if (!nd)
    return wfx_code(st);
  *state = nd;
  return 0;
}

static int allreduce_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return setup(ctx, WF__COLL_ALLREDUCE, state, st);
}
static int reduce_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return setup(ctx, WF__COLL_REDUCE, state, st);
}
static int broadcast_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return setup(ctx, WF__COLL_BROADCAST, state, st);
}
static int allgather_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return setup(ctx, WF__COLL_ALLGATHER, state, st);
}
static int reduce_scatter_create(wf_kernel_ctx *ctx, void **state,
                                 wf_status *st) {
  return setup(ctx, WF__COLL_REDUCE_SCATTER, state, st);
}

static void coll_destroy(void *state) { coll_node_free(state); }
/* The step failed here before the node ran: the other tasks must not wait
 * for this task in it. */
static void coll_skipped(void *state, int64_t step) {
  coll_skip(state, step);
}

/* ---- kernels: compute
 * ----------------------------------------------------------- */

/* A job of one task: every output is its input, done at once. */
static int forward_all(wf_kernel_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->kernel_num_inputs(ctx);
  for (int32_t i = 0; i < n; i++)
    if (wfx_host->kernel_output_set(
            ctx, i, (wf_tensor *)wfx_host->kernel_input(ctx, i), st))
      return wfx_code(st);
  wfx_host->kernel_done(ctx, WF_OK, NULL);
  return 0;
}

static int too_large(const coll_node *nd, int64_t count, wf_status *st) {
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "task %d of %d: %lld elements are more than one MPI call "
                  "carries (%d); split the tensors over several nodes",
                  coll_node_rank(nd), coll_node_size(nd), (long long)count,
                  INT_MAX);
}

/* This task cannot take part in r for the reason in st: the run goes
 * through the tasks' agreement all the same, so that every task fails it
 * (a task failing alone would leave the others waiting). */
static int refuse(coll_run *r, wf_status *st) {
  coll_run_refuse(r, wfx_code(st), "%s", wfx_host->status_message(st));
  return coll_submit(r, st);
}

/* AllReduce, Reduce and Broadcast: N tensors in, N of the same shapes out,
 * one call over the tensors packed end to end (no packing for N = 1). */
static int list_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  coll_node *nd = state;
  const coll_config *cfg = coll_node_config(nd);
  int32_t n = wfx_host->kernel_num_inputs(ctx);
  int rank = coll_node_rank(nd), size = coll_node_size(nd);
  int root_here = rank == cfg->root;
  size_t es = wfx_dtype_size(cfg->dtype);
  coll_run *r = NULL;
  void *y0 = NULL;
  wf_tensor *yt0 = NULL;
  int64_t total = 0;
  uint64_t hash = WF__COLL_HASH_INIT;
  if (size == 1)
    return forward_all(ctx, st);
  /* Whose outputs receive the result; non-root tasks of Reduce get zeros,
   * Broadcast's root its own inputs. */
  int receives = cfg->kind == WF__COLL_ALLREDUCE ||
                 (cfg->kind == WF__COLL_REDUCE && root_here) ||
                 (cfg->kind == WF__COLL_BROADCAST && !root_here);
  int sends = cfg->kind != WF__COLL_BROADCAST || root_here;
  if (!(r = coll_run_new(nd, ctx, st)))
    return wfx_code(st);
  for (int32_t i = 0; i < n; i++) {
    const wf_tensor *x = wfx_host->kernel_input(ctx, i);
    wf_tensor *y;
    wf_shape s;
    wfx_host->tensor_shape(x, &s);
    hash = coll_hash_shape(hash, &s);
    total += wfx_count(x);
    if (receives || cfg->kind == WF__COLL_REDUCE) {
      if (!(y = wfx_host->kernel_output_new(ctx, i, &s, st)))
        goto refuse;
      if (i == 0) {
        y0 = wfx_data(y);
        yt0 = y;
      }
      if (!receives)
        memset(wfx_data(y), 0, wfx_host->tensor_nbytes(y));
      else if (n > 1)
        r->pieces[r->npieces++] =
            (coll_piece){wfx_data(y), wfx_host->tensor_nbytes(y)};
    } else if (wfx_host->kernel_output_set(ctx, i, (wf_tensor *)x, st)) {
      goto refuse;
    }
  }
  if (total > INT_MAX) {
    too_large(nd, total, st);
    goto refuse;
  }
  r->count = total;
  r->shape_hash = hash;
  if (n == 1) {
    void *x0 = wfx_data(wfx_host->kernel_input(ctx, 0));
    if (cfg->kind == WF__COLL_BROADCAST) {
      r->recv = root_here ? x0 : y0;
      r->recv_tensor = root_here ? NULL : yt0;
    } else {
      r->send = x0;
      r->recv = receives ? y0 : NULL;
      r->recv_tensor = receives ? yt0 : NULL;
    }
  } else {
    char *p = coll_run_pack(r, (size_t)total * es, st);
    if (!p)
      goto refuse;
    if (sends) {
      for (int32_t i = 0; i < n; i++) {
        const wf_tensor *x = wfx_host->kernel_input(ctx, i);
        size_t b = wfx_host->tensor_nbytes(x);
        if (b)
          memcpy(p, wfx_data(x), b);
        p += b;
      }
    }
    r->recv = r->pack;
    /* Reductions go in place in the packed buffer; a non-root task of
     * Reduce only sends it. */
    r->send = cfg->kind == WF__COLL_REDUCE && !root_here ? r->pack : NULL;
    if (cfg->kind == WF__COLL_REDUCE && !root_here)
      r->recv = NULL;
  }
  return coll_submit(r, st);
refuse:
  return refuse(r, st);
}

/* AllGather and ReduceScatter: one tensor, joined or split along
 * dimension 0. */
static int dim0_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  coll_node *nd = state;
  const coll_config *cfg = coll_node_config(nd);
  int size = coll_node_size(nd), rank = coll_node_rank(nd);
  int gather = cfg->kind == WF__COLL_ALLGATHER;
  const wf_tensor *x = wfx_host->kernel_input(ctx, 0);
  coll_run *r = NULL;
  wf_tensor *y;
  wf_shape s;
  wfx_host->tensor_shape(x, &s);
  if (size > 1 && !(r = coll_run_new(nd, ctx, st)))
    return wfx_code(st);
  if (s.rank == 0) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "task %d of %d: x is a scalar; it needs rank >= 1", rank, size);
    goto refuse;
  }
  if (!gather && s.dims[0] % size != 0) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "task %d of %d: dimension 0 of x (%lld rows) is not divisible by "
             "the %d tasks",
             rank, size, (long long)s.dims[0], size);
    goto refuse;
  }
  if (size == 1)
    return forward_all(ctx, st);
  r->count = wfx_count(x);
  r->shape_hash = coll_hash_shape(WF__COLL_HASH_INIT, &s);
  if (r->count > INT_MAX) {
    too_large(nd, r->count, st);
    goto refuse;
  }
  if (gather)
    s.dims[0] *= size;
  else
    s.dims[0] /= size;
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s, st)))
    goto refuse;
  r->send = wfx_data(x);
  r->recv = wfx_data(y);
  r->recv_tensor = y;
  return coll_submit(r, st);
refuse:
  return r ? refuse(r, st) : wfx_code(st);
}

/* CollectiveSize: the state is the job size. */
static int size_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  const mpt_job *job = mpt_join(st);
  (void)ctx;
  if (!job)
    return wfx_code(st);
  *state = (void *)(intptr_t)job->size;
  return 0;
}

static int size_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_shape s = {.rank = 0};
  int64_t size = (int64_t)(intptr_t)state;
  wf_tensor *y = wfx_host->kernel_output_new(ctx, 0, &s, st);
  if (!y)
    return wfx_code(st);
  void *p = wfx_data(y);
  switch (wfx_dtype(y)) {
  case WF_FLOAT32:
    *(float *)p = (float)size;
    break;
  case WF_FLOAT64:
    *(double *)p = (double)size;
    break;
  case WF_INT32:
    *(int32_t *)p = (int32_t)size;
    break;
  default:
    *(int64_t *)p = size;
    break;
  }
  return 0;
}

/* ---- gradients
 * -------------------------------------------------------------------- */

static wf_output no_output(void) { return (wf_output){NULL, 0}; }

/* The gradient arriving at output i, or zeros of that output. */
static wf_output grad_or_zeros(wf_grad_ctx *ctx, int32_t i, wf_status *st) {
  wf_output g = wfx_host->grad_output_grad(ctx, i);
  wf_output y = wfx_host->grad_output(ctx, i);
  if (g.node)
    return g;
  wf_node *z = wfx_host->grad_add_node(ctx, "ZerosLike", &y, 1, NULL, 0, st);
  return z ? (wf_output){z, 0} : no_output();
}

static wf_attr_item string_item(const char *name, const char *v) {
  return (wf_attr_item){name, {.type = WF_ATTR_STRING, .count = 1, .u.s = v}};
}
static wf_attr_item int_item(const char *name, int64_t v) {
  return (wf_attr_item){name, {.type = WF_ATTR_INT, .count = 1, .u.i = v}};
}

/* The forward node's "reduction" (default "sum"). */
static const char *grad_reduction(const wf_grad_ctx *ctx) {
  wf_attr_value v;
  if (wfx_host->grad_attr(ctx, "reduction", &v) || !v.u.s)
    return "sum";
  return v.u.s;
}

/* Adds op over the gradients of every output (zeros where none arrives)
 * with attrs; *node is the new node. */
static int grad_list_node(wf_grad_ctx *ctx, const char *op,
                          const wf_attr_item *attrs, int nattrs, wf_node **node,
                          wf_status *st) {
  int32_t n = wfx_host->grad_num_outputs(ctx);
  wf_output *dys = calloc((size_t)n, sizeof *dys);
  *node = NULL;
  if (!dys)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory for %d gradients",
                    (int)n);
  for (int32_t i = 0; i < n; i++)
    if (!(dys[i] = grad_or_zeros(ctx, i, st)).node)
      goto done;
  *node = wfx_host->grad_add_node(ctx, op, dys, n, attrs, nattrs, st);
done:
  free(dys);
  return *node ? 0 : wfx_code(st);
}

/* g divided by the job size (for the mean reductions). */
static wf_output divide_by_size(wf_grad_ctx *ctx, wf_output g, wf_status *st) {
  int32_t dtype;
  if (wfx_host->grad_tensor_info(ctx, g, &dtype, NULL))
    dtype = WF_FLOAT32;
  wf_attr_item t = {"T", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dtype}};
  wf_node *size =
      wfx_host->grad_add_node(ctx, "CollectiveSize", NULL, 0, &t, 1, st);
  if (!size)
    return no_output();
  wf_output in[2] = {g, {size, 0}};
  wf_node *q = wfx_host->grad_add_node(ctx, "Div", in, 2, NULL, 0, st);
  return q ? (wf_output){q, 0} : no_output();
}

/* AllReduce: the tasks' output gradients reduced alike. */
static int allreduce_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item red = string_item("reduction", grad_reduction(ctx));
  wf_node *node;
  if (grad_list_node(ctx, "AllReduce", &red, 1, &node, st))
    return wfx_code(st);
  for (int32_t i = 0; i < wfx_host->grad_num_inputs(ctx); i++)
    wfx_host->grad_set_input_grad(ctx, i, (wf_output){node, i});
  return 0;
}

/* Broadcast: root's inputs get the sum of every task's output gradients,
 * the other tasks' inputs zeros (Reduce). */
static int broadcast_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_value root;
  wf_node *node;
  if (wfx_host->grad_attr(ctx, "root", &root))
    root.u.i = 0;
  wf_attr_item attrs[2] = {int_item("root", root.u.i),
                           string_item("reduction", "sum")};
  if (grad_list_node(ctx, "Reduce", attrs, 2, &node, st))
    return wfx_code(st);
  for (int32_t i = 0; i < wfx_host->grad_num_inputs(ctx); i++)
    wfx_host->grad_set_input_grad(ctx, i, (wf_output){node, i});
  return 0;
}

/* Reduce: every task's inputs get root's output gradients (Broadcast),
 * divided by the job size for "mean". */
static int reduce_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_value root;
  wf_node *node;
  int mean = strcmp(grad_reduction(ctx), "mean") == 0;
  if (wfx_host->grad_attr(ctx, "root", &root))
    root.u.i = 0;
  wf_attr_item attrs[1] = {int_item("root", root.u.i)};
  if (grad_list_node(ctx, "Broadcast", attrs, 1, &node, st))
    return wfx_code(st);
  for (int32_t i = 0; i < wfx_host->grad_num_inputs(ctx); i++) {
    wf_output g = {node, i};
    if (mean && !(g = divide_by_size(ctx, g, st)).node)
      return wfx_code(st);
    wfx_host->grad_set_input_grad(ctx, i, g);
  }
  return 0;
}

/* AllGather: x's gradient is the sum over tasks of this task's block of
 * the output gradients (ReduceScatter). */
static int allgather_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item red = string_item("reduction", "sum");
  wf_node *node;
  if (grad_list_node(ctx, "ReduceScatter", &red, 1, &node, st))
    return wfx_code(st);
  wfx_host->grad_set_input_grad(ctx, 0, (wf_output){node, 0});
  return 0;
}

/* ReduceScatter: x's gradient is every task's output gradient joined
 * (AllGather), divided by the job size for "mean". */
static int reduce_scatter_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_node *node;
  if (grad_list_node(ctx, "AllGather", NULL, 0, &node, st))
    return wfx_code(st);
  wf_output g = {node, 0};
  if (strcmp(grad_reduction(ctx), "mean") == 0 &&
      !(g = divide_by_size(ctx, g, st)).node)
    return wfx_code(st);
  wfx_host->grad_set_input_grad(ctx, 0, g);
  return 0;
}

/* ---- definitions
 * ------------------------------------------------------------------ */

#define ATTR_T(allowed, dc)                                                    \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,           \
                                 .allowed_dtypes = (allowed), .doc = (dc)      \
  }
#define ATTR_N                                                                 \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,             \
                                 .has_minimum = 1, .minimum = 1,               \
                                 .doc = "number of tensors in the list"        \
  }
#define ATTR_REDUCTION                                                         \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = "reduction", .type = WF_ATTR_STRING, .has_default = 1,         \
        .default_value = {.type = WF_ATTR_STRING,                              \
                          .count = 1,                                          \
                          .u = {.s = "sum"}},                                  \
        .doc = "\"sum\" (the default) or \"mean\" (the sum divided by the "    \
               "number of tasks; float types only)"                            \
  }
#define ATTR_ROOT(dc)                                                          \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = "root", .type = WF_ATTR_INT, .has_default = 1,                 \
        .default_value = {.type = WF_ATTR_INT, .count = 1, .u = {.i = 0}},     \
        .has_minimum = 1, .minimum = 0, .doc = (dc)                            \
  }

static const wf_arg_def list_x[] = {
    WF_ARG_LIST("x", "T", "N",
                "N tensors of any shapes (the same on every "
                "task)"),
    WF_ARG_END};
static const wf_arg_def one_x[] = {
    WF_ARG_T("x", "T", "(D0, D1, ...), the same shape on every task"),
    WF_ARG_END};

static const wf_arg_def allreduce_y[] = {
    WF_ARG_LIST("y", "T", "N",
                "N tensors, each of its input's shape: the "
                "tasks' values added (or averaged)"),
    WF_ARG_END};
static const wf_attr_def allreduce_attrs[] = {
    ATTR_T(REDUCE_DTYPES, "element type"), ATTR_N, ATTR_REDUCTION, WF_ATTR_END};
static const wf_op_def allreduce_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "AllReduce",
    .inputs = list_x,
    .outputs = allreduce_y,
    .attrs = allreduce_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = allreduce_shape,
    .doc = "Adds (or averages) each input over the tasks of the job; every "
           "task gets the result. The N tensors travel packed in one MPI "
           "call, so one node with many inputs is one fused bucket. In a "
           "job of one task: the identity. Gradient: AllReduce of the "
           "output gradients with the same reduction."};

static const wf_arg_def reduce_y[] = {
    WF_ARG_LIST("y", "T", "N",
                "N tensors, each of its input's shape: on "
                "root the tasks' values added (or "
                "averaged), zeros on the other tasks"),
    WF_ARG_END};
static const wf_attr_def reduce_attrs[] = {
    ATTR_T(REDUCE_DTYPES, "element type"), ATTR_N, ATTR_REDUCTION,
    ATTR_ROOT("the task that gets the result"), WF_ATTR_END};
static const wf_op_def reduce_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Reduce",
    .inputs = list_x,
    .outputs = reduce_y,
    .attrs = reduce_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = reduce_shape,
    .doc = "Adds (or averages) each input over the tasks onto task 'root'; "
           "the other tasks' outputs are zeros. One MPI call for the N "
           "tensors. The gradient of Broadcast; its own gradient is "
           "Broadcast from root."};

static const wf_arg_def broadcast_y[] = {
    WF_ARG_LIST("y", "T", "N", "N tensors: root's inputs, on every task"),
    WF_ARG_END};
static const wf_attr_def broadcast_attrs[] = {
    ATTR_T(MOVE_DTYPES, "element type"), ATTR_N,
    ATTR_ROOT("the task whose values every task gets"), WF_ATTR_END};
static const wf_op_def broadcast_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Broadcast",
    .inputs = list_x,
    .outputs = broadcast_y,
    .attrs = broadcast_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = broadcast_shape,
    .doc = "Every task gets task 'root''s values of the N inputs (the other "
           "tasks' inputs give only the shapes, which must match root's). "
           "One MPI call for the N tensors. Gradient: the sum over the tasks "
           "of the output gradients goes to root's inputs, zeros to the "
           "others' (Reduce)."};

static const wf_arg_def allgather_y[] = {
    WF_ARG_T("y", "T",
             "(size * D0, D1, ...): the tasks' x joined along "
             "dimension 0 in task order"),
    WF_ARG_END};
static const wf_attr_def allgather_attrs[] = {
    ATTR_T(MOVE_DTYPES, "element type"), WF_ATTR_END};
static const wf_op_def allgather_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "AllGather",
    .inputs = one_x,
    .outputs = allgather_y,
    .attrs = allgather_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = allgather_shape,
    .doc = "Joins the tasks' x along dimension 0, task 0's rows first; every "
           "task gets the whole. Dimension 0 of y is unknown while the graph "
           "is built before the process joined its job. Gradient: "
           "ReduceScatter (sum) of the output gradient."};

static const wf_arg_def reduce_scatter_y[] = {
    WF_ARG_T("y", "T",
             "(D0 / size, D1, ...): block `task` of the tasks' x "
             "added (or averaged)"),
    WF_ARG_END};
static const wf_attr_def reduce_scatter_attrs[] = {
    ATTR_T(REDUCE_DTYPES, "element type"), ATTR_REDUCTION, WF_ATTR_END};
static const wf_op_def reduce_scatter_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "ReduceScatter",
    .inputs = one_x,
    .outputs = reduce_scatter_y,
    .attrs = reduce_scatter_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = reduce_scatter_shape,
    .doc = "Adds (or averages) x over the tasks and gives each task its "
           "block of D0 / size rows, task t rows t * D0 / size onwards; D0 "
           "must be divisible by the number of tasks. Gradient: AllGather of "
           "the output gradient (divided by the number of tasks for "
           "\"mean\")."};

static const wf_arg_def size_y[] = {
    WF_ARG_T("y", "T", "() the number of tasks of the job"), WF_ARG_END};
static const wf_attr_def size_attrs[] = {ATTR_T(REDUCE_DTYPES, "element type"),
                                         WF_ATTR_END};
static const wf_op_def size_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "CollectiveSize",
    .outputs = size_y,
    .attrs = size_attrs,
    .shape_fn = size_shape,
    .doc = "The number of tasks of the MPI job (1 without mpirun); running "
           "it joins the job. Used by the gradients of the \"mean\" "
           "reductions."};

const wf_op_def *const mpt_ops[] = {
    &allreduce_op, &broadcast_op, &allgather_op, &reduce_scatter_op,
    &reduce_op,    &size_op,      NULL};

static const wf_kernel_def allreduce_kernel =
    WFX_KERNEL_FOR("cpu", "mpi", "AllReduce", "T", REDUCE_DTYPES, list_compute,
                   .flags = WF_KERNEL_ASYNC, .create = allreduce_create,
                   .destroy = coll_destroy, .skipped = coll_skipped);
static const wf_kernel_def reduce_kernel = WFX_KERNEL_FOR(
    "cpu", "mpi", "Reduce", "T", REDUCE_DTYPES, list_compute,
    .flags = WF_KERNEL_ASYNC, .create = reduce_create, .destroy = coll_destroy,
    .skipped = coll_skipped);
static const wf_kernel_def broadcast_kernel =
    WFX_KERNEL_FOR("cpu", "mpi", "Broadcast", "T", MOVE_DTYPES, list_compute,
                   .flags = WF_KERNEL_ASYNC, .create = broadcast_create,
                   .destroy = coll_destroy, .skipped = coll_skipped);
static const wf_kernel_def allgather_kernel =
    WFX_KERNEL_FOR("cpu", "mpi", "AllGather", "T", MOVE_DTYPES, dim0_compute,
                   .flags = WF_KERNEL_ASYNC, .create = allgather_create,
                   .destroy = coll_destroy, .skipped = coll_skipped);
static const wf_kernel_def reduce_scatter_kernel =
    WFX_KERNEL_FOR("cpu", "mpi", "ReduceScatter", "T", REDUCE_DTYPES,
                   dim0_compute, .flags = WF_KERNEL_ASYNC,
                   .create = reduce_scatter_create, .destroy = coll_destroy,
    .skipped = coll_skipped);
static const wf_kernel_def size_kernel = WFX_KERNEL_FOR(
    "cpu", "mpi", "CollectiveSize", "T", REDUCE_DTYPES, size_compute,
    .flags = WF_KERNEL_CHEAP, .create = size_create, .destroy = NULL);

const wf_kernel_def *const mpt_kernels[] = {&allreduce_kernel,
                                                &broadcast_kernel,
                                                &allgather_kernel,
                                                &reduce_scatter_kernel,
                                                &reduce_kernel,
                                                &size_kernel,
                                                NULL};

#define GRADIENT(var, opname, gfn, fl)                                         \
  static const wf_gradient_def var = {WF_STRUCT_INIT(wf_gradient_def),         \
                                      .op = (opname), .flags = (fl),           \
                                      .fn = (gfn)}

GRADIENT(allreduce_gradient, "AllReduce", allreduce_grad, 0);
GRADIENT(broadcast_gradient, "Broadcast", broadcast_grad, 0);
GRADIENT(allgather_gradient, "AllGather", allgather_grad, 0);
GRADIENT(reduce_scatter_gradient, "ReduceScatter", reduce_scatter_grad, 0);
GRADIENT(reduce_gradient, "Reduce", reduce_grad, 0);
GRADIENT(size_gradient, "CollectiveSize", NULL, WF_GRAD_NOT_DIFFERENTIABLE);

const wf_gradient_def *const mpt_gradients[] = {&allreduce_gradient,
                                                    &broadcast_gradient,
                                                    &allgather_gradient,
                                                    &reduce_scatter_gradient,
                                                    &reduce_gradient,
                                                    &size_gradient,
                                                    NULL};
