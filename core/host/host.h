/* core/host/host.h — the table of host functions handed to every plugin
 * (core/host/host.c), and making a runtime that hands it to them
 * (core/host/runtime_new.c). */
#ifndef WF_CORE_HOST_H
#define WF_CORE_HOST_H

#include <weft/plugin.h>
#include <weft/runtime.h>

/* The one host table (static, read-only, current ABI). */
const wf_host *wf__host(void);


/* A runtime with no plugins at all, whose plugins will be given the core's
 * host table (tests build on it; wf_runtime_new starts from one). */
wf_runtime *wf__runtime_new_empty(const wf_config *cfg, wf_status *st);

#endif
