/* plugins/devices/cpu/cpu_nn.h — what the oneDNN kernels of the nn ops
 * (cpu_conv.c, cpu_pool.c) share: the sliding-window geometry of Conv2D and
 * the pools in oneDNN's terms, and the layouts of activations and filters.
 *
 * The window attributes are read with plugins/numerics/window.h, the one
 * copy the nn ops use too, so that both pad a window alike. Output shapes
 * come from the ops' shape functions (cpu_output): an input an op refuses
 * gets the op's own error, and the kernels compute empty tensors
 * themselves. */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_NN_H
#define WF_PLUGINS_DEVICES_CPU_CPU_NN_H

#include "cpu_kernels.h"
#include "window.h"

/* One 2-D window over an input of (H, W) in oneDNN's terms. */
typedef struct cpu_win {
  int64_t in[2], k[2], out[2];
  dnnl_dims_t strides, kernel, dilates; /* dilates: dilation - 1 */
  dnnl_dims_t pad_l, pad_r;
} cpu_win;

/* Fills g for window w over an input of in[0] x in[1] with a window of
 * k[0] x k[1]: output size and padding as the nn ops define them (SAME's
 * split, VALID's unused tail as zero right padding). Returns 0, or
 * INVALID_ARGUMENT as nn_window_dim. */
int cpu_win_init(const nn_window *w, const int64_t in[2],
                     const int64_t k[2], cpu_win *g, wf_status *st);

/* (N, H, W, C) of a rank-4 activation shape in either format. */
void cpu_nhwc_dims(const wf_shape *s, int nchw, int64_t d[4]);

/* The memory descriptor of an activation (N, C, H, W) logically, stored
 * NHWC or NCHW. */
int cpu_act_md(dnnl_memory_desc_t *md, int nchw, int64_t n, int64_t c,
                   int64_t h, int64_t w, wf_status *st);

/* The activation shape (N, H, W, C) in the format's order. */
void cpu_act_shape(wf_shape *s, int nchw, int64_t n, int64_t h, int64_t w,
                       int64_t c);

#endif /* WF_PLUGINS_DEVICES_CPU_CPU_NN_H */
