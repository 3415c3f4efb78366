/* plugins/ops/string/plugin.c — the string op plugin (module ops_string):
 * ops on string tensors (WF_STRING, ABI 1.6) with reference CPU kernels:
 * StringNormalizer (normalizer.c), AsString (as_string.c) and
 * StringToNumber (to_number.c). None is differentiable. */
#include <config.h>

#include "strops.h"

static const wf_op_def *const ops[] = {&str_normalizer_op, &str_as_string_op,
                                       &str_to_number_op, NULL};

static const wf_kernel_def *const kernels[] = {
    &str_normalizer_kernel, &str_as_string_kernel, &str_to_number_kernel, NULL};

static const wf_gradient_def *const gradients[] = {
    &str_normalizer_gradient, &str_as_string_gradient, &str_to_number_gradient,
    NULL};

/* The host table, for every file of the plugin: string tensors
 * (tensor_new_strings, tensor_string) came with ABI 1.6. */
WFX_HOST_DEFINE(1, 6);

static int init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-string", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-string",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "String ops: StringNormalizer (ONNX's: stopwords dropped, "
                   "case changed through a locale's UTF-8 case mappings), "
                   "AsString and StringToNumber (TensorFlow's: numbers to "
                   "text and back, in the C locale; AsString's shortest "
                   "writes floats as NumPy's str() does), with reference "
                   "CPU kernels",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = init,
};

WF_PLUGIN(ops_string, desc)
