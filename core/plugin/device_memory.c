/* core/plugin/device_memory.c — tensors in a device's own memory: made with
 * the device's allocator, copied between host and device through its copy
 * function, cloned on the device. Host tensors are core/graph/tensor.c's;
 * which tensor goes where is the executor's business (core/exec). */
#include <config.h>

#include <assert.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"
#include "plugin/device_memory.h"
#include "plugin/runtime_internal.h"

/* Handles point into the host's memory; strings are read where they are
 * (wf_tensor_string) and no device kernel takes them. */
int wf__dtype_movable(wf_dtype dtype) {
  return dtype != WF_RESOURCE && dtype != WF_STRING;
}

const char *wf__tensor_place(const wf_tensor *t) {
  return wf__tensor_memory_name(t);
}

/* wf_dealloc_fn of device buffers: back to the device. */
static void device_free(void *data, size_t len, void *arg) {
  const wf__device *d = arg;
  if (data)
    d->type->def.free(d->desc.state, data, len);
}

int wf__tensor_owns_buffer(const wf_tensor *t) {
  return t->wrapped == WF__TENSOR_OWNED ||
         (t->mem && t->dealloc == device_free && t->dealloc_arg == t->mem);
}

wf_tensor *wf__tensor_new_on(const wf__device *dev, wf_dtype dtype,
                             const wf_shape *shape, wf_status *st) {
  char buf[128];
  size_t nbytes;
  void *data = NULL;
  wf_tensor *t;

  if (!dev)
    return wf__tensor_new_shape(dtype, shape, st);
  if (!wf_shape_is_known(shape)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: shape %s is not fully known",
                  wf_shape_str(shape, buf, sizeof buf));
    return NULL;
  }
  if (wf__tensor_check(dtype, shape->dims, shape->rank, &nbytes, st))
    return NULL;
  if (nbytes > 0 &&
      !(data = dev->type->def.alloc(dev->desc.state, nbytes, 256))) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: %s has no memory left for %zu bytes of %s %s",
                  dev->desc.name, nbytes, wf_dtype_name(dtype),
                  wf_shape_str(shape, buf, sizeof buf));
    return NULL;
  }
  t = wf__alloc(sizeof *t, 0);
  if (!t) {
    if (data)
      dev->type->def.free(dev->desc.state, data, nbytes);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory for a tensor on %s", dev->desc.name);
    return NULL;
  }
  wf__tensor_fill(t, dtype, shape->dims, shape->rank, data, nbytes);
  t->dealloc = device_free;
  t->dealloc_arg = (void *)dev;
  t->wrapped = WF__TENSOR_WRAPPED;
  t->mem = dev;
  return t;
}

/* Copies t's bytes into out (same size), across memories as kind says. */
static int copy_bytes(const wf__device *dev, wf_tensor *out,
                      const wf_tensor *t, int32_t kind, wf_status *st) {
  wf_status cs = {WF_OK, NULL};
  int rc;

  if (!t->nbytes)
    return WF_OK;
  rc = dev->type->def.copy(dev->desc.state, out->data, t->data, t->nbytes,
                           kind, &cs);
  if (!rc)
    return WF_OK;
  rc = wf_status_set(st, cs.code != WF_OK ? cs.code : WF_INTERNAL,
                     "copying %zu bytes from %s to %s failed: %s", t->nbytes,
                     wf__tensor_place(t), wf__tensor_place(out),
                     cs.message ? cs.message : "no reason given");
  wf_status_reset(&cs);
  return rc;
}

wf_tensor *wf__tensor_to(const wf__device *dev, wf_tensor *t, wf_status *st) {
  wf_tensor *out, *staged;

  if (t->mem == dev || !wf__dtype_movable(t->dtype))
    return wf_tensor_retain(t);
  if (t->mem && dev) {
    /* Between two devices: through the host. */
    if (!(staged = wf__tensor_to(NULL, t, st)))
      return NULL;
    out = wf__tensor_to(dev, staged, st);
    wf_tensor_release(staged);
    return out;
  }
  out = wf__tensor_new_on(dev, t->dtype, &t->shape, st);
  if (!out)
    return NULL;
  if (copy_bytes(dev ? dev : t->mem, out, t,
                 dev ? WF_COPY_TO_DEVICE : WF_COPY_TO_HOST, st)) {
    wf_tensor_release(out);
    return NULL;
  }
  return out;
}

wf_tensor *wf__tensor_clone(const wf_tensor *t, wf_status *st) {
  wf_tensor *out = wf__tensor_new_on(t->mem, t->dtype, &t->shape, st);
  if (!out)
    return NULL;
  if (!t->mem) {
    if (t->nbytes)
      memcpy(out->data, t->data, t->nbytes);
  } else if (copy_bytes(t->mem, out, t, WF_COPY_ON_DEVICE, st)) {
    wf_tensor_release(out);
    return NULL;
  }
  return out;
}

