/* core/plugin/config_notes.c — checking a runtime's config against the
 * plugins it loaded: [devices] order types no plugin provides or whose
 * devices are unavailable, [kernels] items that match no kernel, [passes]
 * switches of passes no plugin registers. Notes,
 * not errors: placement records them, `weft ops` logs them once. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/log.h"
#include "plugin/config_notes.h"
#include "plugin/runtime_internal.h"
#include "plugin/settings.h"

/* ---- config notes ------------------------------------------------------- */

void wf__config_notes_free(wf__config_note *notes, int n) {
  for (int i = 0; i < n; i++)
    wf__free(notes[i].text);
  wf__free(notes);
}

/* Appends a note of level with the text fmt makes. -1 when out of memory
 * (*notes stays valid for wf__config_notes_free with *n). */
static int push_note(wf__config_note **notes, int *n, int level,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int push_note(wf__config_note **notes, int *n, int level,
                     const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  wf__config_note *grown =
      wf__realloc(*notes, (size_t)(*n + 1) * sizeof **notes);
  if (!grown)
    return -1;
  *notes = grown;
  if (!(grown[*n].text = wf__strdup(text)))
    return -1;
  grown[(*n)++].level = level;
  return 0;
}

static const wf__device_type *device_type_named(const wf_runtime *rt,
                                                const char *type) {
  for (int i = 0; i < wf__registry_device_type_count(rt->reg); i++) {
    const wf__device_type *t = wf__registry_device_type_at(rt->reg, i);
    if (strcmp(t->def.type, type) == 0)
      return t;
  }
  return NULL;
}

/* Where item i of a config list was set, from its parallel list at. */
static const char *origin_of(const wf__strlist *at, int i) {
  return i < at->n ? at->items[i] : "config";
}

/* The note on [devices] order item i, if it names no usable device. */
static int order_note(const wf_runtime *rt, int i, wf__config_note **notes,
                      int *n) {
  const char *type = rt->cfg->device_order.items[i];
  const char *at = origin_of(&rt->cfg->device_order_at, i);
  const wf__device_type *t = device_type_named(rt, type);
  const wf__device *first = NULL;
  int count = 0, available = 0;

  if (!t)
    return push_note(notes, n, WF_LOG_INFO,
                     "%s: [devices] order names device type '%s', which no "
                     "loaded plugin provides; skipped",
                     at, type);
  for (int d = 0; d < rt->num_devices; d++) {
    if (rt->devices[d].type != t)
      continue;
    if (!first)
      first = &rt->devices[d];
    count++;
    available += rt->devices[d].desc.available != 0;
  }
  if (count == 0)
    return push_note(notes, n, WF_LOG_INFO,
                     "%s: [devices] order names device type '%s' (plugin "
                     "%s), which has no devices here; skipped",
                     at, type, t->plugin);
  if (available == 0)
    return push_note(notes, n, WF_LOG_INFO,
                     "%s: [devices] order names device type '%s', whose "
                     "devices are all unavailable (%s: %s); skipped",
                     at, type, first->desc.name, first->desc.reason);
  return 0;
}

/* The note on [kernels] item `item` of `key`, if it names no kernel of a
 * loaded device type (the core's transfer kernels are not chosen by the
 * rules, and kernels of absent device types never run). */
static int rule_note(const wf_runtime *rt, const char *key, const char *item,
                     const char *at, wf__config_note **notes, int *n) {
  const wf__registry *r = rt->reg;
  const char *colon = strchr(item, ':');
  char labels[512];
  size_t used = 0;
  int op_found = 0;

  labels[0] = '\0';
  for (int i = 0; i < wf__registry_kernel_count(r); i++) {
    const wf__kernel *k = wf__registry_kernel_at(r, i);
    if (!device_type_named(rt, k->def.device_type))
      continue;
    if (wf__kernel_rule_matches(item, k))
      return 0;
    if (colon && (strncmp(k->def.op, item, (size_t)(colon - item)) != 0 ||
                  k->def.op[colon - item] != '\0'))
      continue;
    op_found = 1;
    /* The distinct labels the item could have named, for the message. */
    const char *label = k->def.label ? k->def.label : "unlabelled";
    size_t ln = strlen(label);
    int seen = 0;
    for (const char *p = labels; *p && !seen;) {
      const char *end = strstr(p, ", ");
      size_t len = end ? (size_t)(end - p) : strlen(p);
      seen = len == ln && strncmp(p, label, ln) == 0;
      p += len + (end ? 2 : 0);
    }
    if (!seen) {
      int w = snprintf(labels + used, sizeof labels - used, "%s%s",
                       used ? ", " : "", label);
      if (w > 0 && (size_t)w < sizeof labels - used)
        used += (size_t)w;
    }
  }
  if (colon && !op_found)
    return push_note(notes, n, WF_LOG_WARNING,
                     "%s: [kernels] %s item '%s' names op '%.*s', which has "
                     "no kernel here; ignored",
                     at, key, item, (int)(colon - item), item);
  if (colon)
    return push_note(notes, n, WF_LOG_WARNING,
                     "%s: [kernels] %s item '%s' matches none of the "
                     "kernels of op '%.*s' (labelled %s); ignored",
                     at, key, item, (int)(colon - item), item, labels);
  return push_note(notes, n, WF_LOG_WARNING,
                   "%s: [kernels] %s item '%s' matches no kernel label "
                   "(the labels are %s); ignored",
                   at, key, item, used ? labels : "none");
}

int wf__config_notes(const wf_runtime *rt, wf__config_note **notes, int *n) {
  const wf_config *cfg = rt->cfg;
  *notes = NULL;
  *n = 0;
  for (int i = 0; i < cfg->device_order.n; i++)
    if (order_note(rt, i, notes, n))
      goto oom;
  for (int i = 0; i < cfg->kernel_deny.n; i++)
    if (rule_note(rt, "deny", cfg->kernel_deny.items[i],
                  origin_of(&cfg->kernel_deny_at, i), notes, n))
      goto oom;
  for (int i = 0; i < cfg->kernel_prefer.n; i++)
    if (rule_note(rt, "prefer", cfg->kernel_prefer.items[i],
                  origin_of(&cfg->kernel_prefer_at, i), notes, n))
      goto oom;
  for (int i = 0; i < cfg->plugin_passes_off.n; i++) {
    const char *name = cfg->plugin_passes_off.items[i];
    int found = 0;
    for (int k = 0; k < wf__registry_pass_count(rt->reg) && !found; k++)
      found = strcmp(wf__registry_pass_at(rt->reg, k)->def.name, name) == 0;
    if (!found &&
        push_note(notes, n, WF_LOG_WARNING,
                  "%s: [passes] %s = false names no pass of a loaded "
                  "plugin; ignored",
                  origin_of(&cfg->plugin_passes_off_at, i), name))
      goto oom;
  }
  return 0;

oom:
  wf__config_notes_free(*notes, *n);
  *notes = NULL;
  *n = 0;
  return -1;
}

void wf__config_notice(const wf_runtime *rt) {
  wf__config_note *notes;
  int n;
  if (!wf__registry_claim_notice(rt->reg))
    return;
  if (wf__config_notes(rt, &notes, &n)) {
    wf__log(WF_LOG_WARNING, "config",
            "out of memory checking the config against the loaded plugins");
    return;
  }
  for (int i = 0; i < n; i++)
    wf__log(notes[i].level, "config", "%s", notes[i].text);
  wf__config_notes_free(notes, n);
}

