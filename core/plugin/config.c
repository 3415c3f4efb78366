/* core/plugin/config.c — the configuration: defaults, INI files (read with
 * libinih), single keys set by a program, and where the default file lives.
 *
 * It only parses and checks values (the form of each [kernels] item
 * included, and where each item of [devices] order and [kernels] came
 * from); what they mean is up to the loader, the passes, placement, kernel
 * selection (core/plugin/registry.c) and the thread pools that read struct
 * wf_config. Whether an item names something a plugin provides is only
 * known once plugins are loaded: placement reports that (core/compile/placement.c).
 *
 * Sections and keys (README.md "Configuration" shows a complete file):
 *   [plugins]  paths, load, deny, strict, use_env_path, use_default_dir
 *   [devices]  order (device types, most preferred first; a type that no
 *              loaded plugin provides is skipped with a note), cpu_devices
 *   [threads]  inter_op, intra_op, pin, adapt
 *   [passes]   prune, cse, constant_folding, constant_folding_max_bytes,
 *              dead_nodes, placement, memory_plan, and NAME for each
 *              pass a plugin registers (arithmetic, fusion, ...)
 *   [debug]    check_numerics (every float output of every node is
 *              checked for NaN and Inf; the first node found fails the
 *              step, named with its op, output and count; off by default)
 *   [kernels]  deny: kernels never chosen, though their plugin stays
 *              loaded; prefer: kernels chosen before all others that fit,
 *              earlier items first. Items are LABEL or OP:LABEL (LABEL '*'
 *              with an op: all its kernels); a LABEL matches a kernel whose
 *              label, or one '/'-separated part of it, equals it ignoring
 *              case ("openblas" matches "onednn/openblas"). Deny wins over
 *              prefer. Both choose among the kernels of the device type a
 *              node is placed on; a device type whose every kernel for a
 *              node is denied is skipped for that node. */
#include <config.h>

#include "plugin/settings.h"

#include <assert.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/status_internal.h"

/* Default cap on the bytes of one constant made by constant folding. */
#define DEFAULT_FOLD_BYTES (10LL * 1024 * 1024)

/* ---- string lists ------------------------------------------------------- */

static void strlist_clear(wf__strlist *l) {
  for (int i = 0; i < l->n; i++)
    wf__free(l->items[i]);
  wf__free(l->items);
  l->items = NULL;
  l->n = 0;
}

/* Appends a copy of the n bytes at s. Returns 0, or -1 when out of memory
 * (l unchanged). */
static int strlist_push(wf__strlist *l, const char *s, size_t n) {
  char *copy = wf__strndup(s, n);
  char **grown;
  if (!copy)
    return -1;
  grown = wf__realloc(l->items, (size_t)(l->n + 1) * sizeof *grown);
  if (!grown) {
    wf__free(copy);
    return -1;
  }
  grown[l->n++] = copy;
  l->items = grown;
  return 0;
}

static int strlist_copy(wf__strlist *dst, const wf__strlist *src) {
  dst->items = NULL;
  dst->n = 0;
  for (int i = 0; i < src->n; i++) {
    if (strlist_push(dst, src->items[i], strlen(src->items[i]))) {
      strlist_clear(dst);
      return -1;
    }
  }
  return 0;
}

int wf__strlist_has(const wf__strlist *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->items[i], name) == 0)
      return 1;
  return 0;
}

/* ---- the config object -------------------------------------------------- */

static void config_defaults(wf_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->plugin_env_path = 1;
  cfg->plugin_default_dir = 1;
  cfg->pin = 1;
  cfg->pass_prune = cfg->pass_cse = cfg->pass_constant_folding = 1;
  cfg->pass_dead_nodes = 1;
  cfg->pass_placement = 1;
  cfg->memory_plan = 1;
  cfg->constant_folding_max_bytes = DEFAULT_FOLD_BYTES;
}

/* Frees what cfg owns, leaving the struct itself. */
static void config_clear(wf_config *cfg) {
  strlist_clear(&cfg->plugin_paths);
  strlist_clear(&cfg->plugin_load);
  strlist_clear(&cfg->plugin_deny);
  wf__free(cfg->plugin_load_from);
  wf__free(cfg->plugin_deny_from);
  strlist_clear(&cfg->device_order);
  strlist_clear(&cfg->device_order_at);
  strlist_clear(&cfg->kernel_deny);
  strlist_clear(&cfg->kernel_deny_at);
  strlist_clear(&cfg->kernel_prefer);
  strlist_clear(&cfg->kernel_prefer_at);
  strlist_clear(&cfg->cluster_transport);
  strlist_clear(&cfg->plugin_passes_off);
  strlist_clear(&cfg->plugin_passes_off_at);
  strlist_clear(&cfg->files);
}

wf_config *wf_config_new(void) {
  wf_config *cfg = wf__calloc(1, sizeof *cfg);
  if (cfg)
    config_defaults(cfg);
  return cfg;
}

void wf_config_free(wf_config *cfg) {
  if (!cfg)
    return;
  config_clear(cfg);
  wf__free(cfg);
}

wf_config *wf__config_copy(const wf_config *cfg) {
  wf_config *c;
  assert(cfg);
  c = wf__calloc(1, sizeof *c);
  if (!c)
    return NULL;
  *c = *cfg; /* scalars; every owned member is replaced below */
  c->plugin_paths = c->plugin_load = c->plugin_deny = (wf__strlist){0};
  c->device_order = c->device_order_at = c->files = (wf__strlist){0};
  c->kernel_deny = c->kernel_deny_at = (wf__strlist){0};
  c->kernel_prefer = c->kernel_prefer_at = (wf__strlist){0};
  c->cluster_transport = (wf__strlist){0};
  c->plugin_passes_off = c->plugin_passes_off_at = (wf__strlist){0};
  c->plugin_load_from = c->plugin_deny_from = NULL;
  if (strlist_copy(&c->plugin_paths, &cfg->plugin_paths) ||
      strlist_copy(&c->plugin_load, &cfg->plugin_load) ||
      strlist_copy(&c->plugin_deny, &cfg->plugin_deny) ||
      strlist_copy(&c->device_order, &cfg->device_order) ||
      strlist_copy(&c->device_order_at, &cfg->device_order_at) ||
      strlist_copy(&c->kernel_deny, &cfg->kernel_deny) ||
      strlist_copy(&c->kernel_deny_at, &cfg->kernel_deny_at) ||
      strlist_copy(&c->kernel_prefer, &cfg->kernel_prefer) ||
      strlist_copy(&c->kernel_prefer_at, &cfg->kernel_prefer_at) ||
      strlist_copy(&c->cluster_transport, &cfg->cluster_transport) ||
      strlist_copy(&c->plugin_passes_off, &cfg->plugin_passes_off) ||
      strlist_copy(&c->plugin_passes_off_at, &cfg->plugin_passes_off_at) ||
      strlist_copy(&c->files, &cfg->files))
    goto fail;
  if (cfg->plugin_load_from &&
      !(c->plugin_load_from = wf__strdup(cfg->plugin_load_from)))
    goto fail;
  if (cfg->plugin_deny_from &&
      !(c->plugin_deny_from = wf__strdup(cfg->plugin_deny_from)))
    goto fail;
  return c;

fail:
  wf_config_free(c);
  return NULL;
}

/* ---- keys --------------------------------------------------------------- */

typedef enum key_kind {
  KEY_BOOL,       /* int member */
  KEY_COUNT,      /* int member, 0..INT_MAX */
  KEY_BYTES,      /* long long member, 0..LLONG_MAX */
  KEY_LIST,       /* wf__strlist member */
  KEY_PATH_LIST,  /* wf__strlist member; relative items are made relative to
                     the directory of the file that names them */
  KEY_KERNEL_LIST /* wf__strlist member of [kernels] rules: LABEL or
                     OP:LABEL items */
} key_kind;

typedef struct key_def {
  const char *section;
  const char *key;
  key_kind kind;
  size_t offset;      /* of the member in struct wf_config */
  size_t from_offset; /* of a char * naming the file that set it, or 0 */
  size_t at_offset;   /* of a wf__strlist getting each item's origin, or 0 */
} key_def;

#define MEMBER(m) offsetof(struct wf_config, m)

static const key_def keys[] = {
    {"plugins", "paths", KEY_PATH_LIST, MEMBER(plugin_paths), 0, 0},
    {"plugins", "load", KEY_LIST, MEMBER(plugin_load), MEMBER(plugin_load_from),
     0},
    {"plugins", "deny", KEY_LIST, MEMBER(plugin_deny), MEMBER(plugin_deny_from),
     0},
    {"plugins", "strict", KEY_BOOL, MEMBER(plugin_strict), 0, 0},
    {"plugins", "use_env_path", KEY_BOOL, MEMBER(plugin_env_path), 0, 0},
    {"plugins", "use_default_dir", KEY_BOOL, MEMBER(plugin_default_dir), 0, 0},
    {"devices", "order", KEY_LIST, MEMBER(device_order), 0,
     MEMBER(device_order_at)},
    {"devices", "cpu_devices", KEY_COUNT, MEMBER(cpu_devices), 0, 0},
    {"threads", "inter_op", KEY_COUNT, MEMBER(inter_op), 0, 0},
    {"threads", "intra_op", KEY_COUNT, MEMBER(intra_op), 0, 0},
    {"threads", "pin", KEY_BOOL, MEMBER(pin), 0, 0},
    {"threads", "adapt", KEY_BOOL, MEMBER(adapt), 0, 0},
    {"passes", "prune", KEY_BOOL, MEMBER(pass_prune), 0, 0},
    {"passes", "cse", KEY_BOOL, MEMBER(pass_cse), 0, 0},
    {"passes", "constant_folding", KEY_BOOL, MEMBER(pass_constant_folding), 0,
     0},
    {"passes", "dead_nodes", KEY_BOOL, MEMBER(pass_dead_nodes), 0, 0},
    {"passes", "placement", KEY_BOOL, MEMBER(pass_placement), 0, 0},
    {"passes", "constant_folding_max_bytes", KEY_BYTES,
     MEMBER(constant_folding_max_bytes), 0, 0},
    {"kernels", "deny", KEY_KERNEL_LIST, MEMBER(kernel_deny), 0,
     MEMBER(kernel_deny_at)},
    {"kernels", "prefer", KEY_KERNEL_LIST, MEMBER(kernel_prefer), 0,
     MEMBER(kernel_prefer_at)},
    {"cluster", "transport", KEY_LIST, MEMBER(cluster_transport), 0, 0},
    {"cluster", "heartbeat_timeout_ms", KEY_COUNT,
     MEMBER(cluster_heartbeat_timeout_ms), 0, 0},
    {"passes", "memory_plan", KEY_BOOL, MEMBER(memory_plan), 0, 0},
    {"debug", "check_numerics", KEY_BOOL, MEMBER(check_numerics), 0, 0},
};

#define NUM_KEYS ((int)(sizeof keys / sizeof keys[0]))

static int section_known(const char *section) {
  for (int i = 0; i < NUM_KEYS; i++)
    if (strcmp(keys[i].section, section) == 0)
      return 1;
  return 0;
}

static const key_def *find_key(const char *section, const char *key) {
  for (int i = 0; i < NUM_KEYS; i++)
    if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].key, key) == 0)
      return &keys[i];
  return NULL;
}

/* Where a value came from, for messages: "FILE:LINE" or "config". */
typedef struct origin {
  const char *file; /* NULL: set by the program */
  long line;
  const char *base_dir; /* directory relative paths are taken from, or NULL */
} origin;

static wf_code bad_value(wf_status *st, const origin *o, const key_def *k,
                         const char *value, const char *expected) {
  if (o->file)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s:%ld: bad value '%s' for %s in [%s]: expected %s",
                         o->file, o->line, value, k->key, k->section, expected);
  return wf_status_set(st, WF_INVALID_ARGUMENT,
                       "config: bad value '%s' for %s in [%s]: expected %s",
                       value, k->key, k->section, expected);
}

static int parse_bool(const char *v, int *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(v, yes[i]) == 0) {
      *out = 1;
      return 0;
    }
    if (strcasecmp(v, no[i]) == 0) {
      *out = 0;
      return 0;
    }
  }
  return -1;
}

/* A whole number in [0, max], decimal, nothing else around it. */
static int parse_count(const char *v, long long max, long long *out) {
  char *end;
  long long x;
  if (*v < '0' || *v > '9')
    return -1;
  errno = 0;
  x = strtoll(v, &end, 10);
  if (errno || *end || x > max)
    return -1;
  *out = x;
  return 0;
}

/* Appends the comma-separated items of v to l, spaces trimmed, empty items
 * skipped; relative items are prefixed with base_dir when given. */
static int push_items(wf__strlist *l, const char *v, const char *base_dir,
                      wf_status *st) {
  const char *p = v;
  while (*p) {
    const char *start, *end;
    size_t n;
    while (*p == ' ' || *p == '\t')
      p++;
    start = p;
    while (*p && *p != ',')
      p++;
    end = p;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
      end--;
    n = (size_t)(end - start);
    if (n > 0) {
      int rc;
      if (base_dir && start[0] != '/') {
        char *joined = wf__asprintf("%s/%.*s", base_dir, (int)n, start);
        rc = joined ? strlist_push(l, joined, strlen(joined)) : -1;
        wf__free(joined);
      } else {
        rc = strlist_push(l, start, n);
      }
      if (rc)
        return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                             "config: out of memory storing '%.*s'", (int)n,
                             start);
    }
    if (*p == ',')
      p++;
  }
  return WF_OK;
}

/* 1 when s (of n bytes) is a name of letters, digits and "_.-+", and for
 * a label also '/' between such parts ("onednn/openblas"). */
static int name_ok(const char *s, size_t n, int label) {
  if (n == 0 || (label && (s[0] == '/' || s[n - 1] == '/')))
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' || c == '+')
      continue;
    if (label && c == '/' && s[i + 1] != '/')
      continue;
    return 0;
  }
  return 1;
}

/* 1 when item is a [kernels] rule: LABEL, OP:LABEL or OP:*. */
static int kernel_item_ok(const char *item) {
  const char *colon = strchr(item, ':');
  if (!colon)
    return name_ok(item, strlen(item), 1);
  if (strchr(colon + 1, ':') || !name_ok(item, (size_t)(colon - item), 0))
    return 0;
  return strcmp(colon + 1, "*") == 0 ||
         name_ok(colon + 1, strlen(colon + 1), 1);
}

/* Appends "FILE:LINE" (or "config" for a program's value) to at n times,
 * first emptying it unless the value continues the previous line. */
static int record_origins(wf__strlist *at, int append, int n, const origin *o) {
  char *text =
      o->file ? wf__asprintf("%s:%ld", o->file, o->line) : wf__strdup("config");
  int rc = 0;
  if (!append)
    strlist_clear(at);
  if (!text)
    return -1;
  for (int i = 0; i < n && !rc; i++)
    rc = strlist_push(at, text, strlen(text));
  wf__free(text);
  return rc;
}

/* Sets key k of cfg from text v. append: v continues the previous line of a
 * list value. On error cfg may be half changed: callers work on a copy. */
static int set_value(wf_config *cfg, const key_def *k, const char *v,
                     int append, const origin *o, wf_status *st) {
  char *base = (char *)cfg;
  long long x;
  int b;

  switch (k->kind) {
  case KEY_BOOL:
    if (parse_bool(v, &b))
      return bad_value(st, o, k, v, "true/false/yes/no/on/off/1/0");
    *(int *)(base + k->offset) = b;
    return WF_OK;
  case KEY_COUNT:
    if (parse_count(v, INT_MAX, &x))
      return bad_value(st, o, k, v, "a whole number >= 0");
    *(int *)(base + k->offset) = (int)x;
    return WF_OK;
  case KEY_BYTES:
    if (parse_count(v, LLONG_MAX, &x))
      return bad_value(st, o, k, v, "a number of bytes >= 0");
    *(long long *)(base + k->offset) = x;
    return WF_OK;
  case KEY_LIST:
  case KEY_PATH_LIST:
  case KEY_KERNEL_LIST: {
    wf__strlist *l = (wf__strlist *)(base + k->offset);
    int rc, first;
    if (!append)
      strlist_clear(l);
    first = l->n;
    rc = push_items(l, v, k->kind == KEY_PATH_LIST ? o->base_dir : NULL, st);
    if (rc)
      return rc;
    if (k->kind == KEY_KERNEL_LIST)
      for (int i = first; i < l->n; i++)
        if (!kernel_item_ok(l->items[i]))
          return bad_value(st, o, k, l->items[i],
                           "kernel labels (onednn, reference) or OP:LABEL "
                           "items (Conv2D:onednn, Conv2D:*), comma-separated");
    if (k->at_offset && record_origins((wf__strlist *)(base + k->at_offset),
                                       append, l->n - first, o))
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "config: out of memory");
    if (k->from_offset) {
      char **from = (char **)(base + k->from_offset);
      char *copy = NULL;
      if (o->file && !(copy = wf__strdup(o->file)))
        return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                             "config: out of memory");
      wf__free(*from);
      *from = copy;
    }
    return WF_OK;
  }
  }
  assert(0 && "unhandled key kind");
  return WF_INTERNAL;
}

/* [passes] NAME = BOOL for a pass a plugin registers (the registry is not
 * known yet: a name no plugin registers is noted once plugins are loaded,
 * core/plugin/config_notes.c). */
static int set_plugin_pass(wf_config *cfg, const char *key, const char *value,
                           const origin *o, const char *where, wf_status *st) {
  int on;
  if (parse_bool(value, &on))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s%s: bad value '%s' for %s in [passes]: expected "
                         "true or false (a plugin pass's switch)",
                         o->file ? o->file : "config", where, value, key);
  for (int i = 0; i < cfg->plugin_passes_off.n; i++) {
    if (strcmp(cfg->plugin_passes_off.items[i], key) != 0)
      continue;
    if (on) { /* switched back on: drop it from the list */
      wf__free(cfg->plugin_passes_off.items[i]);
      wf__free(cfg->plugin_passes_off_at.items[i]);
      for (int j = i + 1; j < cfg->plugin_passes_off.n; j++) {
        cfg->plugin_passes_off.items[j - 1] = cfg->plugin_passes_off.items[j];
        cfg->plugin_passes_off_at.items[j - 1] =
            cfg->plugin_passes_off_at.items[j];
      }
      cfg->plugin_passes_off.n--;
      cfg->plugin_passes_off_at.n--;
    }
    return 0;
  }
  if (on)
    return 0;
  char at[4096];
  if (o->file)
    snprintf(at, sizeof at, "%s%s", o->file, where);
  else
    snprintf(at, sizeof at, "config");
  if (strlist_push(&cfg->plugin_passes_off, key, strlen(key)) ||
      strlist_push(&cfg->plugin_passes_off_at, at, strlen(at)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "config: out of memory storing [passes] %s", key);
  return 0;
}

/* Checks section and key and sets the value. */
static int set_key(wf_config *cfg, const char *section, const char *key,
                   const char *value, int append, const origin *o,
                   wf_status *st) {
  const key_def *k;
  char where[64];

  if (o->file)
    snprintf(where, sizeof where, ":%ld", o->line);
  else
    where[0] = '\0';
  if (!*section)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s%s: key '%s' is outside any [section]",
                         o->file ? o->file : "config", where, key);
  if (!section_known(section))
    return wf_status_set(st, WF_INVALID_ARGUMENT, "%s%s: unknown section [%s]",
                         o->file ? o->file : "config", where, section);
  k = find_key(section, key);
  if (!k && strcmp(section, "passes") == 0 && !append)
    return set_plugin_pass(cfg, key, value, o, where, st);
  if (!k)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s%s: unknown key '%s' in section [%s]",
                         o->file ? o->file : "config", where, key, section);
  if (append && k->kind != KEY_LIST && k->kind != KEY_PATH_LIST &&
      k->kind != KEY_KERNEL_LIST)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s%s: indented line continues %s in [%s], which "
                         "takes one value (remove the indentation)",
                         o->file ? o->file : "config", where, key, section);
  if (append && strchr(value, '='))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s%s: indented line '%s' continues the list %s in "
                         "[%s] (remove the indentation to start a new key)",
                         o->file ? o->file : "config", where, value, key,
                         section);
  return set_value(cfg, k, value, append, o, st);
}

/* Replaces cfg's contents with those of the finished copy c (and frees c). */
static void config_commit(wf_config *cfg, wf_config *c) {
  config_clear(cfg);
  *cfg = *c;
  wf__free(c);
}

int wf_config_set(wf_config *cfg, const char *section, const char *key,
                  const char *value, wf_status *st) {
  origin o = {NULL, 0, NULL};
  wf_config *c;
  int code;

  assert(cfg && section && key && value);
  c = wf__config_copy(cfg);
  if (!c)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "config: out of memory setting %s in [%s]", key,
                         section);
  code = set_key(c, section, key, value, 0, &o, st);
  if (code) {
    wf_config_free(c);
    return code;
  }
  config_commit(cfg, c);
  return WF_OK;
}

/* ---- files -------------------------------------------------------------- */

/* State of one wf_config_load, shared by the line reader and the handler. */
typedef struct parse_ctx {
  wf_config *cfg; /* the copy being filled */
  FILE *f;
  origin o; /* o.line: line of the text being parsed */
  long next_line;
  int indented; /* the current line starts with a space or tab */
  char *last_section, *last_key; /* of the previous key = value */
  wf_status *st;
  int code; /* of the first error (st holds its message) */
} parse_ctx;

/* fgets for libinih that also tracks line numbers, and turns an overlong
 * line into an error rather than two half lines. */
static char *read_line(char *buf, int num, void *stream) {
  parse_ctx *c = stream;
  size_t len;

  if (!fgets(buf, num, c->f))
    return NULL;
  c->o.line = c->next_line;
  len = strlen(buf);
  c->indented = buf[0] == ' ' || buf[0] == '\t';
  if (len > 0 && buf[len - 1] == '\n') {
    c->next_line++;
  } else if (!feof(c->f)) {
    int ch;
    while ((ch = fgetc(c->f)) != EOF && ch != '\n')
      ;
    c->next_line++;
    if (!c->code)
      c->code = wf_status_set(c->st, WF_INVALID_ARGUMENT,
                              "%s:%ld: line longer than %d characters",
                              c->o.file, c->o.line, num - 2);
  }
  return buf;
}

static int remember_key(parse_ctx *c, const char *section, const char *key) {
  char *s = wf__strdup(section), *k = wf__strdup(key);
  if (!s || !k) {
    wf__free(s);
    wf__free(k);
    return -1;
  }
  wf__free(c->last_section);
  wf__free(c->last_key);
  c->last_section = s;
  c->last_key = k;
  return 0;
}

static int on_key(void *user, const char *section, const char *key,
                  const char *value) {
  parse_ctx *c = user;
  int append, code;

  if (c->code)
    return 1; /* only the first error is reported */
  /* libinih hands an indented line under a key to the handler again with
   * that key: that continues a list. */
  append = c->indented && c->last_key && strcmp(c->last_key, key) == 0 &&
           strcmp(c->last_section, section) == 0;
  if (!value)
    value = "";
  code = set_key(c->cfg, section, key, value, append, &c->o, c->st);
  if (!code && remember_key(c, section, key))
    code = wf_status_set(c->st, WF_RESOURCE_EXHAUSTED, "%s:%ld: out of memory",
                         c->o.file, c->o.line);
  c->code = code;
  return code == WF_OK;
}

/* The absolute directory holding path, or NULL when out of memory. */
static char *dir_of(const char *path) {
  char *real = realpath(path, NULL), *dir, *slash;
  const char *src = real ? real : path;

  slash = strrchr(src, '/');
  if (!slash)
    dir = wf__strdup(".");
  else if (slash == src)
    dir = wf__strdup("/");
  else
    dir = wf__strndup(src, (size_t)(slash - src));
  free(real);
  return dir;
}

int wf_config_load(wf_config *cfg, const char *path, wf_status *st) {
  parse_ctx c;
  struct stat sb;
  char *base_dir = NULL;
  int rc, code;

  assert(cfg && path);
  memset(&c, 0, sizeof c);
  c.st = st;
  c.o.file = path;
  c.next_line = 1;
  c.f = fopen(path, "r");
  if (!c.f) {
    int e = errno;
    return wf_status_set(st, e == ENOENT ? WF_NOT_FOUND : WF_PERMISSION_DENIED,
                         "config file %s: %s", path, strerror(e));
  }
  if (fstat(fileno(c.f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    code = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "config file %s is a directory", path);
    goto out;
  }
  base_dir = dir_of(path);
  c.cfg = wf__config_copy(cfg);
  if (!base_dir || !c.cfg || strlist_push(&c.cfg->files, path, strlen(path))) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "config file %s: out of memory", path);
    goto out;
  }
  c.o.base_dir = base_dir;

  rc = ini_parse_stream(read_line, &c, on_key, &c);
  if (c.code) {
    code = c.code;
    goto out;
  }
  if (rc == -2) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "config file %s: out of memory", path);
    goto out;
  }
  if (rc != 0) {
    code = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s:%d: syntax error: expected [section], "
                         "key = value or a comment",
                         path, rc);
    goto out;
  }
  if (ferror(c.f)) {
    code = wf_status_set(st, WF_DATA_LOSS, "config file %s: read error", path);
    goto out;
  }
  config_commit(cfg, c.cfg);
  c.cfg = NULL;
  code = WF_OK;

out:
  fclose(c.f);
  wf_config_free(c.cfg);
  wf__free(base_dir);
  wf__free(c.last_section);
  wf__free(c.last_key);
  return code;
}

const char *wf_config_default_path(void) {
  const char *env = getenv("WEFT_CONFIG");
  static const char installed[] = WF_SYSCONF_DIR "/weft/weft.conf";

  if (env && *env)
    return env;
  if (access(installed, F_OK) == 0)
    return installed;
  return NULL;
}

const char *wf_config_plugin_dir(void) { return WF_PLUGIN_DIR; }

int wf__config_int(const wf_config *cfg, const char *section, const char *key,
                   int64_t *out) {
  const key_def *k = find_key(section, key);
  if (!cfg || !k)
    return -1;
  const char *base = (const char *)cfg + k->offset;
  switch (k->kind) {
  case KEY_COUNT:
  case KEY_BOOL:
    *out = *(const int *)base;
    return 0;
  case KEY_BYTES:
    *out = (int64_t) * (const long long *)base;
    return 0;
  default:
    return -1;
  }
}
