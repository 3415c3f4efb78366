/* core/executor.c — building an executor for one signature and running
 * steps on it: atomic pending counts, cheap nodes inline, the rest on the
 * pool, asynchronous kernels completed through kernel_done.
 *
 * It does not place nodes across several devices or partition the graph:
 * every node runs on the first device (in the config's order) whose type has
 * a kernel for it. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "executor.h"
#include "graph.h"
#include "kernel.h"
#include "optimize.h"
#include "placement.h"
#include "runtime.h"
#include "status.h"
#include "tensor.h"

/* ---- building --------------------------------------------------------------- */

static void exec_free(wf__exec *x);

wf__exec *wf__exec_new(wf_runtime *rt, const wf_graph *user_graph,
                       const wf__signature *user_sig, wf_status *st) {
  /* Everything below works on the signature's working graph. */
  wf__work *work = wf__calloc(1, sizeof *work);
  if (!work) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "building the executor: out of memory");
    return NULL;
  }
  if (wf__work_build(rt, user_graph, user_sig, work, st)) {
    wf__free(work);
    return NULL;
  }
  const wf_graph *g = work->g;
  const wf__signature *sig = &work->sig;
  int n = g->num_nodes;
  unsigned char *keep = wf__calloc((size_t)(n > 0 ? n : 1), 1);
  int32_t *plan_of = wf__calloc((size_t)(n > 0 ? n : 1), sizeof *plan_of);
  int32_t *edge_fill = NULL, *ctrl_fill = NULL;
  wf__exec *x = wf__calloc(1, sizeof *x);
  if (!keep || !plan_of || !x) {
    wf__work_deinit(work);
    wf__free(work);
    goto oom;
  }
  x->work = work;
  atomic_init(&x->refs, 1);
  atomic_init(&x->spare_run, NULL);
  x->rt = rt;
  x->graph = g;
  int kept = wf__prune(g, sig, keep, st);
  if (kept < 0)
    goto fail;

  x->num_nodes = kept;
  x->nodes = wf__calloc((size_t)(kept > 0 ? kept : 1), sizeof *x->nodes);
  if (!x->nodes)
    goto oom;
  int p = 0;
  for (int id = 0; id < n; id++) {
    plan_of[id] = -1;
    if (!keep[id])
      continue;
    plan_of[id] = p;
    wf__xnode *xn = &x->nodes[p++];
    xn->node = g->nodes[id];
    xn->num_inputs = xn->node->num_inputs;
    xn->num_outputs = xn->node->num_outputs;
    xn->input_base = x->num_slots;
    xn->output_base = x->num_out_slots;
    x->num_slots += xn->num_inputs;
    x->num_out_slots += xn->num_outputs;
  }

  /* Count out-edges (data, fetches) and control successors per producer. */
  edge_fill = wf__calloc((size_t)(kept + 1), sizeof *edge_fill);
  ctrl_fill = wf__calloc((size_t)(kept + 1), sizeof *ctrl_fill);
  x->nfeeds = sig->nfeeds;
  x->nfetches = sig->nfetches;
  x->feed_begin = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_begin);
  x->feed_dtypes = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_dtypes);
  x->feed_shapes = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_shapes);
  x->feed_names = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_names);
  if (!edge_fill || !ctrl_fill || !x->feed_begin || !x->feed_dtypes ||
      !x->feed_shapes || !x->feed_names)
    goto oom;
  int nfeed_slots = 0;
  for (int i = 0; i < kept; i++) {
    const wf_node *nd = x->nodes[i].node;
    for (int k = 0; k < nd->num_inputs; k++) {
      int which;
      if (wf__signature_fed(sig, nd->inputs[k].node, nd->inputs[k].index,
                            &which)) {
        x->feed_begin[which + 1]++;
        nfeed_slots++;
      } else {
        edge_fill[plan_of[nd->inputs[k].node->id]]++;
        x->nodes[i].pending++;
      }
    }
    for (int k = 0; k < nd->num_control_inputs; k++) {
      ctrl_fill[plan_of[nd->control_inputs[k]->id]]++;
      x->nodes[i].pending++;
    }
  }
  for (int f = 0; f < sig->nfetches; f++)
    edge_fill[plan_of[sig->fetches[f].node->id]]++;

  /* Turn counts into ranges. */
  for (int i = 0; i < kept; i++) {
    wf__xnode *xn = &x->nodes[i];
    xn->edge_begin = xn->edge_end = x->num_edges;
    x->num_edges += edge_fill[i];
    xn->ctrl_begin = xn->ctrl_end = x->num_ctrl;
    x->num_ctrl += ctrl_fill[i];
  }
  for (int f = 0; f < sig->nfeeds; f++)
    x->feed_begin[f + 1] += x->feed_begin[f];
  x->edges = wf__calloc((size_t)(x->num_edges + 1), sizeof *x->edges);
  x->ctrl = wf__calloc((size_t)(x->num_ctrl + 1), sizeof *x->ctrl);
  x->feed_slots = wf__calloc((size_t)nfeed_slots + 1, sizeof *x->feed_slots);
  x->roots = wf__calloc((size_t)(kept > 0 ? kept : 1), sizeof *x->roots);
  if (!x->edges || !x->ctrl || !x->feed_slots || !x->roots)
    goto oom;

  /* Fill edges, control successors and feed slots. */
  memset(edge_fill, 0, (size_t)(kept + 1) * sizeof *edge_fill);
  int32_t *feed_fill = wf__calloc((size_t)sig->nfeeds + 1, sizeof *feed_fill);
  if (!feed_fill)
    goto oom;
  for (int i = 0; i < kept; i++) {
    const wf_node *nd = x->nodes[i].node;
    for (int k = 0; k < nd->num_inputs; k++) {
      int which;
      int slot = x->nodes[i].input_base + k;
      if (wf__signature_fed(sig, nd->inputs[k].node, nd->inputs[k].index,
                            &which)) {
        x->feed_slots[x->feed_begin[which] + feed_fill[which]++] = slot;
      } else {
        wf__xnode *src = &x->nodes[plan_of[nd->inputs[k].node->id]];
        x->edges[src->edge_end++] =
            (wf__edge){nd->inputs[k].index, i, (int32_t)slot};
      }
    }
  }
  for (int f = 0; f < sig->nfetches; f++) {
    wf__xnode *src = &x->nodes[plan_of[sig->fetches[f].node->id]];
    x->edges[src->edge_end++] = (wf__edge){sig->fetches[f].index, -1, f};
  }
  for (int i = 0; i < kept; i++) {
    const wf_node *nd = x->nodes[i].node;
    for (int k = 0; k < nd->num_control_inputs; k++) {
      wf__xnode *src = &x->nodes[plan_of[nd->control_inputs[k]->id]];
      x->ctrl[src->ctrl_end++] = i;
    }
  }
  wf__free(feed_fill);
  for (int f = 0; f < sig->nfeeds; f++) {
    const wf_node *fn = sig->feeds[f].node;
    x->feed_dtypes[f] = fn->output_dtypes[sig->feeds[f].index];
    x->feed_shapes[f] = fn->output_shapes[sig->feeds[f].index];
    const wf_attr_value *t = wf__node_attr(fn, "tensor");
    x->feed_names[f] = t && t->u.s && t->u.s[0] ? t->u.s : fn->name;
  }

  /* Devices and kernels, then roots. A kept node whose op must be fed has
   * all its outputs fed (prune checked): it has nothing to run. */
  if (wf__place(rt, g, keep, &x->placement, st))
    goto fail;
  for (int i = 0; i < kept; i++) {
    wf__xnode *xn = &x->nodes[i];
    if (!(xn->node->op->def.flags & WF_OP_SOURCE_FED)) {
      int id = xn->node->id;
      xn->kernel = x->placement.kernel[id];
      xn->device = rt->devices[x->placement.device[id]].desc.name;
      xn->cheap = (xn->kernel->def.flags & WF_KERNEL_CHEAP) != 0;
      if (xn->kernel->def.create) {
        struct wf_kernel_ctx kc = {0};
        kc.node = xn->node;
        kc.kernel = xn->kernel;
        kc.num_inputs = xn->num_inputs;
        kc.num_outputs = xn->num_outputs;
        wf_status kst = {WF_OK, NULL};
        if (xn->kernel->def.create(&kc, &xn->kstate, &kst)) {
          wf_status_set(st, kst.code ? kst.code : WF_INTERNAL,
                        "node '%s' (op '%s') on %s: kernel setup failed: %s",
                        xn->node->name, xn->node->op->def.name, xn->device,
                        kst.message ? kst.message : "no reason given");
          wf_status_reset(&kst);
          goto fail;
        }
        wf_status_reset(&kst);
      }
    } else {
      xn->cheap = 1;
    }
    if (xn->pending == 0)
      x->roots[x->num_roots++] = i;
  }
  wf__free(keep);
  wf__free(plan_of);
  wf__free(edge_fill);
  wf__free(ctrl_fill);
  return x;
oom:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                "building the executor: out of memory (%d nodes)", n);
fail:
  wf__free(keep);
  wf__free(plan_of);
  wf__free(edge_fill);
  wf__free(ctrl_fill);
  exec_free(x);
  return NULL;
}

wf__exec *wf__exec_retain(wf__exec *x) {
  atomic_fetch_add(&x->refs, 1);
  return x;
}

typedef struct run run;
static void run_free(run *r);

static void exec_free(wf__exec *x) {
  if (!x)
    return;
  for (int i = 0; x->nodes && i < x->num_nodes; i++) {
    wf__xnode *xn = &x->nodes[i];
    if (xn->kstate && xn->kernel && xn->kernel->def.destroy)
      xn->kernel->def.destroy(xn->kstate);
  }
  run_free(atomic_exchange(&x->spare_run, NULL));
  wf__free(x->nodes);
  wf__free(x->edges);
  wf__free(x->ctrl);
  wf__free(x->roots);
  wf__free(x->feed_begin);
  wf__free(x->feed_slots);
  wf__free(x->feed_dtypes);
  wf__free(x->feed_shapes);
  wf__free(x->feed_names);
  wf__placement_deinit(&x->placement);
  if (x->work) {
    wf__work_deinit(x->work);
    wf__free(x->work);
  }
  wf__free(x);
}

void wf__exec_release(wf__exec *x) {
  if (x && atomic_fetch_sub(&x->refs, 1) == 1)
    exec_free(x);
}

/* ---- running ------------------------------------------------------------------ */

typedef struct task_arg {
  run *r;
  int32_t node;
} task_arg;

struct run {
  wf__exec *x;
  wf__pool *pool;
  const wf__session_state *session;
  wf__step_ctx step_ctx;
  wf_tensor **slots;           /* num_slots */
  wf_tensor **outs;            /* num_out_slots */
  atomic_int *pending;         /* num_nodes */
  struct wf_kernel_ctx *ctxs;  /* num_nodes */
  task_arg *tasks;             /* num_nodes */
  wf_status *node_status;      /* num_nodes: async completion statuses */
  wf_tensor **fetch_values;
  atomic_int outstanding;
  atomic_int failed;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished;
  wf_status error; /* first error, under mu */
  /* tracing */
  wf_run_metadata *md;
  struct timespec t0;
  int64_t deadline_ns; /* from t0; 0: none */
};

static int64_t ns_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 +
         (t.tv_nsec - t0->tv_nsec);
}

static run *run_new(wf__exec *x) {
  run *r = atomic_exchange(&x->spare_run, NULL);
  if (r)
    return r;
  r = wf__calloc(1, sizeof *r);
  if (!r)
    return NULL;
  int nn = x->num_nodes > 0 ? x->num_nodes : 1;
  r->x = x;
  r->slots = wf__calloc((size_t)x->num_slots + 1, sizeof *r->slots);
  r->outs = wf__calloc((size_t)x->num_out_slots + 1, sizeof *r->outs);
  r->pending = wf__calloc((size_t)nn, sizeof *r->pending);
  r->ctxs = wf__calloc((size_t)nn, sizeof *r->ctxs);
  r->tasks = wf__calloc((size_t)nn, sizeof *r->tasks);
  r->node_status = wf__calloc((size_t)nn, sizeof *r->node_status);
  if (!r->slots || !r->outs || !r->pending || !r->ctxs || !r->tasks ||
      !r->node_status) {
    run_free(r);
    return NULL;
  }
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  for (int i = 0; i < x->num_nodes; i++) {
    const wf__xnode *xn = &x->nodes[i];
    struct wf_kernel_ctx *c = &r->ctxs[i];
    c->node = xn->node;
    c->kernel = xn->kernel;
    c->inputs = (const wf_tensor *const *)&r->slots[xn->input_base];
    c->outputs = &r->outs[xn->output_base];
    c->num_inputs = xn->num_inputs;
    c->num_outputs = xn->num_outputs;
    c->status = &r->node_status[i];
    c->step_ctx = &r->step_ctx;
    r->tasks[i] = (task_arg){r, i};
  }
  return r;
}

static void run_free(run *r) {
  if (!r)
    return;
  if (r->pending) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
  }
  wf__free(r->slots);
  wf__free(r->outs);
  wf__free((void *)r->pending);
  wf__free(r->ctxs);
  wf__free(r->tasks);
  wf__free(r->node_status);
  wf__free(r);
}

/* Returns a finished run for reuse (or frees it if one is already kept).
 * Every slot is NULL again at this point. */
static void run_recycle(run *r) {
  wf_status_reset(&r->error);
  run *old = atomic_exchange(&r->x->spare_run, r);
  run_free(old);
}

static void record_error(run *r, const wf__xnode *xn, const wf_status *ks,
                         const char *what) {
  pthread_mutex_lock(&r->mu);
  if (r->error.code == WF_OK) {
    wf_status_set(&r->error, ks && ks->code ? ks->code : WF_INTERNAL,
                  "node '%s' (op '%s') on %s: %s", xn->node->name,
                  xn->node->op->def.name, xn->device ? xn->device : "-",
                  what ? what
                       : (ks && ks->message ? ks->message
                                            : "kernel failed without a "
                                              "message"));
  }
  pthread_mutex_unlock(&r->mu);
  atomic_store(&r->failed, 1);
}

static void set_timed_out(run *r) {
  pthread_mutex_lock(&r->mu);
  if (r->error.code == WF_OK)
    wf_status_set(&r->error, WF_DEADLINE_EXCEEDED,
                  "step exceeded its timeout of %lld ms and was cancelled",
                  (long long)(r->deadline_ns / 1000000));
  pthread_mutex_unlock(&r->mu);
  atomic_store(&r->failed, 1);
}

/* Whether the step should stop starting nodes: an error, a closed session,
 * or (checked here because the caller's thread may run the whole step
 * inline) a passed deadline. */
static int cancelled(run *r) {
  if (atomic_load_explicit(&r->failed, memory_order_relaxed) ||
      (r->session &&
       atomic_load_explicit(&r->session->cancelled, memory_order_relaxed)))
    return 1;
  if (r->deadline_ns > 0 && ns_since(&r->t0) > r->deadline_ns) {
    set_timed_out(r);
    return 1;
  }
  return 0;
}

static void task_main(void *arg);

/* Called when node i is done (ok or not). Pushes newly ready cheap nodes on
 * the caller's inline stack, keeps one expensive one for the caller (via
 * *next) and submits the rest. */
#define INLINE_MAX 64
typedef struct inline_stack {
  int32_t items[INLINE_MAX];
  int n;
} inline_stack;

/* Collects a node that became ready; past the buffer's size it goes to the
 * pool (or runs right here when there is none). */
static void make_ready(run *r, int32_t d, int32_t *ready, int *nready) {
  if (*nready < INLINE_MAX) {
    ready[(*nready)++] = d;
    return;
  }
  atomic_fetch_add(&r->outstanding, 1);
  if (!r->pool || wf__pool_submit(r->pool, task_main, &r->tasks[d]))
    task_main(&r->tasks[d]);
}

/* skipped: the node did not run (step cancelled): nothing to check or pass
 * on, only its inputs to release. */
static void node_done(run *r, int32_t i, const wf_status *ks, int skipped,
                      inline_stack *stack, int32_t *next) {
  const wf__exec *x = r->x;
  const wf__xnode *xn = &x->nodes[i];
  wf_tensor **in = &r->slots[xn->input_base];
  wf_tensor **out = &r->outs[xn->output_base];
  for (int k = 0; k < xn->num_inputs; k++) {
    wf_tensor_release(in[k]);
    in[k] = NULL;
  }
  int ok = !skipped && (!ks || ks->code == WF_OK);
  if (ok && xn->kernel) {
    for (int k = 0; k < xn->num_outputs; k++) {
      if (!out[k]) {
        char what[96];
        snprintf(what, sizeof what, "the kernel did not produce output %d",
                 k);
        record_error(r, xn, NULL, what);
        ok = 0;
        break;
      }
    }
  } else if (!ok && !skipped) {
    record_error(r, xn, ks, NULL);
  }
  if (r->md && ok) {
    int64_t bytes = 0;
    for (int k = 0; k < xn->num_outputs; k++)
      bytes += out[k] ? (int64_t)out[k]->nbytes : 0;
    r->md->nodes[i].output_bytes = bytes;
    r->md->nodes[i].end_ns = ns_since(&r->t0);
  }
  int32_t ready[INLINE_MAX];
  int nready = 0;
  if (ok && !cancelled(r)) {
    for (int e = xn->edge_begin; e < xn->edge_end; e++) {
      const wf__edge *ed = &x->edges[e];
      wf_tensor *t = wf_tensor_retain(out[ed->src_output]);
      if (ed->dst_node < 0)
        r->fetch_values[ed->dst_slot] = t;
      else
        r->slots[ed->dst_slot] = t;
    }
    /* Decrement only after every slot is written, so a consumer never runs
     * on a half-filled input list. */
    for (int e = xn->edge_begin; e < xn->edge_end; e++) {
      int32_t d = x->edges[e].dst_node;
      if (d >= 0 && atomic_fetch_sub(&r->pending[d], 1) == 1)
        make_ready(r, d, ready, &nready);
    }
    for (int c = xn->ctrl_begin; c < xn->ctrl_end; c++) {
      int32_t d = x->ctrl[c];
      if (atomic_fetch_sub(&r->pending[d], 1) == 1)
        make_ready(r, d, ready, &nready);
    }
  }
  for (int k = 0; k < xn->num_outputs; k++) {
    wf_tensor_release(out[k]);
    out[k] = NULL;
  }
  /* Schedule: cheap ones inline; of the expensive ones keep the first for
   * this thread when it has nothing else, hand the rest to the pool. */
  if (nready > 0)
    atomic_fetch_add(&r->outstanding, nready);
  for (int k = 0; k < nready; k++) {
    int32_t d = ready[k];
    if (x->nodes[d].cheap && stack->n < INLINE_MAX) {
      stack->items[stack->n++] = d;
    } else if (*next < 0) {
      *next = d;
    } else if (!r->pool || wf__pool_submit(r->pool, task_main, &r->tasks[d])) {
      if (stack->n < INLINE_MAX)
        stack->items[stack->n++] = d;
      else
        task_main(&r->tasks[d]);
    }
  }
  if (atomic_fetch_sub(&r->outstanding, 1) == 1) {
    pthread_mutex_lock(&r->mu);
    r->finished = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
  }
}

static void on_async_done(struct wf_kernel_ctx *ctx, const wf_status *st);

/* Runs node i. Returns 1 when the node completed here (node_done called),
 * 0 when an asynchronous kernel will complete it later. */
static int run_node(run *r, int32_t i, inline_stack *stack, int32_t *next) {
  const wf__xnode *xn = &r->x->nodes[i];
  if (cancelled(r) || !xn->kernel) {
    node_done(r, i, NULL, cancelled(r), stack, next);
    return 1;
  }
  struct wf_kernel_ctx *ctx = &r->ctxs[i];
  if (r->md) {
    r->md->nodes[i].start_ns = ns_since(&r->t0);
    r->md->nodes[i].thread = wf__pool_current_worker();
  }
  if (xn->kernel->def.flags & WF_KERNEL_ASYNC) {
    ctx->done = 0;
    ctx->on_done = on_async_done;
    ctx->user = r;
    wf_status kst = {WF_OK, NULL};
    if (xn->kernel->def.compute(ctx, xn->kstate, &kst)) {
      /* Failed before enqueueing anything: completes now. */
      node_done(r, i, &kst, 0, stack, next);
      wf_status_reset(&kst);
      return 1;
    }
    wf_status_reset(&kst);
    return 0;
  }
  wf_status kst = {WF_OK, NULL};
  int rc = xn->kernel->def.compute(ctx, xn->kstate, &kst);
  if (rc && kst.code == WF_OK)
    wf_status_set(&kst, WF_INTERNAL, "kernel returned %d without a status",
                  rc);
  node_done(r, i, &kst, 0, stack, next);
  wf_status_reset(&kst);
  return 1;
}

/* Runs node i and then whatever it made ready inline, until nothing is left
 * for this thread. */
static void drive(run *r, int32_t i) {
  inline_stack stack;
  stack.n = 0;
  int32_t next = i;
  for (;;) {
    if (next < 0) {
      if (stack.n == 0)
        break;
      next = stack.items[--stack.n];
    }
    int32_t cur = next;
    next = -1;
    run_node(r, cur, &stack, &next);
  }
}

static void task_main(void *arg) {
  task_arg *t = arg;
  drive(t->r, t->node);
}

static void on_async_done(struct wf_kernel_ctx *ctx, const wf_status *st) {
  run *r = ctx->user;
  int32_t i = (int32_t)(ctx - r->ctxs);
  inline_stack stack;
  stack.n = 0;
  int32_t next = -1;
  node_done(r, i, st, 0, &stack, &next);
  /* Continue on this thread: the completing thread is usually a device
   * callback thread, so hand expensive work to the pool. */
  if (next >= 0) {
    if (!r->pool || wf__pool_submit(r->pool, task_main, &r->tasks[next]))
      drive(r, next);
  }
  while (stack.n > 0)
    drive(r, stack.items[--stack.n]);
}

static int check_feed(const wf__exec *x, int f, const wf_tensor *t,
                      wf_status *st) {
  if (!t)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "feed %d ('%s'): no tensor given", f,
                         x->feed_names[f]);
  if (t->dtype != x->feed_dtypes[f])
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "feed %d ('%s'): expects %s, got a %s tensor", f,
                         x->feed_names[f], wf_dtype_name(x->feed_dtypes[f]),
                         wf_dtype_name(t->dtype));
  if (!wf_shape_compatible(&x->feed_shapes[f], &t->shape)) {
    char want[128], got[128];
    return wf_status_set(
        st, WF_INVALID_ARGUMENT, "feed %d ('%s'): expects shape %s, got %s",
        f, x->feed_names[f], wf_shape_str(&x->feed_shapes[f], want, sizeof want),
        wf_shape_str(&t->shape, got, sizeof got));
  }
  return 0;
}

int wf__exec_run(wf__exec *x, wf__pool *pool, wf__session_state *session,
                 const wf_run_options *opt, wf_tensor *const *feed_values,
                 wf_tensor **fetch_values, wf_run_metadata *md,
                 wf_status *st) {
  for (int f = 0; f < x->nfeeds; f++)
    if (check_feed(x, f, feed_values[f], st))
      return st ? wf_status_code(st) : WF_INVALID_ARGUMENT;
  for (int f = 0; f < x->nfetches; f++)
    fetch_values[f] = NULL;
  int trace = opt && opt->struct_size >= sizeof(int32_t) * 2 &&
              opt->trace_level >= WF_TRACE_NODES && md;
  int64_t timeout_ms =
      opt && opt->struct_size >= sizeof(wf_run_options) ? opt->timeout_ms : 0;
  if (md && (wf__metadata_reset(md, trace ? x->num_nodes : 0) ||
             wf__metadata_set_placements(md, x)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "run metadata: out of memory");

  run *r = run_new(x);
  if (!r)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "step: out of memory for %d nodes", x->num_nodes);
  r->pool = pool;
  r->session = session;
  r->step_ctx.vars = session ? session->vars : NULL;
  r->step_ctx.step = session ? atomic_fetch_add(&session->step, 1) : 0;
  r->fetch_values = fetch_values;
  r->md = trace ? md : NULL;
  r->finished = 0;
  atomic_store(&r->failed, 0);
  r->deadline_ns = timeout_ms > 0 ? timeout_ms * 1000000 : 0;
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  if (r->md) {
    for (int i = 0; i < x->num_nodes; i++) {
      const wf__xnode *xn = &x->nodes[i];
      r->md->nodes[i].node = xn->node->name;
      r->md->nodes[i].op = xn->node->op->def.name;
      r->md->nodes[i].device = xn->device ? xn->device : "";
      r->md->nodes[i].thread = -1;
    }
  }
  for (int i = 0; i < x->num_nodes; i++)
    atomic_store_explicit(&r->pending[i], x->nodes[i].pending,
                          memory_order_relaxed);
  for (int f = 0; f < x->nfeeds; f++)
    for (int s = x->feed_begin[f]; s < x->feed_begin[f + 1]; s++)
      r->slots[x->feed_slots[s]] = wf_tensor_retain(feed_values[f]);

  if (x->num_roots == 0) {
    r->finished = 1;
  } else {
    /* One count held by this thread until every root has been started, so
     * the step cannot finish while roots are still being handed out. */
    atomic_store(&r->outstanding, x->num_roots + 1);
    for (int k = 1; k < x->num_roots; k++) {
      int32_t d = x->roots[k];
      if (x->nodes[d].cheap || !pool ||
          wf__pool_submit(pool, task_main, &r->tasks[d]))
        drive(r, d);
    }
    drive(r, x->roots[0]);
    if (atomic_fetch_sub(&r->outstanding, 1) == 1)
      r->finished = 1;
  }

  /* Wait for the rest (pool threads and asynchronous kernels). */
  pthread_mutex_lock(&r->mu);
  struct timespec deadline;
  if (timeout_ms > 0) {
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ns = (int64_t)deadline.tv_nsec + (timeout_ms % 1000) * 1000000;
    deadline.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
    deadline.tv_nsec = (long)(ns % 1000000000);
  }
  while (!r->finished) {
    if (timeout_ms > 0) {
      if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT &&
          !r->finished) {
        pthread_mutex_unlock(&r->mu);
        set_timed_out(r);
        pthread_mutex_lock(&r->mu);
        timeout_ms = 0; /* now wait for the nodes in flight to return */
      }
    } else {
      pthread_cond_wait(&r->cv, &r->mu);
    }
  }
  pthread_mutex_unlock(&r->mu);

  int code = r->error.code;
  if (code == WF_OK && session && atomic_load(&session->cancelled))
    code = wf_status_set(&r->error, WF_CANCELLED,
                         "the session was closed during the step");
  if (code != WF_OK) {
    wf_status_set(st, (wf_code)code, "%s", r->error.message);
    for (int f = 0; f < x->nfetches; f++) {
      wf_tensor_release(fetch_values[f]);
      fetch_values[f] = NULL;
    }
    /* Cancelled steps leave inputs of nodes that never ran. */
    for (int s = 0; s < x->num_slots; s++) {
      wf_tensor_release(r->slots[s]);
      r->slots[s] = NULL;
    }
  }
  if (md)
    md->step_ns = ns_since(&r->t0);
  run_recycle(r);
  return code;
}
