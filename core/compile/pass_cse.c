/* core/compile/pass_cse.c — common-subexpression elimination on a signature's
 * working graph: nodes that compute the same op of the same inputs with the
 * same attributes, control inputs and requested device are merged into the
 * first of them, which takes over the others' data and control consumers.
 *
 * It never merges stateful, random or fed nodes, and it removes nothing:
 * the merged-away nodes are left without consumers for dead-node removal. */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "graph/graph_internal.h"
#include "compile/passes.h"
#include "base/status_internal.h"

/* Nodes whose every execution may differ from another's (state, effects,
 * random streams keyed by node) or that stand for a feed are never merged. */
#define CSE_NEVER (WF_OP_STATEFUL | WF_OP_RANDOM | WF_OP_SOURCE_FED)

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * UINT64_C(0xbf58476d1ce4e5b9);
}

static uint64_t mix_str(uint64_t h, const char *s) {
  uint64_t x = UINT64_C(14695981039346656037);
  for (; *s; s++)
    x = (x ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return mix(h, x);
}

/* Input i of n in the order used for hashing and comparison: an op
 * flagged commutative reads its two inputs lowest (node id, slot) first. */
static wf_output input_at(const wf_node *n, int i) {
  if ((n->op->def.flags & WF_OP_COMMUTATIVE) && n->num_inputs == 2) {
    const wf_output a = n->inputs[0], b = n->inputs[1];
    int swap =
        b.node->id < a.node->id || (b.node == a.node && b.index < a.index);
    return n->inputs[swap ? 1 - i : i];
  }
  return n->inputs[i];
}

static uint64_t node_hash(const wf_node *n) {
  uint64_t h = mix_str(0, n->op->def.name);
  h = mix_str(h, n->device);
  h = mix(h, (uint64_t)n->num_inputs);
  for (int i = 0; i < n->num_inputs; i++) {
    wf_output in = input_at(n, i);
    h = mix(h, (uint64_t)in.node->id);
    h = mix(h, (uint64_t)in.index);
  }
  /* Control inputs in any order: their count only (compared in full). */
  h = mix(h, (uint64_t)n->num_control_inputs);
  for (int a = 0; a < n->num_attrs; a++)
    h = wf__attr_hash(&n->attrs[a].v, mix_str(h, n->attrs[a].name));
  return h;
}

/* 1 when every control input of a is one of b's (both lists are free of
 * duplicates: wf_graph_add_control_edge and node descriptions keep them
 * so). */
static int controls_within(const wf_node *a, const wf_node *b) {
  for (int i = 0; i < a->num_control_inputs; i++) {
    int found = 0;
    for (int j = 0; j < b->num_control_inputs && !found; j++)
      found = a->control_inputs[i] == b->control_inputs[j];
    if (!found)
      return 0;
  }
  return 1;
}

/* The full comparison behind a hash match. */
static int same_computation(const wf_node *a, const wf_node *b) {
  if (a->op != b->op || a->num_inputs != b->num_inputs ||
      a->num_outputs != b->num_outputs || a->num_attrs != b->num_attrs ||
      a->num_control_inputs != b->num_control_inputs ||
      strcmp(a->device, b->device) != 0)
    return 0;
  for (int i = 0; i < a->num_inputs; i++) {
    wf_output x = input_at(a, i), y = input_at(b, i);
    if (x.node != y.node || x.index != y.index)
      return 0;
  }
  for (int k = 0; k < a->num_attrs; k++)
    if (strcmp(a->attrs[k].name, b->attrs[k].name) != 0 ||
        !wf__attr_equal(&a->attrs[k].v, &b->attrs[k].v))
      return 0;
  return controls_within(a, b) && controls_within(b, a);
}

/* Every node of g in an order where each comes after the producers of its
 * data and control inputs. Returns the count (g->num_nodes unless there is
 * a cycle, which graphs refuse to form), or -1 when out of memory. */
static int topo_order(const wf_graph *g, wf_node **order) {
  int n = g->num_nodes, head = 0, tail = 0;
  int *indeg = wf__calloc((size_t)n + 1, sizeof *indeg);
  if (!indeg)
    return -1;
  for (int id = 0; id < n; id++) {
    indeg[id] = g->nodes[id]->num_inputs + g->nodes[id]->num_control_inputs;
    if (indeg[id] == 0)
      order[tail++] = g->nodes[id];
  }
  while (head < tail) {
    const wf_node *nd = order[head++];
    /* One data-consumer entry per consuming slot, as indeg counts them. */
    for (int k = 0; k < nd->num_data_consumers; k++)
      if (--indeg[nd->data_consumers[k]->id] == 0)
        order[tail++] = nd->data_consumers[k];
    for (int k = 0; k < nd->num_control_consumers; k++)
      if (--indeg[nd->control_consumers[k]->id] == 0)
        order[tail++] = nd->control_consumers[k];
  }
  wf__free(indeg);
  return tail;
}

/* Makes every control consumer of dup wait for keep instead. keep and dup
 * have the same inputs, so this cannot form a cycle. */
static int move_control_consumers(wf_graph *g, wf_node *dup, wf_node *keep,
                                  wf_status *st) {
  while (dup->num_control_consumers > 0) {
    wf_node *c = dup->control_consumers[dup->num_control_consumers - 1];
    if (wf_graph_add_control_edge(g, keep, c, st))
      return wf_status_code(st);
    wf__graph_remove_control_edge(dup, c);
  }
  return 0;
}

/* Replaces dup by keep everywhere: data consumers of each output, control
 * consumers, fetches and targets of the signature. */
static int merge(wf__work *w, wf_node *dup, wf_node *keep, wf_status *st) {
  for (int o = 0; o < dup->num_outputs && dup->num_data_consumers > 0; o++)
    if (wf__graph_redirect(w->g, (wf_output){dup, o}, (wf_output){keep, o}, st))
      return wf_status_code(st);
  if (move_control_consumers(w->g, dup, keep, st))
    return wf_status_code(st);
  for (int f = 0; f < w->sig.nfetches; f++)
    if (w->fetches[f].node == dup)
      w->fetches[f].node = keep;
  for (int t = 0; t < w->sig.ntargets; t++)
    if (w->targets[t] == dup)
      w->targets[t] = keep;
  return 0;
}

int wf__pass_cse(wf__pass_env *env, wf_status *st) {
  wf_graph *g = env->work->g;
  int n = g->num_nodes, rc = 0;
  /* Open addressing with at least twice as many slots as nodes. */
  size_t cap = 16;
  while (cap < 2 * (size_t)n)
    cap *= 2;
  wf_node **order = wf__calloc((size_t)n + 1, sizeof *order);
  wf_node **table = wf__calloc(cap, sizeof *table);
  uint64_t *hashes = wf__calloc(cap, sizeof *hashes);
  if (!order || !table || !hashes) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "common-subexpression elimination: out of memory");
    goto done;
  }
  int count = topo_order(g, order);
  if (count != n) {
    rc = wf_status_set(st, count < 0 ? WF_RESOURCE_EXHAUSTED : WF_INTERNAL,
                       "common-subexpression elimination: %s",
                       count < 0 ? "out of memory"
                                 : "the working graph has a cycle");
    goto done;
  }
  /* In topological order a node's producers were merged before it is
   * looked at, so equal computations read the very same inputs. */
  for (int i = 0; i < n; i++) {
    wf_node *nd = order[i];
    if (nd->op->def.flags & CSE_NEVER)
      continue;
    uint64_t h = node_hash(nd);
    size_t at = (size_t)h & (cap - 1);
    wf_node *match = NULL;
    for (; table[at]; at = (at + 1) & (cap - 1)) {
      if (hashes[at] == h && same_computation(table[at], nd)) {
        match = table[at];
        break;
      }
    }
    if (!match) {
      table[at] = nd;
      hashes[at] = h;
      continue;
    }
    rc = merge(env->work, nd, match, st);
    if (rc) {
      wf_status_prefix(st, "merging node '%s' into '%s'", nd->name,
                       match->name);
      goto done;
    }
  }
done:
  wf__free(order);
  wf__free(table);
  wf__free(hashes);
  return rc;
}
