/* core/compile/work.h — the working graph of one signature: the pruned part
 * of the user's graph copied into a graph of its own (fed tensors become
 * _Feed nodes), which the graph passes may then rewrite freely before
 * executors are built from it. The user's graph is never changed. What a
 * pass is (wf__pass_env) lives here too, so that the passes and their
 * driver (core/compile/optimize.c) share it without including each
 * other. */
#ifndef WF_CORE_WORK_H
#define WF_CORE_WORK_H

#include "compile/prune.h"

typedef struct wf__work {
  wf_graph *g;        /* owned */
  wf_output *feeds;   /* feed i: output 0 of its _Feed node */
  wf_output *fetches; /* fetch i, in g */
  wf_node **targets;  /* target i, in g */
  wf__signature sig;  /* the three arrays above as a signature of g */
} wf__work;

/* Context handed to each pass: the working graph and its signature. Passes
 * may add nodes, rewire inputs (wf__node_set_input, wf__graph_redirect) and
 * add control edges; nodes left unused drop out of the working graph's
 * live set (core/compile/compile.c). A pass must keep fetched outputs'
 * values and every stateful node's effects. */
typedef struct wf__pass_env {
  wf__work *work;
  wf_runtime *rt;
  const wf_config *cfg;
} wf__pass_env;

typedef int wf__pass_fn(wf__pass_env *env, wf_status *st);

/* The part of g that sig needs, copied into a fresh working graph *w in
 * an order where every node follows its inputs (errors of the signature,
 * see wf__prune, are reported here); 0, or -1 with st set. */
int wf__work_new(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                 wf__work *w, wf_status *st);
void wf__work_deinit(wf__work *w);
/* A copy of w's working graph and signature in *out (what the signature
 * needs only); 0, or the code with st set. */
int wf__work_copy(wf_runtime *rt, const wf__work *w, wf__work *out,
                  wf_status *st);
/* core/compile/dot.c: writes w's graph as dir/NN-what.dot. */
int wf__dump_work(const wf__work *w, const char *dir, int index,
                  const char *what, wf_status *st);

#endif
