/* tests/plugins/newer_minor.c — "test-newer-minor": built for the next ABI
 * minor, with a description larger than this core's. The core loads it and
 * ignores what it does not know (capped). */
#include <weft/plugin.h>

/* The description as a newer minor might lay it out: ours, then a member
 * this core has never heard of. */
typedef struct newer_desc {
  wf_plugin_desc base;
  const char *homepage; /* "added in the next minor" */
} newer_desc;

static const wf_arg_def outputs[] = {
    WF_ARG_FIXED("y", WF_FLOAT32, "() a scalar"), WF_ARG_END};

static const wf_op_def newer_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestNewer",
    .outputs = outputs,
    .flags = WF_OP_SOURCE_FED,
    .doc = "An op from a plugin built for a newer minor (test plugin).",
};

static const wf_op_def *const ops[] = {&newer_op, NULL};

static const newer_desc newer_minor_plugin = {
    .base =
        {
            .struct_size = (uint32_t)sizeof(newer_desc),
            .abi_major = WF_ABI_MAJOR,
            .abi_minor = WF_ABI_MINOR + 1,
            .name = "test-newer-minor",
            .version = "0.9",
            .description = "test plugin built for a newer ABI minor",
            .ops = ops,
        },
    .homepage = "https://example.invalid/newer",
};

/* WF_PLUGIN expects a wf_plugin_desc; this one is larger, so the entry
 * points are written out. */
WF_PLUGIN_EXPORT const wf_plugin_desc *newer_minor_LTX_weft_plugin(void);
WF_PLUGIN_EXPORT const wf_plugin_desc *weft_plugin(void);
const wf_plugin_desc *newer_minor_LTX_weft_plugin(void) {
  return &newer_minor_plugin.base;
}
const wf_plugin_desc *weft_plugin(void) { return &newer_minor_plugin.base; }
