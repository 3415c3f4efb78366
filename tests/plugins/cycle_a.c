/* tests/plugins/cycle_a.c — "test-cycle-a": requires "test-cycle-b",
 * which requires it back: the loader must refuse both. */
#include <weft/plugin.h>

static const char *const requires[] = {"test-cycle-b", NULL};

static const wf_plugin_desc cycle_a_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-cycle-a",
    .version = "1.0",
    .requires = requires,
};

WF_PLUGIN(cycle_a, cycle_a_plugin)
