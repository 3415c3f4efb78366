/* tools/inspect.h — the `weft` commands that inspect a runtime or data files
 * (version, plugins, ops, devices, data): the options tools/weft.c parses
 * for all of them, each command's entry (tools/cmd_*.c), and the JSON
 * helpers they share (tools/inspect.c). */
#ifndef WEFT_TOOLS_INSPECT_H
#define WEFT_TOOLS_INSPECT_H

#include <jansson.h>

#include <weft/weft.h>

#define MAX_DATA_OPTIONS 64

typedef struct opts {
  const char *config; /* --config FILE */
  int json;           /* --json */
  const char *device; /* ops --device TYPE */
  const char *op;     /* ops NAME */
  /* data ACTION SOURCE [-n N] [--format F] [--option KEY=VALUE]... */
  const char *action;
  const char *source;
  long records;                          /* -n N (head); -1 when not given */
  const char *format;                    /* --format F */
  const char *options[MAX_DATA_OPTIONS]; /* --option KEY[:TYPE]=VALUE */
  int noptions;
} opts;

/* Runs the command with the parsed options; rt is NULL for commands that
 * need no runtime. Returns the exit status (0, 1 failure, 2 bad usage). */
typedef int weft_inspect_fn(wf_runtime *rt, const opts *o);

typedef struct weft_inspect_command {
  const char *name;
  weft_inspect_fn *run;
  int needs_runtime;
  const char *summary;
  const char *help;
} weft_inspect_command;

extern const weft_inspect_command weft_version_command, weft_plugins_command,
    weft_ops_command, weft_devices_command, weft_data_command;

/* Prints j (taking its reference) indented on stdout; 1 when it is NULL
 * (out of memory, said on stderr) or cannot be written. */
int weft_emit_json(json_t *j);
/* A JSON string of s, or null for NULL. */
json_t *weft_json_str_or_null(const char *s);

#endif
