/* tests/plugins/init_fails.c — "test-init-fails": its init reports an
 * error, so the core must refuse it, quoting the message, and register
 * none of its op. */
#include <weft/plugin.h>

static const wf_arg_def outputs[] = {
    WF_ARG_FIXED("y", WF_FLOAT32, "() a scalar"), WF_ARG_END};

static const wf_op_def never_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestNeverRegistered",
    .outputs = outputs,
    .flags = WF_OP_SOURCE_FED,
};

static const wf_op_def *const ops[] = {&never_op, NULL};

static int init_fails_init(const wf_host *host, void **state, wf_status *st) {
  (void)state;
  host->status_set(st, WF_UNAVAILABLE,
                   "cannot open /dev/weft-test-device: no such device");
  return WF_UNAVAILABLE;
}

static const wf_plugin_desc init_fails_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-init-fails",
    .version = "1.0",
    .ops = ops,
    .init = init_fails_init,
};

WF_PLUGIN(init_fails, init_fails_plugin)
