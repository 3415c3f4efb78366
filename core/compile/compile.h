/* core/compile/compile.h — from a user's graph and a signature to what an
 * executor runs (core/compile/compile.c, whose opening comment is the map
 * of the stages). */
#ifndef WF_CORE_COMPILE_H
#define WF_CORE_COMPILE_H

#include "compile/optimize.h"
#include "compile/placement.h"

struct wf__dist;

/* The compile room's result for one signature. */
typedef struct wf__compiled {
  wf__work *work;          /* the working graph and its signature (owned) */
  unsigned char *live;     /* per working-graph node: runs in this task */
  wf__placement placement; /* a device per live node */
  int num_transfers;       /* rendezvous slots of the Send/Recv pairs */
  struct wf__dist *dist;   /* other tasks' shares (rt->job), or NULL */
} wf__compiled;

/* Runs every stage on sig over g into *out (zeroed first). split_tasks:
 * hand nodes that ask for other tasks to them through rt's job table (a
 * session does; a Graphviz dump does not). dump_dir (may be NULL): write
 * the working graph as Graphviz files after copying and after each pass.
 * Returns 0, or the code with st naming the stage; *out is then empty. */
int wf__compile(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                int split_tasks, const char *dump_dir, wf__compiled *out,
                wf_status *st);
/* Frees what *c holds (the shares on other tasks are unregistered). */
void wf__compiled_deinit(wf_runtime *rt, wf__compiled *c);

#endif
