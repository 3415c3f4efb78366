/* core/plugin/device_memory.h — tensors in a device's own memory (devices
 * whose wf_device_def has copy): core/plugin/device_memory.c. */
#ifndef WF_CORE_DEVICE_MEMORY_H
#define WF_CORE_DEVICE_MEMORY_H

#include <weft/tensor.h>

struct wf__device;

/* Whether tensors of dtype may live in a device's memory: every dtype but
 * resource handles, which are host objects. */
int wf__dtype_movable(wf_dtype dtype);

/* A new tensor of dtype and shape (fully known) in dev's memory (dev NULL:
 * host memory), one reference; RESOURCE_EXHAUSTED naming the device when
 * its alloc fails. */
wf_tensor *wf__tensor_new_on(const struct wf__device *dev, wf_dtype dtype,
                             const wf_shape *shape, wf_status *st);

/* t's values in dev's memory (NULL: host): a new reference to t itself
 * when they are there already (or t's dtype never moves), else a new
 * tensor copied with the devices' copy functions (device to device through
 * the host unless both are the same device). NULL with st set naming both
 * places when a copy fails. */
wf_tensor *wf__tensor_to(const struct wf__device *dev, wf_tensor *t,
                         wf_status *st);

/* A new tensor with t's values in t's own memory (a variable's copy on
 * write). */
wf_tensor *wf__tensor_clone(const wf_tensor *t, wf_status *st);

/* Whether t's buffer is its own, not shared with another tensor or the
 * caller (OWNED host tensors and device tensors made by
 * wf__tensor_new_on): what a variable may keep and update in place. */
int wf__tensor_owns_buffer(const wf_tensor *t);

/* Where t's values are, for messages: "host memory" or "cuda:0". */
const char *wf__tensor_place(const wf_tensor *t);

#endif
