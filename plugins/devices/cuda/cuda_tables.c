/* plugins/devices/cuda/cuda_tables.c — the list of the plugin's kernel
 * tables, one per source file, that cuda_plugin.c registers when a GPU is
 * usable. A new file of kernels adds its table here. */
#include <config.h>

#include "cuda_device.h"

const wf_kernel_def *const *const wf__cuda_kernel_tables[] = {
    wf__cuda_kernels,       wf__cuda_math_kernels,  wf__cuda_reduce_kernels,
    wf__cuda_nn_kernels,    wf__cuda_array_kernels, wf__cuda_train_kernels,
    NULL};
