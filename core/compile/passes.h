/* core/compile/passes.h — the graph passes run on a signature's working graph (see
 * core/compile/work.h for what a pass may do). One file per pass. */
#ifndef WF_CORE_PASSES_H
#define WF_CORE_PASSES_H

#include "compile/work.h"

/* core/compile/pass_cse.c: common-subexpression elimination. Merges nodes of the
 * same op, attributes, inputs (commutative ops' two inputs in either
 * order), control inputs and requested device into the first of them;
 * never stateful, random or fed ones. */
int wf__pass_cse(wf__pass_env *env, wf_status *st);

/* core/compile/pass_constant_folding.c: evaluates nodes computed from Consts only
 * with their CPU kernels and replaces them by Consts (each output within
 * [passes] constant_folding_max_bytes), gated by the same control
 * dependencies; never stateful, random or fed ones. */
int wf__pass_constant_folding(wf__pass_env *env, wf_status *st);

/* core/compile/optimize.c: copy the working graph again with only what the
 * signature needs. */
int wf__pass_dead_nodes(wf__pass_env *env, wf_status *st);

#endif
