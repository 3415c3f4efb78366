/* core/base/log.h — the log the core and plugins write to (core/base/log.c). */
#ifndef WF_CORE_LOG_H
#define WF_CORE_LOG_H

#include <stdarg.h>

#include <weft/plugin.h>

/* Writes "weft: [who] level: message" to stderr when level passes
 * $WEFT_LOG_LEVEL (error, warning, info, debug or 0-3; default warning).
 * Thread-safe: one line is written with one call. */
void wf__log(int32_t level, const char *who, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);
/* 1 when a message of level would be written. */
int wf__log_enabled(int32_t level);
/* wf__log with a va_list (the host table's log entry). */
void wf__log_v(int32_t level, const char *who, const char *fmt, va_list ap);

#endif
