/* tests/plugins/cycle_b.c — "test-cycle-b": requires "test-cycle-a",
 * which requires it back: the loader must refuse both. */
#include <weft/plugin.h>

static const char *const requires[] = {"test-cycle-a", NULL};

static const wf_plugin_desc cycle_b_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-cycle-b",
    .version = "1.0",
    .requires = requires,
};

WF_PLUGIN(cycle_b, cycle_b_plugin)
