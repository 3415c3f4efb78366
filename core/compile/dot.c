/* core/compile/dot.c — Graphviz views of graphs: a user graph as it is, and a
 * signature's working graph before and after each pass, with nodes coloured
 * by device and each device's partition drawn as a cluster.
 *
 * Reading graph files is the persistence layer's; this only writes. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "compile/compile.h"
#include "compile/work.h"
#include "compile/partition.h"
#include "compile/placement.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

static const char *const palette[] = {"#cfe2f3", "#d9ead3", "#fce5cd",
                                      "#ead1dc", "#fff2cc", "#d0e0e3",
                                      "#f4cccc", "#d9d2e9"};

static void quoted(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* Writes g; device[id] (may be NULL) colours nodes and groups them. */
static int write_dot(const wf_graph *g, const int *device,
                     const wf_runtime *rt, const char *path, wf_status *st) {
  FILE *f = fopen(path, "w");
  if (!f)
    return wf_status_set(st, WF_PERMISSION_DENIED,
                         "dot file '%s': cannot open for writing: %s", path,
                         strerror(errno));
  fprintf(f, "digraph weft {\n  rankdir=TB;\n  node [shape=box, "
             "style=\"rounded,filled\", fillcolor=white, fontsize=10];\n");
  int ndev = rt ? rt->num_devices : 0;
  for (int d = -1; d < (device ? ndev : 0); d++) {
    int open = 0;
    for (int id = 0; id < g->num_nodes; id++) {
      if (device && device[id] != d)
        continue;
      if (device && d >= 0 && !open) {
        fprintf(f, "  subgraph cluster_%d {\n    label=", d);
        quoted(f, rt->devices[d].desc.name);
        fprintf(f, ";\n    style=dashed;\n");
        open = 1;
      }
      const wf_node *n = g->nodes[id];
      char label[512];
      snprintf(label, sizeof label, "%s\\n%s", n->name, n->op->def.name);
      fprintf(f, "    n%d [label=", id);
      quoted(f, label);
      if (device && d >= 0)
        fprintf(f, ", fillcolor=\"%s\"",
                palette[d % (int)(sizeof palette / sizeof palette[0])]);
      fprintf(f, "];\n");
    }
    if (open)
      fprintf(f, "  }\n");
  }
  for (int id = 0; id < g->num_nodes; id++) {
    const wf_node *n = g->nodes[id];
    for (int i = 0; i < n->num_inputs; i++)
      fprintf(f, "  n%d -> n%d [label=\"%d:%d\", fontsize=8];\n",
              n->inputs[i].node->id, id, n->inputs[i].index, i);
    for (int i = 0; i < n->num_control_inputs; i++)
      fprintf(f, "  n%d -> n%d [style=dotted];\n", n->control_inputs[i]->id,
              id);
  }
  fprintf(f, "}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return wf_status_set(st, WF_DATA_LOSS, "dot file '%s': write failed: %s",
                         path, strerror(errno));
  return 0;
}

int wf_graph_write_dot(const wf_graph *g, const char *path, wf_status *st) {
  return write_dot(g, NULL, g->rt, path, st);
}

/* Called by wf__work_build after each step when a dump is wanted. */
int wf__dump_work(const wf__work *w, const char *dir, int index,
                  const char *what, wf_status *st) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%02d-%s.dot", dir, index, what);
  return write_dot(w->g, NULL, w->g->rt, path, st);
}

int wf_graph_write_dot_passes(wf_graph *g, const wf_output *feeds, int nfeeds,
                              const wf_output *fetches, int nfetches,
                              wf_node *const *targets, int ntargets,
                              const char *dir, wf_status *st) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return wf_status_set(st, WF_PERMISSION_DENIED,
                         "dot directory '%s': %s", dir, strerror(errno));
  char path[4096];
  snprintf(path, sizeof path, "%s/00-graph.dot", dir);
  if (write_dot(g, NULL, g->rt, path, st))
    return wf_status_code(st);
  wf__signature sig = {feeds, nfeeds, fetches, nfetches, targets, ntargets};
  /* The stages a session runs (core/compile/compile.c), but no task split:
   * a drawing ships nothing to other tasks. */
  wf__compiled c;
  if (wf__compile(g->rt, g, &sig, 0, dir, &c, st))
    return wf_status_code(st);
  snprintf(path, sizeof path, "%s/99-partitioned.dot", dir);
  int rc = write_dot(c.work->g, c.placement.device, g->rt, path, st);
  wf__compiled_deinit(g->rt, &c);
  return rc;
}
