/* tests/plugins/needs_newer.c — "test-needs-newer": a plugin that needs a
 * minor of the plugin ABI after this weft's. Its header knows no such
 * minor (WFX_HOST_DEFINE would not compile), so its init asks the helper
 * layer's check for it directly: the loader must refuse it with a message
 * naming the plugin and both versions. */
#include <weft/plugin_aux.h>

WFX_HOST_DEFINE(1, 0);

static int init(const wf_host *h, void **state, wf_status *st) {
  *state = NULL;
  return wfx_host_set(h, "test-needs-newer", WF_ABI_MAJOR, WF_ABI_MINOR + 1,
                      st);
}

static const wf_plugin_desc desc = {WF_STRUCT_INIT(wf_plugin_desc),
                                    .name = "test-needs-newer",
                                    .version = "1.0", .init = init};

WF_PLUGIN(needs_newer, desc)
