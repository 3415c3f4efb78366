/* core/passes.h — the graph passes run on a signature's working graph (see
 * core/optimize.h for what a pass may do). One file per pass. */
#ifndef WF_CORE_PASSES_H
#define WF_CORE_PASSES_H

#include "optimize.h"

/* core/optimize.c: copy the working graph again with only what the
 * signature needs. */
int wf__pass_dead_nodes(wf__pass_env *env, wf_status *st);

#endif
