/* core/compile/optimize.c — per signature: the working graph
 * (core/compile/work.c copies what the signature needs), then the graph
 * passes the config switches on, in their fixed order, with the passes
 * plugins register (core/compile/plugin_passes.c) before dead-node
 * removal.
 *
 * Each pass is its own file (core/compile/pass_*.c); this file only
 * sequences them (and is the dead-node pass: a fresh copy). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "plugin/settings.h"
#include "graph/graph_internal.h"
#include "compile/optimize.h"
#include "compile/passes.h"
#include "compile/plugin_passes.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

/* The passes, in the order they run, each switched by a [passes] key. */
static const struct {
  const char *name;
  size_t flag; /* offset of its int switch in wf_config */
  wf__pass_fn *run;
} passes[] = {
    {"cse", offsetof(wf_config, pass_cse), wf__pass_cse},
    {"constant_folding", offsetof(wf_config, pass_constant_folding),
     wf__pass_constant_folding},
    {"dead_nodes", offsetof(wf_config, pass_dead_nodes), wf__pass_dead_nodes},
};

/* Dead-node removal: the working graph is copied again with only what its
 * signature needs, so nodes other passes left unused disappear (and graph
 * dumps show the graph that runs). */
int wf__pass_dead_nodes(wf__pass_env *env, wf_status *st) {
  wf__work fresh;
  if (wf__work_copy(env->rt, env->work, &fresh, st))
    return wf_status_code(st);
  /* Fed tensors of the old working graph are outputs of _Feed nodes: the
   * copy made new _Feed nodes for them (named after the old ones). */
  wf__work_deinit(env->work);
  *env->work = fresh;
  return 0;
}

/* Graphviz dumps after plugin passes, numbered on from the core's. */
typedef struct dump_state {
  wf__work *work;
  const char *dir;
  int *step;
} dump_state;

static int dump_after(void *arg, const char *name, wf_status *st) {
  dump_state *d = arg;
  char what[160];
  snprintf(what, sizeof what, "after-%s", name);
  return wf__dump_work(d->work, d->dir, (*d->step)++, what, st);
}

int wf__work_build_dump(wf_runtime *rt, const wf_graph *g,
                        const wf__signature *sig, wf__work *out,
                        const char *dump_dir, wf_status *st) {
  if (wf__work_new(rt, g, sig, out, st))
    return wf_status_code(st) ? wf_status_code(st) : WF_INTERNAL;
  int step = 1, rc = 0;
  if (dump_dir)
    rc = wf__dump_work(out, dump_dir, step++, "pruned", st);
  wf__pass_env env = {out, rt, rt->cfg};
  dump_state ds = {out, dump_dir, &step};
  for (size_t p = 0; p < sizeof passes / sizeof passes[0] && !rc; p++) {
    /* Plugins' passes run after the core's rewrites and before dead-node
     * removal. */
    if (passes[p].run == wf__pass_dead_nodes &&
        (rc = wf__run_plugin_passes(&env, dump_dir ? dump_after : NULL, &ds,
                                    st)))
      break;
    const int *on = (const int *)((const char *)rt->cfg + passes[p].flag);
    if (!*on)
      continue;
    rc = passes[p].run(&env, st);
    if (rc) {
      wf_status_prefix(st, "graph pass '%s'", passes[p].name);
      break;
    }
    if (dump_dir) {
      char what[64];
      snprintf(what, sizeof what, "after-%s", passes[p].name);
      rc = wf__dump_work(out, dump_dir, step++, what, st);
    }
  }
  if (rc)
    wf__work_deinit(out);
  return rc;
}

int wf__work_build(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                   wf__work *out, wf_status *st) {
  return wf__work_build_dump(rt, g, sig, out, NULL, st);
}
