/* core/data/data_ops.c — how graphs read iterators: the "core-data" plugin
 * (the IteratorGetNext op, its CPU kernel, its registration as not
 * differentiable), registered like any plugin's description by every
 * runtime, reading the session's attached iterators (core/exec/iterators.c)
 * through its step context; and wf_graph_add_get_next.
 *
 * Iteration itself is core/data/iterator.c's. */
#include <config.h>

#include <pthread.h>
#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "exec/iterators.h"
#include "exec/kernel.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* ---- IteratorGetNext ------------------------------------------------------------ */

static const wf_host *host;

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

/* Output i has the i-th of output_shapes (unknown when not given). */
static int get_next_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value types, shapes;
  if (host->shape_attr(ctx, "output_types", &types) ||
      host->shape_attr(ctx, "output_shapes", &shapes))
    return 0;
  if (shapes.count != 0 && shapes.count != types.count) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "output_shapes has %lld shapes for %lld output_types",
                     (long long)shapes.count, (long long)types.count);
    return WF_INVALID_ARGUMENT;
  }
  for (int64_t i = 0; i < shapes.count; i++)
    host->shape_set_output(ctx, (int32_t)i, &shapes.u.shapes[i]);
  return 0;
}

/* Elements with more fields than this are gathered on the heap. */
#define STACK_FIELDS 16

static int get_next(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value name, shapes;
  wf_tensor *stack_f[STACK_FIELDS], **f = stack_f;
  int n = ctx->num_outputs, code = WF_OK;
  (void)state;

  if (wf__kernel_attr(ctx, "iterator", &name) ||
      wf__kernel_attr(ctx, "output_shapes", &shapes))
    return wf_status_set(st, WF_INTERNAL, "attributes missing");
  const wf__step_ctx *sc = ctx->step_ctx;
  wf_iterator *it = sc && sc->iterators
                        ? wf__iterators_find(sc->iterators, name.u.s)
                        : NULL;
  if (!it)
    return wf_status_set(st, WF_FAILED_PRECONDITION,
                         "no iterator is attached as '%s' to the session "
                         "running this step (wf_session_attach_iterator)",
                         name.u.s);
  const wf_dataset *ds = wf_iterator_dataset(it);
  if (wf_dataset_num_fields(ds) != n)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator '%s' gives %d fields, the node has %d "
                         "outputs",
                         name.u.s, wf_dataset_num_fields(ds), n);
  if (n > STACK_FIELDS && !(f = wf__calloc((size_t)n, sizeof *f)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  int rc = wf_iterator_next(it, f, st);
  if (rc == WF_OUT_OF_RANGE) {
    code = wf_status_set(st, WF_OUT_OF_RANGE, "iterator '%s': end of data",
                         name.u.s);
    goto out;
  }
  if (rc) {
    wf_status_prefix(st, "iterator '%s'", name.u.s);
    code = rc;
    goto out;
  }
  for (int i = 0; i < n && !code; i++) {
    const wf_shape *want = i < shapes.count ? &shapes.u.shapes[i] : NULL;
    if (want && !wf_shape_compatible(want, &f[i]->shape)) {
      char a[96], b[96];
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator '%s': field %d ('%s') has shape %s, "
                           "the node's output_shapes say %s",
                           name.u.s, i, ds->fields[i].name,
                           wf_shape_str(&f[i]->shape, a, sizeof a),
                           wf_shape_str(want, b, sizeof b));
      break;
    }
    code = wf__kernel_output_set(ctx, i, f[i], st);
    if (code)
      wf_status_prefix(st, "iterator '%s' field '%s'", name.u.s,
                       ds->fields[i].name);
  }
  wf__element_clear(f, n);

out:
  if (f != stack_f)
    wf__free(f);
  return code;
}

static const wf_arg_def get_next_out[] = {
    {WF_STRUCT_INIT(wf_arg_def), .name = "components",
     .type_attr = "output_types",
     .doc = "the fields of the next element, in the dataset's order"},
    WF_ARG_END};

static const wf_attr_def get_next_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "iterator", .type = WF_ATTR_STRING,
     .doc = "the name the iterator is attached under "
            "(wf_session_attach_iterator)"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "output_types",
     .type = WF_ATTR_LIST | WF_ATTR_DTYPE, .has_minimum = 1, .minimum = 1,
     .doc = "dtype of each field"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "output_shapes",
     .type = WF_ATTR_LIST | WF_ATTR_SHAPE, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_SHAPE, .count = 0},
     .doc = "shape of each field (empty: unknown); each element is checked "
            "against them"},
    WF_ATTR_END};

static const wf_op_def get_next_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "IteratorGetNext",
    .outputs = get_next_out,
    .attrs = get_next_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = get_next_shape,
    .doc = "The next element of the iterator attached to the session under "
           "`iterator` (weft/data.h). Fails with OUT_OF_RANGE at the end of "
           "the data, DATA_LOSS for a bad record.",
};

static const wf_kernel_def get_next_cpu = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "IteratorGetNext",
    .device_type = "cpu",
    .label = "core",
    .compute = get_next,
};

static const wf_gradient_def get_next_grad = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "IteratorGetNext",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};

static const wf_op_def *const ops[] = {&get_next_op, NULL};
static const wf_kernel_def *const kernels[] = {&get_next_cpu, NULL};
static const wf_gradient_def *const grads[] = {&get_next_grad, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "core-data",
    .version = WF_VERSION_STRING,
    .license = "MIT",
    .description = "the input pipeline's graph op: IteratorGetNext reads an "
                   "iterator attached to the session",
    .ops = ops,
    .kernels = kernels,
    .gradients = grads,
    .init = init,
};

const wf_plugin_desc *wf__data_ops(void) { return &desc; }

/* ---- building -------------------------------------------------------------------- */

wf_node *wf_graph_add_get_next(wf_graph *g, const char *iterator,
                               const wf_dataset *ds, const char *name,
                               wf_status *st) {
  int n = ds->nfields;
  wf_dtype *types = wf__calloc((size_t)n, sizeof *types);
  wf_shape *shapes = wf__calloc((size_t)n, sizeof *shapes);
  if (!types || !shapes) {
    wf__free(types);
    wf__free(shapes);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "adding IteratorGetNext: out of memory");
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    types[i] = ds->fields[i].dtype;
    shapes[i] = ds->fields[i].shape;
  }
  wf_node_desc *d = wf_node_desc_new(g, "IteratorGetNext", name);
  wf_node_desc_set_attr_string(d, "iterator", iterator ? iterator : "");
  wf_node_desc_set_attr_dtype_list(d, "output_types", types, n);
  wf_attr_value v = {.type = WF_ATTR_LIST | WF_ATTR_SHAPE, .count = n};
  v.u.shapes = shapes;
  wf_node_desc_set_attr(d, "output_shapes", &v);
  wf_node *node = wf_node_desc_finish(d, st);
  wf__free(types);
  wf__free(shapes);
  return node;
}
