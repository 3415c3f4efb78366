/* core/exec/core_ops.h — the description of the core's own ops (core/exec/core_ops.c),
 * registered by every runtime before the plugins it loads. */
#ifndef WF_CORE_CORE_OPS_H
#define WF_CORE_CORE_OPS_H

#include <weft/export.h>
#include <weft/plugin.h>

const wf_plugin_desc *wf__core_ops(void);

#endif
