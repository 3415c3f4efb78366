/* tests/plugins/abi_major.c — "test-abi-major": built for the next ABI
 * major version, which this core must refuse before reading anything else
 * of its description. */
#include <weft/plugin.h>

static const wf_plugin_desc abi_major_plugin = {
    .struct_size = (uint32_t)sizeof(wf_plugin_desc),
    .abi_major = WF_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "test-abi-major",
    .version = "2.0",
    .description = "test plugin built for a future ABI major",
};

WF_PLUGIN(abi_major, abi_major_plugin)
