/* core/plugin/host.h — the table of host functions handed to every plugin, and the
 * log the core writes to through the same filter. */
#ifndef WF_CORE_HOST_H
#define WF_CORE_HOST_H

#include <weft/plugin.h>

/* The one host table (static, read-only, current ABI). */
const wf_host *wf__host(void);

/* Writes "weft: [who] level: message" to stderr when level passes
 * $WEFT_LOG_LEVEL (error, warning, info, debug or 0-3; default warning).
 * Thread-safe: one line is written with one call. */
void wf__log(int32_t level, const char *who, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);
/* 1 when a message of level would be written. */
int wf__log_enabled(int32_t level);

#endif
