/* tools/weft.c — the `weft` command-line program: what a runtime has loaded
 * (plugins, ops, devices) and what data files hold (`weft data`), in text
 * or JSON, and the dispatch to the commands with files of their own (graph,
 * ckpt, run: tools/commands.h). It uses only the public API; each
 * subcommand is a table entry with its own help. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <weft/weft.h>

#include "commands.h"

#define MAX_DATA_OPTIONS 64

typedef struct opts {
  const char *config; /* --config FILE */
  int json;           /* --json */
  const char *device; /* ops --device TYPE */
  const char *op;     /* ops NAME */
  /* data ACTION SOURCE [-n N] [--format F] [--option KEY=VALUE]... */
  const char *action;
  const char *source;
  long records;         /* -n N (head); -1 when not given */
  const char *format;   /* --format F */
  const char *options[MAX_DATA_OPTIONS]; /* --option KEY[:TYPE]=VALUE */
  int noptions;
} opts;

typedef int cmd_fn(wf_runtime *rt, const opts *o);

typedef struct command {
  const char *name;
  cmd_fn *run;
  int needs_runtime;
  const char *summary;
  const char *help;
} command;

/* ---- small helpers ------------------------------------------------------ */

static const char *dtype_mask_str(uint32_t mask, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  if ((mask & WF_DTYPES_ALL) == WF_DTYPES_ALL) {
    snprintf(buf, len, "any");
    return buf;
  }
  for (int t = 1; t < WF_DTYPE_COUNT; t++) {
    if (!(mask & WF_DTYPE_BIT(t)))
      continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "",
                     wf_dtype_name((wf_dtype)t));
    if (n < 0 || (size_t)n >= len - used)
      break;
    used += (size_t)n;
  }
  return buf;
}

static const char *attr_type_str(int type, char *buf, size_t len) {
  static const char *const base[] = {"none",   "int",   "float", "bool",
                                     "string", "dtype", "shape", "tensor"};
  int b = WF_ATTR_BASE(type);
  const char *name = b >= 0 && b < 8 ? base[b] : "?";
  if (WF_ATTR_IS_LIST(type))
    snprintf(buf, len, "list(%s)", name);
  else
    snprintf(buf, len, "%s", name);
  return buf;
}

static const char *arg_type_str(const wf_arg_def *a, char *buf, size_t len) {
  const char *t = a->type_attr ? a->type_attr
                               : (wf_dtype_name((wf_dtype)a->dtype)
                                      ? wf_dtype_name((wf_dtype)a->dtype)
                                      : "?");
  if (a->number_attr)
    snprintf(buf, len, "%s * %s", a->number_attr, t);
  else
    snprintf(buf, len, "%s", t);
  return buf;
}

/* Prints json (stealing the reference) on stdout. */
static int emit_json(json_t *j) {
  if (!j) {
    fprintf(stderr, "weft: out of memory building JSON output\n");
    return 1;
  }
  int rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
  fputc('\n', stdout);
  json_decref(j);
  return rc == 0 ? 0 : 1;
}

static json_t *json_str_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

/* Comma-joined device types that have a kernel for op (kernels are sorted by
 * op, then device type), each marked when the config denies all of its
 * kernels for op there. */
static void op_devices(wf_runtime *rt, const char *op, char *buf, size_t len) {
  size_t used = 0;
  int n = wf_runtime_kernel_count(rt);
  buf[0] = '\0';
  for (int i = 0; i < n;) {
    wf_kernel_info k, o;
    int allowed = 0, j = i;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0) {
      i++;
      continue;
    }
    /* Kernels i .. j-1 are op's on k.device_type. */
    for (; j < n; j++) {
      wf_runtime_kernel_get(rt, j, &o);
      if (strcmp(o.op, op) != 0 || strcmp(o.device_type, k.device_type) != 0)
        break;
      allowed += wf_runtime_kernel_denied(rt, j) == NULL;
    }
    int w = snprintf(buf + used, len - used, "%s%s%s", used ? ", " : "",
                     k.device_type,
                     allowed ? "" : " (every kernel denied by the config)");
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
    i = j;
  }
}

/* Per kernel of op on device (indexed like wf_runtime_kernel_get; the
 * caller's array of wf_runtime_kernel_count entries), the WF_DTYPE_BIT mask
 * of the dtypes it is chosen for; bit 0 (WF_DTYPE_INVALID) stands for nodes
 * without a dtype, which only kernels without a type attribute serve. */
static void chosen_masks(wf_runtime *rt, const char *op, const char *device,
                         uint32_t *mask) {
  for (int t = 0; t < WF_DTYPE_COUNT; t++) {
    if (t != WF_DTYPE_INVALID && !(WF_DTYPE_BIT(t) & WF_DTYPES_ALL))
      continue;
    int k = wf_runtime_kernel_select(rt, op, device, (wf_dtype)t);
    if (k >= 0)
      mask[k] |= WF_DTYPE_BIT(t);
  }
}

/* What a kernel is chosen for, from its chosen_masks entry: "any" for an
 * untyped kernel chosen for every node, else dtype names; "" for none. */
static const char *chosen_str(const wf_kernel_info *k, uint32_t mask, char *buf,
                              size_t len) {
  const uint32_t every = WF_DTYPES_ALL | WF_DTYPE_BIT(WF_DTYPE_INVALID);
  if (!k->type_attr && (mask & every) == every)
    snprintf(buf, len, "any");
  else if (!(mask & WF_DTYPES_ALL))
    buf[0] = '\0';
  else
    dtype_mask_str(mask & WF_DTYPES_ALL, buf, len);
  return buf;
}

/* A kernel's dtypes: "any" when it has no type attribute. */
static const char *kernel_dtypes_str(const wf_kernel_info *k, char *buf,
                                     size_t len) {
  if (!k->type_attr) {
    snprintf(buf, len, "any");
    return buf;
  }
  return dtype_mask_str(k->dtypes, buf, len);
}

/* ---- version -------------------------------------------------------------- */

static int cmd_version(wf_runtime *rt, const opts *o) {
  (void)rt;
  if (o->json) {
    return emit_json(json_pack("{s:s, s:s, s:{s:i, s:i}}", "version",
                               wf_version(), "headers", WF_VERSION_STRING,
                               "plugin_abi", "major", WF_ABI_MAJOR, "minor",
                               WF_ABI_MINOR));
  }
  printf("weft %s (plugin ABI %d.%d)\n", wf_version(), WF_ABI_MAJOR,
         WF_ABI_MINOR);
  return 0;
}

/* ---- plugins -------------------------------------------------------------- */

static const char *state_name(wf_plugin_state s) {
  switch (s) {
  case WF_PLUGIN_LOADED:
    return "loaded";
  case WF_PLUGIN_REFUSED:
    return "refused";
  case WF_PLUGIN_DENIED:
    return "denied";
  }
  return "?";
}

/* After the list, on stderr: every plugin refused for a reason other than
 * being shadowed by a plugin of its name (a clash of op definitions, a
 * failed init, a bad ABI...), so that a refusal is not lost among the
 * entries. (With [plugins] strict = true such a refusal already failed the
 * runtime, and weft exited non-zero.) */
static void refusals_summary(wf_runtime *rt) {
  int n = wf_runtime_plugin_count(rt), refused = 0;
  for (int i = 0; i < n; i++) {
    wf_plugin_info p;
    wf_runtime_plugin_get(rt, i, &p);
    if (p.state != WF_PLUGIN_REFUSED ||
        (p.reason && strstr(p.reason, ": shadowed by ")))
      continue;
    if (refused++ == 0)
      fprintf(stderr, "\nweft: WARNING: plugins were refused (their ops, "
                      "kernels and readers are not available):\n");
    fprintf(stderr, "  %s (%s): %s\n", p.name, p.path,
            p.reason ? p.reason : "(no reason)");
  }
}

static int cmd_plugins(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_plugin_count(rt);
  if (o->json) {
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
      wf_plugin_info p;
      wf_runtime_plugin_get(rt, i, &p);
      json_t *req = json_array();
      for (int r = 0; req && p.requires && p.requires[r]; r++)
        json_array_append_new(req, json_string(p.requires[r]));
      json_t *abi = p.abi_major < 0
                        ? json_null()
                        : json_pack("{s:i, s:i, s:b}", "major", p.abi_major,
                                    "minor", p.abi_minor, "capped",
                                    p.abi_capped);
      json_t *reg = json_pack(
          "{s:i, s:i, s:i, s:i, s:i, s:i}", "ops", p.num_ops, "kernels",
          p.num_kernels, "gradients", p.num_gradients, "devices",
          p.num_devices, "readers", p.num_readers, "passes", p.num_passes);
      json_array_append_new(
          arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s, s:o, "
                         "s:o, s:o}",
                         "name", p.name, "path", p.path, "version",
                         json_str_or_null(p.version), "license",
                         json_str_or_null(p.license), "description",
                         json_str_or_null(p.description), "abi", abi,
                         "requires", req, "state", state_name(p.state),
                         "reason", json_str_or_null(p.reason), "registers",
                         reg, "loaded",
                         json_boolean(p.state == WF_PLUGIN_LOADED)));
    }
    return emit_json(arr);
  }
  if (n == 0) {
    printf("no plugins found (search order: config [plugins] paths, "
           "$WEFT_PLUGIN_PATH, %s)\n",
           wf_config_plugin_dir());
    return 0;
  }
  for (int i = 0; i < n; i++) {
    wf_plugin_info p;
    wf_runtime_plugin_get(rt, i, &p);
    printf("%s %s\n", p.name, p.version ? p.version : "");
    printf("  path:     %s\n", p.path);
    if (p.abi_major >= 0)
      printf("  abi:      %d.%d%s\n", p.abi_major, p.abi_minor,
             p.abi_capped ? " (newer than this weft: capped to "
                            "its minor)"
                          : "");
    if (p.license)
      printf("  license:  %s\n", p.license);
    if (p.description)
      printf("  about:    %s\n", p.description);
    if (p.requires && p.requires[0]) {
      printf("  requires:");
      for (int r = 0; p.requires[r]; r++)
        printf(" %s", p.requires[r]);
      printf("\n");
    }
    printf("  state:    %s%s%s\n", state_name(p.state),
           p.reason ? ": " : "", p.reason ? p.reason : "");
    if (p.state == WF_PLUGIN_LOADED)
      printf("  registers: %d ops, %d kernels, %d gradients, %d device "
             "types, %d readers, %d passes\n",
             p.num_ops, p.num_kernels, p.num_gradients, p.num_devices,
             p.num_readers, p.num_passes);
  }
  refusals_summary(rt);
  return 0;
}

/* ---- ops ------------------------------------------------------------------- */

static json_t *args_json(const wf_arg_def *a) {
  json_t *arr = json_array();
  char buf[128];
  for (; arr && a && a->struct_size; a++)
    json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "name", a->name,
                                         "type",
                                         arg_type_str(a, buf, sizeof buf),
                                         "doc", json_str_or_null(a->doc)));
  return arr;
}

/* Op's kernels (on device, or on every device type when NULL) with what
 * the config's [kernels] rules make of them: "denied" and "preferred" (the
 * config item, or null) and "chosen_for" (the dtypes it runs for, "any",
 * or null when it is never chosen). */
static json_t *kernels_json(wf_runtime *rt, const char *op,
                            const char *device) {
  json_t *arr = json_array();
  char buf[128], chosen[128];
  int n = wf_runtime_kernel_count(rt);
  uint32_t *mask = calloc((size_t)n + 1, sizeof *mask);
  const char *masked = NULL; /* device type mask was filled for */
  if (!mask) {
    json_decref(arr);
    return NULL;
  }
  for (int i = 0; arr && i < n; i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0 || (device && strcmp(k.device_type, device)))
      continue;
    if (!masked || strcmp(masked, k.device_type) != 0) {
      chosen_masks(rt, op, k.device_type, mask);
      masked = k.device_type;
    }
    chosen_str(&k, mask[i], chosen, sizeof chosen);
    json_array_append_new(
        arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:b, s:b, s:o, s:o, s:o}",
                       "device", k.device_type, "label",
                       k.label ? k.label : "", "plugin", k.plugin, "dtypes",
                       kernel_dtypes_str(&k, buf, sizeof buf), "priority",
                       k.priority, "cheap", !!(k.flags & WF_KERNEL_CHEAP),
                       "async", !!(k.flags & WF_KERNEL_ASYNC), "denied",
                       json_str_or_null(wf_runtime_kernel_denied(rt, i)),
                       "preferred",
                       json_str_or_null(wf_runtime_kernel_preferred(rt, i)),
                       "chosen_for",
                       json_str_or_null(chosen[0] ? chosen : NULL)));
  }
  free(mask);
  return arr;
}

/* Prints op's kernels on device by priority: "* " marks one chosen for
 * some dtype, and each says what it is chosen for, or that the config
 * denies or prefers it. */
static void print_kernels(wf_runtime *rt, const char *op, const char *device) {
  int n = wf_runtime_kernel_count(rt), listed = 0, allowed = 0;
  uint32_t *mask = calloc((size_t)n + 1, sizeof *mask);
  char buf[256], chosen[256];
  if (!mask) {
    fprintf(stderr, "weft: out of memory listing kernels\n");
    return;
  }
  chosen_masks(rt, op, device, mask);
  printf("  kernels on %s (highest priority first; * = chosen):\n", device);
  for (int k = 0; k < n; k++) {
    wf_kernel_info ki;
    wf_runtime_kernel_get(rt, k, &ki);
    if (strcmp(ki.op, op) || strcmp(ki.device_type, device))
      continue;
    const char *denied = wf_runtime_kernel_denied(rt, k);
    const char *preferred = wf_runtime_kernel_preferred(rt, k);
    chosen_str(&ki, mask[k], chosen, sizeof chosen);
    printf("    %s%-10s priority %d, dtypes %s, plugin %s",
           chosen[0] ? "* " : "  ", ki.label ? ki.label : "", ki.priority,
           kernel_dtypes_str(&ki, buf, sizeof buf), ki.plugin);
    if (denied)
      printf("; denied by config ([kernels] deny = %s)", denied);
    else if (preferred)
      printf("; preferred by config ([kernels] prefer = %s)", preferred);
    if (chosen[0])
      printf("; chosen for %s", chosen);
    else if (!denied)
      printf("; not chosen (outranked)");
    printf("\n");
    listed++;
    allowed += denied == NULL;
  }
  if (!listed)
    printf("    (none)\n");
  else if (!allowed)
    printf("    (the config denies every kernel here: nodes of %s are not "
           "placed on %s)\n",
           op, device);
  free(mask);
}

static json_t *op_json(wf_runtime *rt, int i, const char *device) {
  const wf_op_def *d = wf_runtime_op_get(rt, i);
  json_t *attrs = json_array();
  char buf[128];
  for (const wf_attr_def *a = d->attrs; attrs && a && a->struct_size; a++) {
    json_t *aj = json_pack("{s:s, s:s, s:o}", "name", a->name, "type",
                           attr_type_str(a->type, buf, sizeof buf), "doc",
                           json_str_or_null(a->doc));
    if (aj && a->allowed_dtypes)
      json_object_set_new(
          aj, "allowed",
          json_string(dtype_mask_str(a->allowed_dtypes, buf, sizeof buf)));
    if (aj)
      json_object_set_new(aj, "has_default", json_boolean(a->has_default));
    json_array_append_new(attrs, aj);
  }
  int grad = wf_runtime_op_gradient(rt, d->name);
  return json_pack(
      "{s:s, s:s, s:o, s:o, s:o, s:o, s:{s:b, s:b, s:b}, s:s, s:o}", "name",
      d->name, "plugin", wf_runtime_op_plugin(rt, i), "inputs",
      args_json(d->inputs), "outputs", args_json(d->outputs), "attrs", attrs,
      "doc", json_str_or_null(d->doc), "flags", "stateful",
      !!(d->flags & WF_OP_STATEFUL), "commutative",
      !!(d->flags & WF_OP_COMMUTATIVE), "random", !!(d->flags & WF_OP_RANDOM),
      "gradient",
      grad > 0 ? "registered" : grad == 0 ? "not differentiable" : "none",
      "kernels", kernels_json(rt, d->name, device));
}

static void print_args(const char *title, const wf_arg_def *a) {
  char buf[128];
  if (!a || !a->struct_size)
    return;
  printf("  %s:\n", title);
  for (; a->struct_size; a++)
    printf("    %-12s %-14s %s\n", a->name, arg_type_str(a, buf, sizeof buf),
           a->doc ? a->doc : "");
}

static void print_op(wf_runtime *rt, int i, const char *device) {
  const wf_op_def *d = wf_runtime_op_get(rt, i);
  char buf[256], tbuf[64];
  printf("%s  (plugin %s)\n", d->name, wf_runtime_op_plugin(rt, i));
  if (d->doc)
    printf("  %s\n", d->doc);
  print_args("inputs", d->inputs);
  print_args("outputs", d->outputs);
  if (d->attrs && d->attrs->struct_size) {
    printf("  attrs:\n");
    for (const wf_attr_def *a = d->attrs; a->struct_size; a++) {
      printf("    %-12s %-14s%s%s %s\n", a->name,
             attr_type_str(a->type, tbuf, sizeof tbuf),
             a->allowed_dtypes ? " in " : "",
             a->allowed_dtypes
                 ? dtype_mask_str(a->allowed_dtypes, buf, sizeof buf)
                 : "",
             a->doc ? a->doc : "");
    }
  }
  int grad = wf_runtime_op_gradient(rt, d->name);
  printf("  gradient: %s\n", grad > 0    ? "registered"
                             : grad == 0 ? "not differentiable"
                                         : "none");
  if (device) {
    print_kernels(rt, d->name, device);
  } else {
    op_devices(rt, d->name, buf, sizeof buf);
    printf("  devices:  %s\n", buf[0] ? buf : "(no kernels)");
  }
}

static int cmd_ops(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_op_count(rt);
  int found = 0;
  json_t *arr = o->json ? json_array() : NULL;
  for (int i = 0; i < n; i++) {
    const wf_op_def *d = wf_runtime_op_get(rt, i);
    if (o->op && strcmp(o->op, d->name) != 0)
      continue;
    found++;
    if (arr)
      json_array_append_new(arr, op_json(rt, i, o->device));
    else
      print_op(rt, i, o->device);
  }
  if (o->op && !found) {
    json_decref(arr);
    fprintf(stderr, "weft ops: no op named '%s' is registered\n", o->op);
    return 1;
  }
  if (arr)
    return emit_json(arr);
  if (!found)
    printf("no ops registered (see `weft plugins`)\n");
  return 0;
}

/* ---- devices --------------------------------------------------------------- */

static int cmd_devices(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_device_count(rt);
  if (o->json) {
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
      wf_device_info d;
      wf_runtime_device_get(rt, i, &d);
      json_array_append_new(
          arr, json_pack("{s:s, s:s, s:s, s:b, s:o, s:s}", "name", d.name,
                         "type", d.type, "plugin", d.plugin, "available",
                         d.available, "reason", json_str_or_null(d.reason),
                         "description", d.description ? d.description : ""));
    }
    return emit_json(arr);
  }
  if (n == 0)
    printf("no devices (no device plugin loaded; see `weft plugins`)\n");
  for (int i = 0; i < n; i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    if (d.available)
      printf("%s  (plugin %s)\n", d.name, d.plugin);
    else
      printf("%s: unavailable (%s)  (plugin %s)\n", d.name,
             d.reason ? d.reason : "no reason given", d.plugin);
    if (d.description && d.description[0]) {
      /* Indent every line of the description. */
      const char *s = d.description;
      while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        printf("  %.*s\n", (int)len, s);
        s += len + (e ? 1 : 0);
      }
    }
  }
  return 0;
}

/* ---- data ------------------------------------------------------------------ */

/* Reader options parsed from --option, and the memory they point into. */
typedef struct data_options {
  wf_attr_item *items;
  int n;
  void **owned;
  int nowned;
} data_options;

static void data_options_free(data_options *d) {
  for (int i = 0; i < d->nowned; i++)
    free(d->owned[i]);
  free(d->owned);
  free(d->items);
}

/* Remembers p (freed with the options); NULL when p is NULL or out of
 * memory (then p is freed). */
static void *keep(data_options *d, void *p) {
  void **grown;
  if (!p)
    return NULL;
  grown = realloc(d->owned, (size_t)(d->nowned + 1) * sizeof *grown);
  if (!grown) {
    free(p);
    return NULL;
  }
  d->owned = grown;
  d->owned[d->nowned++] = p;
  return p;
}

static int parse_int(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 0);
  if (!*s || *end || errno)
    return -1;
  *v = x;
  return 0;
}

static int parse_float(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (!*s || *end || errno)
    return -1;
  *v = x;
  return 0;
}

static int parse_bool(const char *s, int32_t *v) {
  if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcmp(s, "yes") == 0)
    *v = 1;
  else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0 ||
           strcmp(s, "no") == 0)
    *v = 0;
  else
    return -1;
  return 0;
}

/* A comma-separated list as a list attribute of base type. */
static int parse_list(data_options *d, const char *text, int base,
                      wf_attr_value *v) {
  size_t n = 1;
  for (const char *p = text; *p; p++)
    n += *p == ',';
  char *copy = keep(d, strdup(text));
  int64_t *ints = base == WF_ATTR_INT ? keep(d, calloc(n, sizeof *ints)) : NULL;
  double *floats =
      base == WF_ATTR_FLOAT ? keep(d, calloc(n, sizeof *floats)) : NULL;
  const char **strs =
      base == WF_ATTR_STRING ? keep(d, calloc(n, sizeof *strs)) : NULL;
  if (!copy || (!ints && !floats && !strs))
    return -1;
  size_t i = 0;
  for (char *item = copy, *next; item; item = next, i++) {
    next = strchr(item, ',');
    if (next)
      *next++ = '\0';
    if ((ints && parse_int(item, &ints[i])) ||
        (floats && parse_float(item, &floats[i])))
      return -1;
    if (strs)
      strs[i] = item;
  }
  v->type = WF_ATTR_LIST | base;
  v->count = (int64_t)n;
  if (ints)
    v->u.ints = ints;
  else if (floats)
    v->u.floats = floats;
  else
    v->u.strings = strs;
  return 0;
}

/* Parses KEY[:TYPE]=VALUE into the next item of d. */
static int parse_option(data_options *d, const char *text) {
  const char *eq = strchr(text, '=');
  if (!eq || eq == text) {
    fprintf(stderr, "weft data: --option '%s': expected KEY=VALUE\n", text);
    return -1;
  }
  char *key = keep(d, strndup(text, (size_t)(eq - text)));
  if (!key) {
    fprintf(stderr, "weft data: out of memory\n");
    return -1;
  }
  char *type = strchr(key, ':');
  if (type)
    *type++ = '\0';
  const char *value = eq + 1;
  wf_attr_item *it = &d->items[d->n];
  wf_attr_value *v = &it->value;
  int bad = 0;
  it->name = key;
  memset(v, 0, sizeof *v);
  v->count = 1;
  if (!type) {
    if (parse_int(value, &v->u.i) == 0)
      v->type = WF_ATTR_INT;
    else if (parse_float(value, &v->u.f) == 0)
      v->type = WF_ATTR_FLOAT;
    else if (parse_bool(value, &v->u.b) == 0 && isalpha(value[0]))
      v->type = WF_ATTR_BOOL;
    else {
      v->type = WF_ATTR_STRING;
      v->u.s = value;
    }
  } else if (strcmp(type, "int") == 0) {
    v->type = WF_ATTR_INT;
    bad = parse_int(value, &v->u.i);
  } else if (strcmp(type, "float") == 0) {
    v->type = WF_ATTR_FLOAT;
    bad = parse_float(value, &v->u.f);
  } else if (strcmp(type, "bool") == 0) {
    v->type = WF_ATTR_BOOL;
    bad = parse_bool(value, &v->u.b);
  } else if (strcmp(type, "string") == 0) {
    v->type = WF_ATTR_STRING;
    v->u.s = value;
  } else if (strcmp(type, "dtype") == 0) {
    v->type = WF_ATTR_DTYPE;
    v->u.dtype = wf_dtype_from_name(value);
    bad = v->u.dtype == WF_DTYPE_INVALID;
  } else if (strcmp(type, "list(int)") == 0) {
    bad = parse_list(d, value, WF_ATTR_INT, v);
  } else if (strcmp(type, "list(float)") == 0) {
    bad = parse_list(d, value, WF_ATTR_FLOAT, v);
  } else if (strcmp(type, "list(string)") == 0) {
    bad = parse_list(d, value, WF_ATTR_STRING, v);
  } else {
    fprintf(stderr,
            "weft data: --option '%s': unknown type '%s' (int, float, bool, "
            "string, dtype, list(int), list(float), list(string))\n",
            text, type);
    return -1;
  }
  if (bad) {
    fprintf(stderr, "weft data: --option '%s': '%s' is not a valid %s\n",
            text, value, type);
    return -1;
  }
  d->n++;
  return 0;
}

static int data_options_parse(const opts *o, data_options *d) {
  memset(d, 0, sizeof *d);
  d->items = calloc((size_t)(o->noptions + 1), sizeof *d->items);
  if (!d->items) {
    fprintf(stderr, "weft data: out of memory\n");
    return -1;
  }
  for (int i = 0; i < o->noptions; i++)
    if (parse_option(d, o->options[i]))
      return -1;
  return 0;
}

/* The files SOURCE names, as the core expands it (a path that exists is
 * taken as is, else a sorted glob): a new array of *n new strings (free
 * both), NULL when nothing matches or memory runs out. */
static char **expand_source(const char *source, size_t *n) {
  struct stat sb;
  glob_t g;
  char **paths;
  *n = 0;
  if (stat(source, &sb) == 0) {
    paths = malloc(sizeof *paths);
    if (paths && !(paths[0] = strdup(source))) {
      free(paths);
      paths = NULL;
    }
    *n = paths ? 1 : 0;
    return paths;
  }
  if (glob(source, 0, NULL, &g) != 0)
    return NULL;
  paths = calloc(g.gl_pathc, sizeof *paths);
  for (size_t i = 0; paths && i < g.gl_pathc; i++) {
    paths[i] = strdup(g.gl_pathv[i]);
    if (!paths[i]) {
      while (i > 0)
        free(paths[--i]);
      free(paths);
      paths = NULL;
    }
  }
  *n = paths ? g.gl_pathc : 0;
  globfree(&g);
  return paths;
}

static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0      ? ldexp(m, -24)
             : e == 0x1f ? (m ? NAN : INFINITY)
                         : ldexp(m | 0x400, e - 25);
  return h & 0x8000 ? -v : v;
}

/* Element i of t as a double; *is_int says whether it is an integer. */
static double element(const wf_tensor *t, int64_t i, int *is_int) {
  const void *p = wf_tensor_data(t);
  *is_int = 1;
  switch (wf_tensor_dtype(t)) {
  case WF_INT8:
    return ((const int8_t *)p)[i];
  case WF_UINT8:
  case WF_BOOL:
    return ((const uint8_t *)p)[i];
  case WF_INT32:
    return ((const int32_t *)p)[i];
  case WF_INT64:
    return (double)((const int64_t *)p)[i];
  default:
    break;
  }
  *is_int = 0;
  switch (wf_tensor_dtype(t)) {
  case WF_FLOAT32:
    return ((const float *)p)[i];
  case WF_FLOAT64:
    return ((const double *)p)[i];
  case WF_FLOAT16:
    return half_value(((const uint16_t *)p)[i]);
  case WF_BFLOAT16: {
    uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  default:
    return NAN;
  }
}

/* Prints t's values ("3", "[1, 2, 3]", "[0, 0, ..., 0] (784 values)"). */
static void print_values(const wf_tensor *t) {
  enum { SHOWN = 8 };
  int64_t n = wf_tensor_count(t);
  int rank = wf_tensor_rank(t), is_int;
  if (wf_tensor_dtype(t) == WF_INT64 && rank == 0) {
    printf("%" PRId64, *(const int64_t *)wf_tensor_data(t));
    return;
  }
  if (rank > 0)
    putchar('[');
  for (int64_t i = 0; i < n && i < SHOWN; i++) {
    double v = element(t, i, &is_int);
    if (wf_tensor_dtype(t) == WF_INT64)
      printf("%s%" PRId64, i ? ", " : "", ((const int64_t *)wf_tensor_data(t))[i]);
    else
      printf(is_int ? "%s%.0f" : "%s%g", i ? ", " : "", v);
  }
  if (n > SHOWN)
    printf(", ...");
  if (rank > 0)
    putchar(']');
  if (n > SHOWN)
    printf(" (%" PRId64 " values)", n);
}

/* Element i of t in JSON (null for NaN and infinities, which JSON lacks). */
static json_t *element_json(const wf_tensor *t, int64_t i) {
  int is_int;
  double v = element(t, i, &is_int);
  if (wf_tensor_dtype(t) == WF_INT64)
    return json_integer(((const int64_t *)wf_tensor_data(t))[i]);
  if (is_int)
    return json_integer((json_int_t)v);
  return isfinite(v) ? json_real(v) : json_null();
}

/* A scalar as a number, anything else as the flat list of its values. */
static json_t *values_json(const wf_tensor *t) {
  if (wf_tensor_rank(t) == 0)
    return element_json(t, 0);
  json_t *arr = json_array();
  int64_t n = wf_tensor_count(t);
  for (int64_t i = 0; arr && i < n; i++)
    json_array_append_new(arr, element_json(t, i));
  return arr;
}

static json_t *shape_json(const wf_shape *s) {
  if (s->rank < 0)
    return json_null();
  json_t *arr = json_array();
  for (int i = 0; arr && i < s->rank; i++)
    json_array_append_new(arr, s->dims[i] < 0 ? json_null()
                                              : json_integer(s->dims[i]));
  return arr;
}

static json_t *files_json(const wf_dataset *ds) {
  json_t *arr = json_array();
  for (int i = 0; arr && i < wf_dataset_num_files(ds); i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    json_array_append_new(arr, json_pack("{s:s, s:s}", "path", path,
                                         "reader", reader));
  }
  return arr;
}

static void print_files(const wf_dataset *ds) {
  int n = wf_dataset_num_files(ds);
  printf("%d file%s:\n", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    printf("  %s  (reader %s)\n", path, reader);
  }
}

static int data_head(wf_runtime *rt, const opts *o, const data_options *d,
                     wf_status *st) {
  long want = o->records >= 0 ? o->records : 10;
  wf_dataset *ds = wf_dataset_from_files(rt, o->source, o->format, d->items, d->n, st);
  if (!ds) {
    fprintf(stderr, "weft data head: %s\n", wf_status_message(st));
    return 1;
  }
  int nf = wf_dataset_num_fields(ds), rc = 0;
  wf_tensor **f = calloc((size_t)nf, sizeof *f);
  wf_iterator *it = f ? wf_iterator_new(ds, NULL, st) : NULL;
  json_t *out = NULL, *records = NULL, *problems = NULL;
  if (!it) {
    fprintf(stderr, "weft data head: %s\n",
            f ? wf_status_message(st) : "out of memory");
    free(f);
    wf_dataset_release(ds);
    return 1;
  }
  if (o->json) {
    json_t *fields = json_array();
    for (int i = 0; fields && i < nf; i++) {
      wf_data_field fd;
      wf_dataset_field(ds, i, &fd);
      json_array_append_new(
          fields, json_pack("{s:s, s:s, s:o}", "name", fd.name, "dtype",
                            wf_dtype_name(fd.dtype), "shape",
                            shape_json(&fd.shape)));
    }
    records = json_array();
    problems = json_array();
    out = json_pack("{s:s, s:o, s:o, s:O, s:O}", "source", o->source,
                    "files", files_json(ds), "fields", fields, "records",
                    records, "problems", problems);
  } else {
    print_files(ds);
    printf("fields:\n");
    for (int i = 0; i < nf; i++) {
      wf_data_field fd;
      char shape[128];
      wf_dataset_field(ds, i, &fd);
      printf("  %-16s %-9s %s\n", fd.name, wf_dtype_name(fd.dtype),
             wf_shape_str(&fd.shape, shape, sizeof shape));
    }
  }
  for (long r = 0; r < want;) {
    int code = wf_iterator_next(it, f, st);
    if (code == WF_OUT_OF_RANGE)
      break;
    if (code == WF_DATA_LOSS) {
      if (problems)
        json_array_append_new(problems, json_string(wf_status_message(st)));
      else
        printf("bad record: %s\n", wf_status_message(st));
      continue;
    }
    if (code) {
      fprintf(stderr, "weft data head: %s\n", wf_status_message(st));
      rc = 1;
      break;
    }
    if (records) {
      json_t *rec = json_object();
      for (int i = 0; rec && i < nf; i++) {
        wf_data_field fd;
        wf_dataset_field(ds, i, &fd);
        json_object_set_new(rec, fd.name, values_json(f[i]));
      }
      json_array_append_new(records, rec);
    } else {
      printf("record %ld:", r);
      for (int i = 0; i < nf; i++) {
        wf_data_field fd;
        wf_dataset_field(ds, i, &fd);
        printf(" %s=", fd.name);
        print_values(f[i]);
      }
      printf("\n");
    }
    for (int i = 0; i < nf; i++)
      wf_tensor_release(f[i]);
    r++;
  }
  if (out) {
    json_decref(records);
    json_decref(problems);
    if (rc)
      json_decref(out);
    else
      rc = emit_json(out);
  }
  wf_iterator_free(it);
  free(f);
  wf_dataset_release(ds);
  return rc;
}

static int data_count(wf_runtime *rt, const opts *o, const data_options *d,
                      wf_status *st) {
  wf_dataset *ds = wf_dataset_from_files(rt, o->source, o->format, d->items, d->n, st);
  if (!ds) {
    fprintf(stderr, "weft data count: %s\n", wf_status_message(st));
    return 1;
  }
  int n = wf_dataset_num_files(ds), rc = 0;
  int64_t total = 0;
  json_t *files = o->json ? json_array() : NULL;
  for (int i = 0; i < n && !rc; i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    wf_dataset *one = wf_dataset_from_files(rt, path, reader, d->items, d->n, st);
    int64_t count = 0;
    if (!one || wf_dataset_count(one, &count, st)) {
      fprintf(stderr, "weft data count: %s\n", wf_status_message(st));
      rc = 1;
    } else if (files) {
      json_array_append_new(files, json_pack("{s:s, s:s, s:I}", "path", path,
                                             "reader", reader, "records",
                                             (json_int_t)count));
    } else {
      printf("%s: %" PRId64 " record%s\n", path, count, count == 1 ? "" : "s");
    }
    total += count;
    wf_dataset_release(one);
  }
  if (!rc && files)
    rc = emit_json(json_pack("{s:s, s:O, s:I}", "source", o->source, "files",
                             files, "records", (json_int_t)total));
  else if (!rc)
    printf("total: %" PRId64 " record%s in %d file%s\n", total,
           total == 1 ? "" : "s", n, n == 1 ? "" : "s");
  json_decref(files);
  wf_dataset_release(ds);
  return rc;
}

/* Reads every record of path; reports and counts each problem. */
static void validate_file(wf_runtime *rt, const opts *o,
                          const data_options *d, const char *path,
                          int64_t *records, int64_t *problems,
                          json_t *files, wf_status *st) {
  json_t *list = files ? json_array() : NULL;
  const char *reader = NULL;
  int64_t n = 0, bad = 0;
  wf_dataset *ds = wf_dataset_from_files(rt, path, o->format, d->items, d->n, st);
  wf_iterator *it = ds ? wf_iterator_new(ds, NULL, st) : NULL;
  int nf = ds ? wf_dataset_num_fields(ds) : 0;
  wf_tensor **f = calloc((size_t)(nf > 0 ? nf : 1), sizeof *f);
  if (ds)
    wf_dataset_file(ds, 0, &reader);
  if (!it || !f) {
    bad++;
    if (list)
      json_array_append_new(list, json_string(f ? wf_status_message(st)
                                                : "out of memory"));
    else
      printf("%s\n", f ? wf_status_message(st) : "out of memory");
  }
  for (int code = WF_OK; it && f;) {
    code = wf_iterator_next(it, f, st);
    if (code == WF_OUT_OF_RANGE)
      break;
    if (code == WF_OK) {
      n++;
      for (int i = 0; i < nf; i++)
        wf_tensor_release(f[i]);
      continue;
    }
    /* A bad record is reported and passed over; anything else ends the
     * file. */
    bad++;
    if (list)
      json_array_append_new(list, json_string(wf_status_message(st)));
    else
      printf("%s\n", wf_status_message(st));
    if (code != WF_DATA_LOSS)
      break;
  }
  if (files)
    json_array_append_new(
        files, json_pack("{s:s, s:o, s:I, s:o}", "path", path, "reader",
                         reader ? json_string(reader) : json_null(),
                         "records", (json_int_t)n, "problems", list));
  else if (bad)
    printf("%s: %" PRId64 " record%s, %" PRId64 " problem%s\n", path, n,
           n == 1 ? "" : "s", bad, bad == 1 ? "" : "s");
  else
    printf("%s: %" PRId64 " record%s, ok\n", path, n, n == 1 ? "" : "s");
  *records += n;
  *problems += bad;
  free(f);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static int data_validate(wf_runtime *rt, const opts *o,
                         const data_options *d, wf_status *st) {
  size_t npaths;
  int64_t records = 0, problems = 0;
  char **paths = expand_source(o->source, &npaths);
  if (!paths) {
    fprintf(stderr, "weft data validate: %s: no such file%s\n", o->source,
            strpbrk(o->source, "*?[") ? " matches this pattern" : "");
    return 1;
  }
  json_t *files = o->json ? json_array() : NULL;
  for (size_t i = 0; i < npaths; i++) {
    validate_file(rt, o, d, paths[i], &records, &problems, files, st);
    free(paths[i]);
  }
  free(paths);
  int nfiles = (int)npaths;
  if (files) {
    if (emit_json(json_pack("{s:s, s:o, s:I, s:I, s:b}", "source", o->source,
                            "files", files, "records", (json_int_t)records,
                            "problems", (json_int_t)problems, "ok",
                            problems == 0)))
      return 1;
  } else {
    printf("checked %" PRId64 " record%s in %d file%s: %" PRId64
           " problem%s\n",
           records, records == 1 ? "" : "s", nfiles, nfiles == 1 ? "" : "s",
           problems, problems == 1 ? "" : "s");
  }
  return problems ? 1 : 0;
}

static int cmd_data(wf_runtime *rt, const opts *o) {
  data_options d;
  wf_status *st = wf_status_new();
  int rc = 1;
  if (!st) {
    fprintf(stderr, "weft data: out of memory\n");
    return 1;
  }
  if (data_options_parse(o, &d) == 0) {
    if (strcmp(o->action, "head") == 0)
      rc = data_head(rt, o, &d, st);
    else if (strcmp(o->action, "count") == 0)
      rc = data_count(rt, o, &d, st);
    else
      rc = data_validate(rt, o, &d, st);
  }
  data_options_free(&d);
  wf_status_free(st);
  return rc;
}

/* ---- dispatch --------------------------------------------------------------- */

static const command commands[] = {
    {"version", cmd_version, 0, "print the version of weft and its plugin ABI",
     "usage: weft version [--json]\n\n"
     "Prints libweft's version and the plugin ABI version it implements.\n"},
    {"plugins", cmd_plugins, 1,
     "list every plugin found, loaded or refused, and why",
     "usage: weft plugins [--json] [--config FILE]\n\n"
     "Lists every plugin file found in the search order (config [plugins]\n"
     "paths, $WEFT_PLUGIN_PATH, the installed plugin directory): its path,\n"
     "version, ABI, whether it was loaded, refused or denied and why, and\n"
     "what it registered.\n"},
    {"ops", cmd_ops, 1, "list ops: inputs, outputs, attributes, documentation",
     "usage: weft ops [NAME] [--device TYPE] [--json] [--config FILE]\n\n"
     "Lists every registered op (or only NAME) with its inputs, outputs,\n"
     "attributes, documentation, gradient and the devices that have\n"
     "kernels for it. With --device TYPE, lists that device's kernels for\n"
     "each op, highest priority first, each with the dtypes it is chosen\n"
     "for (marked *), or why the config's [kernels] section denies or\n"
     "prefers it; a kernel outranked for every dtype is 'not chosen'.\n"},
    {"devices", cmd_devices, 1, "list devices and their topology",
     "usage: weft devices [--json] [--config FILE]\n\n"
     "Lists every device instance the device plugins found, in the\n"
     "config's preference order, with a description of its hardware, or\n"
     "why it is unavailable.\n"},
    {"data", cmd_data, 1, "look into data files: schema, records, counts, checks",
     "usage: weft data head SOURCE [-n N] [DATA OPTIONS]\n"
     "       weft data count SOURCE [DATA OPTIONS]\n"
     "       weft data validate SOURCE [DATA OPTIONS]\n\n"
     "SOURCE is a file or a glob pattern (quote it); each file is read by\n"
     "the reader plugin its name's suffix selects, or the one --format\n"
     "names.\n\n"
     "  head      prints the files, the record schema and the first N\n"
     "            records (default 10); long fields show their first values\n"
     "  count     prints the number of records of each file and in all\n"
     "  validate  reads every record of every file and reports each problem\n"
     "            with its file and offset, line or record; exits 1 if\n"
     "            there was any (a bad record does not stop it)\n\n"
     "Data options:\n"
     "  -n N                   records to print (head)\n"
     "  --format F             the reader, by name or by one of its suffixes\n"
     "  --option KEY=VALUE     a reader option (repeatable); VALUE is read as\n"
     "                         an int, a float, true/false, or else a string;\n"
     "                         KEY:TYPE=VALUE forces TYPE (int, float, bool,\n"
     "                         string, dtype, or list(int), list(float),\n"
     "                         list(string) with comma-separated items)\n"
     "  --json                 machine-readable output\n"},
};

#define NUM_COMMANDS (int)(sizeof commands / sizeof commands[0])

/* Commands with files and arguments of their own (tools/commands.h). */
typedef struct own_command {
  const char *name;
  weft_cmd_main *main;
  const char *summary;
  const char *help;
} own_command;

static const own_command own_commands[] = {
    {"graph", weft_cmd_graph, weft_graph_summary, weft_graph_help},
    {"ckpt", weft_cmd_ckpt, weft_ckpt_summary, weft_ckpt_help},
    {"run", weft_cmd_run, weft_run_summary, weft_run_help},
    {"worker", weft_cmd_worker, weft_worker_summary, weft_worker_help},
};

#define NUM_OWN_COMMANDS (int)(sizeof own_commands / sizeof own_commands[0])

static const own_command *find_own_command(const char *name) {
  for (int i = 0; i < NUM_OWN_COMMANDS; i++)
    if (strcmp(own_commands[i].name, name) == 0)
      return &own_commands[i];
  return NULL;
}

/* Runs an own command if argv names one after the global options
 * (--config FILE, --config=FILE); -1 when it does not. */
static int try_own_command(int argc, char **argv) {
  const char *config = NULL;
  int i = 1;
  while (i < argc) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config = argv[i + 1];
      i += 2;
    } else if (strncmp(argv[i], "--config=", 9) == 0) {
      config = argv[i] + 9;
      i++;
    } else {
      break;
    }
  }
  if (i >= argc)
    return -1;
  const own_command *c = find_own_command(argv[i]);
  if (!c)
    return -1;
  for (int k = i + 1; k < argc; k++) {
    if (strcmp(argv[k], "--") == 0)
      break;
    if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
      fputs(c->help, stdout);
      return 0;
    }
  }
  int rc = c->main(argc - i, argv + i, config);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "weft: writing output: %s\n", strerror(errno));
    return 1;
  }
  return rc;
}

static void usage(FILE *f) {
  fprintf(f, "usage: weft [--config FILE] COMMAND [OPTIONS]\n\n"
             "weft is a dataflow-graph machine-learning runtime. Commands:\n");
  for (int i = 0; i < NUM_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  for (int i = 0; i < NUM_OWN_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", own_commands[i].name, own_commands[i].summary);
  fprintf(f,
          "\nOptions for every command:\n"
          "  --config FILE  read this config (default: $WEFT_CONFIG, then "
          "the installed weft.conf)\n"
          "  --json         machine-readable output\n"
          "  --help         help for the command\n"
          "\nRun `weft COMMAND --help` for more.\n");
}

static const command *find_command(const char *name) {
  for (int i = 0; i < NUM_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

wf_runtime *weft_open_runtime(const char *config) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;
  if (!st || !cfg) {
    fprintf(stderr, "weft: out of memory\n");
    goto done;
  }
  const char *path = config ? config : wf_config_default_path();
  if (path && wf_config_load(cfg, path, st)) {
    fprintf(stderr, "weft: %s\n", wf_status_message(st));
    goto done;
  }
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    fprintf(stderr, "weft: %s\n", wf_status_message(st));
done:
  wf_config_free(cfg);
  wf_status_free(st);
  return rt;
}

int main(int argc, char **argv) {
  opts o = {0};
  int help = 0;
  const command *cmd = NULL;
  int own = try_own_command(argc, argv);
  if (own >= 0)
    return own;
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"json", no_argument, NULL, 'j'},
      {"device", required_argument, NULL, 'd'},
      {"format", required_argument, NULL, 'f'},
      {"option", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  /* Options may come before or after the command; GNU getopt permutes. */
  int c;
  o.records = -1;
  while ((c = getopt_long(argc, argv, "c:jd:hn:", longopts, NULL)) != -1) {
    switch (c) {
    case 'c':
      o.config = optarg;
      break;
    case 'j':
      o.json = 1;
      break;
    case 'd':
      o.device = optarg;
      break;
    case 'h':
      help = 1;
      break;
    case 'n': {
      char *end;
      errno = 0;
      o.records = strtol(optarg, &end, 10);
      if (errno || *end || o.records < 0) {
        fprintf(stderr, "weft: -n wants a number of records, not '%s'\n",
                optarg);
        return 2;
      }
      break;
    }
    case 'f':
      o.format = optarg;
      break;
    case 'o':
      if (o.noptions == MAX_DATA_OPTIONS) {
        fprintf(stderr, "weft: at most %d --option\n", MAX_DATA_OPTIONS);
        return 2;
      }
      o.options[o.noptions++] = optarg;
      break;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    cmd = find_command(argv[optind]);
    if (!cmd) {
      fprintf(stderr, "weft: unknown command '%s'\n\n", argv[optind]);
      usage(stderr);
      return 2;
    }
    optind++;
  }
  if (!cmd) {
    usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  if (help) {
    fputs(cmd->help, stdout);
    return 0;
  }
  if (cmd->run == cmd_ops && optind < argc)
    o.op = argv[optind++];
  if (cmd->run == cmd_data) {
    if (optind + 2 > argc) {
      fprintf(stderr, "weft data: give an action (head, count, validate) and "
                      "a SOURCE (see weft data --help)\n");
      return 2;
    }
    o.action = argv[optind++];
    o.source = argv[optind++];
  }
  if (optind < argc) {
    fprintf(stderr, "weft %s: unexpected argument '%s' (see weft %s --help)\n",
            cmd->name, argv[optind], cmd->name);
    return 2;
  }
  if (o.device && cmd->run != cmd_ops) {
    fprintf(stderr, "weft %s: --device applies to `weft ops` only\n",
            cmd->name);
    return 2;
  }
  if ((o.format || o.noptions || o.records >= 0) && cmd->run != cmd_data) {
    fprintf(stderr,
            "weft %s: -n, --format and --option apply to `weft data` only\n",
            cmd->name);
    return 2;
  }
  if (cmd->run == cmd_data && strcmp(o.action, "head") &&
      strcmp(o.action, "count") && strcmp(o.action, "validate")) {
    fprintf(stderr,
            "weft data: unknown action '%s' (head, count or validate)\n",
            o.action);
    return 2;
  }
  wf_runtime *rt = NULL;
  if (cmd->needs_runtime) {
    rt = weft_open_runtime(o.config);
    if (!rt)
      return 1;
  }
  int rc = cmd->run(rt, &o);
  wf_runtime_free(rt);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "weft: writing output: %s\n", strerror(errno));
    return 1;
  }
  return rc;
}
