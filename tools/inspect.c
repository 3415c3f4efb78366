/* tools/inspect.c — the JSON output the inspection commands share. */
#include <config.h>

#include <stdio.h>

#include "inspect.h"

int weft_emit_json(json_t *j) {
  if (!j) {
    fprintf(stderr, "weft: out of memory building JSON output\n");
    return 1;
  }
  int rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
  fputc('\n', stdout);
  json_decref(j);
  return rc == 0 ? 0 : 1;
}

json_t *weft_json_str_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}
