/* core/base/status.c — status objects: a code and a heap message.
 *
 * Messages use the C library's allocator, not core/base/alloc.h, so that a
 * failure injected into the host allocator still reports its message. A
 * message that cannot be formatted for lack of memory is replaced by a fixed
 * text; the code is always kept. */
#include <config.h>

#include "base/status_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char no_memory_text[] = "(message lost: out of memory)";

wf_status *wf_status_new(void) {
  wf_status *st = calloc(1, sizeof *st);
  if (st)
    st->code = WF_OK;
  return st;
}

void wf_status_free(wf_status *st) {
  if (!st)
    return;
  free(st->message);
  free(st);
}

wf_code wf__status_vset(wf_status *st, wf_code code, const char *fmt,
                        va_list ap) {
  char *msg = NULL;
  if (!st)
    return code;
  if (code != WF_OK) {
    if (!fmt)
      msg = strdup("");
    else if (vasprintf(&msg, fmt, ap) < 0)
      msg = NULL;
  }
  free(st->message);
  st->message = msg;
  st->code = code;
  return code;
}

wf_code wf_status_set(wf_status *st, wf_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__status_vset(st, code, fmt, ap);
  va_end(ap);
  return code;
}

void wf_status_prefix(wf_status *st, const char *fmt, ...) {
  char *prefix = NULL, *msg = NULL;
  va_list ap;
  if (!st || st->code == WF_OK)
    return;
  va_start(ap, fmt);
  if (vasprintf(&prefix, fmt, ap) < 0)
    prefix = NULL;
  va_end(ap);
  if (!prefix)
    return; /* keep the message we have rather than lose it */
  if (asprintf(&msg, "%s: %s", prefix, wf_status_message(st)) < 0)
    msg = NULL;
  free(prefix);
  if (!msg)
    return;
  free(st->message);
  st->message = msg;
}

void wf_status_reset(wf_status *st) {
  if (!st)
    return;
  free(st->message);
  st->message = NULL;
  st->code = WF_OK;
}

wf_code wf_status_code(const wf_status *st) { return st ? st->code : WF_OK; }

const char *wf_status_message(const wf_status *st) {
  if (!st || st->code == WF_OK)
    return "";
  return st->message ? st->message : no_memory_text;
}

const char *wf_code_name(wf_code code) {
  static const char *const names[] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  if ((unsigned)code >= sizeof names / sizeof names[0])
    return "UNKNOWN_CODE";
  return names[code];
}
