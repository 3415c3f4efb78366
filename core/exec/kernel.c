/* core/exec/kernel.c — running a kernel once through a kernel context, plus
 * the kernel_* entries of the host table that plugins call on those
 * contexts. Which kernel runs a node is core/plugin/kernel_choice.c's.
 *
 * It does not schedule, keep per-node state between runs or place nodes on
 * devices: the executor does that with the same contexts. */
#include <config.h>

#include <stdarg.h>

#include "exec/kernel.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "compile/memplan.h"
#include "compile/placement.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"
#include "plugin/device_memory.h"

/* ---- running ------------------------------------------------------------ */

/* How wf__kernel_run waits for an asynchronous kernel. */
struct wf__kernel_wait {
  pthread_mutex_t lock;
  pthread_cond_t cond;
};

/* Checks the inputs handed to wf__kernel_run against the node. */
static int check_inputs(const wf_node *n, const wf_tensor *const *inputs,
                        wf_status *st) {
  for (int i = 0; i < n->num_inputs; i++) {
    const wf_node *src = n->inputs[i].node;
    wf_dtype want = src->output_dtypes[n->inputs[i].index];
    if (!inputs[i])
      return wf_status_set(st, WF_INVALID_ARGUMENT, "input %d is missing", i);
    if (wf_tensor_dtype(inputs[i]) != want)
      return wf_status_set(
          st, WF_INVALID_ARGUMENT, "input %d is a %s tensor, the node takes %s",
          i, wf_dtype_name(wf_tensor_dtype(inputs[i])), wf_dtype_name(want));
  }
  return WF_OK;
}

/* Checks that every output is set and agrees with the node's inferred
 * dtype and shape. */
static int check_outputs(const wf_node *n, wf_tensor *const *outputs,
                         wf_status *st) {
  for (int i = 0; i < n->num_outputs; i++) {
    wf_shape got;
    char a[128], b[128];
    if (!outputs[i])
      return wf_status_set(st, WF_INTERNAL,
                           "the kernel did not produce output %d", i);
    wf_tensor_shape(outputs[i], &got);
    if (!wf_shape_compatible(&n->output_shapes[i], &got))
      return wf_status_set(
          st, WF_INTERNAL,
          "output %d has shape %s, but shape inference said %s", i,
          wf_shape_str(&got, a, sizeof a),
          wf_shape_str(&n->output_shapes[i], b, sizeof b));
  }
  return WF_OK;
}

/* The code and message of a kernel's failure, when it returned rc with ks. */
static int kernel_failure(int rc, wf_status *ks) {
  if (ks->code == WF_OK)
    return wf_status_set(ks, WF_INTERNAL,
                         "the kernel failed (returned %d) without a message",
                         rc);
  return ks->code;
}

int wf__kernel_run(const wf__kernel *k, const wf_node *n,
                   const wf_tensor *const *inputs, wf_tensor **outputs,
                   wf_status *st) {
  struct wf_kernel_ctx ctx;
  struct wf__kernel_wait wait;
  wf_status ks = {WF_OK, NULL};   /* the kernel's own status */
  wf_status done = {WF_OK, NULL}; /* what an async kernel reported */
  wf_tensor **outs = NULL;
  void *state = NULL;
  int created = 0, async, rc, i;
  const char *phase = "";

  assert(k && n && (inputs || n->num_inputs == 0) &&
         (outputs || n->num_outputs == 0));
  for (i = 0; i < n->num_outputs; i++)
    outputs[i] = NULL;
  if (check_inputs(n, inputs, &ks))
    goto fail;
  outs = wf__calloc(n->num_outputs ? (size_t)n->num_outputs : 1, sizeof *outs);
  if (!outs) {
    wf_status_set(&ks, WF_RESOURCE_EXHAUSTED, "out of memory for %d outputs",
                  n->num_outputs);
    goto fail;
  }
  memset(&ctx, 0, sizeof ctx);
  ctx.node = n;
  ctx.kernel = k;
  ctx.inputs = inputs;
  ctx.outputs = outs;
  ctx.num_inputs = n->num_inputs;
  ctx.num_outputs = n->num_outputs;
  ctx.status = &done;

  if (k->def.create) {
    phase = "kernel setup: ";
    rc = k->def.create(&ctx, &state, &ks);
    if (rc) {
      kernel_failure(rc, &ks);
      goto fail;
    }
    created = 1;
    phase = "";
  }

  async = (k->def.flags & WF_KERNEL_ASYNC) != 0;
  if (async) {
    pthread_mutex_init(&wait.lock, NULL);
    pthread_cond_init(&wait.cond, NULL);
    ctx.wait = &wait;
  }
  rc = k->def.compute(&ctx, state, &ks);
  if (async) {
    /* A kernel that failed to start reports nothing later; one that
     * started may already have finished on another thread. */
    pthread_mutex_lock(&wait.lock);
    while (!rc && !ctx.done)
      pthread_cond_wait(&wait.cond, &wait.lock);
    pthread_mutex_unlock(&wait.lock);
    pthread_cond_destroy(&wait.cond);
    pthread_mutex_destroy(&wait.lock);
    ctx.wait = NULL;
  }
  if (rc) {
    kernel_failure(rc, &ks);
    goto fail;
  }
  if (async && done.code != WF_OK) {
    wf_status_set(&ks, done.code, "%s", wf_status_message(&done));
    goto fail;
  }
  if (check_outputs(n, outs, &ks))
    goto fail;

  if (created && k->def.destroy)
    k->def.destroy(state);
  for (i = 0; i < n->num_outputs; i++)
    outputs[i] = outs[i];
  wf__free(outs);
  wf_status_reset(&done);
  wf_status_reset(&ks); /* a kernel may leave a message and still succeed */
  return WF_OK;

fail:
  if (created && k->def.destroy)
    k->def.destroy(state);
  if (outs)
    for (i = 0; i < n->num_outputs; i++)
      wf_tensor_release(outs[i]);
  wf__free(outs);
  rc = wf_status_set(st, ks.code,
                     "node '%s' (op '%s') on device type '%s', kernel '%s' "
                     "of plugin '%s': %s%s",
                     n->name, n->op->def.name, k->def.device_type,
                     k->def.label ? k->def.label : "(unlabelled)", k->plugin,
                     phase, wf_status_message(&ks));
  wf_status_reset(&ks);
  wf_status_reset(&done);
  return rc;
}

/* ---- the host table's kernel_* entries ---------------------------------- */

int32_t wf__kernel_num_inputs(const wf_kernel_ctx *ctx) {
  return ctx->num_inputs;
}

int32_t wf__kernel_num_outputs(const wf_kernel_ctx *ctx) {
  return ctx->num_outputs;
}

const wf_tensor *wf__kernel_input(const wf_kernel_ctx *ctx, int32_t i) {
  if (!ctx->inputs || i < 0 || i >= ctx->num_inputs)
    return NULL;
  return ctx->inputs[i];
}

/* Why output i cannot be set now (check_output_slot's error). */
static int output_slot_error(const wf_kernel_ctx *ctx, int32_t i,
                             wf_status *st) {
  if (!ctx->outputs)
    return wf_status_set(st, WF_FAILED_PRECONDITION,
                         "node '%s': outputs can only be made during "
                         "compute",
                         ctx->node->name);
  if (i < 0 || i >= ctx->num_outputs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "node '%s': output %d out of range (the node has "
                         "%d)",
                         ctx->node->name, (int)i, ctx->num_outputs);
  return WF_OK;
}

/* Checks that output i can be set now (the error, out of line). */
static inline int check_output_slot(const wf_kernel_ctx *ctx, int32_t i,
                                    wf_status *st) {
  if (ctx->outputs && i >= 0 && i < ctx->num_outputs)
    return WF_OK;
  return output_slot_error(ctx, i, st);
}

/* Output i made over input j when the arena's rules allow it
 * (wf__arena_may_overwrite): input j's tensor itself, retained (the input
 * slot keeps its reference until the node is done, so the count never
 * drops to zero on the way); else NULL. */
static wf_tensor *take_over(wf_kernel_ctx *ctx, int32_t i, int32_t j,
                            const wf_shape *shape) {
  if (!ctx->arena || !ctx->inputs || j < 0 || j >= ctx->num_inputs)
    return NULL;
  wf_tensor *in = (wf_tensor *)ctx->inputs[j];
  if (!wf__arena_may_overwrite(ctx->arena, ctx->in_base + j, in,
                               ctx->node->output_dtypes[i], shape))
    return NULL;
  wf_tensor_retain(in);
  if (ctx->outputs[i])
    wf_tensor_release(ctx->outputs[i]);
  ctx->outputs[i] = in;
  wf__memplan_count_in_place();
  return in;
}

wf_tensor *wf__kernel_output_new(wf_kernel_ctx *ctx, int32_t i,
                                 const wf_shape *shape, wf_status *st) {
  wf_tensor *t;
  if (check_output_slot(ctx, i, st))
    return NULL;
  if (ctx->node->output_dtypes[i] == WF_STRING) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "node '%s': output %d is a string tensor, which is made "
                  "from its strings (the host's tensor_new_strings) and "
                  "handed over with kernel_output_set",
                  ctx->node->name, (int)i);
    return NULL;
  }
  /* An output made twice in one call lets go of the first one first, so
   * its planned buffer is free for the second. */
  if (ctx->outputs[i]) {
    wf_tensor_release(ctx->outputs[i]);
    ctx->outputs[i] = NULL;
  }
  /* WF_KERNEL_IN_PLACE: output 0 over input 0 where the plan expects it
   * and nothing else reads the input. */
  if (i == 0 && ctx->arena && ctx->kernel &&
      (ctx->kernel->def.flags & WF_KERNEL_IN_PLACE) &&
      wf__arena_in_place(ctx->arena, ctx->out_base) &&
      (t = take_over(ctx, 0, 0, shape)))
    return t;
  if (ctx->device_memory && !wf__kernel_host_output(ctx->kernel, i) &&
      wf__dtype_movable(ctx->node->output_dtypes[i]))
    t = wf__tensor_new_on(ctx->device, ctx->node->output_dtypes[i], shape,
                          st);
  else if (ctx->arena)
    t = wf__arena_output(ctx->arena, ctx->out_base + i,
                         ctx->node->output_dtypes[i], shape, st);
  else
    t = wf__tensor_new_shape(ctx->node->output_dtypes[i], shape, st);
  if (!t) {
    wf_status_prefix(st, "node '%s': output %d", ctx->node->name, (int)i);
    return NULL;
  }
  ctx->outputs[i] = t;
  return t;
}

wf_tensor *wf__kernel_output_forward(wf_kernel_ctx *ctx, int32_t i,
                                     const int32_t *candidates, int32_t n,
                                     const wf_shape *shape, wf_status *st) {
  if (check_output_slot(ctx, i, st))
    return NULL;
  for (int32_t c = 0; c < n; c++) {
    wf_tensor *in = take_over(ctx, i, candidates[c], shape);
    if (in)
      return in;
  }
  return wf__kernel_output_new(ctx, i, shape, st);
}

int wf__kernel_output_set(wf_kernel_ctx *ctx, int32_t i, wf_tensor *t,
                          wf_status *st) {
  int rc = check_output_slot(ctx, i, st);
  if (rc)
    return rc;
  if (!t)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "node '%s': output %d set to no tensor",
                         ctx->node->name, (int)i);
  if (wf_tensor_dtype(t) != ctx->node->output_dtypes[i])
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "node '%s': output %d is %s, given a %s tensor",
                         ctx->node->name, (int)i,
                         wf_dtype_name(ctx->node->output_dtypes[i]),
                         wf_dtype_name(wf_tensor_dtype(t)));
  wf_tensor_retain(t);
  wf_tensor_release(ctx->outputs[i]);
  ctx->outputs[i] = t;
  return WF_OK;
}

int wf__kernel_attr(const wf_kernel_ctx *ctx, const char *name,
                    wf_attr_value *out) {
  const wf_attr_value *v = name ? wf__node_attr(ctx->node, name) : NULL;
  if (!v)
    return -1;
  *out = *v;
  return 0;
}

int32_t wf__kernel_output_dtype(const wf_kernel_ctx *ctx, int32_t i) {
  if (i < 0 || i >= ctx->num_outputs)
    return WF_DTYPE_INVALID;
  return ctx->node->output_dtypes[i];
}

const char *wf__kernel_node_name(const wf_kernel_ctx *ctx) {
  return ctx->node->name;
}

void wf__kernel_done(wf_kernel_ctx *ctx, int32_t code, const char *fmt,
                     ...) {
  struct wf__kernel_wait *w;
  wf_status local = {WF_OK, NULL};
  const wf_status *st = NULL;
  if (code != WF_OK) {
    va_list ap;
    va_start(ap, fmt);
    wf__status_vset(&local, (wf_code)code, fmt ? fmt : "kernel failed", ap);
    va_end(ap);
    st = &local;
  }
  if (ctx->on_done) {
    ctx->done = 1;
    ctx->on_done(ctx, st);
    wf_status_reset(&local);
    return;
  }
  w = ctx->wait;
  assert(w && "kernel_done on a context that is not running an async kernel");
  pthread_mutex_lock(&w->lock);
  if (st && wf_status_code(st) != WF_OK && ctx->status)
    wf_status_set(ctx->status, wf_status_code(st), "%s", wf_status_message(st));
  ctx->done = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
  wf_status_reset(&local);
}

int wf__kernel_output_shape(const wf_kernel_ctx *ctx, int32_t i,
                            wf_shape *shape, wf_status *st) {
  const wf_node *n = ctx->node;
  if (i < 0 || i >= ctx->num_outputs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "node '%s' (op '%s') has no output %d", n->name,
                         n->op->def.name, (int)i);
  wf_shape in_small[8], out_small[8];
  const wf_tensor *val_small[8];
  wf_shape *in = ctx->num_inputs <= 8
                     ? in_small
                     : wf__calloc((size_t)ctx->num_inputs, sizeof *in);
  wf_shape *out = ctx->num_outputs <= 8
                      ? out_small
                      : wf__calloc((size_t)ctx->num_outputs, sizeof *out);
  const wf_tensor **val =
      ctx->num_inputs <= 8 ? val_small
                           : wf__calloc((size_t)ctx->num_inputs, sizeof *val);
  int rc = 0;
  if (!in || !out || !val) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "node '%s': out of memory inferring shapes", n->name);
    goto done;
  }
  /* The shape function may read the values of the inputs in host memory
   * (a shape vector, a size), as it reads a Const's while building. */
  for (int k = 0; k < ctx->num_inputs; k++) {
    wf_tensor_shape(ctx->inputs[k], &in[k]);
    val[k] = !ctx->device_memory || wf__kernel_host_input(ctx->kernel, k)
                 ? ctx->inputs[k]
                 : NULL;
  }
  rc = wf__node_infer_shapes_values(n, in, val, out, st);
  if (!rc)
    *shape = out[i];
done:
  if (in != in_small)
    wf__free(in);
  if (out != out_small)
    wf__free(out);
  if (val != val_small)
    wf__free(val);
  return rc;
}

int64_t wf__kernel_step(const wf_kernel_ctx *ctx) {
  return ctx->step_ctx ? ctx->step_ctx->step : 0;
}

void *wf__kernel_device_state(const wf_kernel_ctx *ctx) {
  return ctx->device ? ctx->device->desc.state : NULL;
}

int wf__kernel_host_input(const wf__kernel *k, int i) {
  return i >= 0 && i < 64 && ((k->def.host_inputs >> i) & 1u);
}

int wf__kernel_host_output(const wf__kernel *k, int i) {
  return i >= 0 && i < 64 && ((k->def.host_outputs >> i) & 1u);
}

static _Thread_local const wf__device *current_memory;

const wf__device *wf__kernel_current_memory(void) { return current_memory; }

void wf__kernel_set_current_memory(const wf__device *d) {
  current_memory = d;
}
