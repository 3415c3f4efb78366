/* tests/plugins/picky.c — a kernel that declines nodes (supports, since
 * plugin ABI 1.3), for tests/core/test_kernel_supports.c: a float32 Neg
 * for the CPU above every other (priority 1000, label "picky") that takes
 * only nodes whose input has rank 1, and allocates its output with the
 * shape the op's shape function gives (kernel_output_shape). */
#include <weft/plugin.h>

static const wf_host *host;

static int picky_supports(const wf_node *node) {
  wf_output in = host->node_input(node, 0);
  wf_shape s;
  return in.node && host->node_output_info(in.node, in.index, NULL, &s) == 0 &&
         s.rank == 1;
}

static int picky_compute(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {
  (void)kstate;
  wf_shape shape;
  if (host->kernel_output_shape(ctx, 0, &shape, st))
    return host->status_code(st);
  const wf_tensor *x = host->kernel_input(ctx, 0);
  wf_tensor *y = host->kernel_output_new(ctx, 0, &shape, st);
  if (!y)
    return host->status_code(st);
  const float *a = host->tensor_data(x);
  float *b = host->tensor_data(y);
  for (int64_t i = 0; i < host->tensor_count(x); i++)
    b[i] = -a[i];
  return 0;
}

static const wf_kernel_def picky = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Neg", .device_type = "cpu",
    .type_attr = "T", .dtypes = WF_DTYPE_BIT(WF_FLOAT32), .priority = 1000,
    .label = "picky", .compute = picky_compute, .supports = picky_supports};
static const wf_kernel_def *const kernels[] = {&picky, NULL};

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  if (!WF_STRUCT_HAS(h, wf_host, kernel_output_shape)) {
    h->status_set(st, WF_FAILED_PRECONDITION,
                  "needs a host of plugin ABI 1.3 or later");
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc), .name = "test-picky", .version = "1.0",
    .kernels = kernels, .init = init};

WF_PLUGIN(picky, desc)
