/* lib/train/data_parallel.c — data-parallel training (weft/parallel.h): the mean
 * of gradients across the job in fused AllReduce buckets, the broadcast of
 * variables from task 0, and the input helpers that give each task its
 * part of every global batch.
 *
 * It only adds nodes of the transport plugin's collective ops to graphs;
 * it never talks to the job itself, except to learn this task's place in
 * it (wf_runtime_cluster) for the input helpers. */
#include <config.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/cluster.h>
#include <weft/parallel.h>
#include <weft/status.h>
#include <weft/tensor.h>

#include <weft/status.h>

#include "model.h"

/* NOT_FOUND unless op is registered in g's runtime. */
static int need_op(wf_graph *g, const char *op, wf_status *st) {
  if (wf_runtime_op_find(wf_graph_runtime(g), op))
    return 0;
  return wf_status_set(st, WF_NOT_FOUND,
                       "data parallel: op '%s' is not registered (it comes "
                       "from a transport plugin: is plugins/transports/mpi "
                       "built and loaded?)",
                       op);
}

/* What AllReduce's "mean" takes. */
static int mean_dtype(wf_dtype dt) {
  return dt == WF_FLOAT32 || dt == WF_FLOAT64;
}

/* Bytes of output o, or -1 when its shape is not fully known. */
static int64_t output_bytes(wf_output o) {
  wf_shape s;
  wf_node_output_shape(o.node, o.index, &s);
  int64_t count = wf_shape_count(&s);
  return count < 0 ? -1
                   : count * (int64_t)wf_dtype_size(
                                 wf_node_output_dtype(o.node, o.index));
}

/* Groups outputs into buckets and adds one collective node per bucket.
 * Buckets hold consecutive entries of `order` (indices into in) of one
 * dtype and at most `limit` bytes together; an entry of unknown size is a
 * bucket of its own. out[order[k]] receives the result of in[order[k]].
 * The nodes are not ordered among themselves: the transport matches each
 * collective across tasks by node and step, whatever order the executors
 * start them in (weft/parallel.h). */
typedef struct bucketer {
  wf_graph *g;
  const char *op;           /* "AllReduce" or "Broadcast" */
  const char *reduction;    /* AllReduce's attribute; NULL for Broadcast */
  int64_t limit;
  wf_output *members;       /* the current bucket's inputs */
  int *slots;               /* ... and their indices into in/out */
  int count;
  int64_t bytes;
  wf_dtype dtype;
  int unknown;              /* the bucket holds an entry of unknown size */
} bucketer;

static int flush(bucketer *b, wf_output *out, wf_status *st) {
  if (b->count == 0)
    return 0;
  wf_node_desc *d = wf_node_desc_new(b->g, b->op, NULL);
  wf_node_desc_add_input_list(d, b->members, b->count);
  if (b->reduction)
    wf_node_desc_set_attr_string(d, "reduction", b->reduction);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n) {
    wf_status_prefix(st, "data parallel: %s bucket of %d tensors (%s, %lld "
                         "bytes)",
                     b->op, b->count, wf_dtype_name(b->dtype),
                     (long long)b->bytes);
    return wf_status_code(st);
  }
  for (int k = 0; k < b->count; k++)
    out[b->slots[k]] = (wf_output){n, k};
  b->count = 0;
  b->bytes = 0;
  b->unknown = 0;
  return 0;
}

static int bucket_add(bucketer *b, const wf_output *in, int i, wf_output *out,
                      wf_status *st) {
  wf_dtype dt = wf_node_output_dtype(in[i].node, in[i].index);
  int64_t bytes = output_bytes(in[i]);
  if (b->count > 0 && (dt != b->dtype || b->unknown || bytes < 0 ||
                       b->bytes + bytes > b->limit))
    if (flush(b, out, st))
      return -1;
  b->members[b->count] = in[i];
  b->slots[b->count++] = i;
  b->dtype = dt;
  if (bytes < 0)
    b->unknown = 1;
  else
    b->bytes += bytes;
  return 0;
}

/* Runs the bucketer over in[order[0..n-1]]; out as for flush. */
static int add_buckets(wf_graph *g, const char *op, const char *reduction,
                       int64_t limit, const wf_output *in, const int *order,
                       int n, wf_output *out, wf_status *st) {
  bucketer b = {g, op, reduction, limit > 0 ? limit : WF_PARALLEL_BUCKET_BYTES,
                NULL, NULL, 0, 0, WF_DTYPE_INVALID, 0};
  int rc = 0;
  b.members = calloc((size_t)n + 1, sizeof *b.members);
  b.slots = calloc((size_t)n + 1, sizeof *b.slots);
  if (!b.members || !b.slots) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "data parallel: out of memory");
    goto done;
  }
  for (int k = 0; k < n && rc == 0; k++)
    rc = bucket_add(&b, in, order[k], out, st) ? wf_status_code(st) : 0;
  if (rc == 0)
    rc = flush(&b, out, st);
done:
  free(b.members);
  free(b.slots);
  return rc;
}

/* ---- gradients ------------------------------------------------------------- */

/* The dense form of a sparse gradient. */
static wf_output densify(wf_graph *g, const wf_gradient *gr, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "UnsortedSegmentSumToShape", NULL);
  wf_node_desc_add_input(d, gr->values);
  wf_node_desc_add_input(d, gr->indices);
  wf_node_desc_add_input(d, gr->dense_shape);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

int wf_graph_add_gradient_mean(wf_graph *g, wf_gradient *grads, int n,
                               int64_t bucket_bytes, wf_status *st) {
  assert(g && n >= 0 && (grads || n == 0));
  if (need_op(g, "AllReduce", st))
    return wf_status_code(st);
  wf_output *in = calloc((size_t)n + 1, sizeof *in);
  wf_output *out = calloc((size_t)n + 1, sizeof *out);
  int *order = calloc((size_t)n + 1, sizeof *order);
  int rc = 0, m = 0, scoped = 0;
  if (!in || !out || !order) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "data parallel: out of memory");
    goto done;
  }
  if ((rc = wf_graph_push_scope(g, "data_parallel", st)))
    goto done;
  scoped = 1;
  /* Backwards: the last variables' gradients are ready first. */
  for (int i = n - 1; i >= 0; i--) {
    const wf_gradient *gr = &grads[i];
    if (gr->dense.node) {
      in[i] = gr->dense;
    } else if (gr->indices.node) {
      if (!gr->values.node || !gr->dense_shape.node) {
        rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "data parallel: sparse gradient %d lacks its "
                           "values or dense_shape",
                           i);
        goto done;
      }
      in[i] = densify(g, gr, st);
      if (!in[i].node) {
        wf_status_prefix(st, "data parallel: densifying the sparse gradient "
                             "%d (values '%s')",
                         i, wf_node_name(gr->values.node));
        rc = wf_status_code(st);
        goto done;
      }
    } else {
      continue; /* the loss does not depend on this variable */
    }
    wf_dtype dt = wf_node_output_dtype(in[i].node, in[i].index);
    if (!mean_dtype(dt)) {
      rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "data parallel: gradient %d ('%s') is %s; the mean "
                         "across tasks takes float32 or float64",
                         i, wf_node_name(in[i].node),
                         wf_dtype_name(dt) ? wf_dtype_name(dt) : "invalid");
      goto done;
    }
    order[m++] = i;
  }
  if ((rc = add_buckets(g, "AllReduce", "mean", bucket_bytes, in, order, m,
                        out, st)))
    goto done;
  for (int k = 0; k < m; k++) {
    wf_gradient *gr = &grads[order[k]];
    memset(gr, 0, sizeof *gr);
    gr->dense = out[order[k]];
  }
done:
  if (scoped)
    wf_graph_pop_scope(g);
  free(in);
  free(out);
  free(order);
  return rc;
}

int wf_graph_add_task_mean(wf_graph *g, const wf_output *x, int n,
                           wf_output *y, wf_status *st) {
  assert(g && x && y && n >= 1);
  if (need_op(g, "AllReduce", st))
    return wf_status_code(st);
  wf_node_desc *d = wf_node_desc_new(g, "AllReduce", NULL);
  wf_node_desc_add_input_list(d, x, n);
  wf_node_desc_set_attr_string(d, "reduction", "mean");
  wf_node *r = wf_node_desc_finish(d, st);
  if (!r) {
    wf_status_prefix(st, "data parallel: mean of %d tensors across tasks", n);
    return wf_status_code(st);
  }
  for (int i = 0; i < n; i++)
    y[i] = (wf_output){r, i};
  return 0;
}

/* ---- variables -------------------------------------------------------------- */

/* The dtype and shape of the variable behind handle h (a VarHandle). */
static int var_type(wf_output h, int i, wf_dtype *dt, wf_shape *shape,
                    wf_status *st) {
  wf_attr_value v;
  if (!h.node || strcmp(wf_node_op(h.node), "VarHandle") != 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "broadcast: handle %d ('%s') is not a VarHandle "
                         "output",
                         i, h.node ? wf_node_name(h.node) : "(null)");
  if (wf_node_get_attr(h.node, "dtype", &v, st))
    return wf_status_code(st);
  *dt = (wf_dtype)v.u.dtype;
  if (wf_node_get_attr(h.node, "shape", &v, st))
    return wf_status_code(st);
  *shape = v.u.shape;
  return 0;
}

wf_node *wf_graph_add_broadcast_variables(wf_graph *g,
                                          const wf_output *handles, int n,
                                          wf_node *const *after, int nafter,
                                          int64_t bucket_bytes,
                                          const char *name, wf_status *st) {
  assert(g && n >= 0 && (handles || n == 0) && (after || nafter == 0));
  wf_node *group = NULL, *gate = NULL;
  wf_output *reads = NULL, *out = NULL;
  wf_node **assigns = NULL;
  int *order = NULL;
  int scoped = 0;
  if (need_op(g, "Broadcast", st))
    return NULL;
  reads = calloc((size_t)n + 1, sizeof *reads);
  out = calloc((size_t)n + 1, sizeof *out);
  order = calloc((size_t)n + 1, sizeof *order);
  assigns = calloc((size_t)n + 1, sizeof *assigns);
  if (!reads || !out || !order || !assigns) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "broadcast: out of memory");
    goto done;
  }
  if (wf_graph_push_scope(g, "data_parallel", st))
    goto done;
  scoped = 1;
  /* One gate for the nodes to wait for, rather than nafter edges on every
   * read. */
  if (nafter > 0) {
    wf_node_desc *d = wf_node_desc_new(g, "NoOp", "before_broadcast");
    for (int i = 0; i < nafter; i++)
      wf_node_desc_add_control_input(d, after[i]);
    if (!(gate = wf_node_desc_finish(d, st)))
      goto done;
  }
  for (int i = 0; i < n; i++) {
    wf_dtype dt = WF_DTYPE_INVALID;
    wf_shape shape;
    if (var_type(handles[i], i, &dt, &shape, st))
      goto done;
    wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);
    wf_node_desc_add_input(d, handles[i]);
    wf_node_desc_set_attr_dtype(d, "dtype", dt);
    wf_node_desc_set_attr_shape(d, "shape", shape.dims, shape.rank);
    if (gate)
      wf_node_desc_add_control_input(d, gate);
    reads[i] = (wf_output){wf_node_desc_finish(d, st), 0};
    if (!reads[i].node) {
      wf_status_prefix(st, "broadcast: reading '%s'",
                       wf_node_name(handles[i].node));
      goto done;
    }
  }
  /* Variables of one dtype together (in their order), so that a model's
   * few int64 counters among its float weights do not split the buckets. */
  int grouped[WF_DTYPE_COUNT] = {0};
  for (int i = 0, k = 0; i < n; i++) {
    wf_dtype dt = wf_node_output_dtype(reads[i].node, 0);
    assert(dt > WF_DTYPE_INVALID && dt < WF_DTYPE_COUNT);
    if (grouped[dt])
      continue;
    grouped[dt] = 1;
    for (int j = i; j < n; j++)
      if (wf_node_output_dtype(reads[j].node, 0) == dt)
        order[k++] = j;
  }
  if (add_buckets(g, "Broadcast", NULL, bucket_bytes, reads, order, n, out,
                  st))
    goto done;
  for (int i = 0; i < n; i++) {
    wf_node_desc *d = wf_node_desc_new(g, "AssignVariable", NULL);
    wf_node_desc_add_input(d, handles[i]);
    wf_node_desc_add_input(d, out[i]);
    assigns[i] = wf_node_desc_finish(d, st);
    if (!assigns[i]) {
      wf_status_prefix(st, "broadcast: assigning '%s'",
                       wf_node_name(handles[i].node));
      goto done;
    }
  }
  /* A caller's name is taken as given (outside this scope); the default
   * one is unique through the scope's. */
  if (name) {
    wf_graph_pop_scope(g);
    scoped = 0;
  }
  wf_node_desc *d = wf_node_desc_new(g, "NoOp",
                                     name ? name : "broadcast_variables");
  for (int i = 0; i < n; i++)
    wf_node_desc_add_control_input(d, assigns[i]);
  group = wf_node_desc_finish(d, st);
done:
  if (scoped)
    wf_graph_pop_scope(g);
  free(reads);
  free(out);
  free(order);
  free(assigns);
  return group;
}

/* The handles of every variable of m, and (with inits) their initializers'
 * assignments; NULL with st set when out of memory. */
static wf_output *model_handles(const wf_model *m, wf_node ***inits,
                                wf_status *st) {
  wf_output *h = calloc((size_t)m->num_vars + 1, sizeof *h);
  wf_node **a = inits ? calloc((size_t)m->num_vars + 1, sizeof *a) : NULL;
  if (!h || (inits && !a)) {
    free(h);
    free(a);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
    return NULL;
  }
  for (int i = 0; i < m->num_vars; i++) {
    h[i] = m->vars[i]->handle;
    if (a)
      a[i] = m->vars[i]->assign;
  }
  if (inits)
    *inits = a;
  return h;
}

wf_node *train_broadcast(wf_model *m, int after_init, wf_status *st) {
  wf_node **inits = NULL;
  wf_output *h = model_handles(m, after_init ? &inits : NULL, st);
  if (!h)
    return NULL;
  wf_node *b = wf_graph_add_broadcast_variables(
      m->g, h, m->num_vars, inits, after_init ? m->num_vars : 0,
      m->bucket_bytes, NULL, st);
  if (!b)
    wf_status_prefix(st, "model: broadcasting its %d variables from task 0",
                     m->num_vars);
  free(h);
  free(inits);
  return b;
}

wf_node *wf_model_broadcast_op(wf_model *m, wf_status *st) {
  assert(m);
  return train_broadcast(m, 0, st);
}

/* ---- the input ----------------------------------------------------------------- */

int wf_parallel_task_batch(wf_runtime *rt, int64_t global_batch,
                           int64_t *task_batch, wf_status *st) {
  assert(rt && task_batch);
  int32_t task = 0, size = 1;
  if (wf_runtime_cluster(rt, &task, &size, st)) {
    wf_status_prefix(st, "data parallel: splitting the batch");
    return wf_status_code(st);
  }
  if (global_batch < 1 || global_batch % size != 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "data parallel: the global batch %lld does not "
                         "split evenly over the %d tasks of the job",
                         (long long)global_batch, (int)size);
  *task_batch = global_batch / size;
  return 0;
}

wf_dataset *wf_dataset_shard_by_task(wf_dataset *in, wf_runtime *rt,
                                     wf_status *st) {
  assert(rt);
  if (!in)
    return NULL;
  int32_t task = 0, size = 1;
  if (wf_runtime_cluster(rt, &task, &size, st)) {
    wf_status_prefix(st, "data parallel: sharding the input by task");
    wf_dataset_release(in);
    return NULL;
  }
  return wf_dataset_shard(in, size, task, st);
}

int wf_model_set_data_parallel(wf_model *m, int64_t bucket_bytes,
                               wf_status *st) {
  assert(m);
  if (need_op(m->g, "AllReduce", st) || need_op(m->g, "Broadcast", st))
    return wf_status_code(st);
  m->data_parallel = 1;
  m->bucket_bytes = bucket_bytes;
  return WF_OK;
}
