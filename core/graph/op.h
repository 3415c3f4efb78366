/* core/graph/op.h — an op as the graph sees it: the core's normalised copy
 * of a plugin's wf_op_def (the current ABI layout, argument and attribute
 * lists counted). The registry that makes and owns them is
 * core/plugin/registry.c; a graph finds them through the lookup it was
 * made with (core/graph/graph_internal.h). */
#ifndef WF_CORE_OP_H
#define WF_CORE_OP_H

#include <weft/plugin.h>

typedef struct wf__op {
  wf_op_def def;       /* inputs/outputs/attrs point at the arrays below */
  wf_arg_def *inputs;  /* num_inputs entries + WF_ARG_END */
  wf_arg_def *outputs; /* num_outputs entries + WF_ARG_END */
  wf_attr_def *attrs;  /* num_attrs entries + WF_ATTR_END */
  int num_inputs, num_outputs, num_attrs;
  const char *plugin; /* registering plugin's name */
} wf__op;

/* Index of op's attribute called name; -1 if absent (core/graph/graph.c). */
int wf__op_attr_index(const wf__op *op, const char *name);

/* Finds the op called name in ops (the lookup's own table), or NULL. */
typedef const wf__op *wf__op_lookup_fn(const void *ops, const char *name);

#endif
