/* core/compile/prune.h — the minimal subgraph for a signature (TensorFlow's
 * feed/fetch rewriting): what the fetches and targets depend on, through
 * data and control edges, with every fed output cut off from its producer. */
#ifndef WF_CORE_PRUNE_H
#define WF_CORE_PRUNE_H

#include <weft/session.h>

/* A signature as given by the caller; arrays borrowed. */
typedef struct wf__signature {
  const wf_output *feeds;
  int nfeeds;
  const wf_output *fetches;
  int nfetches;
  wf_node *const *targets;
  int ntargets;
} wf__signature;

/* Checks the signature against g (outputs exist and belong to g, no tensor
 * fed twice, none both fed and fetched) and marks in keep[node id] (zeroed
 * by the caller, wf_graph_num_nodes entries) every node the step must run.
 * A node is not kept only because one of its outputs is fed. Refuses, naming
 * it, a kept node whose op must be fed (Placeholder) but whose output is not.
 * Returns the number of kept nodes, or -1 with st set. */
int wf__prune(const wf_graph *g, const wf__signature *sig, unsigned char *keep,
              wf_status *st);

/* 1 when output (node, index) is among the feeds; *which receives its index. */
int wf__signature_fed(const wf__signature *sig, const wf_node *n, int index,
                      int *which);

#endif
