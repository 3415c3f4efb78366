/* plugins/devices/cuda/cuda_tables.c — the list of the plugin's kernel
 * tables, one per source file, that cuda_plugin.c registers when a GPU is
 * usable. A new file of kernels adds its table here. */
#include <config.h>

#include "cuda_device.h"

const wf_kernel_def *const *const cuda_kernel_tables[] = {
    cuda_kernels,       cuda_math_kernels,  cuda_reduce_kernels,
    cuda_nn_kernels,    cuda_array_kernels, cuda_train_kernels,
    NULL};
