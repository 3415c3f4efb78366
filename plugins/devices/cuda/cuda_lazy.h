/* plugins/devices/cuda/cuda_lazy.h — the names under which the CUDA
 * plugin calls cuBLAS and cuDNN: each function it uses is renamed to its
 * cuda_lz_ wrapper (cuda_lazy.c), which opens the library on first use and
 * calls through. Renamed rather than defined under NVIDIA's names, so that
 * the plugin never stands in for the library in a program that uses both.
 *
 * Included before cublas_v2.h and cudnn.h (by cuda_device.h), so that
 * their declarations declare the wrappers. Only in the plugin's build
 * (WF_CUDA_LAZY_LIBS): tests that compile its files call nothing of them
 * or link the libraries. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_LAZY_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_LAZY_H
#ifdef WF_CUDA_LAZY_LIBS
#define cublasCreate_v2 cuda_lz_cublasCreate_v2
#define cublasDestroy_v2 cuda_lz_cublasDestroy_v2
#define cublasSetStream_v2 cuda_lz_cublasSetStream_v2
#define cublasSgemm_v2 cuda_lz_cublasSgemm_v2
#define cublasDgemm_v2 cuda_lz_cublasDgemm_v2
#define cublasGetProperty cuda_lz_cublasGetProperty
#define cublasGetStatusName cuda_lz_cublasGetStatusName
#define cublasGetStatusString cuda_lz_cublasGetStatusString
#define cudnnCreate cuda_lz_cudnnCreate
#define cudnnDestroy cuda_lz_cudnnDestroy
#define cudnnSetStream cuda_lz_cudnnSetStream
#define cudnnCreateTensorDescriptor cuda_lz_cudnnCreateTensorDescriptor
#define cudnnDestroyTensorDescriptor cuda_lz_cudnnDestroyTensorDescriptor
#define cudnnSetTensor4dDescriptor cuda_lz_cudnnSetTensor4dDescriptor
#define cudnnCreateFilterDescriptor cuda_lz_cudnnCreateFilterDescriptor
#define cudnnDestroyFilterDescriptor cuda_lz_cudnnDestroyFilterDescriptor
#define cudnnSetFilter4dDescriptor cuda_lz_cudnnSetFilter4dDescriptor
#define cudnnCreateConvolutionDescriptor cuda_lz_cudnnCreateConvolutionDescriptor
#define cudnnDestroyConvolutionDescriptor cuda_lz_cudnnDestroyConvolutionDescriptor
#define cudnnSetConvolution2dDescriptor cuda_lz_cudnnSetConvolution2dDescriptor
#define cudnnSetConvolutionMathType cuda_lz_cudnnSetConvolutionMathType
#define cudnnGetConvolution2dForwardOutputDim cuda_lz_cudnnGetConvolution2dForwardOutputDim
#define cudnnGetConvolutionForwardAlgorithm_v7 cuda_lz_cudnnGetConvolutionForwardAlgorithm_v7
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 cuda_lz_cudnnGetConvolutionBackwardDataAlgorithm_v7
#define cudnnGetConvolutionBackwardFilterAlgorithm_v7 cuda_lz_cudnnGetConvolutionBackwardFilterAlgorithm_v7
#define cudnnConvolutionForward cuda_lz_cudnnConvolutionForward
#define cudnnConvolutionBackwardData cuda_lz_cudnnConvolutionBackwardData
#define cudnnConvolutionBackwardFilter cuda_lz_cudnnConvolutionBackwardFilter
#define cudnnGetVersion cuda_lz_cudnnGetVersion
#define cudnnGetErrorString cuda_lz_cudnnGetErrorString
#endif
#endif
