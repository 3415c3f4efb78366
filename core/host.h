/* core/host.h — the table of host functions handed to every plugin. */
#ifndef WF_CORE_HOST_H
#define WF_CORE_HOST_H

#include <weft/plugin.h>

/* The one host table (static, read-only, current ABI). */
const wf_host *wf__host(void);

#endif
