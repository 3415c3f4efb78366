/* weft/graph.h — building dataflow graphs.
 *
 * A graph owns its nodes. Nodes are added through a description that is
 * validated as a whole when finished: the op must exist, inputs must match
 * the op's arity and dtypes, attributes its definition; then shape inference
 * runs. A refused node leaves the graph exactly as it was. Since a node's
 * inputs must already exist, data edges cannot form a cycle; control edges
 * added afterwards are checked. Graphs are not thread-safe for writing. */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include <weft/export.h>
#include <weft/runtime.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_node_desc wf_node_desc;

/* A new empty graph whose ops come from rt. Owned by the caller; free it
 * before the runtime. NULL when out of memory. */
WF_API wf_graph *wf_graph_new(wf_runtime *rt);
WF_API void wf_graph_free(wf_graph *g);
WF_API wf_runtime *wf_graph_runtime(const wf_graph *g);

/* ---- adding nodes -------------------------------------------------------- */

/* Starts describing a node of op `op`. name NULL: a unique name is made from
 * the op ("Add", "Add_1", ...). The current name scope is prefixed to it.
 * Never fails here: errors are reported by finish. Ownership passes to
 * wf_node_desc_finish, or back with wf_node_desc_free. */
WF_API wf_node_desc *wf_node_desc_new(wf_graph *g, const char *op,
                                      const char *name);
WF_API void wf_node_desc_add_input(wf_node_desc *d, wf_output in);
/* Adds a list input (for an argument with number_attr). */
WF_API void wf_node_desc_add_input_list(wf_node_desc *d, const wf_output *in,
                                        int n);
WF_API void wf_node_desc_add_control_input(wf_node_desc *d, wf_node *n);
/* Requested device, e.g. "cpu:0" or "cpu"; validated later by placement. */
WF_API void wf_node_desc_set_device(wf_node_desc *d, const char *device);
/* Attribute setters copy their values. */
WF_API void wf_node_desc_set_attr_int(wf_node_desc *d, const char *name,
                                      int64_t v);
WF_API void wf_node_desc_set_attr_float(wf_node_desc *d, const char *name,
                                        double v);
WF_API void wf_node_desc_set_attr_bool(wf_node_desc *d, const char *name,
                                       int v);
WF_API void wf_node_desc_set_attr_string(wf_node_desc *d, const char *name,
                                         const char *v);
WF_API void wf_node_desc_set_attr_dtype(wf_node_desc *d, const char *name,
                                        wf_dtype v);
/* rank -1: unknown rank; dims may hold -1 for unknown dimensions. */
WF_API void wf_node_desc_set_attr_shape(wf_node_desc *d, const char *name,
                                        const int64_t *dims, int rank);
/* Retains t. */
WF_API void wf_node_desc_set_attr_tensor(wf_node_desc *d, const char *name,
                                         wf_tensor *t);
WF_API void wf_node_desc_set_attr_int_list(wf_node_desc *d, const char *name,
                                           const int64_t *v, int n);
WF_API void wf_node_desc_set_attr_float_list(wf_node_desc *d, const char *name,
                                             const double *v, int n);
WF_API void wf_node_desc_set_attr_string_list(wf_node_desc *d,
                                              const char *name,
                                              const char *const *v, int n);
WF_API void wf_node_desc_set_attr_dtype_list(wf_node_desc *d, const char *name,
                                             const wf_dtype *v, int n);
/* Any attribute, scalar or list, from a wf_attr_value (deep-copied). */
WF_API void wf_node_desc_set_attr(wf_node_desc *d, const char *name,
                                  const wf_attr_value *v);

/* Validates and adds the node; frees d either way. Returns the node (owned
 * by the graph) or NULL with st saying which node, op and problem; the graph
 * is then unchanged. Errors: NOT_FOUND (unknown op), INVALID_ARGUMENT
 * (arity, dtype, attribute, shape), ALREADY_EXISTS (name taken). */
WF_API wf_node *wf_node_desc_finish(wf_node_desc *d, wf_status *st);
/* Abandons a description without adding anything. */
WF_API void wf_node_desc_free(wf_node_desc *d);

/* Adds a node of op in one call, from a flat list of inputs: a list
 * argument (number_attr) takes as many inputs as that attribute in attrs
 * says, or, when it is the op's only list argument and attrs leave the
 * number out, every input the fixed arguments leave. name NULL: made from
 * the op as wf_node_desc_new does. Returns the node (owned by the graph),
 * or NULL with st set as wf_node_desc_finish does; the graph is then
 * unchanged. */
WF_API wf_node *wf_graph_add_op(wf_graph *g, const char *op, const char *name,
                                const wf_output *inputs, int ninputs,
                                const wf_attr_item *attrs, int nattrs,
                                wf_status *st);

/* Adds a control edge from -> to. Refused (INVALID_ARGUMENT) when it would
 * create a cycle or either node belongs to another graph. */
WF_API int wf_graph_add_control_edge(wf_graph *g, wf_node *from, wf_node *to,
                                     wf_status *st);

/* Name scopes: nodes created after push get "scope/" (nested scopes join
 * with '/'). A scope name that is taken is made unique the way node names
 * are. Returns the code; INVALID_ARGUMENT for names with '/' or empty. */
WF_API int wf_graph_push_scope(wf_graph *g, const char *name, wf_status *st);
WF_API void wf_graph_pop_scope(wf_graph *g);
/* Device scopes: nodes described after push ask for `device` ("cpu:1",
 * "cuda") unless they set their own; "" asks for nothing. Placement decides
 * (see wf_run_metadata_placement for requests it could not meet). */
WF_API int wf_graph_push_device(wf_graph *g, const char *device,
                                wf_status *st);
WF_API void wf_graph_pop_device(wf_graph *g);
/* A name not used yet in the graph, made from base in the current scope.
 * Written into buf (NUL-terminated); returns buf. */
WF_API char *wf_graph_unique_name(wf_graph *g, const char *base, char *buf,
                                  size_t len);

/* Writes g as Graphviz (dot) to path: one box per node (name and op),
 * data edges labelled "output:input", control edges dotted. */
WF_API int wf_graph_write_dot(const wf_graph *g, const char *path,
                              wf_status *st);

/* Parses "node" or "node:slot" into an output of g. INVALID_ARGUMENT naming
 * the string when the node does not exist or has no such output. */
WF_API int wf_graph_parse_output(const wf_graph *g, const char *name,
                                 wf_output *out, wf_status *st);

/* Writes into dir (created if needed) Graphviz files of what a session
 * would run for this signature: 00-graph.dot (g as it is), then the pruned
 * working graph and the graph after each pass switched on in the config,
 * and 99-partitioned.dot (nodes coloured by device, partitions as
 * clusters, with the transfers between them). */
WF_API int wf_graph_write_dot_passes(wf_graph *g, const wf_output *feeds,
                                     int nfeeds, const wf_output *fetches,
                                     int nfetches, wf_node *const *targets,
                                     int ntargets, const char *dir,
                                     wf_status *st);

/* ---- reading a graph ------------------------------------------------------ */

WF_API int wf_graph_num_nodes(const wf_graph *g);
/* Node i in insertion order (a topological order for data edges). */
WF_API wf_node *wf_graph_node(const wf_graph *g, int i);
/* The node of that full name, or NULL. */
WF_API wf_node *wf_graph_find_node(const wf_graph *g, const char *name);

/* Strings are borrowed: valid until the graph is freed. */
WF_API const char *wf_node_name(const wf_node *n);
WF_API const char *wf_node_op(const wf_node *n);
WF_API const char *wf_node_device(const wf_node *n); /* "" if none asked */
WF_API int wf_node_id(const wf_node *n); /* index in the graph */
WF_API int wf_node_num_inputs(const wf_node *n);
WF_API wf_output wf_node_input(const wf_node *n, int i);
WF_API int wf_node_num_control_inputs(const wf_node *n);
WF_API wf_node *wf_node_control_input(const wf_node *n, int i);
WF_API int wf_node_num_outputs(const wf_node *n);
WF_API wf_dtype wf_node_output_dtype(const wf_node *n, int i);
WF_API void wf_node_output_shape(const wf_node *n, int i, wf_shape *out);
/* The op flags (WF_OP_*) of the node's op. */
WF_API uint32_t wf_node_op_flags(const wf_node *n);
WF_API int wf_node_num_attrs(const wf_node *n);
/* Attribute i's name and value (defaults included); borrowed. */
WF_API const char *wf_node_attr_name(const wf_node *n, int i,
                                     wf_attr_value *out);
/* The attribute called name; NOT_FOUND if the node has none. The value is
 * borrowed from the graph. */
WF_API int wf_node_get_attr(const wf_node *n, const char *name,
                            wf_attr_value *out, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_GRAPH_H */
