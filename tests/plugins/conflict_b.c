/* tests/plugins/conflict_b.c — "test-conflict-b": defines op TestConflict
 * with two inputs, clashing with conflict_a's one-input definition. */
#include <weft/plugin.h>

static const wf_arg_def inputs[] = {
    WF_ARG_FIXED("x", WF_FLOAT32, "(N) input"),
    WF_ARG_FIXED("z", WF_FLOAT32, "(N) second input"), WF_ARG_END};
static const wf_arg_def outputs[] = {
    WF_ARG_FIXED("y", WF_FLOAT32, "(N) output"), WF_ARG_END};

static const wf_op_def conflict_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestConflict",
    .inputs = inputs,
    .outputs = outputs,
    .doc = "Two-input version (test plugin).",
};

static const wf_op_def *const ops[] = {&conflict_op, NULL};

static const wf_plugin_desc conflict_b_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-conflict-b",
    .version = "1.0",
    .ops = ops,
};

WF_PLUGIN(conflict_b, conflict_b_plugin)
