/* plugins/devices/cuda/cuda_device.h — the CUDA device plugin's state: what
 * probing the CUDA runtime found, and per usable GPU its stream, pool of
 * events, cuBLAS handle and memory cache. Internal to the plugin; nothing
 * here crosses the plugin boundary except as a void *.
 *
 * The state is one per process (the CUDA runtime is): every runtime that
 * loads the plugin shares it, counted by init and fini. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_DEVICE_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_DEVICE_H

#include <weft/plugin_aux.h>

#include <pthread.h>
#include <stddef.h>

/* Before cuBLAS's and cuDNN's headers: the names it renames. */
#include "cuda_lazy.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda_cache.h"
#include "cuda_stage.h"

#define WF_CUDA_PLUGIN_NAME "device-cuda"

/* Devices listed at most (the core takes a bounded number per type). */
#define WF_CUDA_MAX_DEVICES 16

/* The oldest GPUs this build has code for: sm_90 machine code plus
 * compute_90 PTX, which newer GPUs compile when loading. */
#define WF_CUDA_MIN_MAJOR 9
#define WF_CUDA_MIN_MINOR 0

/* One GPU. Everything below `usable` is set only for a usable one. */
typedef struct cudev {
  int ordinal;  /* N in "cuda:N", and the CUDA device number */
  char label[16];   /* "cuda:N" */
  int usable;   /* kernels may run here */
  char reason[256]; /* why not, when !usable */
  char name[256];   /* "NVIDIA H200" */
  char bus_id[32];  /* PCI "0000:3b:00.0", "" if unknown */
  char cpus[256];   /* the CPUs nearest to it, hwloc list syntax; "" if unknown */
  int cc_major, cc_minor;
  int multiprocessors;
  size_t total_memory;

  cudaStream_t stream;   /* every kernel's work on this device, in order */
  cublasHandle_t blas;   /* bound to stream; made on first use (cudev_blas) */
  cudnnHandle_t cudnn;   /* bound to stream; made on first use (cuda_nn.c) */
  cucache *cache;    /* device memory, over cudaMalloc/cudaFree */
  pthread_mutex_t events_mu;
  cudaEvent_t *events;   /* idle events for waiting on one kernel's work */
  int num_events, cap_events;

  /* Copies between host and device memory (wf_device_def.copy) go through
   * pinned staging (cuda_stage.h): two halves, each reused once the event
   * recorded after its last copy has completed. Made on first use;
   * stage_buf NULL when pinned memory could not be had (copies then go
   * from pageable memory). Under stage_mu. */
  pthread_mutex_t stage_mu;
  unsigned char *stage_buf;       /* 2 * WF_CUDA_STAGE_HALF bytes */
  cudaEvent_t stage_done[2];      /* the last copy of each half */
  custage stage;
  int stage_tried;
} cudev;

/* Bytes of one half of a device's pinned staging buffer. */
#define WF_CUDA_STAGE_HALF ((size_t)4 << 20)

typedef struct cuda_gpus {
  char probe_reason[256]; /* why no GPU is listed, when none is */
  int runtime_version, driver_version;
  int num_devices;        /* listed in `devices` */
  cudev devices[WF_CUDA_MAX_DEVICES];
} cuda_gpus;

/* The first usable GPU of the process's plugin state, which lives from the
 * first init to the last fini (kernels only run in between); NULL when none
 * is usable (then no kernel is registered). Kernels run on the GPU their
 * node was placed on, and on this one when run outside an executor. */
cudev *cuda_kernel_device(void);

/* "cudaErrorNoDevice: no CUDA-capable device is detected" into buf (at
 * most len bytes, terminated); returns buf. */
const char *cuda_error_text(cudaError_t err, char *buf, size_t len);

/* An idle event of dev's pool, or a new one; NULL with why set when CUDA
 * cannot make one. Give it back with cudev_event_put. */
cudaEvent_t cudev_event_get(cudev *dev, char *why, size_t whylen);
void cudev_event_put(cudev *dev, cudaEvent_t ev);

/* The kernels this plugin registers when a device is usable: a
 * NULL-terminated list (cuda_tables.c) of NULL-terminated tables, one per
 * source file (cuda_kernels.c: MatMul, elementwise, initializers). */
extern const wf_kernel_def *const cuda_kernels[];
/* cuda_math.c: more elementwise ops, gradients of activations, Cast and
 * the shape-only ops; cuda_reduce.c: reductions and their gradients;
 * cuda_nn.c: convolutions (cuDNN), pools, softmax, losses, batch
 * normalisation, BiasAdd; cuda_array.c: Gather and the dense gradients of
 * sparse rows; cuda_train.c: optimizer updates and variable updates. */
extern const wf_kernel_def *const cuda_math_kernels[];
extern const wf_kernel_def *const cuda_reduce_kernels[];
extern const wf_kernel_def *const cuda_nn_kernels[];
extern const wf_kernel_def *const cuda_array_kernels[];
extern const wf_kernel_def *const cuda_train_kernels[];

/* dev's cuBLAS handle, bound to its stream, made by the first call (which
 * opens cuBLAS: cuda_lazy.c); NULL with st set (naming the library when it
 * cannot be opened) on failure. Thread-safe. */
cublasHandle_t cudev_blas(cudev *dev, wf_status *st);

/* 1 once cuBLAS / cuDNN was opened (cuda_lazy.c; opens nothing). */
int cuda_cublas_is_open(void);
int cuda_cudnn_is_open(void);

/* Destroys dev's cuDNN handle when cuda_nn.c made one (cudnn NULL after);
 * for the plugin's fini, before the stream goes. */
void cuda_nn_release(cudev *dev);
extern const wf_kernel_def *const *const cuda_kernel_tables[];

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_DEVICE_H */
