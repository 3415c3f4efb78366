/* core/io/checkpoint_ops.c — the Save and Restore graph ops, registered as
 * the built-in "core-checkpoint" plugin by every runtime: Save writes the
 * variables its handle inputs name to a checkpoint file, atomically;
 * Restore checks every one of them against a file and assigns them all, or
 * none.
 *
 * They cover variables only: a session's step counter and iterator
 * positions are wf_session_save's (core/io/checkpoint.c). */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "io/checkpoint_internal.h"
#include "exec/kernel.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* The distinct variables behind the handle inputs (*vars wf__calloc'd). */
static int input_vars(wf_kernel_ctx *ctx, wf__variable ***vars, int *n,
                      wf_status *st) {
  int m = 0;
  wf__variable **v = wf__calloc((size_t)ctx->num_inputs + 1, sizeof *v);

  if (!v)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < ctx->num_inputs; i++) {
    const wf_tensor *h = ctx->inputs[i];
    if (!h || h->dtype != WF_RESOURCE || h->nbytes != sizeof(void *)) {
      wf__free(v);
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input %d is not a variable handle", i);
    }
    wf__variable *var = *(wf__variable *const *)h->data;
    int seen = 0;
    for (int k = 0; k < m; k++)
      seen |= v[k] == var;
    if (!seen)
      v[m++] = var;
  }
  *vars = v;
  *n = m;
  return WF_OK;
}

static int save_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value path;
  wf__variable **vars = NULL;
  int n = 0, code;
  (void)state;

  if (wf__kernel_attr(ctx, "path", &path) || !path.u.s)
    return wf_status_set(st, WF_INTERNAL, "attribute 'path' missing");
  if ((code = input_vars(ctx, &vars, &n, st)))
    return code;
  code =
      wf__checkpoint_save_vars(path.u.s, vars, n, NULL, 0, NULL, NULL, 0, st);
  wf__free(vars);
  return code;
}

static int restore_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf__problems p = WF__PROBLEMS_INIT;
  wf_attr_value path, partial;
  wf__restore_item *items = NULL;
  wf__variable **vars = NULL;
  wf_checkpoint *c = NULL;
  char *what = NULL;
  int n = 0, code;
  (void)state;

  if (wf__kernel_attr(ctx, "path", &path) || !path.u.s ||
      wf__kernel_attr(ctx, "partial", &partial))
    return wf_status_set(st, WF_INTERNAL, "attributes missing");
  if ((code = input_vars(ctx, &vars, &n, st)))
    return code;
  items = wf__calloc((size_t)n + 1, sizeof *items);
  what = wf__asprintf("restoring %s", path.u.s);
  if (!items || !what) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++)
    items[i] = (wf__restore_item){vars[i]->name, vars[i]->dtype, vars[i]->shape,
                                  vars[i], NULL};
  if (!(c = wf__st_open(path.u.s, st))) {
    code = wf_status_code(st);
    goto out;
  }
  wf__restore_check(c, items, n, partial.u.b, &p);
  if ((code = wf__problems_report(&p, what, st)))
    goto out;
  wf__restore_assign(items, n);
out:
  if (items)
    wf__restore_items_clear(items, n);
  wf__problems_deinit(&p);
  wf__st_close(c);
  wf__free(what);
  wf__free(items);
  wf__free(vars);
  return code;
}

static const wf_arg_def handles_in[] = {
    {WF_STRUCT_INIT(wf_arg_def), .name = "resources", .dtype = WF_RESOURCE,
     .number_attr = "N",
     .doc = "N handles () of the variables (a variable named twice counts "
            "once)"},
    WF_ARG_END};

static const wf_attr_def save_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1, .doc = "number of variables"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "path", .type = WF_ATTR_STRING,
     .doc = "the checkpoint file (safetensors, weft/checkpoint.h)"},
    WF_ATTR_END};

static const wf_attr_def restore_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1, .doc = "number of variables"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "path", .type = WF_ATTR_STRING,
     .doc = "the checkpoint file (safetensors, weft/checkpoint.h)"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "partial", .type = WF_ATTR_BOOL,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = 0},
     .doc = "variables the file does not have are left as they are "
            "(otherwise each is an error)"},
    WF_ATTR_END};

static const wf_op_def save_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Save",
    .inputs = handles_in,
    .attrs = save_attrs,
    .flags = WF_OP_STATEFUL,
    .doc = "Writes the current values of the variables to the checkpoint "
           "`path`, each under its name, atomically (a crash or a failed "
           "write leaves the previous file). A variable without a value is "
           "FAILED_PRECONDITION naming it. No outputs: run it as a target.",
};

static const wf_op_def restore_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Restore",
    .inputs = handles_in,
    .attrs = restore_attrs,
    .flags = WF_OP_STATEFUL,
    .doc = "Assigns the variables the values the checkpoint `path` holds "
           "under their names. Every variable is checked first (in the file "
           "unless partial, same dtype and shape, data passing its "
           "checksum); if any check fails nothing is assigned and the error "
           "names every failing variable (DATA_LOSS for a checksum, "
           "INVALID_ARGUMENT otherwise). No outputs: run it as a target.",
};

static const wf_kernel_def save_cpu = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Save", .device_type = "cpu",
    .label = "core", .compute = save_compute};
static const wf_kernel_def restore_cpu = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Restore", .device_type = "cpu",
    .label = "core", .compute = restore_compute};

static const wf_gradient_def save_grad = {WF_STRUCT_INIT(wf_gradient_def),
                                          .op = "Save",
                                          .flags = WF_GRAD_NOT_DIFFERENTIABLE};
static const wf_gradient_def restore_grad = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "Restore",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};

static const wf_op_def *const ops[] = {&save_op, &restore_op, NULL};
static const wf_kernel_def *const kernels[] = {&save_cpu, &restore_cpu, NULL};
static const wf_gradient_def *const grads[] = {&save_grad, &restore_grad, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "core-checkpoint",
    .version = WF_VERSION_STRING,
    .license = "MIT",
    .description = "checkpoint ops: Save writes variables to a safetensors "
                   "file, Restore checks and assigns them from one",
    .ops = ops,
    .kernels = kernels,
    .gradients = grads,
};

const wf_plugin_desc *wf__checkpoint_ops(void) { return &desc; }
