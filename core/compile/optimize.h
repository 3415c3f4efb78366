/* core/compile/optimize.h — building a signature's working graph
 * (core/compile/work.h) and running the graph passes on it in their order
 * (core/compile/optimize.c). */
#ifndef WF_CORE_OPTIMIZE_H
#define WF_CORE_OPTIMIZE_H

#include "compile/work.h"

/* Builds the working graph of sig on g and runs the passes the config
 * switches on, in order. Errors of the signature (see wf__prune) are
 * reported here. */
int wf__work_build(wf_runtime *rt, const wf_graph *g, const wf__signature *sig,
                   wf__work *out, wf_status *st);
/* As wf__work_build, writing the working graph as Graphviz files into
 * dump_dir after copying and after each pass (NN-what.dot). */
int wf__work_build_dump(wf_runtime *rt, const wf_graph *g,
                        const wf__signature *sig, wf__work *out,
                        const char *dump_dir, wf_status *st);

#endif
