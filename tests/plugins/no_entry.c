/* tests/plugins/no_entry.c — a shared object that exports no weft_plugin
 * entry point (in either form): the loader must refuse it. */
#include <weft/plugin.h>

WF_PLUGIN_EXPORT int not_a_weft_plugin(void);
int not_a_weft_plugin(void) { return 42; }
