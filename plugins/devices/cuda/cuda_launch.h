/* plugins/devices/cuda/cuda_launch.h — the C entry points of the plugin's
 * device code (cuda_eltwise.cu, cuda_random.cu, cuda_math.cu,
 * cuda_reduce.cu, cuda_nn.cu, cuda_array.cu, cuda_train.cu), compiled by
 * nvcc and called from the plugin's C kernels (cuda_kernels.c and the C
 * file of the same name as each .cu).
 *
 * Each only enqueues work on the given stream and returns the launch's
 * status (cudaSuccess, or why the launch was refused); errors of the work
 * itself surface at the next synchronisation. Pointers are device memory.
 * Nothing here allocates, copies or synchronises. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cuda_philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of the device code. */
#define WF_CUDA_F32 0
#define WF_CUDA_F64 1

/* Binary and unary operations. */
#define WF_CUDA_ADD 0
#define WF_CUDA_SUB 1
#define WF_CUDA_MUL 2
#define WF_CUDA_RELU 0
#define WF_CUDA_SIGMOID 1
#define WF_CUDA_TANH 2

/* Most dimensions of a broadcast (weft's WF_MAX_RANK). */
#define WF_CUDA_MAX_RANK 8

/* How two operands broadcast to a row-major output of `rank` dims:
 * element (i0, .., i_{rank-1}) of the output reads x at sum i_k xstride[k]
 * and y at sum i_k ystride[k] (a stride of 0 repeats the operand along
 * that dim). */
typedef struct cuda_bcast {
  int32_t rank; /* 1 .. WF_CUDA_MAX_RANK */
  int32_t reserved_;
  int64_t dims[WF_CUDA_MAX_RANK];
  int64_t xstride[WF_CUDA_MAX_RANK];
  int64_t ystride[WF_CUDA_MAX_RANK];
} cuda_bcast;

/* z = x op y over count (> 0) output elements laid out by b; type is
 * WF_CUDA_F32 or WF_CUDA_F64. Equal shapes and a scalar operand take
 * faster paths than the general walk. */
cudaError_t cuda_binary(int op, int type, const cuda_bcast *b,
                            int64_t count, const void *x, const void *y,
                            void *z, cudaStream_t stream);

/* y = op(x) over n (> 0) elements. Relu passes NaN through; Sigmoid never
 * overflows (e^x / (1 + e^x) below 0). */
cudaError_t cuda_unary(int op, int type, int64_t n, const void *x,
                           void *y, cudaStream_t stream);

/* out[0 .. n-1] (0 < n <= 2^48) uniform in [lo, hi) from stream s,
 * element for element the values of the CPU kernels (cuda_philox.h). */
cudaError_t cuda_uniform(int type, void *out, int64_t n, cuphilox s,
                             double lo, double hi, cudaStream_t stream);

/* ------------------------------------------------------------------------ */
/* Launchers of the device-memory kernels. Sizes are element counts; every
 * launcher refuses (cudaErrorInvalidValue) a type or operation it does not
 * know and does nothing for an empty tensor. */

/* More element types (Cast, fills, variable updates, Gather). */
#define WF_CUDA_I32 2
#define WF_CUDA_I64 3
#define WF_CUDA_I8 4
#define WF_CUDA_U8 5
#define WF_CUDA_BOOL 6

/* ---- cuda_math.cu -------------------------------------------------------- */

/* Unary ops of cuda_unary_ex (ops-math's formulas, in the element
 * type): alpha is LeakyRelu's slope, approximate Gelu's tanh form. */
#define WF_CUDA_NEG 16
#define WF_CUDA_SQUARE 17
#define WF_CUDA_SQRT 18
#define WF_CUDA_RSQRT 19
#define WF_CUDA_EXP 20
#define WF_CUDA_LOG 21
#define WF_CUDA_ABS 22
#define WF_CUDA_ELU 23
#define WF_CUDA_SOFTPLUS 24
#define WF_CUDA_GELU 25
#define WF_CUDA_LEAKY_RELU 26
cudaError_t cuda_unary_ex(int op, int type, int64_t n, const void *x,
                              void *y, double alpha, int approximate,
                              cudaStream_t stream);

/* Activation gradients dx = f(dy, v), v the forward input or output as
 * each op's doc says. */
#define WF_CUDA_RELU_GRAD 0
#define WF_CUDA_SIGMOID_GRAD 1
#define WF_CUDA_TANH_GRAD 2
#define WF_CUDA_SQRT_GRAD 3
#define WF_CUDA_RSQRT_GRAD 4
#define WF_CUDA_ELU_GRAD 5
#define WF_CUDA_LEAKY_RELU_GRAD 6
#define WF_CUDA_SOFTPLUS_GRAD 7
#define WF_CUDA_ABS_GRAD 8
#define WF_CUDA_GELU_GRAD 9
cudaError_t cuda_act_grad(int op, int type, int64_t n, const void *dy,
                              const void *v, void *dx, double alpha,
                              int approximate, cudaStream_t stream);

/* Broadcasting binary ops beyond Add, Sub and Mul (float types). */
#define WF_CUDA_DIV 3
#define WF_CUDA_MAXIMUM 4
#define WF_CUDA_MINIMUM 5
#define WF_CUDA_POW 6
cudaError_t cuda_binary_ex(int op, int type, const cuda_bcast *b,
                               int64_t count, const void *x, const void *y,
                               void *z, cudaStream_t stream);

/* y = x converted from type `from` to `to` (any WF_CUDA_* pair) as
 * ops-math's Cast: float to integer truncates, saturates and maps NaN to
 * 0; integers narrow by wrapping; to bool x != 0; from bool 0 or 1. */
cudaError_t cuda_cast(int from, int to, int64_t n, const void *x,
                          void *y, cudaStream_t stream);

/* y[0 .. n-1] = value (converted to type). */
cudaError_t cuda_fill(int type, int64_t n, double value, void *y,
                          cudaStream_t stream);

/* y = xs[0] + ... + xs[k-1] elementwise, summed in double for floats
 * (integers wrap); xs is a device array of k device pointers. */
cudaError_t cuda_add_n(int type, int64_t n, int k, const void *const *xs,
                           void *y, cudaStream_t stream);

/* ---- cuda_reduce.cu ------------------------------------------------------ */

/* A reduction of x: output element o (row-major over the kept dims) is
 * the group of x's elements at sum_k c_k keep_strides[k] + sum_j r_j
 * red_strides[j] over the reduced coordinates r. outputs >= 1; group may
 * be 0 (an empty reduction). */
typedef struct cuda_reduce_geom {
  int32_t nkeep, nred;
  int64_t keep_dims[WF_CUDA_MAX_RANK], keep_strides[WF_CUDA_MAX_RANK];
  int64_t red_dims[WF_CUDA_MAX_RANK], red_strides[WF_CUDA_MAX_RANK];
  int64_t outputs, group;
} cuda_reduce_geom;

#define WF_CUDA_SUM 0  /* in double; empty: 0 */
#define WF_CUDA_MEAN 1 /* the sum / group; empty: NaN */
#define WF_CUDA_MAX 2  /* NaN if any; empty: -inf */
#define WF_CUDA_MIN 3  /* NaN if any; empty: +inf */
#define WF_CUDA_PROD 4 /* in double; empty: 1 */
cudaError_t cuda_reduce(int op, int type, const cuda_reduce_geom *g,
                            const void *x, void *y, cudaStream_t stream);

/* dx (x's elements) = dy[o] * scale over each group o (SumGrad: 1,
 * MeanGrad: 1 / group). */
cudaError_t cuda_reduce_spread(int type, const cuda_reduce_geom *g,
                                   const void *dy, double scale, void *dx,
                                   cudaStream_t stream);

/* MaxMinGrad: dx = dy[o] / k where x equals y[o] (k such ties in group o),
 * 0 elsewhere and everywhere in a group whose y is NaN. */
cudaError_t cuda_max_min_grad(int type, const cuda_reduce_geom *g,
                                  const void *dy, const void *x,
                                  const void *y, void *dx,
                                  cudaStream_t stream);

/* ---- cuda_nn.cu ---------------------------------------------------------- */

/* A pool's window over (H, W): input (n, h, w, c), output (n, oh, ow, c)
 * with element strides xs[], ys[] of N, H, W, C; window (kh, kw) moved by
 * (sh, sw) from (-pt, -pl), clipped to the input. */
typedef struct cuda_pool_geom {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
  int64_t xs[4], ys[4];
} cuda_pool_geom;

/* MaxPool (max 1: NaN propagates, ties to the first) or AvgPool (max 0:
 * the mean over the window's elements inside the input, in double). */
cudaError_t cuda_pool(int max, int type, const cuda_pool_geom *g,
                          const void *x, void *y, cudaStream_t stream);
/* MaxPoolGrad (x is the pool's input; each window's grad goes to its
 * pick: the first of tied maxima, the last NaN) or AvgPoolGrad (x
 * unused); overlapping windows add up in double, in the CPU's order. */
cudaError_t cuda_pool_grad(int max, int type, const cuda_pool_geom *g,
                               const void *x, const void *grad, void *dx,
                               cudaStream_t stream);

/* Softmax (log 0) or LogSoftmax (log 1) over rows of c, in double. */
cudaError_t cuda_softmax(int log, int type, int64_t rows, int64_t c,
                             const void *x, void *y, cudaStream_t stream);
/* Their gradients from the output y: y (dy - sum(dy y)) or
 * dy - exp(y) sum(dy). */
cudaError_t cuda_softmax_grad(int log, int type, int64_t rows, int64_t c,
                                  const void *y, const void *dy, void *dx,
                                  cudaStream_t stream);
/* Softmax cross-entropy of rows of c logits x against dense labels
 * (rows, c) or, when labels is NULL, classes cls (rows,) in [0, c):
 * loss (rows,) and backprop (rows, c). */
cudaError_t cuda_xent(int type, int64_t rows, int64_t c, const void *x,
                          const void *labels, const int64_t *cls, void *loss,
                          void *back, cudaStream_t stream);

/* BatchNorm over x viewed as (outer, c, inner): training computes the
 * biased batch statistics into bm, bv; inference copies mean, var there.
 * In double, as ops-nn's kernel. */
cudaError_t cuda_batch_norm(int type, int64_t outer, int64_t c,
                                int64_t inner, int training, double eps,
                                const void *x, const void *scale,
                                const void *offset, const void *mean,
                                const void *var, void *y, void *bm, void *bv,
                                cudaStream_t stream);
/* BatchNormGrad (dmean, dvar read in training only). */
cudaError_t cuda_batch_norm_grad(int type, int64_t outer, int64_t c,
                                     int64_t inner, int training, double eps,
                                     const void *dy, const void *x,
                                     const void *scale, const void *mean,
                                     const void *var, const void *dmean,
                                     const void *dvar, void *dx, void *ds,
                                     void *doff, cudaStream_t stream);

/* A 4-D copy: dst element (i0..i3) of dims[] is src element (i_k -
 * off[k]) when that lies inside sdims[], else 0. Strides give each layout,
 * so one call pads, crops and permutes. */
typedef struct cuda_relayout {
  int64_t dims[4], dstride[4];
  int64_t sdims[4], sstride[4], off[4];
} cuda_relayout;
cudaError_t cuda_relayout4(int type, const cuda_relayout *r,
                               void *dst, const void *src,
                               cudaStream_t stream);

/* ---- cuda_array.cu ------------------------------------------------------- */

/* Gather: out (outer, k, inner) = params (outer, p, inner) at rows idx[k]
 * (in [0, p), checked by the caller) for elements of elem_size bytes (1,
 * 4 or 8). */
cudaError_t cuda_gather(int elem_size, int64_t outer, int64_t p,
                            int64_t k, int64_t inner, const void *params,
                            const int64_t *idx, void *out,
                            cudaStream_t stream);

/* Segment sums: out (outer, rows, inner) row r = the sum, in double and
 * in list order, of the rows order[start[r] .. start[r+1]) of in (outer,
 * k, inner); a row with none is 0. */
cudaError_t cuda_segment_sum(int type, int64_t outer, int64_t rows,
                                 int64_t k, int64_t inner,
                                 const int64_t *start, const int64_t *order,
                                 const void *in, void *out,
                                 cudaStream_t stream);

/* ---- cuda_train.cu ------------------------------------------------------- */

/* The hyperparameters of an update rule (ops-train's), read on the host. */
typedef struct cuda_apply_params {
  double lr, beta1, beta2, epsilon, momentum, rho, weight_decay;
  double alpha; /* Adam: lr sqrt(1 - beta2^t) / (1 - beta1^t) */
  int32_t nesterov, amsgrad;
} cuda_apply_params;

#define WF_CUDA_SGD 0
#define WF_CUDA_MOMENTUM 1
#define WF_CUDA_ADAM 2 /* AdamW with weight_decay != 0 */
#define WF_CUDA_RMSPROP 3
#define WF_CUDA_CENTERED_RMSPROP 4
#define WF_CUDA_ADAGRAD 5

/* Updates n elements of the variable s[0] and its slots s[1..] (device
 * arrays, as many as the rule has) in place with grad, in the variable's
 * type without contracted multiply-adds, so that the stored values are the
 * CPU's. */
cudaError_t cuda_apply(int rule, int type, int64_t n, void *const s[4],
                           const void *grad, const cuda_apply_params *p,
                           cudaStream_t stream);
/* The sparse form: for each of urows distinct rows row[u] of width
 * elements, the gradient is the sum (in double, in list order) of the
 * rows order[start[u] .. start[u+1]) of values. */
cudaError_t cuda_apply_sparse(int rule, int type, int64_t urows,
                                  int64_t width, const int64_t *row,
                                  const int64_t *start, const int64_t *order,
                                  void *const s[4], const void *values,
                                  const cuda_apply_params *p,
                                  cudaStream_t stream);

/* dst[i] += src[i] (subtract: -=) over n elements; integers wrap. */
cudaError_t cuda_accumulate(int type, int64_t n, void *dst,
                                const void *src, int subtract,
                                cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H */
