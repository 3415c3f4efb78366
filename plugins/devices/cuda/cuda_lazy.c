/* plugins/devices/cuda/cuda_lazy.c — cuBLAS and cuDNN opened on first use
 * (plugins/common/lazylib.h): the plugin links neither (the CUDA runtime
 * is linked in statically, and loads only the driver, on its first call),
 * so loading the plugin, listing its devices and running nothing on them
 * maps none of NVIDIA's libraries beyond the driver. Every function of
 * theirs that the plugin calls is renamed by cuda_lazy.h to a wrapper
 * defined here (cuda_lz_<name>), which calls through the address found
 * when the library was opened.
 *
 * A library that cannot be opened, or a cuDNN of another major version
 * than the headers', makes its functions return its "not initialized"
 * status; cublasGetStatusString and cudnnGetErrorString then return the
 * reason (which library, which plugin, why), so the kernels' usual
 * messages carry it. It does not make handles (cuda_plugin.c, cuda_nn.c
 * do). */
#include <config.h>

#include "cuda_device.h"

#include "lazylib.h"

#include <cudnn.h>

#define CUDA_PLUGIN WF_CUDA_PLUGIN_NAME

/* ---- cuBLAS -------------------------------------------------------------- */

/* X(return type, name, (parameters), (arguments)): the library's names
 * (cublas_v2.h's cublasCreate is cublasCreate_v2). */
#define CUDA_CUBLAS_FUNCS(X)                                                   \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))         \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))          \
  X(cublasStatus_t, cublasSetStream_v2,                                           \
    (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))        \
  X(cublasStatus_t, cublasSgemm_v2,                                               \
    (cublasHandle_t handle, cublasOperation_t transa,                          \
     cublasOperation_t transb, int m, int n, int k, const float *alpha,        \
     const float *A, int lda, const float *B, int ldb, const float *beta,      \
     float *C, int ldc),                                                       \
    (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))    \
  X(cublasStatus_t, cublasDgemm_v2,                                               \
    (cublasHandle_t handle, cublasOperation_t transa,                          \
     cublasOperation_t transb, int m, int n, int k, const double *alpha,       \
     const double *A, int lda, const double *B, int ldb, const double *beta,   \
     double *C, int ldc),                                                      \
    (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))    \
  X(cublasStatus_t, cublasGetProperty, (libraryPropertyType type, int *value), \
    (type, value))

/* #n: the name as written, before cuda_lazy.h renames it. */
#define CUDA_NAME(r, n, p, a) #n,
/* Every name is renamed by cuda_lazy.h: the definitions below are the
 * wrappers, never functions of the library's own name. */
#define CUDA_RENAMED(n)                                                        \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "cuda_lz_" #n,                \
                 #n " is not renamed in cuda_lazy.h");
#define CUDA_RENAMED4(r, n, p, a)                                              \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "cuda_lz_" #n,                \
                 #n " is not renamed in cuda_lazy.h");
#define CUDA_INDEX(r, n, p, a) CUBLAS_I_##n,
CUDA_CUBLAS_FUNCS(CUDA_RENAMED4)
CUDA_RENAMED(cublasGetStatusName)
CUDA_RENAMED(cublasGetStatusString)

static const char *const cublas_symbols[] = {
    CUDA_CUBLAS_FUNCS(CUDA_NAME) "cublasGetStatusName",
    "cublasGetStatusString", NULL};
enum {
  CUDA_CUBLAS_FUNCS(CUDA_INDEX) CUBLAS_I_name,
  CUBLAS_I_string,
  CUBLAS_NUM
};
#undef CUDA_INDEX
static void *cublas_addrs[CUBLAS_NUM];

static lazylib cublas_lib = LAZYLIB_INIT(
    .plugin = CUDA_PLUGIN, .what = "cuBLAS",
    .soname = "libcublas.so." LAZYLIB_STR(CUBLAS_VER_MAJOR),
    .env = "WEFT_CUBLAS_LIBRARY", .symbols = cublas_symbols,
    .addrs = cublas_addrs);

#define CUDA_CUBLAS_DEF(r, n, p, a)                                            \
  r n p {                                                                      \
    if (lazylib_open(&cublas_lib))                                             \
      return CUBLAS_STATUS_NOT_INITIALIZED;                                    \
    return ((r(*) p)cublas_addrs[CUBLAS_I_##n])a;                              \
  }
CUDA_CUBLAS_FUNCS(CUDA_CUBLAS_DEF)
#undef CUDA_CUBLAS_DEF

const char *cublasGetStatusName(cublasStatus_t status) {
  if (lazylib_open(&cublas_lib))
    return "cuBLAS not opened";
  return ((const char *(*)(cublasStatus_t))cublas_addrs[CUBLAS_I_name])(
      status);
}

const char *cublasGetStatusString(cublasStatus_t status) {
  if (lazylib_open(&cublas_lib))
    return lazylib_error(&cublas_lib);
  return ((const char *(*)(cublasStatus_t))cublas_addrs[CUBLAS_I_string])(
      status);
}

int cuda_cublas_is_open(void) { return lazylib_is_open(&cublas_lib); }

/* ---- cuDNN --------------------------------------------------------------- */

#define CUDA_CUDNN_FUNCS(X)                                                    \
  X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle), (handle))            \
  X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle))             \
  X(cudnnStatus_t, cudnnSetStream,                                             \
    (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))         \
  X(cudnnStatus_t, cudnnCreateTensorDescriptor,                                \
    (cudnnTensorDescriptor_t * tensorDesc), (tensorDesc))                      \
  X(cudnnStatus_t, cudnnDestroyTensorDescriptor,                               \
    (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))                        \
  X(cudnnStatus_t, cudnnSetTensor4dDescriptor,                                 \
    (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,           \
     cudnnDataType_t dataType, int n, int c, int h, int w),                    \
    (tensorDesc, format, dataType, n, c, h, w))                                \
  X(cudnnStatus_t, cudnnCreateFilterDescriptor,                                \
    (cudnnFilterDescriptor_t * filterDesc), (filterDesc))                      \
  X(cudnnStatus_t, cudnnDestroyFilterDescriptor,                               \
    (cudnnFilterDescriptor_t filterDesc), (filterDesc))                        \
  X(cudnnStatus_t, cudnnSetFilter4dDescriptor,                                 \
    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,             \
     cudnnTensorFormat_t format, int k, int c, int h, int w),                  \
    (filterDesc, dataType, format, k, c, h, w))                                \
  X(cudnnStatus_t, cudnnCreateConvolutionDescriptor,                           \
    (cudnnConvolutionDescriptor_t * convDesc), (convDesc))                     \
  X(cudnnStatus_t, cudnnDestroyConvolutionDescriptor,                          \
    (cudnnConvolutionDescriptor_t convDesc), (convDesc))                       \
  X(cudnnStatus_t, cudnnSetConvolution2dDescriptor,                            \
    (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u,       \
     int v, int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,       \
     cudnnDataType_t computeType),                                             \
    (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode,               \
     computeType))                                                             \
  X(cudnnStatus_t, cudnnSetConvolutionMathType,                                \
    (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType),         \
    (convDesc, mathType))                                                      \
  X(cudnnStatus_t, cudnnGetConvolution2dForwardOutputDim,                      \
    (const cudnnConvolutionDescriptor_t convDesc,                              \
     const cudnnTensorDescriptor_t inputTensorDesc,                            \
     const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h,         \
     int *w),                                                                  \
    (convDesc, inputTensorDesc, filterDesc, n, c, h, w))                       \
  X(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,                     \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,              \
     const cudnnFilterDescriptor_t filterDesc,                                 \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,     \
     int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults),      \
    (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount,      \
     returnedAlgoCount, perfResults))                                          \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,                \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,           \
     const cudnnTensorDescriptor_t diffDesc,                                   \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,     \
     int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults),  \
    (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount,     \
     returnedAlgoCount, perfResults))                                          \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,              \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,              \
     const cudnnTensorDescriptor_t diffDesc,                                   \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,     \
     int *returnedAlgoCount,                                                   \
     cudnnConvolutionBwdFilterAlgoPerf_t *perfResults),                        \
    (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount,        \
     returnedAlgoCount, perfResults))                                          \
  X(cudnnStatus_t, cudnnConvolutionForward,                                    \
    (cudnnHandle_t handle, const void *alpha,                                  \
     const cudnnTensorDescriptor_t xDesc, const void *x,                       \
     const cudnnFilterDescriptor_t wDesc, const void *w,                       \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     cudnnConvolutionFwdAlgo_t algo, void *workSpace,                          \
     size_t workSpaceSizeInBytes, const void *beta,                            \
     const cudnnTensorDescriptor_t yDesc, void *y),                            \
    (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,             \
     workSpaceSizeInBytes, beta, yDesc, y))                                    \
  X(cudnnStatus_t, cudnnConvolutionBackwardData,                               \
    (cudnnHandle_t handle, const void *alpha,                                  \
     const cudnnFilterDescriptor_t wDesc, const void *w,                       \
     const cudnnTensorDescriptor_t dyDesc, const void *dy,                     \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,                      \
     size_t workSpaceSizeInBytes, const void *beta,                            \
     const cudnnTensorDescriptor_t dxDesc, void *dx),                          \
    (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace,           \
     workSpaceSizeInBytes, beta, dxDesc, dx))                                  \
  X(cudnnStatus_t, cudnnConvolutionBackwardFilter,                             \
    (cudnnHandle_t handle, const void *alpha,                                  \
     const cudnnTensorDescriptor_t xDesc, const void *x,                       \
     const cudnnTensorDescriptor_t dyDesc, const void *dy,                     \
     const cudnnConvolutionDescriptor_t convDesc,                              \
     cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,                    \
     size_t workSpaceSizeInBytes, const void *beta,                            \
     const cudnnFilterDescriptor_t dwDesc, void *dw),                          \
    (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace,           \
     workSpaceSizeInBytes, beta, dwDesc, dw))

#define CUDA_INDEX(r, n, p, a) CUDNN_I_##n,
CUDA_CUDNN_FUNCS(CUDA_RENAMED4)
CUDA_RENAMED(cudnnGetVersion)
CUDA_RENAMED(cudnnGetErrorString)

static const char *const cudnn_symbols[] = {
    CUDA_CUDNN_FUNCS(CUDA_NAME) "cudnnGetVersion", "cudnnGetErrorString",
    NULL};
enum {
  CUDA_CUDNN_FUNCS(CUDA_INDEX) CUDNN_I_version,
  CUDNN_I_error,
  CUDNN_NUM
};
#undef CUDA_INDEX
#undef CUDA_NAME
static void *cudnn_addrs[CUDNN_NUM];

/* A cuDNN of another major version than the headers' has another API and
 * data layouts: refused when it opens. */
static int cudnn_opened(lazylib *lib, char *why, size_t len) {
  size_t v = ((size_t(*)(void))cudnn_addrs[CUDNN_I_version])();

  (void)lib;
  if (v / 10000 == CUDNN_MAJOR)
    return 0;
  snprintf(why, len,
           "the plugin was built with cuDNN %d.%d.%d, and this is "
           "%zu.%zu.%zu: a different major version is not compatible; "
           "install cuDNN %d or rebuild weft",
           CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL, v / 10000,
           v / 100 % 100, v % 100, CUDNN_MAJOR);
  return -1;
}

static lazylib cudnn_lib = LAZYLIB_INIT(
    .plugin = CUDA_PLUGIN, .what = "cuDNN",
    .soname = "libcudnn.so." LAZYLIB_STR(CUDNN_MAJOR),
    .env = "WEFT_CUDNN_LIBRARY", .symbols = cudnn_symbols,
    .addrs = cudnn_addrs, .opened = cudnn_opened);

#define CUDA_CUDNN_DEF(r, n, p, a)                                             \
  r n p {                                                                      \
    if (lazylib_open(&cudnn_lib))                                              \
      return CUDNN_STATUS_NOT_INITIALIZED;                                     \
    return ((r(*) p)cudnn_addrs[CUDNN_I_##n])a;                                \
  }
CUDA_CUDNN_FUNCS(CUDA_CUDNN_DEF)
#undef CUDA_CUDNN_DEF

size_t cudnnGetVersion(void) {
  if (lazylib_open(&cudnn_lib))
    return 0;
  return ((size_t(*)(void))cudnn_addrs[CUDNN_I_version])();
}

const char *cudnnGetErrorString(cudnnStatus_t status) {
  if (lazylib_open(&cudnn_lib))
    return lazylib_error(&cudnn_lib);
  return ((const char *(*)(cudnnStatus_t))cudnn_addrs[CUDNN_I_error])(status);
}

int cuda_cudnn_is_open(void) { return lazylib_is_open(&cudnn_lib); }
