/* tests/plugins/unresolved.c — "test-unresolved": its init calls a function
 * that nothing defines (it is linked without -z defs on purpose). Loaded
 * lazily, the first call would kill the process; the core must refuse it
 * when it opens it, naming the symbol. */
#include <weft/plugin.h>

extern int wf_test_function_nobody_defines(int x);

static int unresolved_init(const wf_host *host, void **state, wf_status *st) {
  (void)host;
  (void)st;
  *state = NULL;
  return wf_test_function_nobody_defines(1);
}

static const wf_plugin_desc unresolved_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-unresolved",
    .version = "1.0",
    .init = unresolved_init,
};

WF_PLUGIN(unresolved, unresolved_plugin)
