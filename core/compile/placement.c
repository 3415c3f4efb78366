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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "plugin/kernel_choice.h"
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

/* The device part of a request that names this runtime's task
 * ("/task:0/cpu:0" on task 0 is "cpu:0"; "/task:0" alone is ""). The
 * split between tasks (core/dist/cluster.c) has taken other tasks' nodes away
 * before placement. */
static const char *local_request(const wf_runtime *rt, const char *req) {
  const char *rest;
  int task = wf__device_task(req, &rest);
  if (task >= 0 && task == atomic_load(&((wf_runtime *)rt)->task))
    return rest;
  return req ? req : "";
}

int wf__resolve_device(const wf_runtime *rt, const char *req) {
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


int wf__device_task(const char *request, const char **rest) {
  *rest = request ? request : "";
  if (!request || strncmp(request, "/task:", 6) != 0)
    return -1;
  const char *p = request + 6;
  char *end;
  long k = strtol(p, &end, 10);
  if (end == p || k < 0 || k > INT32_MAX || (*end && *end != '/'))
    return -2;
  *rest = *end ? end + 1 : "";
  return (int)k;
}

int wf__place(wf_runtime *rt, const wf_graph *g, const unsigned char *keep,
              wf__placement *p, wf_status *st) {
  int n = g->num_nodes, nd = rt->num_devices, rc = 0;
  memset(p, 0, sizeof *p);
  p->device = wf__calloc((size_t)n + 1, sizeof *p->device);
  p->kernel = wf__calloc((size_t)n + 1, sizeof *p->kernel);
  int *parent = wf__calloc((size_t)n + 1, sizeof *parent);
  /* The kept members of group r (r: its smallest id) in id order:
   * member[start[r]] .. member[start[r + 1] - 1]. */
  int *start = wf__calloc((size_t)n + 2, sizeof *start);
  int *member = wf__calloc((size_t)n + 1, sizeof *member);
  /* fits[id * nd + d]: device d has a kernel for node id. */
  const wf__kernel **fits =
      wf__calloc((size_t)n * (size_t)(nd > 0 ? nd : 1) + 1, sizeof *fits);
  unsigned char *ok = wf__calloc((size_t)(nd > 0 ? nd : 1), 1);
  if (!p->device || !p->kernel || !parent || !start || !member || !fits ||
      !ok ||
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
  /* Each group's members, counted into place (a scan from each root would
   * be quadratic in a graph of many small groups). */
  for (int id = 0; id < n; id++)
    if (keep[id])
      start[find(parent, id) + 1]++;
  for (int id = 0; id < n; id++)
    start[id + 1] += start[id];
  /* Filling moves start[r] on to the next group's first slot... */
  for (int id = 0; id < n; id++)
    if (keep[id])
      member[start[find(parent, id)]++] = id;
  /* ...so each start is its predecessor's now. */
  for (int id = n; id > 0; id--)
    start[id] = start[id - 1];
  start[0] = 0;
  /* Place each group: a request of a member if it can be met, else the
   * first device in the runtime's order that every member can run on. */
  for (int root = 0; root < n; root++) {
    if (!keep[root] || find(parent, root) != root)
      continue;
    const wf_node *asker = NULL;
    int any = 0;
    for (int d = 0; d < nd; d++)
      ok[d] = rt->devices[d].desc.available;
    for (int m = start[root]; m < start[root + 1]; m++) {
      int id = member[m];
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
      int want = wf__resolve_device(rt, asker->device);
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
      for (int m = start[root]; m < start[root + 1] && used < sizeof msg;
           m++) {
        const wf_node *node = g->nodes[member[m]];
        if (node->op->def.flags & WF_OP_SOURCE_FED)
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
    for (int m = start[root]; m < start[root + 1]; m++) {
      int id = member[m];
      const wf_node *node = g->nodes[id];
      if (node->op->def.flags & WF_OP_SOURCE_FED)
        continue;
      p->device[id] = chosen;
      p->kernel[id] = fits[(size_t)id * nd + chosen];
      /* Another member's different request loses to the group's device. */
      if (node != asker && local_request(rt, node->device)[0] &&
          wf__resolve_device(rt, node->device) != chosen) {
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
  wf__free(start);
  wf__free(member);
  wf__free(fits);
  wf__free(ok);
  if (rc)
    wf__placement_deinit(p);
  return rc;
}
