/* plugins/devices/cuda/cuda_plugin.c — the "device-cuda" plugin: registers
 * the device type "cuda", probes the CUDA runtime once per process, lists
 * every GPU (or one unavailable cuda:0 saying why there is none), sets up
 * the GPU kernels run on (stream, events, memory cache; the cuBLAS handle
 * on first use) and registers the kernels only when there is one. The
 * CUDA runtime is linked in statically and cuBLAS and cuDNN are opened on
 * first use (cuda_lazy.c), so loading the plugin maps none of them.
 *
 * It does not implement kernels (cuda_kernels.c, cuda_*.cu) or the memory
 * cache's bookkeeping (cuda_cache.c). */
#include <config.h>

#include "cuda_device.h"
#include <weft/plugin_aux.h>

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cudnn.h>
#include <hwloc.h>
#include <hwloc/cudart.h>

/* Kernels registered at most (the tables are checked against it). */
#define MAX_KERNELS 512

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static int state_refs;  /* inits not yet balanced by fini */
static cuda_gpus *state; /* while state_refs > 0 */

/* The plugin's kernel table: the core reads it after init, which fills it
 * with the kernel tables when a GPU is usable and leaves it empty when
 * none is, so that nothing unrunnable is registered. */
static const wf_kernel_def *registered[MAX_KERNELS + 1];

cudev *cuda_kernel_device(void) {
  if (!state)
    return NULL;
  for (int i = 0; i < state->num_devices; i++)
    if (state->devices[i].usable)
      return &state->devices[i];
  return NULL;
}

const char *cuda_error_text(cudaError_t err, char *buf, size_t len) {
  snprintf(buf, len, "%s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
  return buf;
}

/* "13.0" from CUDA's 1000 major + 10 minor encoding. */
static void cuda_version_text(int v, char *buf, size_t len) {
  snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* ---- events -------------------------------------------------------------- */

cudaEvent_t cudev_event_get(cudev *dev, char *why, size_t whylen) {
  cudaEvent_t ev = NULL;
  cudaError_t err;
  char text[192];

  pthread_mutex_lock(&dev->events_mu);
  if (dev->num_events > 0)
    ev = dev->events[--dev->num_events];
  pthread_mutex_unlock(&dev->events_mu);
  if (ev)
    return ev;
  err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    snprintf(why, whylen, "cuda:%d: cudaEventCreateWithFlags failed (%s)",
             dev->ordinal, cuda_error_text(err, text, sizeof text));
    return NULL;
  }
  return ev;
}

void cudev_event_put(cudev *dev, cudaEvent_t ev) {
  pthread_mutex_lock(&dev->events_mu);
  if (dev->num_events == dev->cap_events) {
    int cap = dev->cap_events ? dev->cap_events * 2 : 8;
    cudaEvent_t *grown = wfx_host->alloc((size_t)cap * sizeof *grown, 0);
    if (!grown) {
      /* No room to keep it idle: it is simply destroyed. */
      pthread_mutex_unlock(&dev->events_mu);
      cudaEventDestroy(ev);
      return;
    }
    if (dev->num_events)
      memcpy(grown, dev->events, (size_t)dev->num_events * sizeof *grown);
    wfx_host->free(dev->events);
    dev->events = grown;
    dev->cap_events = cap;
  }
  dev->events[dev->num_events++] = ev;
  pthread_mutex_unlock(&dev->events_mu);
}

/* ---- device memory ------------------------------------------------------- */

/* The cache's backend: cudaMalloc and cudaFree on one device, made current
 * first (the calling thread may have used another). */
static int backend_malloc(void *ctx, size_t bytes, void **out, char *why,
                          size_t whylen) {
  cudev *dev = ctx;
  cudaError_t err = cudaSetDevice(dev->ordinal);

  if (err == cudaSuccess)
    err = cudaMalloc(out, bytes);
  if (err == cudaSuccess)
    return WF_CUCACHE_BACKEND_OK;
  /* Out of memory is not sticky: clear it so later calls do not see it. */
  (void)cudaGetLastError();
  cuda_error_text(err, why, whylen);
  return err == cudaErrorMemoryAllocation ? WF_CUCACHE_BACKEND_NOMEM
                                          : WF_CUCACHE_BACKEND_ERROR;
}

static void backend_free(void *ctx, void *ptr) {
  cudev *dev = ctx;
  cudaError_t err = cudaSetDevice(dev->ordinal);
  char text[192];

  if (err == cudaSuccess)
    err = cudaFree(ptr);
  if (err != cudaSuccess)
    wfx_host->log(WF_LOG_WARNING, WF_CUDA_PLUGIN_NAME,
                  "cuda:%d: cudaFree(%p) failed (%s)", dev->ordinal, ptr,
                  cuda_error_text(err, text, sizeof text));
}

/* wf_device_def.alloc: device memory from the device's cache, aligned to
 * 256 bytes (cudaMalloc's); NULL for a larger alignment, on an unusable
 * device, or when the device is out of memory. */
static void *cuda_alloc(void *device_state, size_t bytes, size_t align) {
  cudev *dev = device_state;
  char why[512];
  void *ptr;

  if (!dev->usable || align > 256)
    return NULL;
  if (cucache_block_alloc(dev->cache, bytes, &ptr, why, sizeof why)) {
    wfx_host->log(WF_LOG_WARNING, WF_CUDA_PLUGIN_NAME, "%s", why);
    return NULL;
  }
  return ptr;
}

static void cuda_free(void *device_state, void *ptr, size_t bytes) {
  cudev *dev = device_state;

  if (!ptr)
    return;
  if (!dev->usable || cucache_block_free(dev->cache, ptr))
    wfx_host->log(WF_LOG_ERROR, WF_CUDA_PLUGIN_NAME,
                  "cuda:%d: free of %p (%zu bytes), which this device did "
                  "not allocate; ignored",
                  dev->ordinal, ptr, bytes);
}

/* ---- copies between host and device memory ------------------------------ */

static int copy_fail(wf_status *st, const cudev *dev, const char *what,
                     size_t bytes, cudaError_t err) {
  char text[192];

  wfx_host->status_set(st, WF_INTERNAL, "%s: %s (%zu bytes) failed (%s)",
                       dev->label, what, bytes,
                       cuda_error_text(err, text, sizeof text));
  return WF_INTERNAL;
}

/* cuda_stage.h's backend on one device: its stream and two events. */
static int stage_copy(void *ctx, void *dst, const void *src, size_t n,
                      int to_device, char *why, size_t whylen) {
  cudev *dev = ctx;
  cudaError_t err = cudaMemcpyAsync(
      dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
      dev->stream);
  if (err == cudaSuccess)
    return 0;
  if (whylen)
    cuda_error_text(err, why, whylen);
  return 1;
}

static int stage_record(void *ctx, int h, char *why, size_t whylen) {
  cudev *dev = ctx;
  cudaError_t err = cudaEventRecord(dev->stage_done[h], dev->stream);
  if (err == cudaSuccess)
    return 0;
  if (whylen)
    cuda_error_text(err, why, whylen);
  return 1;
}

static int stage_wait(void *ctx, int h, char *why, size_t whylen) {
  cudev *dev = ctx;
  cudaError_t err = cudaEventSynchronize(dev->stage_done[h]);
  if (err == cudaSuccess)
    return 0;
  if (whylen)
    cuda_error_text(err, why, whylen);
  return 1;
}

/* Makes dev's pinned staging buffer and its events (under stage_mu); 0
 * when it has them. */
static int stage_ready(cudev *dev) {
  const custage_backend b = {stage_copy, stage_record, stage_wait, dev};

  if (dev->stage_buf)
    return 0;
  if (dev->stage_tried)
    return -1;
  dev->stage_tried = 1;
  if (cudaHostAlloc((void **)&dev->stage_buf, 2 * WF_CUDA_STAGE_HALF,
                    cudaHostAllocDefault) != cudaSuccess) {
    dev->stage_buf = NULL;
    (void)cudaGetLastError();
    wfx_host->log(WF_LOG_WARNING, WF_CUDA_PLUGIN_NAME,
                  "%s: no pinned staging memory; copies go from pageable "
                  "memory",
                  dev->label);
    return -1;
  }
  for (int h = 0; h < 2; h++)
    if (cudaEventCreateWithFlags(&dev->stage_done[h],
                                 cudaEventDisableTiming) != cudaSuccess) {
      while (--h >= 0)
        cudaEventDestroy(dev->stage_done[h]);
      cudaFreeHost(dev->stage_buf);
      dev->stage_buf = NULL;
      (void)cudaGetLastError();
      return -1;
    }
  custage_init(&dev->stage, &b, dev->stage_buf, WF_CUDA_STAGE_HALF);
  return 0;
}

/* From pageable memory, waiting on an event (or the stream) to the host. */
static int copy_pageable(cudev *dev, void *dst, const void *src,
                         size_t bytes, int to_device, wf_status *st) {
  cudaError_t err = cudaMemcpyAsync(
      dst, src, bytes,
      to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
      dev->stream);
  if (err == cudaSuccess && !to_device) {
    char why[128];
    cudaEvent_t ev = cudev_event_get(dev, why, sizeof why);
    if (ev) {
      if ((err = cudaEventRecord(ev, dev->stream)) == cudaSuccess)
        err = cudaEventSynchronize(ev);
      cudev_event_put(dev, ev);
    } else {
      err = cudaStreamSynchronize(dev->stream);
    }
  }
  return err == cudaSuccess
             ? 0
             : copy_fail(st, dev,
                         to_device ? "copying to the device"
                                   : "copying to the host",
                         bytes, err);
}

/* Host to device or back through the staging halves. */
static int copy_staged(cudev *dev, void *dst, const void *src,
                       size_t bytes, int to_device, wf_status *st) {
  char why[192];
  int rc;

  if (stage_ready(dev) != 0)
    return copy_pageable(dev, dst, src, bytes, to_device, st);
  rc = to_device ? custage_in(&dev->stage, dst, src, bytes, why,
                                  sizeof why)
                 : custage_out(&dev->stage, dst, src, bytes, why,
                                   sizeof why);
  if (!rc)
    return 0;
  wfx_host->status_set(
      st, WF_INTERNAL, "%s: %s (%zu bytes) failed (%s)", dev->label,
      to_device ? "copying to the device" : "copying to the host", bytes, why);
  return WF_INTERNAL;
}

/* wf_device_def.copy. */
static int cuda_copy(void *device_state, void *dst, const void *src,
                     size_t bytes, int32_t kind, wf_status *st) {
  cudev *dev = device_state;
  cudaError_t err;
  int rc;

  if (!dev->usable) {
    wfx_host->status_set(st, WF_FAILED_PRECONDITION, "%s is unavailable",
                         dev->label);
    return WF_FAILED_PRECONDITION;
  }
  if ((err = cudaSetDevice(dev->ordinal)) != cudaSuccess)
    return copy_fail(st, dev, "cudaSetDevice", 0, err);
  switch (kind) {
  case WF_COPY_TO_DEVICE:
  case WF_COPY_TO_HOST:
    pthread_mutex_lock(&dev->stage_mu);
    rc = copy_staged(dev, dst, src, bytes, kind == WF_COPY_TO_DEVICE, st);
    pthread_mutex_unlock(&dev->stage_mu);
    return rc;
  case WF_COPY_ON_DEVICE:
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                          dev->stream);
    return err == cudaSuccess
               ? 0
               : copy_fail(st, dev, "copying within the device", bytes, err);
  default:
    wfx_host->status_set(st, WF_INVALID_ARGUMENT, "%s: unknown copy kind %d",
                         dev->label, (int)kind);
    return WF_INVALID_ARGUMENT;
  }
}

/* ---- setting up and tearing down a GPU ---------------------------------- */

/* The stream and cache of dev; on failure dev is left unusable with the
 * reason, holding nothing. The cuBLAS handle is made on first use
 * (cudev_blas), so that setting a GPU up opens no library beyond the
 * driver. */
static void device_setup(cudev *dev) {
  cucache_backend backend = {.malloc = backend_malloc,
                                 .free = backend_free,
                                 .ctx = dev};
  char text[192];
  const char *call;
  cudaError_t err;

  call = "cudaSetDevice";
  if ((err = cudaSetDevice(dev->ordinal)) != cudaSuccess)
    goto cuda_fail;
  call = "cudaStreamCreateWithFlags";
  if ((err = cudaStreamCreateWithFlags(&dev->stream,
                                       cudaStreamNonBlocking)) != cudaSuccess)
    goto cuda_fail;
  backend.name = dev->label; /* the cache's messages name the device */
  dev->cache = cucache_new(&backend);
  if (!dev->cache) {
    snprintf(dev->reason, sizeof dev->reason,
             "out of host memory setting up its memory cache");
    goto fail;
  }
  pthread_mutex_init(&dev->events_mu, NULL);
  pthread_mutex_init(&dev->stage_mu, NULL);
  dev->usable = 1;
  dev->reason[0] = '\0';
  return;

cuda_fail:
  snprintf(dev->reason, sizeof dev->reason, "%s failed (%s)", call,
           cuda_error_text(err, text, sizeof text));
fail:
  if (dev->stream)
    cudaStreamDestroy(dev->stream);
  dev->stream = NULL;
  (void)cudaGetLastError();
}

/* Guards every device's blas member while it is made. */
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;

cublasHandle_t cudev_blas(cudev *dev, wf_status *st) {
  cublasHandle_t h;
  cublasStatus_t bst;
  cudaError_t err;
  char text[192];

  pthread_mutex_lock(&blas_mu);
  if ((h = dev->blas) != NULL)
    goto out;
  /* A handle belongs to the device current when it is made. */
  if ((err = cudaSetDevice(dev->ordinal)) != cudaSuccess) {
    wfx_host->status_set(st, WF_INTERNAL, "%s: cudaSetDevice failed (%s)",
                         dev->label, cuda_error_text(err, text, sizeof text));
    goto out;
  }
  if ((bst = cublasCreate(&h)) != CUBLAS_STATUS_SUCCESS) {
    h = NULL;
    wfx_host->status_set(st, WF_INTERNAL, "%s: cublasCreate failed (%s: %s)",
                         dev->label, cublasGetStatusName(bst),
                         cublasGetStatusString(bst));
    goto out;
  }
  if ((bst = cublasSetStream(h, dev->stream)) != CUBLAS_STATUS_SUCCESS) {
    wfx_host->status_set(st, WF_INTERNAL,
                         "%s: cublasSetStream failed (%s: %s)", dev->label,
                         cublasGetStatusName(bst),
                         cublasGetStatusString(bst));
    cublasDestroy(h);
    h = NULL;
    goto out;
  }
  dev->blas = h;

out:
  pthread_mutex_unlock(&blas_mu);
  return h;
}

static void device_teardown(cudev *dev) {
  cucache_stats s;
  size_t leaked;

  if (!dev->usable)
    return;
  cudaSetDevice(dev->ordinal);
  cudaStreamSynchronize(dev->stream);
  cucache_stats_get(dev->cache, &s);
  wfx_host->log(
      WF_LOG_DEBUG, WF_CUDA_PLUGIN_NAME,
      "cuda:%d: memory cache: peak %zu bytes in use, %llu allocations "
      "(%llu from the cache), %llu cudaMalloc, %llu emptied for lack "
      "of memory",
      dev->ordinal, s.peak, (unsigned long long)s.allocs,
      (unsigned long long)s.hits, (unsigned long long)s.backend_allocs,
      (unsigned long long)s.flushes);
  leaked = cucache_free(dev->cache);
  if (leaked)
    wfx_host->log(WF_LOG_WARNING, WF_CUDA_PLUGIN_NAME,
                  "cuda:%d: %zu bytes of device memory were still in use at "
                  "shutdown; freed",
                  dev->ordinal, leaked);
  for (int i = 0; i < dev->num_events; i++)
    cudaEventDestroy(dev->events[i]);
  wfx_host->free(dev->events);
  pthread_mutex_destroy(&dev->events_mu);
  if (dev->stage_buf) {
    custage_drain(&dev->stage, NULL, 0);
    cudaEventDestroy(dev->stage_done[0]);
    cudaEventDestroy(dev->stage_done[1]);
    cudaFreeHost(dev->stage_buf);
    dev->stage_buf = NULL;
  }
  pthread_mutex_destroy(&dev->stage_mu);
  cuda_nn_release(dev);
  if (dev->blas)
    cublasDestroy(dev->blas);
  dev->blas = NULL;
  cudaStreamDestroy(dev->stream);
  dev->usable = 0;
}

/* ---- probing ------------------------------------------------------------- */

/* The nearest CPUs of every listed GPU, from the PCI bus's local_cpus
 * (hwloc's CUDA helpers). Best effort: a GPU stays usable without them. */
static void find_cpus(cuda_gpus *c) {
  hwloc_topology_t topo;
  hwloc_bitmap_t set;

  if (hwloc_topology_init(&topo) < 0)
    return;
  set = hwloc_bitmap_alloc();
  if (set && hwloc_topology_load(topo) == 0) {
    for (int i = 0; i < c->num_devices; i++) {
      cudev *dev = &c->devices[i];
      if (hwloc_cudart_get_device_cpuset(topo, dev->ordinal, set) == 0 &&
          hwloc_bitmap_list_snprintf(dev->cpus, sizeof dev->cpus, set) < 0)
        dev->cpus[0] = '\0';
    }
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
}

/* Lists the GPUs and sets up the first one this build can run on. With no
 * GPU (or no driver) c->probe_reason says why. */
static void probe(cuda_gpus *c) {
  char text[160], rt[16], drv[16];
  cudaError_t err;
  int n = 0;

  cudaRuntimeGetVersion(&c->runtime_version);
  if (cudaDriverGetVersion(&c->driver_version) != cudaSuccess)
    c->driver_version = 0;
  cuda_version_text(c->runtime_version, rt, sizeof rt);
  cuda_version_text(c->driver_version, drv, sizeof drv);
  err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess && n <= 0)
    err = cudaErrorNoDevice;
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(c->probe_reason, sizeof c->probe_reason, "%s (CUDA runtime %s%s%s)",
             cuda_error_text(err, text, sizeof text), rt,
             c->driver_version ? ", driver " : "; no NVIDIA driver found",
             c->driver_version ? drv : "");
    return;
  }
  c->num_devices = n < WF_CUDA_MAX_DEVICES ? n : WF_CUDA_MAX_DEVICES;
  if (n > WF_CUDA_MAX_DEVICES)
    wfx_host->log(WF_LOG_WARNING, WF_CUDA_PLUGIN_NAME,
                  "%d GPUs found; listing the first %d", n,
                  WF_CUDA_MAX_DEVICES);
  for (int i = 0; i < c->num_devices; i++) {
    cudev *dev = &c->devices[i];
    struct cudaDeviceProp prop;

    dev->ordinal = i;
    snprintf(dev->label, sizeof dev->label, "cuda:%d", i);
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      snprintf(dev->reason, sizeof dev->reason,
               "cudaGetDeviceProperties failed (%s)",
               cuda_error_text(err, text, sizeof text));
      continue;
    }
    snprintf(dev->name, sizeof dev->name, "%s", prop.name);
    dev->cc_major = prop.major;
    dev->cc_minor = prop.minor;
    dev->multiprocessors = prop.multiProcessorCount;
    dev->total_memory = prop.totalGlobalMem;
    if (cudaDeviceGetPCIBusId(dev->bus_id, (int)sizeof dev->bus_id, i) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      dev->bus_id[0] = '\0';
    }
    if (prop.major < WF_CUDA_MIN_MAJOR ||
        (prop.major == WF_CUDA_MIN_MAJOR && prop.minor < WF_CUDA_MIN_MINOR)) {
      snprintf(dev->reason, sizeof dev->reason,
               "compute capability %d.%d: this build has code for %d.%d and "
               "newer",
               prop.major, prop.minor, WF_CUDA_MIN_MAJOR, WF_CUDA_MIN_MINOR);
      continue;
    }
    device_setup(dev);
  }
  find_cpus(c);
}

/* ---- the device type ----------------------------------------------------- */

/* Appends printf-style text to buf of len bytes holding *used. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    WF_PRINTF_LIKE(4, 5);

static void append(char *buf, size_t len, size_t *used, const char *fmt, ...) {
  va_list ap;
  int w;

  if (*used >= len - 1)
    return;
  va_start(ap, fmt);
  w = vsnprintf(buf + *used, len - *used, fmt, ap);
  va_end(ap);
  if (w > 0)
    *used += (size_t)w < len - *used ? (size_t)w : len - *used - 1;
}

/* The library versions, for every description. cuBLAS and cuDNN are
 * asked only once a kernel opened them: describing a device opens
 * neither, and until then the versions are those the plugin was built
 * with. */
static void describe_libraries(const cuda_gpus *c, char *buf, size_t len,
                               size_t *used) {
  char rt[16], drv[16];

  cuda_version_text(c->runtime_version, rt, sizeof rt);
  cuda_version_text(c->driver_version, drv, sizeof drv);
  append(buf, len, used, "CUDA runtime %s, driver %s; ", rt,
         c->driver_version ? drv : "none");
  if (cuda_cublas_is_open()) {
    int maj = 0, min = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &maj);
    cublasGetProperty(MINOR_VERSION, &min);
    cublasGetProperty(PATCH_LEVEL, &patch);
    append(buf, len, used, "cuBLAS %d.%d.%d; ", maj, min, patch);
  } else {
    append(buf, len, used, "cuBLAS %d.%d (opened on first use); ",
           CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
  }
  if (cuda_cudnn_is_open()) {
    size_t dnn = cudnnGetVersion();
    append(buf, len, used, "cuDNN %zu.%zu.%zu", dnn / 10000, dnn / 100 % 100,
           dnn % 100);
  } else {
    append(buf, len, used, "cuDNN %d.%d (opened on first use)", CUDNN_MAJOR,
           CUDNN_MINOR);
  }
}

static void describe(const cuda_gpus *c, const cudev *dev, char *buf,
                     size_t len) {
  size_t used = 0;

  buf[0] = '\0';
  if (!dev) {
    append(buf, len, &used, "no usable GPU\n");
    describe_libraries(c, buf, len, &used);
    return;
  }
  if (dev->name[0])
    append(buf, len, &used,
           "%s, compute capability %d.%d, %d multiprocessors\n", dev->name,
           dev->cc_major, dev->cc_minor, dev->multiprocessors);
  if (dev->total_memory)
    append(buf, len, &used,
           "memory: %.1f GiB of device memory, cached in size buckets\n",
           (double)dev->total_memory / (1024.0 * 1024.0 * 1024.0));
  if (dev->bus_id[0] || dev->cpus[0])
    append(buf, len, &used, "PCI %s, nearest CPUs %s\n",
           dev->bus_id[0] ? dev->bus_id : "unknown",
           dev->cpus[0] ? dev->cpus : "unknown");
  describe_libraries(c, buf, len, &used);
}

static int cuda_enumerate(void *plugin_state, wf_device_desc *out, int max,
                          wf_status *st) {
  cuda_gpus *c = plugin_state;

  if (max < 1)
    return 0;
  if (c->num_devices == 0) {
    wf_device_desc *d = WF_STRUCT_AT(out, 0);
    snprintf(d->name, sizeof d->name, "cuda:0");
    describe(c, NULL, d->description, sizeof d->description);
    d->available = 0;
    snprintf(d->reason, sizeof d->reason, "%s", c->probe_reason);
    /* No device memory behind it: alloc refuses (see cuda_alloc). */
    d->state = &c->devices[0];
    return 1;
  }
  for (int i = 0; i < c->num_devices && i < max; i++) {
    const cudev *dev = &c->devices[i];
    wf_device_desc *d = WF_STRUCT_AT(out, i);

    snprintf(d->name, sizeof d->name, "cuda:%d", i);
    describe(c, dev, d->description, sizeof d->description);
    d->available = dev->usable;
    snprintf(d->reason, sizeof d->reason, "%s", dev->usable ? "" : dev->reason);
    d->state = &c->devices[i];
    /* Executor threads of this device run nearest to it. */
    if (WF_STRUCT_HAS(d, wf_device_desc, cpus))
      snprintf(d->cpus, sizeof d->cpus, "%s", dev->cpus);
  }
  return c->num_devices < max ? c->num_devices : max;
}

/* ---- init and fini ------------------------------------------------------- */

static void cuda_fini(void *plugin_state) {
  cuda_gpus *c = plugin_state;

  pthread_mutex_lock(&state_mu);
  assert(c == state && state_refs > 0);
  if (--state_refs == 0) {
    for (int i = 0; i < c->num_devices; i++)
      device_teardown(&c->devices[i]);
    registered[0] = NULL;
    state = NULL;
    wfx_host->free(c);
  }
  pthread_mutex_unlock(&state_mu);
}

/* The host table, for every file of the plugin (ABI 1.2: tensors in
 * device memory, kernel_device_state; 1.3: kernel_output_shape, the
 * output shapes the ops' shape functions give). */
WFX_HOST_DEFINE(1, 3);

static int cuda_init(const wf_host *host, void **plugin_state, wf_status *st) {
  cuda_gpus *c;
  int code = 0, nk = 0;

  /* Kernels take device pointers: a core that keeps every tensor in host
   * memory (before ABI 1.2) must not load them. */
  if (WFX_HOST_INIT(host, WF_CUDA_PLUGIN_NAME, st))
    return WF_FAILED_PRECONDITION;
  pthread_mutex_lock(&state_mu);
  if (state_refs > 0) {
    state_refs++;
    *plugin_state = state;
    goto out;
  }
  c = wfx_host->alloc(sizeof *c, 0);
  if (!c) {
    code = WF_RESOURCE_EXHAUSTED;
    wfx_host->status_set(st, code, "%s: out of memory for the plugin's state",
                         WF_CUDA_PLUGIN_NAME);
    goto out;
  }
  memset(c, 0, sizeof *c);
  state = c;
  probe(c);
  if (cuda_kernel_device()) {
    for (int t = 0; cuda_kernel_tables[t]; t++)
      for (int k = 0; cuda_kernel_tables[t][k]; k++) {
        assert(nk < MAX_KERNELS);
        registered[nk++] = cuda_kernel_tables[t][k];
      }
  }
  registered[nk] = NULL;
  state_refs = 1;
  *plugin_state = c;
  if (!nk)
    wfx_host->log(WF_LOG_INFO, WF_CUDA_PLUGIN_NAME,
                  "no usable GPU (%s): no CUDA kernels registered",
                  c->num_devices ? c->devices[0].reason : c->probe_reason);

out:
  pthread_mutex_unlock(&state_mu);
  return code;
}

static const wf_device_def cuda_device = {
    WF_STRUCT_INIT(wf_device_def),
    .type = "cuda",
    .doc = "NVIDIA GPUs through the CUDA runtime: cuda:0 .. cuda:N-1 in "
           "CUDA's order. Without a GPU or driver one cuda:0 is listed as "
           "unavailable with CUDA's reason, and no kernel is registered. "
           "GPUs need compute capability 9.0 or newer; each has its own "
           "stream, handles and memory, and a kernel runs on the GPU its "
           "node was placed on. Memory is device memory from cudaMalloc, kept in a cache "
           "of size buckets for reuse and given back when the device runs "
           "out and at shutdown; alignment is 256 bytes. Tensors of the "
           "kernels placed here stay in it; copies to and from the host go "
           "through pinned staging buffers on the device's stream and wait "
           "on events, never on the whole device.",
    .enumerate = cuda_enumerate,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
};

static const wf_device_def *const cuda_devices[] = {&cuda_device, NULL};

static const wf_plugin_desc cuda_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = WF_CUDA_PLUGIN_NAME,
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "CUDA device: NVIDIA GPUs with their PCI bus and nearest "
                   "CPUs (hwloc), one stream each, cached device memory "
                   "that tensors live in, copies through pinned staging "
                   "ordered by events; kernels on cuBLAS, cuDNN and the "
                   "plugin's own device code, registered only when a GPU "
                   "is usable",
    .kernels = registered,
    .devices = cuda_devices,
    .init = cuda_init,
    .fini = cuda_fini,
};

WF_PLUGIN(device_cuda, cuda_plugin)
