/* tests/plugins/needs_good.c — "test-needs-good": requires "test-good" and
 * adds a kernel for its TestScale op, so it can only register after it. */
#include <weft/plugin.h>

static const wf_host *host;

static int copy_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return host->kernel_output_set(ctx, 0,
                                 (wf_tensor *)host->kernel_input(ctx, 0), st);
}

static const wf_kernel_def copy_kernel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "TestScale",
    .device_type = "testother",    .label = "test-forward",
    .compute = copy_compute,
};

static int needs_good_init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

static const char *const requires[] = {"test-good", NULL};
static const wf_kernel_def *const kernels[] = {&copy_kernel, NULL};

static const wf_plugin_desc needs_good_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-needs-good",
    .version = "1.0",
    .requires = requires,
    .kernels = kernels,
    .init = needs_good_init,
};

WF_PLUGIN(needs_good, needs_good_plugin)
