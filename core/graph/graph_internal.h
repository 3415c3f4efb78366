/* core/graph/graph_internal.h — graph and node internals shared by the core's passes,
 * the kernel contexts and (later) the executor. */
#ifndef WF_CORE_GRAPH_H
#define WF_CORE_GRAPH_H

#include <weft/graph.h>

#include "graph/op.h"
#include "base/strmap.h"

typedef struct wf__attr {
  char *name;
  wf_attr_value v; /* owned deep copy (core/graph/attr.h) */
} wf__attr;

struct wf_node {
  wf_graph *graph;
  int id;               /* index in graph->nodes */
  char *name;
  const wf__op *op;
  char *device;         /* requested device, "" if none */
  wf_output *inputs;    /* flattened: list arguments expanded in order */
  int num_inputs;
  wf_node **control_inputs;
  int num_control_inputs;
  wf_dtype *output_dtypes;
  wf_shape *output_shapes;
  int num_outputs;      /* flattened like inputs */
  wf__attr *attrs;      /* every attribute of the op, defaults filled in */
  int num_attrs;
  /* Consumers, maintained as nodes and control edges are added. */
  wf_node **data_consumers; /* one entry per consuming input slot */
  int num_data_consumers;
  wf_node **control_consumers;
  int num_control_consumers;
};

/* A scoped base name and where the search for its next free suffix
 * resumes (make_unique in graph.c). */
typedef struct name_hint {
  char *base; /* the map's key */
  long next;  /* the first suffix not known to be taken */
} name_hint;

struct wf_graph {
  wf_runtime *rt;      /* borrowed, opaque here (core/plugin) */
  wf__op_lookup_fn *find_op; /* how nodes' ops are found */
  const void *ops;           /* find_op's table: the runtime's registry */
  wf_node **nodes;
  int num_nodes, cap_nodes;
  wf__strmap names;    /* node name -> node; also holds reserved scope names */
  char **scopes;       /* stack of full scope prefixes ("a", "a/b") */
  int num_scopes;
  char **devices;      /* stack of device scopes (requests for new nodes) */
  int num_devices;
  char **reserved;     /* names reserved by scopes (owned) */
  int num_reserved;
  /* Where the search for a free "base_N" resumes, per scoped base: names
   * are never released, so every suffix below it is still taken, and
   * naming the n-th node of an op costs O(1) rather than O(n) look-ups.
   * A cache only: without an entry the search starts at 1. */
  wf__strmap name_hints; /* scoped base -> name_hint (owned, below) */
  name_hint **hints;
  int num_hints;
};

/* A new empty graph whose ops are found by find_op in ops; rt is kept for
 * wf_graph_runtime. wf_graph_new (core/plugin/runtime.c) passes the
 * runtime's registry. NULL when out of memory. */
wf_graph *wf__graph_new(wf_runtime *rt, wf__op_lookup_fn *find_op,
                        const void *ops);

/* The attribute called name on n (defaults filled in), or NULL. */
const wf_attr_value *wf__node_attr(const wf_node *n, const char *name);

/* Runs n's op shape inference again with the given input shapes (for
 * executors that know the actual shapes); out receives num_outputs shapes. */
int wf__node_infer_shapes(const wf_node *n, const wf_shape *input_shapes,
                          wf_shape *out, wf_status *st);
/* The same where the caller also has input values (input_values[i] NULL
 * when it has not input i in host memory; the array may be NULL): the
 * shape function's shape_input_value sees them, as it sees a Const's.
 * Errors are the shape function's own, not prefixed with the node (for a
 * kernel, whose errors the executor prefixes). */
int wf__node_infer_shapes_values(const wf_node *n,
                                 const wf_shape *input_shapes,
                                 const wf_tensor *const *input_values,
                                 wf_shape *out, wf_status *st);

/* Shape-inference contexts (struct wf_shape_ctx is private to graph.c): the
 * host table's shape_* entries. A context lives only during one call of an
 * op's shape function. Inputs are the node's flattened inputs. */
int32_t wf__shape_num_inputs(const wf_shape_ctx *ctx);
int32_t wf__shape_num_outputs(const wf_shape_ctx *ctx);
/* Input i's dtype and shape; 0, or -1 when i is out of range. */
int wf__shape_input(const wf_shape_ctx *ctx, int32_t i, int32_t *dtype,
                    wf_shape *shape);
/* The value of input i: the one given to wf__node_infer_shapes_values,
 * else the "value" tensor attribute when input i is produced by a node
 * of a constant op (WF_OP_CONSTANT), else NULL. Borrowed from the caller
 * or the graph. */
const wf_tensor *wf__shape_input_value(const wf_shape_ctx *ctx, int32_t i);
/* Attribute name of the node (defaults applied); 0, or -1 when absent. The
 * value is borrowed from the graph. */
int wf__shape_attr(const wf_shape_ctx *ctx, const char *name,
                   wf_attr_value *out);
/* Sets output i's shape. An index out of range or a malformed shape is
 * reported as the node's error once the shape function returns. */
void wf__shape_set_output(wf_shape_ctx *ctx, int32_t i, const wf_shape *s);
const char *wf__shape_node_name(const wf_shape_ctx *ctx);

/* Adds a node of op from a flat input list: an op's list argument takes as
 * many inputs as its number attribute in attrs says, or (when it is the
 * only list) all that the fixed arguments leave. NULL with st set when the
 * node is refused. */
wf_node *wf__node_add_flat(wf_graph *g, const char *op, const char *name,
                           const wf_output *inputs, int ninputs,
                           const wf_attr_item *attrs, int nattrs,
                           wf_status *st);
/* The same as a description not yet finished (never NULL), for callers
 * that set more (a device) before wf_node_desc_finish. */
wf_node_desc *wf__node_desc_flat(wf_graph *g, const char *op,
                                 const char *name, const wf_output *inputs,
                                 int ninputs, const wf_attr_item *attrs,
                                 int nattrs);

/* A description whose full name (scopes included, as in "a/b/c") is given
 * as is, ignoring the current scope: for copying nodes between graphs. */
wf_node_desc *wf__node_desc_new_full(wf_graph *g, const char *op,
                                     const char *full_name);
/* Makes input i of n read src instead (same dtype), keeping consumer lists
 * right. The caller keeps the graph acyclic. */
int wf__node_set_input(wf_node *n, int i, wf_output src, wf_status *st);
/* Makes every data consumer of `from` read `to` instead. */
int wf__graph_redirect(wf_graph *g, wf_output from, wf_output to,
                       wf_status *st);

/* Removes the control edge from -> to if there is one. */
void wf__graph_remove_control_edge(wf_node *from, wf_node *to);

/* core/io/graph_file.c: serialises exactly nodes[0..n) of g, in that order
 * (each node's inputs must come earlier in the list), as
 * wf_graph_to_buffer does: *buf freed with free(). */
int wf__graph_nodes_to_buffer(const wf_graph *g, const wf_node *const *nodes,
                              int n, void **buf, size_t *len, wf_status *st);

/* The host table's grad_* entries (core/compile/gradients.c). */
int32_t wf__grad_num_inputs(const wf_grad_ctx *c);
int32_t wf__grad_num_outputs(const wf_grad_ctx *c);
wf_output wf__grad_input(const wf_grad_ctx *c, int32_t i);
wf_output wf__grad_output(const wf_grad_ctx *c, int32_t i);
wf_output wf__grad_output_grad(const wf_grad_ctx *c, int32_t i);
int wf__grad_attr(const wf_grad_ctx *c, const char *name, wf_attr_value *out);
int wf__grad_tensor_info(const wf_grad_ctx *c, wf_output t, int32_t *dtype,
                         wf_shape *shape);
wf_node *wf__grad_add_node(wf_grad_ctx *c, const char *op,
                           const wf_output *inputs, int32_t ninputs,
                           const wf_attr_item *attrs, int32_t nattrs,
                           wf_status *st);
void wf__grad_set_input_grad(wf_grad_ctx *c, int32_t i, wf_output g);
void wf__grad_set_input_grad_sparse(wf_grad_ctx *c, int32_t i,
                                    wf_output indices, wf_output values,
                                    wf_output dense_shape);
const char *wf__grad_node_name(const wf_grad_ctx *c);

#endif
