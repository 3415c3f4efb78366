/* core/exec/executor.c — building the executors of one signature (the working
 * graph, placement, partitioning, then one plan per device) and running
 * steps on them: atomic pending counts, cheap nodes inline, the rest on the
 * pool, asynchronous kernels (and transfers between partitions) completed
 * through kernel_done.
 *
 * All partitions of a step run at once and share its fetches, its error and
 * its rendezvous; a failure anywhere cancels every partition.
 *
 * A constant's readers in its own partition (on a device computing in host
 * memory) read its value from input slots bound once per step state: they
 * do not wait for it, and a constant left with no other reader, fetch or
 * control successor does not run at all (traced runs show it untimed).
 *
 * A partition on a device with memory of its own (a GPU) keeps its
 * kernels' tensors there; tensors move between host and device memory only
 * at its borders: a node's output is copied in when a node of the
 * partition reads it on the device, an input arriving from the host (a
 * feed) when its kernel reads it, an output a host-memory partition gets
 * from a device (a transfer, a variable's value) is copied out, and so are
 * fetches. Kernels mark what they read or write on the host. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "exec/executor.h"
#include "compile/compile.h"
#include "graph/graph_internal.h"
#include "exec/kernel.h"
#include "compile/memplan.h"
#include "compile/optimize.h"
#include "compile/partition.h"
#include "compile/placement.h"
#include "exec/rendezvous.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"
#include "plugin/device_memory.h"

/* ---- building ---------------------------------------------------------------- */

static void exec_free(wf__exec *x);

/* The value input k of nd may be bound to for every step (wf__part.bound):
 * the 'value' of a constant node of the same partition that waits for no
 * control input, on a device that computes in host memory; else NULL. An
 * op with WF_OP_CONSTANT outputs that tensor itself (weft/plugin.h), so
 * its readers need not wait for it to run: they read the value from the
 * first node of the step on, and no reference moves per step. */
static const wf_tensor *bound_value(const wf__part *pt, const int32_t *plan_of,
                                    const wf_node *nd, int k) {
  const wf_node *src = nd->inputs[k].node;
  if (pt->memory || k >= 32 || plan_of[src->id] < 0 ||
      !(src->op->def.flags & WF_OP_CONSTANT) || src->num_control_inputs > 0)
    return NULL;
  const wf_attr_value *v = wf__node_attr(src, "value");
  if (!v || v->type != WF_ATTR_TENSOR || !v->u.tensor ||
      v->u.tensor->dtype != src->output_dtypes[nd->inputs[k].index])
    return NULL;
  return v->u.tensor;
}

/* Builds the plan of the nodes placed on `device` (kept ones only). */
static int build_part(wf__exec *x, wf__part *pt, const wf__signature *sig,
                      const unsigned char *keep, int32_t *plan_of,
                      wf_status *st) {
  const wf_graph *g = x->graph;
  const wf__placement *pl = &x->placement;
  int n = g->num_nodes, count = 0, nfeed_slots = 0, nbound = 0;
  int32_t *edge_fill = NULL, *ctrl_fill = NULL, *feed_fill = NULL;
  for (int id = 0; id < n; id++) {
    plan_of[id] = -1;
    if (keep[id] && pl->device[id] == pt->device)
      plan_of[id] = count++;
  }
  pt->num_nodes = count;
  pt->nodes = wf__calloc((size_t)count + 1, sizeof *pt->nodes);
  edge_fill = wf__calloc((size_t)count + 1, sizeof *edge_fill);
  ctrl_fill = wf__calloc((size_t)count + 1, sizeof *ctrl_fill);
  feed_fill = wf__calloc((size_t)sig->nfeeds + 1, sizeof *feed_fill);
  pt->feed_begin = wf__calloc((size_t)sig->nfeeds + 1, sizeof *pt->feed_begin);
  pt->roots = wf__calloc((size_t)count + 1, sizeof *pt->roots);
  if (!pt->nodes || !edge_fill || !ctrl_fill || !feed_fill ||
      !pt->feed_begin || !pt->roots)
    goto oom;
  for (int id = 0; id < n; id++) {
    if (plan_of[id] < 0)
      continue;
    wf__xnode *xn = &pt->nodes[plan_of[id]];
    xn->node = g->nodes[id];
    xn->num_inputs = xn->node->num_inputs;
    xn->num_outputs = xn->node->num_outputs;
    xn->input_base = pt->num_slots;
    xn->output_base = pt->num_out_slots;
    pt->num_slots += xn->num_inputs;
    pt->num_out_slots += xn->num_outputs;
    xn->kernel = pl->kernel[id];
    xn->device = x->rt->devices[pt->device].desc.name;
    xn->cheap = (xn->kernel->def.flags & WF_KERNEL_CHEAP) != 0;
  }
  /* Count in-edges (partitioning left only local ones and feeds). */
  for (int i = 0; i < count; i++) {
    const wf_node *nd = pt->nodes[i].node;
    for (int k = 0; k < nd->num_inputs; k++) {
      int which;
      if (wf__signature_fed(sig, nd->inputs[k].node, nd->inputs[k].index,
                            &which)) {
        pt->feed_begin[which + 1]++;
        nfeed_slots++;
      } else if (bound_value(pt, plan_of, nd, k)) {
        nbound++;
      } else {
        edge_fill[plan_of[nd->inputs[k].node->id]]++;
        pt->nodes[i].pending++;
      }
    }
    for (int k = 0; k < nd->num_control_inputs; k++) {
      /* A fed source (no device) has nothing to wait for. */
      int32_t at = plan_of[nd->control_inputs[k]->id];
      if (at < 0)
        continue;
      ctrl_fill[at]++;
      pt->nodes[i].pending++;
    }
  }
  for (int f = 0; f < sig->nfetches; f++)
    if (plan_of[sig->fetches[f].node->id] >= 0)
      edge_fill[plan_of[sig->fetches[f].node->id]]++;
  for (int i = 0; i < count; i++) {
    wf__xnode *xn = &pt->nodes[i];
    xn->edge_begin = xn->edge_end = pt->num_edges;
    pt->num_edges += edge_fill[i];
    xn->ctrl_begin = xn->ctrl_end = pt->num_ctrl;
    pt->num_ctrl += ctrl_fill[i];
  }
  for (int f = 0; f < sig->nfeeds; f++)
    pt->feed_begin[f + 1] += pt->feed_begin[f];
  pt->edges = wf__calloc((size_t)pt->num_edges + 1, sizeof *pt->edges);
  pt->ctrl = wf__calloc((size_t)pt->num_ctrl + 1, sizeof *pt->ctrl);
  pt->feed_slots = wf__calloc((size_t)nfeed_slots + 1, sizeof *pt->feed_slots);
  if (nbound)
    pt->bound = wf__calloc((size_t)pt->num_slots + 1, sizeof *pt->bound);
  if (!pt->edges || !pt->ctrl || !pt->feed_slots || (nbound && !pt->bound))
    goto oom;
  for (int i = 0; i < count; i++) {
    const wf_node *nd = pt->nodes[i].node;
    for (int k = 0; k < nd->num_inputs; k++) {
      int which;
      int slot = pt->nodes[i].input_base + k;
      const wf_tensor *value;
      if (wf__signature_fed(sig, nd->inputs[k].node, nd->inputs[k].index,
                            &which)) {
        pt->feed_slots[pt->feed_begin[which] + feed_fill[which]++] = slot;
      } else if ((value = bound_value(pt, plan_of, nd, k))) {
        pt->bound[slot] = wf_tensor_retain((wf_tensor *)value);
        pt->nodes[i].bound_inputs |= UINT32_C(1) << k;
      } else {
        wf__xnode *src = &pt->nodes[plan_of[nd->inputs[k].node->id]];
        pt->edges[src->edge_end++] =
            (wf__edge){nd->inputs[k].index, i, (int32_t)slot, 0};
      }
    }
    for (int k = 0; k < nd->num_control_inputs; k++) {
      int32_t at = plan_of[nd->control_inputs[k]->id];
      if (at >= 0)
        pt->ctrl[pt->nodes[at].ctrl_end++] = i;
    }
  }
  for (int f = 0; f < sig->nfetches; f++) {
    int32_t at = plan_of[sig->fetches[f].node->id];
    if (at >= 0) {
      wf__xnode *src = &pt->nodes[at];
      pt->edges[src->edge_end++] = (wf__edge){sig->fetches[f].index, -1, f, 0};
    }
  }
  /* The last edge of each output among a node's last 8 edges (a wide
   * fan-out gains nothing from one reference saved, and is not searched:
   * its edges keep retaining). */
  for (int i = 0; i < count; i++) {
    const wf__xnode *xn = &pt->nodes[i];
    int first = xn->edge_end - 8 > xn->edge_begin ? xn->edge_end - 8
                                                  : xn->edge_begin;
    for (int e = first; e < xn->edge_end; e++) {
      int later = 0;
      for (int f = e + 1; f < xn->edge_end && !later; f++)
        later = pt->edges[f].src_output == pt->edges[e].src_output;
      pt->edges[e].last_use = !later;
    }
  }
  /* Kernel set-up once per node, and the roots. */
  for (int i = 0; i < count; i++) {
    wf__xnode *xn = &pt->nodes[i];
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
    /* A constant whose every reader is bound to its value has nothing
     * left to do in a step (it has no successor and no fetch). */
    if (xn->pending == 0 &&
        !(pt->bound && (xn->node->op->def.flags & WF_OP_CONSTANT) &&
          xn->edge_begin == xn->edge_end && xn->ctrl_begin == xn->ctrl_end))
      pt->roots[pt->num_roots++] = i;
  }
  wf__free(edge_fill);
  wf__free(ctrl_fill);
  wf__free(feed_fill);
  return 0;
oom:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                "building the executor: out of memory (%d nodes)", count);
fail:
  wf__free(edge_fill);
  wf__free(ctrl_fill);
  wf__free(feed_fill);
  return -1;
}

wf__exec *wf__exec_new(wf_runtime *rt, const wf_graph *user_graph,
                       const wf__signature *user_sig, wf_status *st) {
  unsigned char *keep = NULL;
  int32_t *plan_of = NULL;
  wf__exec *x = wf__calloc(1, sizeof *x);
  if (!x) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "building the executor: out of memory");
    return NULL;
  }
  atomic_init(&x->refs, 1);
  atomic_init(&x->spare_step, NULL);
  x->rt = rt;
  x->check_numerics = rt->cfg->check_numerics;
  /* Everything below works on the signature's working graph, compiled
   * (core/compile/compile.c) into a live set, a placement and transfers. */
  wf__compiled c;
  if (wf__compile(rt, user_graph, user_sig, 1, NULL, &c, st)) {
    wf__free(x);
    return NULL;
  }
  wf__work *work = c.work;
  x->work = work;
  x->graph = work->g;
  x->placement = c.placement;
  x->dist = c.dist;
  x->num_transfers = c.num_transfers;
  keep = c.live;
  const wf__signature *sig = &work->sig;
  int n = work->g->num_nodes;
  plan_of = wf__calloc((size_t)n + 1, sizeof *plan_of);
  x->parts = wf__calloc((size_t)(x->rt->num_devices + 1), sizeof *x->parts);
  if (!plan_of || !x->parts)
    goto oom;
  for (int d = 0; d < rt->num_devices; d++) {
    int used = 0;
    for (int id = 0; id < n && !used; id++)
      used = keep[id] && x->placement.device[id] == d;
    if (!used)
      continue;
    wf__part *pt = &x->parts[x->num_parts++];
    pt->device = d;
    if (rt->devices[d].type->def.copy) {
      pt->memory = &rt->devices[d];
      x->device_memory = 1;
    }
    if (build_part(x, pt, sig, keep, plan_of, st))
      goto fail;
    x->num_nodes += pt->num_nodes;
  }

  x->nfeeds = sig->nfeeds;
  x->nfetches = sig->nfetches;
  x->feed_dtypes = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_dtypes);
  x->feed_shapes = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_shapes);
  x->feed_names = wf__calloc((size_t)sig->nfeeds + 1, sizeof *x->feed_names);
  if (!x->feed_dtypes || !x->feed_shapes || !x->feed_names)
    goto oom;
  for (int f = 0; f < sig->nfeeds; f++) {
    const wf_node *fn = sig->feeds[f].node;
    x->feed_dtypes[f] = fn->output_dtypes[sig->feeds[f].index];
    x->feed_shapes[f] = fn->output_shapes[sig->feeds[f].index];
    const wf_attr_value *t = wf__node_attr(fn, "tensor");
    x->feed_names[f] = t && t->u.s && t->u.s[0] ? t->u.s : fn->name;
  }
  if (wf__memplan_build(x->rt, x->parts, x->num_parts, x->nfeeds, st))
    goto fail;
  wf__free(keep);
  wf__free(plan_of);
  return x;
oom:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                "building the executor: out of memory");
fail:
  wf__free(keep);
  wf__free(plan_of);
  exec_free(x);
  return NULL;
}

wf__exec *wf__exec_retain(wf__exec *x) {
  atomic_fetch_add(&x->refs, 1);
  return x;
}

typedef struct step step;
static void step_free(step *s);

static void exec_free(wf__exec *x) {
  if (!x)
    return;
  if (x->dist)
    x->rt->job->dist_free(x->dist);
  step_free(atomic_exchange(&x->spare_step, NULL));
  for (int p = 0; p < x->num_parts; p++) {
    wf__part *pt = &x->parts[p];
    for (int i = 0; pt->nodes && i < pt->num_nodes; i++) {
      wf__xnode *xn = &pt->nodes[i];
      if (xn->kstate && xn->kernel && xn->kernel->def.destroy)
        xn->kernel->def.destroy(xn->kstate);
    }
    wf__free(pt->nodes);
    wf__free(pt->edges);
    wf__free(pt->ctrl);
    wf__free(pt->roots);
    wf__free(pt->feed_begin);
    wf__free(pt->feed_slots);
    for (int k = 0; pt->bound && k < pt->num_slots; k++)
      wf_tensor_release(pt->bound[k]);
    wf__free(pt->bound);
    wf__memplan_free(pt->mem);
  }
  wf__free(x->parts);
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

typedef struct prun prun;

typedef struct task_arg {
  prun *r;
  int32_t node;
} task_arg;

/* One partition's share of a step. */
struct prun {
  step *s;
  const wf__part *pt;
  wf__pool *pool;              /* its device's threads, or the session's */
  wf_tensor **slots;           /* num_slots */
  wf_tensor **outs;            /* num_out_slots */
  atomic_int *pending;         /* num_nodes */
  struct wf_kernel_ctx *ctxs;  /* num_nodes */
  task_arg *tasks;             /* num_nodes */
  wf_status *node_status;      /* num_nodes */
  int md_base;                 /* its first record in the metadata */
  struct wf__arena *arena;     /* where its outputs are made */
};

/* What the partitions of a step share. */
struct step {
  wf__exec *x;
  prun *parts;
  wf__pool *pool;
  const wf__session_state *session;
  wf__step_ctx step_ctx;
  wf_tensor **fetch_values;
  atomic_int outstanding; /* nodes scheduled and not done, all partitions */
  atomic_int failed;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished;
  wf_status error; /* first error, under mu */
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

static void prun_deinit(prun *r) {
  /* Only bound slots still hold a tensor between steps. */
  for (int k = 0; r->slots && r->pt && k < r->pt->num_slots; k++)
    wf_tensor_release(r->slots[k]);
  wf__free(r->slots);
  wf__free(r->outs);
  wf__free((void *)r->pending);
  wf__free(r->ctxs);
  wf__free(r->tasks);
  wf__free(r->node_status);
  wf__arena_release(r->arena);
}

static void step_free(step *s) {
  if (!s)
    return;
  for (int p = 0; s->parts && p < s->x->num_parts; p++)
    prun_deinit(&s->parts[p]);
  wf__free(s->parts);
  wf__rendezvous_free(s->step_ctx.rendezvous);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  wf__free(s);
}

static step *step_new(wf__exec *x) {
  step *s = atomic_exchange(&x->spare_step, NULL);
  if (s)
    return s;
  s = wf__calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->x = x;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->parts = wf__calloc((size_t)x->num_parts + 1, sizeof *s->parts);
  s->step_ctx.rendezvous = wf__rendezvous_new(x->num_transfers);
  if (!s->parts || !s->step_ctx.rendezvous) {
    step_free(s);
    return NULL;
  }
  int base = 0;
  for (int p = 0; p < x->num_parts; p++) {
    const wf__part *pt = &x->parts[p];
    prun *r = &s->parts[p];
    int nn = pt->num_nodes > 0 ? pt->num_nodes : 1;
    r->s = s;
    r->pt = pt;
    r->md_base = base;
    base += pt->num_nodes;
    r->slots = wf__calloc((size_t)pt->num_slots + 1, sizeof *r->slots);
    r->outs = wf__calloc((size_t)pt->num_out_slots + 1, sizeof *r->outs);
    r->pending = wf__calloc((size_t)nn, sizeof *r->pending);
    r->ctxs = wf__calloc((size_t)nn, sizeof *r->ctxs);
    r->tasks = wf__calloc((size_t)nn, sizeof *r->tasks);
    r->node_status = wf__calloc((size_t)nn, sizeof *r->node_status);
    r->arena = wf__arena_new(pt->mem);
    if (!r->slots || !r->outs || !r->pending || !r->ctxs || !r->tasks ||
        !r->node_status || !r->arena) {
      step_free(s);
      return NULL;
    }
    for (int i = 0; i < pt->num_nodes; i++) {
      const wf__xnode *xn = &pt->nodes[i];
      struct wf_kernel_ctx *c = &r->ctxs[i];
      c->node = xn->node;
      c->kernel = xn->kernel;
      c->inputs = (const wf_tensor *const *)&r->slots[xn->input_base];
      c->outputs = &r->outs[xn->output_base];
      c->num_inputs = xn->num_inputs;
      c->num_outputs = xn->num_outputs;
      c->status = &r->node_status[i];
      c->step_ctx = &s->step_ctx;
      c->arena = pt->memory ? NULL : r->arena;
      c->device = &x->rt->devices[pt->device];
      c->device_memory = pt->memory != NULL;
      c->out_base = xn->output_base;
      c->in_base = xn->input_base;
      r->tasks[i] = (task_arg){r, i};
    }
    for (int k = 0; pt->bound && k < pt->num_slots; k++)
      if (pt->bound[k])
        r->slots[k] = wf_tensor_retain(pt->bound[k]);
  }
  return s;
}

/* Keeps a finished step's state for reuse (every slot is NULL again). */
static void step_recycle(step *s) {
  wf_status_reset(&s->error);
  wf__rendezvous_reset(s->step_ctx.rendezvous);
  step *old = atomic_exchange(&s->x->spare_step, s);
  step_free(old);
}

/* Marks the step failed: nothing new starts, and transfers still waiting
 * are completed with the error so no partition waits forever. */
static void fail_step(step *s, wf_code code, const char *msg) {
  atomic_store(&s->failed, 1);
  wf__rendezvous_abort(s->step_ctx.rendezvous, code, msg);
  if (s->step_ctx.job_step)
    s->x->rt->job->cancel_step(s->step_ctx.cluster, s->step_ctx.job_step, code,
                            msg);
}

/* The step failed: kernels that asked to know (collectives, which other
 * processes meet in the same step) hear of each of their nodes that was
 * never made ready. Those made ready but skipped heard it in run_node. */
static void tell_skipped(step *s) {
  for (int p = 0; p < s->x->num_parts; p++) {
    prun *r = &s->parts[p];
    for (int i = 0; i < r->pt->num_nodes; i++) {
      const wf__xnode *xn = &r->pt->nodes[i];
      if (xn->kernel && xn->kernel->def.skipped &&
          atomic_load_explicit(&r->pending[i], memory_order_relaxed) > 0)
        xn->kernel->def.skipped(xn->kstate, s->step_ctx.step);
    }
  }
}

/* A step of a job also fails when a task it waits on went silent. */
static void watch_tasks(step *s) {
  char msg[256];
  if (!s->step_ctx.job_step || atomic_load(&s->failed))
    return;
  int code = s->x->rt->job->watch(s->step_ctx.cluster, s->x->dist, msg,
                               sizeof msg);
  if (!code)
    return;
  pthread_mutex_lock(&s->mu);
  if (s->error.code == WF_OK)
    wf_status_set(&s->error, (wf_code)code, "%s", msg);
  pthread_mutex_unlock(&s->mu);
  fail_step(s, (wf_code)code, msg);
}

static void record_error(step *s, const wf__xnode *xn, const wf_status *ks,
                         const char *what) {
  pthread_mutex_lock(&s->mu);
  int first = s->error.code == WF_OK;
  if (first)
    wf_status_set(&s->error, ks && ks->code ? ks->code : WF_INTERNAL,
                  "node '%s' (op '%s') on %s: %s", xn->node->name,
                  xn->node->op->def.name, xn->device ? xn->device : "-",
                  what ? what
                       : (ks && ks->message ? ks->message
                                            : "kernel failed without a "
                                              "message"));
  pthread_mutex_unlock(&s->mu);
  fail_step(s, WF_CANCELLED, "the step failed in another partition");
}

static void set_timed_out(step *s) {
  pthread_mutex_lock(&s->mu);
  if (s->error.code == WF_OK)
    wf_status_set(&s->error, WF_DEADLINE_EXCEEDED,
                  "step exceeded its timeout of %lld ms and was cancelled",
                  (long long)(s->deadline_ns / 1000000));
  pthread_mutex_unlock(&s->mu);
  fail_step(s, WF_DEADLINE_EXCEEDED, "the step timed out");
}

/* Whether the step should stop starting nodes: an error, a closed session,
 * or (checked here because the caller's thread may run the whole step
 * inline) a passed deadline. */
static int cancelled(step *s) {
  if (atomic_load_explicit(&s->failed, memory_order_relaxed))
    return 1;
  if (s->session &&
      atomic_load_explicit(&s->session->cancelled, memory_order_relaxed)) {
    fail_step(s, WF_CANCELLED, "the session was closed");
    return 1;
  }
  if (s->deadline_ns > 0 && ns_since(&s->t0) > s->deadline_ns) {
    set_timed_out(s);
    return 1;
  }
  return 0;
}

static void task_main(void *arg);

#define INLINE_MAX 64
typedef struct inline_stack {
  int32_t items[INLINE_MAX];
  int n;
} inline_stack;

/* Collects a node that became ready; past the buffer's size it goes to the
 * pool (or runs right here when there is none). */
static void make_ready(prun *r, int32_t d, int32_t *ready, int *nready) {
  if (*nready < INLINE_MAX) {
    ready[(*nready)++] = d;
    return;
  }
  atomic_fetch_add(&r->s->outstanding, 1);
  if (!r->pool || wf__pool_submit(r->pool, task_main, &r->tasks[d]))
    task_main(&r->tasks[d]);
}

static void step_finished(step *s) {
  pthread_mutex_lock(&s->mu);
  s->finished = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static int place_outputs(prun *r, const wf__xnode *xn, wf_tensor **out);

/* [debug] check_numerics: fails the step at node xn when one of its float
 * outputs holds NaN or Inf, naming the output and the count. Returns
 * non-zero when it did. Outputs in device memory are looked at through a
 * host copy. */
static int check_numerics(step *s, const wf__xnode *xn, wf_tensor **out) {
  for (int k = 0; k < xn->num_outputs; k++) {
    wf_tensor *t = out[k], *host = NULL;
    wf_status cs = {WF_OK, NULL};
    int64_t nan = 0, inf = 0, first = -1;
    if (!t || !(WF_DTYPE_BIT(t->dtype) & WF_DTYPES_FLOAT))
      continue;
    if (t->mem) {
      host = wf__tensor_to(NULL, t, &cs);
      if (!host) {
        wf_status_prefix(&cs, "check_numerics: output %d: ", k);
        record_error(s, xn, &cs, NULL);
        wf_status_reset(&cs);
        return 1;
      }
      t = host;
    }
    if (wf__tensor_count_nonfinite(t, &nan, &inf, &first) > 0) {
      char shape[96];
      wf_status_set(&cs, WF_INVALID_ARGUMENT,
                    "output %d (%s %s) holds %lld NaN or Inf values of "
                    "%lld (%lld NaN, %lld Inf; the first at element %lld) "
                    "([debug] check_numerics)",
                    k, wf_dtype_name(t->dtype),
                    wf_shape_str(&t->shape, shape, sizeof shape),
                    (long long)(nan + inf), (long long)wf_tensor_count(t),
                    (long long)nan, (long long)inf, (long long)first);
      record_error(s, xn, &cs, NULL);
      wf_status_reset(&cs);
      wf_tensor_release(host);
      return 1;
    }
    wf_tensor_release(host);
  }
  return 0;
}

/* One of node d's inputs (or control inputs) arrived: 1 when it was the
 * last. A node waiting for one only has a single producer, which alone
 * writes its count: no read-modify-write is needed, and the count still
 * reads 0 once it was made ready (tell_skipped). The producer hands the
 * node on through the pool or runs it itself, which orders its slot
 * writes before the node's reads. */
static int arrived(prun *r, int32_t d) {
  if (r->pt->nodes[d].pending == 1) {
    atomic_store_explicit(&r->pending[d], 0, memory_order_relaxed);
    return 1;
  }
  return atomic_fetch_sub(&r->pending[d], 1) == 1;
}

/* Node i of r is done (ran, failed, or was skipped because the step was
 * cancelled): releases its inputs, passes its outputs on, and schedules what
 * became ready — cheap nodes on the caller's inline stack, the first
 * expensive one for the caller (*next), the rest on the pool. */
static void node_done(prun *r, int32_t i, const wf_status *ks, int skipped,
                      inline_stack *stack, int32_t *next) {
  step *s = r->s;
  const wf__part *pt = r->pt;
  const wf__xnode *xn = &pt->nodes[i];
  /* Read once: the releases below are calls the compiler cannot see
   * through, which would otherwise reload these for every input. */
  const int nin = xn->num_inputs, nout = xn->num_outputs;
  const int32_t eb = xn->edge_begin, ee = xn->edge_end;
  const uint32_t bound = xn->bound_inputs;
  wf_tensor **in = &r->slots[xn->input_base];
  wf_tensor **out = &r->outs[xn->output_base];
  for (int k = 0; k < nin; k++) {
    if (k < 32 && (bound >> k) & 1)
      continue;
    wf_tensor *t = in[k];
    in[k] = NULL;
    wf_tensor_release(t);
  }
  int ok = !skipped && (!ks || ks->code == WF_OK);
  if (ok) {
    for (int k = 0; k < nout; k++) {
      if (!out[k]) {
        char what[96];
        snprintf(what, sizeof what, "the kernel did not produce output %d",
                 k);
        record_error(s, xn, NULL, what);
        ok = 0;
        break;
      }
    }
  } else if (!skipped) {
    record_error(s, xn, ks, NULL);
  }
  if (ok && s->x->check_numerics && check_numerics(s, xn, out))
    ok = 0;
  if (s->md && ok) {
    int64_t bytes = 0;
    for (int k = 0; k < nout; k++)
      bytes += (int64_t)out[k]->nbytes;
    s->md->nodes[r->md_base + i].output_bytes = bytes;
    s->md->nodes[r->md_base + i].end_ns = ns_since(&s->t0);
  }
  if (ok && s->x->device_memory && place_outputs(r, xn, out))
    ok = 0;
  int32_t ready[INLINE_MAX];
  int nready = 0;
  /* A failed step passes nothing on. Only the flag is read here: a closed
   * session or a passed deadline is noticed by cancelled() before the next
   * node runs, which then completes skipped. */
  if (ok && !atomic_load_explicit(&s->failed, memory_order_relaxed)) {
    for (int e = eb; e < ee; e++) {
      const wf__edge *ed = &pt->edges[e];
      wf_tensor *t;
      if (ed->last_use) { /* the node's reference moves to its last reader */
        t = out[ed->src_output];
        out[ed->src_output] = NULL;
      } else {
        t = wf_tensor_retain(out[ed->src_output]);
      }
      if (ed->dst_node < 0)
        s->fetch_values[ed->dst_slot] = t;
      else
        r->slots[ed->dst_slot] = t;
    }
    /* The node's own references go before any successor can start, so a
     * planned buffer is free as soon as its last reader is done. */
    for (int k = 0; k < nout; k++) {
      wf_tensor *t = out[k];
      out[k] = NULL;
      wf_tensor_release(t);
    }
    /* Decrement only after every slot is written, so a consumer never runs
     * on a half-filled input list. */
    for (int e = eb; e < ee; e++) {
      int32_t d = pt->edges[e].dst_node;
      if (d >= 0 && arrived(r, d))
        make_ready(r, d, ready, &nready);
    }
    for (int c = xn->ctrl_begin; c < xn->ctrl_end; c++) {
      int32_t d = pt->ctrl[c];
      if (arrived(r, d))
        make_ready(r, d, ready, &nready);
    }
  } else {
    for (int k = 0; k < nout; k++) {
      wf_tensor *t = out[k];
      out[k] = NULL;
      wf_tensor_release(t);
    }
  }
  /* This node's count passes to the first node it made ready: only the
   * others are added (before any of them can finish), and with none made
   * ready the count is given back below. */
  if (nready > 1)
    atomic_fetch_add(&s->outstanding, nready - 1);
  for (int k = 0; k < nready; k++) {
    int32_t d = ready[k];
    if (pt->nodes[d].cheap && stack->n < INLINE_MAX) {
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
  if (nready == 0 && atomic_fetch_sub(&s->outstanding, 1) == 1)
    step_finished(s);
}

static void on_async_done(struct wf_kernel_ctx *ctx, const wf_status *st);

/* Where input k of a node of r is read: the partition's device memory, or
 * the host for devices without memory of their own and for what the
 * kernel marks as host memory. */
static const wf__device *input_place(const prun *r, const wf__xnode *xn,
                                     int k) {
  if (!r->pt->memory || wf__kernel_host_input(xn->kernel, k))
    return NULL;
  return r->pt->memory;
}

/* Moves tensor *t to place (replacing the reference); on failure records
 * the error for node xn and returns non-zero. */
static int move_tensor(step *s, const wf__xnode *xn, wf_tensor **t,
                       const wf__device *place, const char *what, int k) {
  wf_status ms = {WF_OK, NULL};
  char msg[96];
  wf_tensor *moved;

  if (!*t || (*t)->mem == place || !wf__dtype_movable((*t)->dtype))
    return 0;
  moved = wf__tensor_to(place, *t, &ms);
  if (!moved) {
    snprintf(msg, sizeof msg, "%s %d: ", what, k);
    wf_status_prefix(&ms, "%s", msg);
    record_error(s, xn, &ms, NULL);
    wf_status_reset(&ms);
    return -1;
  }
  wf_tensor_release(*t);
  *t = moved;
  return 0;
}

/* Whether some node of r reads output k of xn in device memory. */
static int read_on_device(const prun *r, const wf__xnode *xn, int k) {
  const wf__part *pt = r->pt;
  for (int e = xn->edge_begin; e < xn->edge_end; e++) {
    const wf__edge *ed = &pt->edges[e];
    if (ed->src_output != k || ed->dst_node < 0)
      continue;
    const wf__xnode *dst = &pt->nodes[ed->dst_node];
    if (!wf__kernel_host_input(dst->kernel, ed->dst_slot - dst->input_base))
      return 1;
  }
  return 0;
}

/* Brings a finished node's outputs to where its partition reads them: on
 * a device without memory of its own, the host (a variable's value or a
 * transfer may arrive from a device's memory); on one with, its memory
 * when a node there reads it from there (else it stays where it is, and
 * each reader takes it as it needs it). */
static int place_outputs(prun *r, const wf__xnode *xn, wf_tensor **out) {
  for (int k = 0; k < xn->num_outputs; k++) {
    const wf__device *want = NULL;
    if (!out[k])
      continue;
    if (r->pt->memory) {
      if (out[k]->mem == r->pt->memory || !read_on_device(r, xn, k))
        continue;
      want = r->pt->memory;
    }
    if (move_tensor(r->s, xn, &out[k], want, "output", k))
      return -1;
  }
  return 0;
}

/* Brings the inputs of a node on a device with memory of its own to where
 * its kernel reads them (fed tensors arrive in host memory). */
static int place_inputs(prun *r, const wf__xnode *xn) {
  wf_tensor **in = &r->slots[xn->input_base];
  for (int k = 0; k < xn->num_inputs; k++)
    if (move_tensor(r->s, xn, &in[k], input_place(r, xn, k), "input", k))
      return -1;
  return 0;
}

/* Runs node i of r (completing it here unless an asynchronous kernel will
 * complete it later). */
static void run_node(prun *r, int32_t i, inline_stack *stack, int32_t *next) {
  step *s = r->s;
  const wf__xnode *xn = &r->pt->nodes[i];
  if (cancelled(s)) {
    if (xn->kernel->def.skipped)
      xn->kernel->def.skipped(xn->kstate, s->step_ctx.step);
    node_done(r, i, NULL, 1, stack, next);
    return;
  }
  struct wf_kernel_ctx *ctx = &r->ctxs[i];
  if (s->md) {
    s->md->nodes[r->md_base + i].start_ns = ns_since(&s->t0);
    s->md->nodes[r->md_base + i].thread = wf__pool_current_worker();
  }
  wf_status kst = {WF_OK, NULL};
  if (r->pt->memory && place_inputs(r, xn)) {
    node_done(r, i, NULL, 1, stack, next);
    return;
  }
  /* The current memory is NULL outside a device partition's kernels. */
  if (r->pt->memory)
    wf__kernel_set_current_memory(r->pt->memory);
  if (xn->kernel->def.flags & WF_KERNEL_ASYNC) {
    ctx->done = 0;
    ctx->on_done = on_async_done;
    ctx->user = r;
    if (xn->kernel->def.compute(ctx, xn->kstate, &kst)) {
      /* Failed before starting anything: completes now. */
      if (kst.code == WF_OK)
        wf_status_set(&kst, WF_INTERNAL, "kernel failed without a status");
      node_done(r, i, &kst, 0, stack, next);
    }
    if (r->pt->memory)
      wf__kernel_set_current_memory(NULL);
    wf_status_reset(&kst);
    return;
  }
  int rc = xn->kernel->def.compute(ctx, xn->kstate, &kst);
  if (r->pt->memory)
    wf__kernel_set_current_memory(NULL);
  if (rc && kst.code == WF_OK)
    wf_status_set(&kst, WF_INTERNAL, "kernel returned %d without a status",
                  rc);
  node_done(r, i, &kst, 0, stack, next);
  if (kst.message) /* (a kernel may leave a message and still succeed) */
    wf_status_reset(&kst);
}

/* Runs node i and then whatever it made ready inline, until nothing is left
 * for this thread. */
static void drive(prun *r, int32_t i) {
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
  prun *r = ctx->user;
  int32_t i = (int32_t)(ctx - r->ctxs);
  inline_stack stack;
  stack.n = 0;
  int32_t next = -1;
  node_done(r, i, st, 0, &stack, &next);
  /* The completing thread is often a device or transfer callback: hand
   * expensive work to the pool, run cheap successors here. */
  if (next >= 0 &&
      (!r->pool || wf__pool_submit(r->pool, task_main, &r->tasks[next])))
    drive(r, next);
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

/* Waits for every partition; past the deadline cancels the step, and while
 * it is cancelled keeps aborting transfers so nothing waits forever. */
static void wait_step(step *s, int64_t timeout_ms) {
  pthread_mutex_lock(&s->mu);
  while (!s->finished) {
    struct timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    /* Wake at least every 50 ms to notice a closed session. */
    int64_t wait_ms = 50;
    if (timeout_ms > 0 && s->deadline_ns > 0 &&
        !atomic_load(&s->failed)) {
      int64_t left = (s->deadline_ns - ns_since(&s->t0)) / 1000000;
      if (left < wait_ms)
        wait_ms = left > 0 ? left : 0;
    }
    int64_t ns = (int64_t)when.tv_nsec + wait_ms * 1000000;
    when.tv_sec += (time_t)(ns / 1000000000);
    when.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(&s->cv, &s->mu, &when);
    if (s->finished)
      break;
    pthread_mutex_unlock(&s->mu);
    (void)cancelled(s); /* times out or notices the session closing */
    watch_tasks(s);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
}

static int exec_run(wf__exec *x, wf__pool *pool,
                    wf__pool *const *device_pools,
                    wf__session_state *session, const wf_run_options *opt,
                    wf_tensor *const *feed_values, wf_tensor **fetch_values,
                    wf_run_metadata *md, const wf__job_step *job,
                    wf_status *st);

int wf__exec_run(wf__exec *x, wf__pool *pool, wf__pool *const *device_pools,
                 wf__session_state *session,
                 const wf_run_options *opt, wf_tensor *const *feed_values,
                 wf_tensor **fetch_values, wf_run_metadata *md,
                 wf_status *st) {
  return exec_run(x, pool, device_pools, session, opt, feed_values,
                  fetch_values, md, NULL, st);
}

int wf__exec_run_job(wf__exec *x, wf__pool *pool, wf__session_state *session,
                     const wf__job_step *job, wf_status *st) {
  return exec_run(x, pool, NULL, session, NULL, NULL, NULL, NULL, job, st);
}

static int exec_run(wf__exec *x, wf__pool *pool,
                    wf__pool *const *device_pools,
                    wf__session_state *session, const wf_run_options *opt,
                    wf_tensor *const *feed_values, wf_tensor **fetch_values,
                    wf_run_metadata *md, const wf__job_step *job,
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
  /* Every run given metadata lists the nodes with their device and kernel;
   * only traced runs time them. */
  if (md && (wf__metadata_reset(md, x->num_nodes) ||
             wf__metadata_set_placements(md, x) ||
             wf__metadata_reserve_peaks(md, x->num_parts)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "run metadata: out of memory");
  if (md)
    wf__metadata_hold(md, x);

  step *s = step_new(x);
  if (!s)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "step: out of memory for %d nodes", x->num_nodes);
  s->pool = pool;
  for (int p = 0; p < x->num_parts; p++) {
    wf__pool *own = device_pools ? device_pools[x->parts[p].device] : NULL;
    s->parts[p].pool = own ? own : pool;
  }
  s->session = session;
  s->step_ctx.vars = session ? session->vars : NULL;
  s->step_ctx.step = job       ? job->step
                     : session ? atomic_fetch_add(&session->step, 1)
                               : 0;
  s->step_ctx.iterators = session ? session->iterators : NULL;
  s->step_ctx.job_step = job ? job->uid : 0;
  s->step_ctx.cluster = job ? atomic_load(&x->rt->cluster) : NULL;
  struct wf__dist_step *ds = NULL;
  if (x->dist) {
    wf_status dst = {WF_OK, NULL};
    ds = x->rt->job->step_begin(x->dist, session ? session->id : 0,
                             s->step_ctx.step, &s->step_ctx.job_step, &dst);
    if (!ds) {
      wf_status_set(st, dst.code, "%s", dst.message);
      wf_status_reset(&dst);
      step_recycle(s);
      return wf_status_code(st);
    }
    s->step_ctx.cluster = atomic_load(&x->rt->cluster);
    if (dst.code) {
      /* Some task did not get the step: fail it here at once. */
      wf_status_set(&s->error, dst.code, "%s", dst.message);
      fail_step(s, dst.code, dst.message);
    }
    wf_status_reset(&dst);
  }
  s->fetch_values = fetch_values;
  s->md = trace ? md : NULL;
  s->finished = 0;
  atomic_store(&s->failed, 0);
  s->deadline_ns = timeout_ms > 0 ? timeout_ms * 1000000 : 0;
  clock_gettime(CLOCK_MONOTONIC, &s->t0);

  int roots = 0;
  for (int p = 0; p < x->num_parts; p++) {
    prun *r = &s->parts[p];
    const wf__part *pt = r->pt;
    if (md)
      for (int i = 0; i < pt->num_nodes; i++) {
        wf_node_stats *ns = &md->nodes[r->md_base + i];
        ns->node = pt->nodes[i].node->name;
        ns->op = pt->nodes[i].node->op->def.name;
        ns->device = pt->nodes[i].device;
        ns->thread = -1;
        md->kernels[r->md_base + i] = pt->nodes[i].kernel;
      }
    wf__arena_begin(r->arena, feed_values, x->nfeeds);
    for (int i = 0; i < pt->num_nodes; i++)
      atomic_store_explicit(&r->pending[i], pt->nodes[i].pending,
                            memory_order_relaxed);
    for (int f = 0; f < x->nfeeds; f++)
      for (int k = pt->feed_begin[f]; k < pt->feed_begin[f + 1]; k++)
        r->slots[pt->feed_slots[k]] = wf_tensor_retain(feed_values[f]);
    roots += pt->num_roots;
  }

  if (roots == 0) {
    s->finished = 1;
  } else {
    /* One count held by this thread until every root has been started, so
     * the step cannot finish while roots are still being handed out. The
     * roots of the first partition run on this thread; the others' first
     * roots go to the pool so partitions make progress together. */
    atomic_store(&s->outstanding, roots + 1);
    for (int p = x->num_parts - 1; p >= 0; p--) {
      prun *r = &s->parts[p];
      for (int k = 0; k < r->pt->num_roots; k++) {
        int32_t d = r->pt->roots[k];
        if (p == 0 && k == 0)
          continue;
        if ((p == 0 && r->pt->nodes[d].cheap) || !r->pool ||
            wf__pool_submit(r->pool, task_main, &r->tasks[d]))
          drive(r, d);
      }
    }
    if (x->num_parts > 0 && x->parts[0].num_roots > 0)
      drive(&s->parts[0], x->parts[0].roots[0]);
    if (atomic_fetch_sub(&s->outstanding, 1) == 1)
      s->finished = 1;
  }
  wait_step(s, timeout_ms);

  int code = s->error.code;
  if (code == WF_OK && x->device_memory)
    for (int f = 0; f < x->nfetches && code == WF_OK; f++) {
      wf_tensor *t = fetch_values[f];
      if (!t || !t->mem)
        continue;
      /* The caller reads fetched values in host memory. */
      wf_tensor *h = wf__tensor_to(NULL, t, &s->error);
      if (!h) {
        wf_status_prefix(&s->error, "fetch %d", f);
        code = s->error.code;
        break;
      }
      wf_tensor_release(t);
      fetch_values[f] = h;
    }
  if (code == WF_OK && session && atomic_load(&session->cancelled))
    code = wf_status_set(&s->error, WF_CANCELLED,
                         "the session was closed during the step");
  if (ds)
    code = x->rt->job->step_end(ds, code, &s->error);
  if (code != WF_OK)
    tell_skipped(s);
  if (code != WF_OK) {
    wf_status_set(st, (wf_code)code, "%s", s->error.message);
    for (int f = 0; f < x->nfetches; f++) {
      wf_tensor_release(fetch_values[f]);
      fetch_values[f] = NULL;
    }
    /* Cancelled steps leave inputs of nodes that never ran. */
    for (int p = 0; p < x->num_parts; p++)
      for (int k = 0; k < s->parts[p].pt->num_slots; k++) {
        if (s->parts[p].pt->bound && s->parts[p].pt->bound[k])
          continue;
        wf_tensor_release(s->parts[p].slots[k]);
        s->parts[p].slots[k] = NULL;
      }
  }
  for (int p = 0; p < x->num_parts; p++)
    wf__arena_end(s->parts[p].arena, code == WF_OK);
  if (md) {
    md->step_ns = ns_since(&s->t0);
    for (int p = 0; p < x->num_parts; p++)
      wf__metadata_add_peak(md, x->rt->devices[x->parts[p].device].desc.name,
                            wf__arena_peak_bytes(s->parts[p].arena));
  }
  step_recycle(s);
  return code;
}
