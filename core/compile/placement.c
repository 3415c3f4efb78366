/* core/compile/placement.c — choosing a device (and so a kernel) for every node of
 * a working graph: explicit requests first, stateful nodes together with the
 * variables they use, then the config's device order among the devices that
 * have a kernel the config's [kernels] rules allow. A request that cannot be
 * met falls back to another device and is recorded (and logged once) —
 * never silently; so are config items that name nothing loaded (a device
 * type of [devices] order without devices here is skipped, not an error).
 *
 * It does not split the graph between devices (partitioning does), nor
 * rank kernels (core/plugin/registry.c does). */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "exec/kernel.h"
#include "dist/cluster_internal.h"
#include "compile/placement.h"
#include "plugin/runtime_internal.h"
#include "plugin/settings.h"
#include "base/status_internal.h"

void wf__placement_deinit(wf__placement *p) {
  for (int i = 0; i < p->num_notes; i++) {
    wf__free(p->notes[i].requested);
    wf__free(p->notes[i].reason);
  }
  wf__free(p->notes);
  wf__config_notes_free(p->config_notes, p->num_config_notes);
  wf__free(p->device);
  wf__free(p->kernel);
  memset(p, 0, sizeof *p);
}

/* Union-find over node ids: nodes that must share a device. */
static int find(int *parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

static void unite(int *parent, int a, int b) {
  a = find(parent, a);
  b = find(parent, b);
  if (a != b)
    parent[a < b ? b : a] = a < b ? a : b;
}

/* The device a request names: "cpu", "cpu:1", optionally after "/device:"
 * or "/", any case. -1 when none does; *type_only says whether only the
 * type was given. */
/* The device part of a request that names this runtime's task
 * ("/task:0/cpu:0" on task 0 is "cpu:0"; "/task:0" alone is ""). The
 * split between tasks (core/dist/cluster.c) has taken other tasks' nodes away
 * before placement. */
static const char *local_request(const wf_runtime *rt, const char *req) {
  const char *rest;
  const wf__cluster *c = atomic_load(&((wf_runtime *)rt)->cluster);
  int task = wf__device_task(req, &rest);
  if (task >= 0 && task == (c ? wf__cluster_task(c) : 0))
    return rest;
  return req ? req : "";
}

static int resolve(const wf_runtime *rt, const char *req) {
  req = local_request(rt, req);
  if (strncasecmp(req, "/device:", 8) == 0)
    req += 8;
  else if (req[0] == '/')
    req++;
  int has_index = strchr(req, ':') != NULL;
  for (int d = 0; d < rt->num_devices; d++) {
    const wf__device *dev = &rt->devices[d];
    if (has_index ? strcasecmp(dev->desc.name, req) == 0
                  : strcasecmp(dev->type->def.type, req) == 0)
      return d;
  }
  return -1;
}

static int add_note(wf__placement *p, const wf_node *n, const char *req,
                    int device, const char *why) {
  wf__placement_note *grown =
      wf__realloc(p->notes, (size_t)(p->num_notes + 1) * sizeof *grown);
  if (!grown)
    return -1;
  p->notes = grown;
  wf__placement_note *note = &p->notes[p->num_notes];
  note->node = n;
  note->requested = wf__strdup(req);
  note->device = device;
  note->reason = wf__strdup(why);
  if (!note->requested || !note->reason) {
    wf__free(note->requested);
    wf__free(note->reason);
    return -1;
  }
  p->num_notes++;
  return 0;
}

/* For the error when nothing fits: which device types have kernels for
 * node's op, and where the config's [kernels] deny is why none is left. */
static void kernel_devices(const wf_runtime *rt, const wf_node *node, char *buf,
                           size_t len) {
  const char *op = node->op->def.name, *last = NULL;
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < wf__registry_kernel_count(rt->reg); i++) {
    const wf__kernel *k = wf__registry_kernel_at(rt->reg, i);
    wf__kernel_choice c;
    char denied[512];
    if (strcmp(k->def.op, op) != 0 ||
        (last && !strcmp(last, k->def.device_type)))
      continue;
    last = k->def.device_type;
    denied[0] = '\0';
    if (!wf__kernel_choose(rt, node, last, &c) && c.num_denied > 0)
      wf__kernel_denials(rt, node, last, denied, sizeof denied);
    int w = snprintf(buf + used, len - used, "%s%s%s%s%s%s", used ? ", " : "",
                     last, denied[0] ? " (every one for its dtypes " : "",
                     denied[0] ? "denied by the config: " : "", denied,
                     denied[0] ? ")" : "");
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  if (!used)
    snprintf(buf, len, "none");
}

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

int wf__place(wf_runtime *rt, const wf_graph *g, const unsigned char *keep,
              wf__placement *p, wf_status *st) {
  int n = g->num_nodes, nd = rt->num_devices, rc = 0;
  memset(p, 0, sizeof *p);
  p->device = wf__calloc((size_t)n + 1, sizeof *p->device);
  p->kernel = wf__calloc((size_t)n + 1, sizeof *p->kernel);
  int *parent = wf__calloc((size_t)n + 1, sizeof *parent);
  /* fits[id * nd + d]: device d has a kernel for node id. */
  const wf__kernel **fits =
      wf__calloc((size_t)n * (size_t)(nd > 0 ? nd : 1) + 1, sizeof *fits);
  unsigned char *ok = wf__calloc((size_t)(nd > 0 ? nd : 1), 1);
  if (!p->device || !p->kernel || !parent || !fits || !ok ||
      wf__config_notes(rt, &p->config_notes, &p->num_config_notes)) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "placement: out of memory");
    goto out;
  }
  wf__config_notice(rt);
  for (int id = 0; id < n; id++) {
    p->device[id] = -1;
    parent[id] = id;
  }
  /* Which devices can run each node (with a kernel the config allows). */
  for (int id = 0; id < n; id++) {
    const wf_node *node = g->nodes[id];
    if (!keep[id] || (node->op->def.flags & WF_OP_SOURCE_FED))
      continue;
    for (int d = 0; d < nd; d++) {
      const wf__device *dev = &rt->devices[d];
      if (!dev->desc.available)
        continue;
      fits[(size_t)id * nd + d] =
          wf__kernel_choose(rt, node, dev->type->def.type, NULL);
    }
  }
  /* Stateful nodes go with the variables (resource handles) they use. */
  for (int id = 0; id < n; id++) {
    const wf_node *node = g->nodes[id];
    if (!keep[id])
      continue;
    for (int i = 0; i < node->num_inputs; i++) {
      wf_output in = node->inputs[i];
      if (in.node->output_dtypes[in.index] == WF_RESOURCE && keep[in.node->id])
        unite(parent, id, in.node->id);
    }
  }
  /* Place each group: a request of a member if it can be met, else the
   * first device in the runtime's order that every member can run on. */
  for (int root = 0; root < n; root++) {
    if (!keep[root] || find(parent, root) != root)
      continue;
    const wf_node *asker = NULL;
    int any = 0;
    for (int d = 0; d < nd; d++)
      ok[d] = rt->devices[d].desc.available;
    for (int id = root; id < n; id++) {
      if (!keep[id] || find(parent, id) != root)
        continue;
      const wf_node *node = g->nodes[id];
      if (node->op->def.flags & WF_OP_SOURCE_FED)
        continue;
      any = 1;
      for (int d = 0; d < nd; d++)
        ok[d] = ok[d] && fits[(size_t)id * nd + d];
      if (!asker && node->device && local_request(rt, node->device)[0])
        asker = node;
    }
    if (!any)
      continue; /* only fed sources: nothing runs */
    int chosen = -1;
    char why[640] = "";
    if (asker) {
      int want = resolve(rt, asker->device);
      if (want < 0)
        snprintf(why, sizeof why, "no device '%s' is known",
                 asker->device);
      else if (!rt->devices[want].desc.available)
        snprintf(why, sizeof why, "%s is unavailable (%s)",
                 rt->devices[want].desc.name, rt->devices[want].desc.reason);
      else if (!ok[want])
        snprintf(why, sizeof why,
                 "%s has no kernel for it (or for a node that must share its "
                 "device)",
                 rt->devices[want].desc.name);
      else
        chosen = want;
    }
    if (chosen < 0)
      for (int d = 0; d < nd && chosen < 0; d++)
        if (ok[d])
          chosen = d;
    if (chosen < 0) {
      /* Name every op of the group and where its kernels are. */
      char msg[2048];
      size_t used = 0;
      for (int id = root; id < n && used < sizeof msg; id++) {
        const wf_node *node = g->nodes[id];
        if (!keep[id] || find(parent, id) != root ||
            (node->op->def.flags & WF_OP_SOURCE_FED))
          continue;
        char have[1024];
        kernel_devices(rt, node, have, sizeof have);
        int w = snprintf(msg + used, sizeof msg - used,
                         "%snode '%s' (op '%s'): kernels for %s",
                         used ? "; " : "", node->name, node->op->def.name,
                         have);
        if (w < 0)
          break;
        used += (size_t)w;
      }
      rc = wf_status_set(st, WF_NOT_FOUND,
                         "no available device can run %s: %s",
                         nd ? "these nodes together" : "anything (no device "
                                                       "plugin is loaded)",
                         msg);
      goto out;
    }
    if (asker && why[0]) {
      if (add_note(p, asker, asker->device, chosen, why)) {
        rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "placement: out of memory");
        goto out;
      }
      wf__log(WF_LOG_WARNING, "placement",
              "node '%s' asked for '%s' but runs on %s: %s", asker->name,
              asker->device, rt->devices[chosen].desc.name, why);
    }
    for (int id = root; id < n; id++) {
      const wf_node *node = g->nodes[id];
      if (!keep[id] || find(parent, id) != root ||
          (node->op->def.flags & WF_OP_SOURCE_FED))
        continue;
      p->device[id] = chosen;
      p->kernel[id] = fits[(size_t)id * nd + chosen];
      /* Another member's different request loses to the group's device. */
      if (node != asker && local_request(rt, node->device)[0] &&
          resolve(rt, node->device) != chosen) {
        char share[320];
        snprintf(share, sizeof share,
                 "it must run where '%s' runs: nodes using a variable stay "
                 "with it",
                 g->nodes[root]->name);
        if (add_note(p, node, node->device, chosen, share)) {
          rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                             "placement: out of memory");
          goto out;
        }
        wf__log(WF_LOG_WARNING, "placement",
                "node '%s' asked for '%s' but runs on %s: %s", node->name,
                node->device, rt->devices[chosen].desc.name, share);
      }
    }
  }
out:
  wf__free(parent);
  wf__free(fits);
  wf__free(ok);
  if (rc)
    wf__placement_deinit(p);
  return rc;
}
