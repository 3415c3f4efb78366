/* core/base/status_internal.h — the status object behind weft/status.h, and the va_list
 * setter the host table forwards plugin calls to. */
#ifndef WF_CORE_STATUS_H
#define WF_CORE_STATUS_H

#include <stdarg.h>
#include <weft/status.h>

struct wf_status {
  wf_code code;
  char *message; /* malloc'd; NULL when OK (or when formatting ran out of
                    memory, in which case a fixed text is reported) */
};

/* wf_status_set with a va_list. st may be NULL; returns code. */
wf_code wf__status_vset(wf_status *st, wf_code code, const char *fmt,
                        va_list ap) __attribute__((format(printf, 3, 0)));

#endif
