/* core/compile/compile.c — the compile room's driver: one forward pass from
 * a user's graph and a signature (feeds, fetches, targets) to what
 * core/exec builds executors from. Each stage takes the previous one's
 * output; a session caches the result per signature (with its executor).
 *
 *   1. prune       prune.c      the nodes the signature needs, copied into
 *                  optimize.c   a working graph; fed tensors become _Feed
 *                               nodes (the only pruning of the user's graph)
 *   2. passes      pass_*.c     CSE, constant folding, then the passes
 *                  plugin_     plugins register, in their order (ops-math's
 *                  passes.c    arithmetic, ops-nn's fusion, ...), then dead
 *                               nodes; each switched in [passes]
 *   3. live set    prune.c      which working-graph nodes still run after
 *                               the passes: computed once, then carried
 *   4. task split  core/dist    (jobs only, through the runtime's job
 *                               table) other tasks' shares leave with
 *                               _TaskSend/_TaskRecv pairs; the live set is
 *                               taken again, since whole shares went away
 *   5. placement   placement.c  a device for every live node
 *   6. partition   partition.c  _Send/_Recv pairs where edges cross
 *                               devices; the pairs join the live set
 *   then core/exec/executor.c  per device: nodes in order, slots and edges
 *                               (plan.h), and memplan.c plans their memory.
 *
 * Nothing here runs a kernel or allocates a tensor but constant folding. */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "compile/compile.h"
#include "compile/partition.h"
#include "compile/prune.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"

void wf__compiled_deinit(wf_runtime *rt, wf__compiled *c) {
  if (c->dist)
    rt->job->dist_free(c->dist);
  wf__placement_deinit(&c->placement);
  if (c->work) {
    wf__work_deinit(c->work);
    wf__free(c->work);
  }
  wf__free(c->live);
  memset(c, 0, sizeof *c);
}

/* Stage 3 (and 4's retake): c->live from the working graph. */
static int take_live_set(wf__compiled *c, wf_status *st) {
  int n = c->work->g->num_nodes;
  wf__free(c->live);
  c->live = wf__calloc((size_t)n + 1, 1);
  if (!c->live)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "compiling the signature: out of memory");
  return wf__prune(c->work->g, &c->work->sig, c->live, st) < 0
             ? wf_status_code(st)
             : 0;
}

int wf__compile(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                int split_tasks, const char *dump_dir, wf__compiled *out,
                wf_status *st) {
  wf__compiled *c = out;
  memset(c, 0, sizeof *c);
  /* 1-2: prune into the working graph, then the passes. */
  c->work = wf__calloc(1, sizeof *c->work);
  if (!c->work) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "compiling the signature: out of memory");
    goto fail;
  }
  if (wf__work_build_dump(rt, g, sig, c->work, dump_dir, st)) {
    wf__free(c->work);
    c->work = NULL;
    goto fail;
  }
  /* 3: the live set. */
  if (take_live_set(c, st))
    goto fail;
  /* 4: other tasks' shares. */
  if (split_tasks && rt->job) {
    if (rt->job->split(rt, c->work, c->live, &c->dist, st))
      goto fail;
    if (c->dist && take_live_set(c, st))
      goto fail;
  }
  /* 5: placement. */
  if (wf__place(rt, c->work->g, c->live, &c->placement, st))
    goto fail;
  /* 6: transfers between devices; the nodes they add run. */
  int n0 = c->work->g->num_nodes;
  c->num_transfers =
      wf__partition(rt, c->work, &c->placement, c->live, st);
  if (c->num_transfers < 0)
    goto fail;
  int n = c->work->g->num_nodes;
  if (n > n0) {
    unsigned char *grown = wf__realloc(c->live, (size_t)n + 1);
    if (!grown) {
      wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                    "compiling the signature: out of memory");
      goto fail;
    }
    c->live = grown;
    memset(c->live + n0, 1, (size_t)(n - n0));
  }
  return 0;

fail:
  wf__compiled_deinit(rt, c);
  return wf_status_code(st) ? wf_status_code(st) : WF_INTERNAL;
}
