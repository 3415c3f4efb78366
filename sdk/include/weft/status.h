/* weft/status.h — status objects: a code and a message.
 *
 * Every fallible call takes a wf_status * last and also returns the code, so
 * `if (wf_x(..., st)) goto fail;` reads naturally. */
#ifndef WEFT_STATUS_H
#define WEFT_STATUS_H

#include <weft/export.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new status holding WF_OK. Owned by the caller: free with wf_status_free.
 * Returns NULL only when memory is exhausted. */
WF_API wf_status *wf_status_new(void);
WF_API void wf_status_free(wf_status *st);

/* Sets code and a printf-style message (replacing any earlier one) and
 * returns code. Setting WF_OK clears the message. st may be NULL. */
WF_API wf_code wf_status_set(wf_status *st, wf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Puts "prefix: " in front of the current message (for adding context such as
 * a node or file name as an error travels up). */
WF_API void wf_status_prefix(wf_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
WF_API void wf_status_reset(wf_status *st);
WF_API wf_code wf_status_code(const wf_status *st);
/* The message; "" when OK. Valid until the status is changed or freed. */
WF_API const char *wf_status_message(const wf_status *st);

/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN_CODE" for values outside the set. */
WF_API const char *wf_code_name(wf_code code);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_STATUS_H */
