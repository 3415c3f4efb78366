/* core/compile/prune.c — pruning a graph to one signature. Walks backwards from the
 * fetches and targets; a fed output stops the walk along that edge. It
 * builds nothing: the executor turns the marks into its plan. */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "compile/prune.h"
#include "base/status_internal.h"

int wf__signature_fed(const wf__signature *sig, const wf_node *n, int index,
                      int *which) {
  for (int i = 0; i < sig->nfeeds; i++) {
    if (sig->feeds[i].node == n && sig->feeds[i].index == index) {
      if (which)
        *which = i;
      return 1;
    }
  }
  return 0;
}

static int check_output(const wf_graph *g, wf_output o, const char *what,
                        int i, wf_status *st) {
  if (!o.node || o.node->graph != g) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "%s %d: the node does not belong to this session's graph",
                  what, i);
    return -1;
  }
  if (o.index < 0 || o.index >= o.node->num_outputs) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "%s %d: node '%s' (op '%s') has %d output(s), no output %d",
                  what, i, o.node->name, o.node->op->def.name,
                  o.node->num_outputs, o.index);
    return -1;
  }
  return 0;
}

static int check_signature(const wf_graph *g, const wf__signature *sig,
                           wf_status *st) {
  for (int i = 0; i < sig->nfeeds; i++) {
    if (check_output(g, sig->feeds[i], "feed", i, st))
      return -1;
    for (int j = 0; j < i; j++) {
      if (sig->feeds[j].node == sig->feeds[i].node &&
          sig->feeds[j].index == sig->feeds[i].index) {
        wf_status_set(st, WF_INVALID_ARGUMENT,
                      "tensor '%s:%d' is fed twice (feeds %d and %d)",
                      sig->feeds[i].node->name, sig->feeds[i].index, j, i);
        return -1;
      }
    }
  }
  for (int i = 0; i < sig->nfetches; i++) {
    if (check_output(g, sig->fetches[i], "fetch", i, st))
      return -1;
    int which;
    if (wf__signature_fed(sig, sig->fetches[i].node, sig->fetches[i].index,
                          &which)) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "tensor '%s:%d' is both fed (feed %d) and fetched "
                    "(fetch %d)",
                    sig->fetches[i].node->name, sig->fetches[i].index, which,
                    i);
      return -1;
    }
  }
  for (int i = 0; i < sig->ntargets; i++) {
    if (!sig->targets[i] || sig->targets[i]->graph != g) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "target %d: the node does not belong to this session's "
                    "graph",
                    i);
      return -1;
    }
  }
  return 0;
}

/* A node is needed when one of its outputs that is not fed is consumed, or
 * when it is a target or a control input of a needed node. Fetching a fed
 * output is refused above, so fetches always need their producer. */
int wf__prune(const wf_graph *g, const wf__signature *sig, unsigned char *keep,
              wf_status *st) {
  if (check_signature(g, sig, st))
    return -1;
  int n = g->num_nodes, kept = 0, top = 0;
  wf_node **stack = wf__calloc((size_t)(n > 0 ? n : 1), sizeof *stack);
  if (!stack) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "pruning: out of memory");
    return -1;
  }
#define PUSH(nd)                                                               \
  do {                                                                         \
    wf_node *n_ = (nd);                                                        \
    if (!keep[n_->id]) {                                                       \
      keep[n_->id] = 1;                                                        \
      kept++;                                                                  \
      stack[top++] = n_;                                                       \
    }                                                                          \
  } while (0)
  for (int i = 0; i < sig->nfetches; i++)
    PUSH(sig->fetches[i].node);
  for (int i = 0; i < sig->ntargets; i++)
    PUSH(sig->targets[i]);
  while (top > 0) {
    wf_node *nd = stack[--top];
    for (int i = 0; i < nd->num_inputs; i++) {
      wf_output in = nd->inputs[i];
      if (!wf__signature_fed(sig, in.node, in.index, NULL))
        PUSH(in.node);
    }
    for (int i = 0; i < nd->num_control_inputs; i++)
      PUSH(nd->control_inputs[i]);
  }
#undef PUSH
  wf__free(stack);
  /* Every kept node whose op must be fed needs all its outputs fed. */
  for (int id = 0; id < n; id++) {
    wf_node *nd = g->nodes[id];
    if (!keep[id] || !(nd->op->def.flags & WF_OP_SOURCE_FED))
      continue;
    for (int o = 0; o < nd->num_outputs; o++) {
      if (!wf__signature_fed(sig, nd, o, NULL)) {
        wf_status_set(st, WF_INVALID_ARGUMENT,
                      "node '%s' (op '%s') must be fed: the fetches and "
                      "targets depend on it, but no feed gives '%s:%d'",
                      nd->name, nd->op->def.name, nd->name, o);
        return -1;
      }
    }
  }
  return kept;
}
