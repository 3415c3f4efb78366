/* core/compile/plugin_passes.h — graph passes registered by plugins
 * (wf_pass_def): running them on a working graph, and the host table's
 * pass_* and node_* entries they call (core/compile/plugin_passes.c). */
#ifndef WF_CORE_PLUGIN_PASSES_H
#define WF_CORE_PLUGIN_PASSES_H

#include <weft/plugin.h>

#include "compile/work.h"

/* Runs every plugin pass of rt's registry that the config does not switch
 * off ([passes] NAME = false), in increasing order, on env's working
 * graph. After each, the graph is checked (no cycle; every input, fetch
 * and target a node of the graph); a pass that fails or leaves a broken
 * graph has its change discarded and is named in a warning, or in the
 * error when [plugins] strict is true. after_each (may be NULL) is called
 * with the pass's name after each pass that ran (Graphviz dumps). */
int wf__run_plugin_passes(wf__pass_env *env,
                          int (*after_each)(void *arg, const char *name,
                                            wf_status *st),
                          void *arg, wf_status *st);

/* The host table's entries (contracts in weft/plugin.h). */
int32_t wf__pass_num_nodes(const wf_pass_ctx *ctx);
wf_node *wf__pass_node(const wf_pass_ctx *ctx, int32_t i);
int32_t wf__pass_num_consumers(const wf_pass_ctx *ctx, wf_output o);
int wf__pass_is_fetched(const wf_pass_ctx *ctx, wf_output o);
int wf__pass_match(const wf_pass_ctx *ctx, wf_node *root,
                   const wf_pattern_node *pattern, int32_t n, wf_node **out);
wf_node *wf__pass_add_node(wf_pass_ctx *ctx, const char *op, const char *name,
                           const char *device, const wf_output *inputs,
                           int32_t ninputs,
                           const wf_attr_item *attrs, int32_t nattrs,
                           wf_status *st);
int wf__pass_replace(wf_pass_ctx *ctx, wf_output old, wf_output with,
                     wf_status *st);
int wf__pass_set_input(wf_pass_ctx *ctx, wf_node *n, int32_t i, wf_output src,
                       wf_status *st);
int wf__pass_add_control_edge(wf_pass_ctx *ctx, wf_node *from, wf_node *to,
                              wf_status *st);
void wf__pass_remove_control_edge(wf_pass_ctx *ctx, wf_node *from,
                                  wf_node *to);
const char *wf__node_op_of(const wf_node *n);
const char *wf__node_name_of(const wf_node *n);
const char *wf__node_device_of(const wf_node *n);
int32_t wf__node_num_inputs_of(const wf_node *n);
wf_output wf__node_input_of(const wf_node *n, int32_t i);
int32_t wf__node_num_outputs_of(const wf_node *n);
int wf__node_output_info(const wf_node *n, int32_t i, int32_t *dtype,
                         wf_shape *shape);
int wf__node_attr_of(const wf_node *n, const char *name, wf_attr_value *out);
int32_t wf__node_num_control_inputs_of(const wf_node *n);
wf_node *wf__node_control_input_of(const wf_node *n, int32_t i);
int32_t wf__node_num_control_consumers_of(const wf_node *n);
int wf__pass_has_kernel(const wf_pass_ctx *ctx, const char *op,
                        const char *device, int32_t dtype);
int32_t wf__pass_kernel_device(const wf_pass_ctx *ctx, const char *op,
                               const char *device, int32_t dtype);

#endif
