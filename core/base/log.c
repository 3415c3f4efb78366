/* core/base/log.c — the log the core and plugins write to (through the
 * host table's log entry): one line per message on stderr, filtered by
 * $WEFT_LOG_LEVEL. Nothing is buffered or kept. */
#include <config.h>

#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- log ---------------------------------------------------------------- */

static const char *const level_names[] = {"error", "warning", "info", "debug"};

/* The highest level written: $WEFT_LOG_LEVEL by name or number. Read on
 * every call so that a program (or a test) may change it at run time. */
static int32_t log_threshold(void) {
  const char *v = getenv("WEFT_LOG_LEVEL");
  if (!v || !*v)
    return WF_LOG_WARNING;
  for (int32_t i = 0; i <= WF_LOG_DEBUG; i++)
    if (strcasecmp(v, level_names[i]) == 0)
      return i;
  if (v[0] >= '0' && v[0] <= '9' && v[1] == '\0')
    return v[0] - '0' > WF_LOG_DEBUG ? WF_LOG_DEBUG : v[0] - '0';
  if (strcasecmp(v, "warn") == 0)
    return WF_LOG_WARNING;
  if (strcasecmp(v, "none") == 0 || strcasecmp(v, "off") == 0)
    return -1;
  return WF_LOG_WARNING;
}

int wf__log_enabled(int32_t level) { return level <= log_threshold(); }

void wf__log_v(int32_t level, const char *who, const char *fmt, va_list ap) {
  char msg[2048];
  if (level < WF_LOG_ERROR)
    level = WF_LOG_ERROR;
  if (level > WF_LOG_DEBUG)
    level = WF_LOG_DEBUG;
  if (!wf__log_enabled(level))
    return;
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* One fprintf call: stdio locks the stream, so lines do not interleave. */
  fprintf(stderr, "weft: [%s] %s: %s\n", who && *who ? who : "?",
          level_names[level], msg);
}

void wf__log(int32_t level, const char *who, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__log_v(level, who, fmt, ap);
  va_end(ap);
}

