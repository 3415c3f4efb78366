/* tools/weft.c — the `weft` command-line program: what a runtime has loaded
 * (plugins, ops, devices) in text or JSON. It uses only the public API; each
 * subcommand is a table entry with its own help. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

typedef struct opts {
  const char *config; /* --config FILE */
  int json;           /* --json */
  const char *device; /* ops --device TYPE */
  const char *op;     /* ops NAME */
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
 * op, then device type). */
static void op_devices(wf_runtime *rt, const char *op, char *buf,
                       size_t len) {
  size_t used = 0;
  const char *last = NULL;
  buf[0] = '\0';
  int n = wf_runtime_kernel_count(rt);
  for (int i = 0; i < n; i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0)
      continue;
    if (last && strcmp(last, k.device_type) == 0)
      continue;
    last = k.device_type;
    int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                     k.device_type);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
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

static json_t *kernels_json(wf_runtime *rt, const char *op,
                            const char *device) {
  json_t *arr = json_array();
  char buf[128];
  int n = wf_runtime_kernel_count(rt);
  for (int i = 0; arr && i < n; i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0 || (device && strcmp(k.device_type, device)))
      continue;
    json_array_append_new(
        arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:b, s:b}", "device",
                       k.device_type, "label", k.label ? k.label : "",
                       "plugin", k.plugin, "dtypes",
                       dtype_mask_str(k.dtypes, buf, sizeof buf), "priority",
                       k.priority, "cheap", !!(k.flags & WF_KERNEL_CHEAP),
                       "async", !!(k.flags & WF_KERNEL_ASYNC)));
  }
  return arr;
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
    int n = wf_runtime_kernel_count(rt), first = 1;
    printf("  kernels on %s (first one wins):\n", device);
    for (int k = 0; k < n; k++) {
      wf_kernel_info ki;
      wf_runtime_kernel_get(rt, k, &ki);
      if (strcmp(ki.op, d->name) || strcmp(ki.device_type, device))
        continue;
      printf("    %s%-10s priority %d, dtypes %s, plugin %s\n",
             first ? "* " : "  ", ki.label ? ki.label : "", ki.priority,
             dtype_mask_str(ki.dtypes, buf, sizeof buf), ki.plugin);
      first = 0;
    }
    if (first)
      printf("    (none)\n");
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
     "each op in the order they are chosen (highest priority first).\n"},
    {"devices", cmd_devices, 1, "list devices and their topology",
     "usage: weft devices [--json] [--config FILE]\n\n"
     "Lists every device instance the device plugins found, in the\n"
     "config's preference order, with a description of its hardware, or\n"
     "why it is unavailable.\n"},
};

#define NUM_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fprintf(f, "usage: weft [--config FILE] COMMAND [OPTIONS]\n\n"
             "weft is a dataflow-graph machine-learning runtime. Commands:\n");
  for (int i = 0; i < NUM_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
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

static wf_runtime *open_runtime(const opts *o) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;
  if (!st || !cfg) {
    fprintf(stderr, "weft: out of memory\n");
    goto done;
  }
  const char *path = o->config ? o->config : wf_config_default_path();
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
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"json", no_argument, NULL, 'j'},
      {"device", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  /* Options may come before or after the command; GNU getopt permutes. */
  int c;
  while ((c = getopt_long(argc, argv, "c:jd:h", longopts, NULL)) != -1) {
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
  wf_runtime *rt = NULL;
  if (cmd->needs_runtime) {
    rt = open_runtime(&o);
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
