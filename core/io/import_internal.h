/* core/io/import_internal.h — the host table's import_* entries
 * (core/io/import.c; contracts in weft/plugin.h). */
#ifndef WF_CORE_IMPORT_INTERNAL_H
#define WF_CORE_IMPORT_INTERNAL_H

#include <weft/plugin.h>

wf_node *wf__import_add_node(wf_import_ctx *ctx, const char *op,
                             const char *name, const wf_output *inputs,
                             int32_t ninputs, const wf_attr_item *attrs,
                             int32_t nattrs, wf_status *st);
wf_node *wf__import_find_node(wf_import_ctx *ctx, const char *name);
int wf__import_add_init(wf_import_ctx *ctx, wf_node *n, wf_status *st);
int wf__import_add_signature(wf_import_ctx *ctx, const char *name,
                             const char *const *input_keys,
                             const wf_output *inputs, int32_t ninputs,
                             const char *const *output_keys,
                             const wf_output *outputs, int32_t noutputs,
                             wf_status *st);
int wf__import_add_gradients(wf_import_ctx *ctx, wf_output y,
                             const wf_output *xs, int32_t nxs, wf_output *dxs,
                             wf_status *st);

#endif
