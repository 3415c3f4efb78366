/* plugins/ops/array/plugin.c — the array op plugin (module ops_array): its
 * description and the static tables of what it registers. The ops, their
 * shape functions and reference CPU kernels live in the files beside this
 * one, the gradient functions in grad.c. */
#include <config.h>

#include "array.h"

static const wf_op_def *const ops[] = {&ary_const_op,
                                       &ary_placeholder_op,
                                       &ary_identity_op,
                                       &ary_stop_gradient_op,
                                       &ary_check_numerics_op,
                                       &ary_noop_op,
                                       &ary_fill_op,
                                       &ary_zeros_like_op,
                                       &ary_ones_like_op,
                                       &ary_shape_op,
                                       &ary_size_op,
                                       &ary_reshape_op,
                                       &ary_squeeze_op,
                                       &ary_expand_dims_op,
                                       &ary_transpose_op,
                                       &ary_concat_op,
                                       &ary_split_op,
                                       &ary_tile_op,
                                       &ary_pad_op,
                                       &ary_slice_op,
                                       &ary_strided_slice_op,
                                       &ary_gather_op,
                                       &ary_one_hot_op,
                                       &ary_invert_permutation_op,
                                       &ary_concat_offset_op,
                                       &ary_tile_grad_op,
                                       &ary_pad_grad_op,
                                       &ary_slice_grad_op,
                                       &ary_strided_slice_grad_op,
                                       &ary_gather_grad_op,
                                       &ary_unsorted_segment_sum_op,
                                       NULL};

static const wf_kernel_def *const kernels[] = {&ary_const_kernel,
                                               &ary_identity_kernel,
                                               &ary_stop_gradient_kernel,
                                               &ary_check_numerics_kernel,
                                               &ary_noop_kernel,
                                               &ary_fill_kernel,
                                               &ary_zeros_like_kernel,
                                               &ary_ones_like_kernel,
                                               &ary_shape_kernel,
                                               &ary_size_kernel,
                                               &ary_reshape_kernel,
                                               &ary_squeeze_kernel,
                                               &ary_expand_dims_kernel,
                                               &ary_transpose_kernel,
                                               &ary_concat_kernel,
                                               &ary_split_kernel,
                                               &ary_tile_kernel,
                                               &ary_pad_kernel,
                                               &ary_slice_kernel,
                                               &ary_strided_slice_kernel,
                                               &ary_gather_kernel,
                                               &ary_one_hot_kernel,
                                               &ary_invert_permutation_kernel,
                                               &ary_concat_offset_kernel,
                                               &ary_tile_grad_kernel,
                                               &ary_pad_grad_kernel,
                                               &ary_slice_grad_kernel,
                                               &ary_strided_slice_grad_kernel,
                                               &ary_gather_grad_kernel,
                                               &ary_unsorted_segment_sum_kernel,
                                               NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every
 * entry it uses. */
WFX_HOST_DEFINE(1, 0);

static int init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-array", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-array",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "Array ops (Const, Placeholder, Reshape, Transpose, "
                   "Concat, Split, Slice, StridedSlice, Pad, Gather, OneHot, "
                   "Fill, Tile, ...) with reference CPU kernels and gradients",
    .ops = ops,
    .kernels = kernels,
    .gradients = ary_gradients,
    .init = init,
};

WF_PLUGIN(ops_array, desc)
