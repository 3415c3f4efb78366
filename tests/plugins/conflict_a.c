/* tests/plugins/conflict_a.c — "test-conflict-a": defines op TestConflict
 * with one input. conflict_b defines it with two: whichever loads second
 * is refused with a message naming both plugins. */
#include <weft/plugin.h>

static const wf_arg_def inputs[] = {WF_ARG_FIXED("x", WF_FLOAT32, "(N) input"),
                                    WF_ARG_END};
static const wf_arg_def outputs[] = {
    WF_ARG_FIXED("y", WF_FLOAT32, "(N) output"), WF_ARG_END};

static const wf_op_def conflict_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestConflict",
    .inputs = inputs,
    .outputs = outputs,
    .doc = "One-input version (test plugin).",
};

static const wf_op_def *const ops[] = {&conflict_op, NULL};

static const wf_plugin_desc conflict_a_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-conflict-a",
    .version = "1.0",
    .ops = ops,
};

WF_PLUGIN(conflict_a, conflict_a_plugin)
