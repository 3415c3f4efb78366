/* plugins/devices/cpu/cpu_lazy.c — oneDNN and OpenBLAS opened on first use
 * (plugins/common/lazylib.h): the plugin links neither, so loading it and
 * listing the CPU maps neither library; the first kernel that calls one
 * opens it. Every function of theirs that the plugin calls is renamed by
 * cpu_lazy.h to a wrapper defined here (cpu_lz_<name>), which calls
 * through the address found when the library was opened.
 *
 * When a library cannot be opened, oneDNN's functions return
 * dnnl_runtime_error and dnnl_status2str returns the reason (which library,
 * which plugin, why), so the kernels' usual messages carry it; OpenBLAS's
 * functions return nothing, so its users ask cpu_openblas_ready first. It
 * does not decide which library a kernel uses (cpu_gemm.c and the kernel
 * files do). */
#include <config.h>

#include "cpu_kernels.h"

#include <stdatomic.h>
#include <string.h>

#include "lazylib.h"

#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#endif
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#define CPU_PLUGIN "device-cpu"

/* Each list: X(return type, name, (parameters), (arguments)). */

#ifdef HAVE_DNNL
#define CPU_DNNL_STATUS_FUNCS(X)                                               \
  X(dnnl_status_t, dnnl_engine_create,                                         \
    (dnnl_engine_t * engine, dnnl_engine_kind_t kind, size_t index),           \
    (engine, kind, index))                                                     \
  X(dnnl_status_t, dnnl_engine_destroy, (dnnl_engine_t engine), (engine))      \
  X(dnnl_status_t, dnnl_stream_create,                                         \
    (dnnl_stream_t * stream, dnnl_engine_t engine, unsigned flags),            \
    (stream, engine, flags))                                                   \
  X(dnnl_status_t, dnnl_stream_destroy, (dnnl_stream_t stream), (stream))      \
  X(dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t stream), (stream))         \
  X(dnnl_status_t, dnnl_memory_create,                                         \
    (dnnl_memory_t * memory, const dnnl_memory_desc_t *memory_desc,            \
     dnnl_engine_t engine, void *handle),                                      \
    (memory, memory_desc, engine, handle))                                     \
  X(dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t memory), (memory))      \
  X(dnnl_status_t, dnnl_memory_get_memory_desc,                                \
    (const_dnnl_memory_t memory, const dnnl_memory_desc_t **memory_desc),      \
    (memory, memory_desc))                                                     \
  X(dnnl_status_t, dnnl_memory_set_data_handle,                                \
    (dnnl_memory_t memory, void *handle), (memory, handle))                    \
  X(dnnl_status_t, dnnl_memory_desc_init_by_strides,                           \
    (dnnl_memory_desc_t * memory_desc, int ndims, const dnnl_dims_t dims,      \
     dnnl_data_type_t data_type, const dnnl_dims_t strides),                   \
    (memory_desc, ndims, dims, data_type, strides))                            \
  X(dnnl_status_t, dnnl_memory_desc_init_by_tag,                               \
    (dnnl_memory_desc_t * memory_desc, int ndims, const dnnl_dims_t dims,      \
     dnnl_data_type_t data_type, dnnl_format_tag_t tag),                       \
    (memory_desc, ndims, dims, data_type, tag))                                \
  X(dnnl_status_t, dnnl_post_ops_create, (dnnl_post_ops_t * post_ops),         \
    (post_ops))                                                                \
  X(dnnl_status_t, dnnl_post_ops_destroy, (dnnl_post_ops_t post_ops),          \
    (post_ops))                                                                \
  X(dnnl_status_t, dnnl_post_ops_append_eltwise,                               \
    (dnnl_post_ops_t post_ops, float scale, dnnl_alg_kind_t alg_kind,          \
     float alpha, float beta),                                                 \
    (post_ops, scale, alg_kind, alpha, beta))                                  \
  X(dnnl_status_t, dnnl_primitive_attr_create,                                 \
    (dnnl_primitive_attr_t * attr), (attr))                                    \
  X(dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t attr),  \
    (attr))                                                                    \
  X(dnnl_status_t, dnnl_primitive_attr_set_post_ops,                           \
    (dnnl_primitive_attr_t attr, const_dnnl_post_ops_t post_ops),              \
    (attr, post_ops))                                                          \
  X(dnnl_status_t, dnnl_primitive_attr_set_scratchpad_mode,                    \
    (dnnl_primitive_attr_t attr, dnnl_scratchpad_mode_t mode), (attr, mode))   \
  X(dnnl_status_t, dnnl_primitive_create,                                      \
    (dnnl_primitive_t * primitive,                                             \
     const_dnnl_primitive_desc_t primitive_desc),                              \
    (primitive, primitive_desc))                                               \
  X(dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t primitive),       \
    (primitive))                                                               \
  X(dnnl_status_t, dnnl_primitive_execute,                                     \
    (const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs,        \
     const dnnl_exec_arg_t *args),                                             \
    (primitive, stream, nargs, args))                                          \
  X(dnnl_status_t, dnnl_primitive_desc_create,                                 \
    (dnnl_primitive_desc_t * primitive_desc, const_dnnl_op_desc_t op_desc,     \
     const_dnnl_primitive_attr_t attr, dnnl_engine_t engine,                   \
     const_dnnl_primitive_desc_t hint),                                        \
    (primitive_desc, op_desc, attr, engine, hint))                             \
  X(dnnl_status_t, dnnl_primitive_desc_destroy,                                \
    (dnnl_primitive_desc_t primitive_desc), (primitive_desc))                  \
  X(dnnl_status_t, dnnl_primitive_desc_query,                                  \
    (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what,            \
     int index, void *result),                                                 \
    (primitive_desc, what, index, result))                                     \
  X(dnnl_status_t, dnnl_reorder_primitive_desc_create,                         \
    (dnnl_primitive_desc_t * reorder_primitive_desc,                           \
     const dnnl_memory_desc_t *src_desc, dnnl_engine_t src_engine,             \
     const dnnl_memory_desc_t *dst_desc, dnnl_engine_t dst_engine,             \
     const_dnnl_primitive_attr_t attr),                                        \
    (reorder_primitive_desc, src_desc, src_engine, dst_desc, dst_engine,       \
     attr))                                                                    \
  X(dnnl_status_t, dnnl_sgemm,                                                 \
    (char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,       \
     float alpha, const float *A, dnnl_dim_t lda, const float *B,              \
     dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc),                    \
    (transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))            \
  X(dnnl_status_t, dnnl_matmul_desc_init,                                      \
    (dnnl_matmul_desc_t * matmul_desc, const dnnl_memory_desc_t *src_desc,     \
     const dnnl_memory_desc_t *weights_desc,                                   \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_desc),                                      \
    (matmul_desc, src_desc, weights_desc, bias_desc, dst_desc))                \
  X(dnnl_status_t, dnnl_dilated_convolution_forward_desc_init,                 \
    (dnnl_convolution_desc_t * conv_desc, dnnl_prop_kind_t prop_kind,          \
     dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc,             \
     const dnnl_memory_desc_t *weights_desc,                                   \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_desc, const dnnl_dims_t strides,            \
     const dnnl_dims_t dilates, const dnnl_dims_t padding_l,                   \
     const dnnl_dims_t padding_r),                                             \
    (conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc,        \
     dst_desc, strides, dilates, padding_l, padding_r))                        \
  X(dnnl_status_t, dnnl_dilated_convolution_backward_data_desc_init,           \
    (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,            \
     const dnnl_memory_desc_t *diff_src_desc,                                  \
     const dnnl_memory_desc_t *weights_desc,                                   \
     const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides,       \
     const dnnl_dims_t dilates, const dnnl_dims_t padding_l,                   \
     const dnnl_dims_t padding_r),                                             \
    (conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc,          \
     strides, dilates, padding_l, padding_r))                                  \
  X(dnnl_status_t, dnnl_dilated_convolution_backward_weights_desc_init,        \
    (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,            \
     const dnnl_memory_desc_t *src_desc,                                       \
     const dnnl_memory_desc_t *diff_weights_desc,                              \
     const dnnl_memory_desc_t *diff_bias_desc,                                 \
     const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides,       \
     const dnnl_dims_t dilates, const dnnl_dims_t padding_l,                   \
     const dnnl_dims_t padding_r),                                             \
    (conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc,         \
     diff_dst_desc, strides, dilates, padding_l, padding_r))                   \
  X(dnnl_status_t, dnnl_pooling_v2_forward_desc_init,                          \
    (dnnl_pooling_v2_desc_t * pool_desc, dnnl_prop_kind_t prop_kind,           \
     dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc,             \
     const dnnl_memory_desc_t *dst_desc, const dnnl_dims_t strides,            \
     const dnnl_dims_t kernel, const dnnl_dims_t dilation,                     \
     const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),                \
    (pool_desc, prop_kind, alg_kind, src_desc, dst_desc, strides, kernel,      \
     dilation, padding_l, padding_r))                                          \
  X(dnnl_status_t, dnnl_pooling_v2_backward_desc_init,                         \
    (dnnl_pooling_v2_desc_t * pool_desc, dnnl_alg_kind_t alg_kind,             \
     const dnnl_memory_desc_t *diff_src_desc,                                  \
     const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides,       \
     const dnnl_dims_t kernel, const dnnl_dims_t dilation,                     \
     const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),                \
    (pool_desc, alg_kind, diff_src_desc, diff_dst_desc, strides, kernel,       \
     dilation, padding_l, padding_r))                                          \
  X(dnnl_status_t, dnnl_eltwise_forward_desc_init,                             \
    (dnnl_eltwise_desc_t * eltwise_desc, dnnl_prop_kind_t prop_kind,           \
     dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *data_desc,            \
     float alpha, float beta),                                                 \
    (eltwise_desc, prop_kind, alg_kind, data_desc, alpha, beta))               \
  X(dnnl_status_t, dnnl_eltwise_backward_desc_init,                            \
    (dnnl_eltwise_desc_t * eltwise_desc, dnnl_alg_kind_t alg_kind,             \
     const dnnl_memory_desc_t *diff_data_desc,                                 \
     const dnnl_memory_desc_t *data_desc, float alpha, float beta),            \
    (eltwise_desc, alg_kind, diff_data_desc, data_desc, alpha, beta))          \
  X(dnnl_status_t, dnnl_softmax_v2_forward_desc_init,                          \
    (dnnl_softmax_v2_desc_t * softmax_desc, dnnl_prop_kind_t prop_kind,        \
     dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc,             \
     const dnnl_memory_desc_t *dst_desc, int softmax_axis),                    \
    (softmax_desc, prop_kind, alg_kind, src_desc, dst_desc, softmax_axis))     \
  X(dnnl_status_t, dnnl_softmax_v2_backward_desc_init,                         \
    (dnnl_softmax_v2_desc_t * softmax_desc, dnnl_alg_kind_t alg_kind,          \
     const dnnl_memory_desc_t *diff_src_desc,                                  \
     const dnnl_memory_desc_t *diff_dst_desc,                                  \
     const dnnl_memory_desc_t *dst_desc, int softmax_axis),                    \
    (softmax_desc, alg_kind, diff_src_desc, diff_dst_desc, dst_desc,           \
     softmax_axis))                                                            \
  X(dnnl_status_t, dnnl_batch_normalization_forward_desc_init,                 \
    (dnnl_batch_normalization_desc_t * bnrm_desc, dnnl_prop_kind_t prop_kind,  \
     const dnnl_memory_desc_t *data_desc, float epsilon, unsigned flags),      \
    (bnrm_desc, prop_kind, data_desc, epsilon, flags))                         \
  X(dnnl_status_t, dnnl_batch_normalization_backward_desc_init,                \
    (dnnl_batch_normalization_desc_t * bnrm_desc, dnnl_prop_kind_t prop_kind,  \
     const dnnl_memory_desc_t *diff_data_desc,                                 \
     const dnnl_memory_desc_t *data_desc, float epsilon, unsigned flags),      \
    (bnrm_desc, prop_kind, diff_data_desc, data_desc, epsilon, flags))         \
  X(dnnl_status_t, dnnl_lstm_forward_desc_init,                                \
    (dnnl_rnn_desc_t * rnn_desc, dnnl_prop_kind_t prop_kind,                   \
     dnnl_rnn_direction_t direction, const dnnl_memory_desc_t *src_layer_desc, \
     const dnnl_memory_desc_t *src_iter_desc,                                  \
     const dnnl_memory_desc_t *src_iter_c_desc,                                \
     const dnnl_memory_desc_t *weights_layer_desc,                             \
     const dnnl_memory_desc_t *weights_iter_desc,                              \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_layer_desc,                                 \
     const dnnl_memory_desc_t *dst_iter_desc,                                  \
     const dnnl_memory_desc_t *dst_iter_c_desc, unsigned flags),               \
    (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc,            \
     src_iter_c_desc, weights_layer_desc, weights_iter_desc, bias_desc,        \
     dst_layer_desc, dst_iter_desc, dst_iter_c_desc, flags))                   \
  X(dnnl_status_t, dnnl_lstm_backward_desc_init,                               \
    (dnnl_rnn_desc_t * rnn_desc, dnnl_prop_kind_t prop_kind,                   \
     dnnl_rnn_direction_t direction, const dnnl_memory_desc_t *src_layer_desc, \
     const dnnl_memory_desc_t *src_iter_desc,                                  \
     const dnnl_memory_desc_t *src_iter_c_desc,                                \
     const dnnl_memory_desc_t *weights_layer_desc,                             \
     const dnnl_memory_desc_t *weights_iter_desc,                              \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_layer_desc,                                 \
     const dnnl_memory_desc_t *dst_iter_desc,                                  \
     const dnnl_memory_desc_t *dst_iter_c_desc,                                \
     const dnnl_memory_desc_t *diff_src_layer_desc,                            \
     const dnnl_memory_desc_t *diff_src_iter_desc,                             \
     const dnnl_memory_desc_t *diff_src_iter_c_desc,                           \
     const dnnl_memory_desc_t *diff_weights_layer_desc,                        \
     const dnnl_memory_desc_t *diff_weights_iter_desc,                         \
     const dnnl_memory_desc_t *diff_bias_desc,                                 \
     const dnnl_memory_desc_t *diff_dst_layer_desc,                            \
     const dnnl_memory_desc_t *diff_dst_iter_desc,                             \
     const dnnl_memory_desc_t *diff_dst_iter_c_desc, unsigned flags),          \
    (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc,            \
     src_iter_c_desc, weights_layer_desc, weights_iter_desc, bias_desc,        \
     dst_layer_desc, dst_iter_desc, dst_iter_c_desc, diff_src_layer_desc,      \
     diff_src_iter_desc, diff_src_iter_c_desc, diff_weights_layer_desc,        \
     diff_weights_iter_desc, diff_bias_desc, diff_dst_layer_desc,              \
     diff_dst_iter_desc, diff_dst_iter_c_desc, flags))                         \
  X(dnnl_status_t, dnnl_gru_forward_desc_init,                                 \
    (dnnl_rnn_desc_t * rnn_desc, dnnl_prop_kind_t prop_kind,                   \
     dnnl_rnn_direction_t direction, const dnnl_memory_desc_t *src_layer_desc, \
     const dnnl_memory_desc_t *src_iter_desc,                                  \
     const dnnl_memory_desc_t *weights_layer_desc,                             \
     const dnnl_memory_desc_t *weights_iter_desc,                              \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_layer_desc,                                 \
     const dnnl_memory_desc_t *dst_iter_desc, unsigned flags),                 \
    (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc,            \
     weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc,         \
     dst_iter_desc, flags))                                                    \
  X(dnnl_status_t, dnnl_gru_backward_desc_init,                                \
    (dnnl_rnn_desc_t * rnn_desc, dnnl_prop_kind_t prop_kind,                   \
     dnnl_rnn_direction_t direction, const dnnl_memory_desc_t *src_layer_desc, \
     const dnnl_memory_desc_t *src_iter_desc,                                  \
     const dnnl_memory_desc_t *weights_layer_desc,                             \
     const dnnl_memory_desc_t *weights_iter_desc,                              \
     const dnnl_memory_desc_t *bias_desc,                                      \
     const dnnl_memory_desc_t *dst_layer_desc,                                 \
     const dnnl_memory_desc_t *dst_iter_desc,                                  \
     const dnnl_memory_desc_t *diff_src_layer_desc,                            \
     const dnnl_memory_desc_t *diff_src_iter_desc,                             \
     const dnnl_memory_desc_t *diff_weights_layer_desc,                        \
     const dnnl_memory_desc_t *diff_weights_iter_desc,                         \
     const dnnl_memory_desc_t *diff_bias_desc,                                 \
     const dnnl_memory_desc_t *diff_dst_layer_desc,                            \
     const dnnl_memory_desc_t *diff_dst_iter_desc, unsigned flags),            \
    (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc,            \
     weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc,         \
     dst_iter_desc, diff_src_layer_desc, diff_src_iter_desc,                   \
     diff_weights_layer_desc, diff_weights_iter_desc, diff_bias_desc,          \
     diff_dst_layer_desc, diff_dst_iter_desc, flags))

/* Functions that return something other than a status, with what each
 * returns while the library cannot be opened. */
#define CPU_DNNL_OTHER_FUNCS(X)                                                \
  X(const dnnl_memory_desc_t *, dnnl_primitive_desc_query_md,                 \
    (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what,            \
     int index),                                                               \
    (primitive_desc, what, index), NULL)                                       \
  X(size_t, dnnl_memory_desc_get_size,                                         \
    (const dnnl_memory_desc_t *memory_desc), (memory_desc), 0)                 \
  X(int, dnnl_memory_desc_equal,                                               \
    (const dnnl_memory_desc_t *lhs, const dnnl_memory_desc_t *rhs),            \
    (lhs, rhs), 0)                                                             \
  X(dnnl_cpu_isa_t, dnnl_get_effective_cpu_isa, (void), (),                    \
    dnnl_cpu_isa_all)                                                          \
  X(const char *, dnnl_cpu_isa2str, (dnnl_cpu_isa_t v), (v), "unknown")       \
  X(const dnnl_version_t *, dnnl_version, (void), (), &no_version)

/* dnnl_status2str is defined by hand below: it reports a failed open. */
/* #n: the name as written, before cpu_lazy.h renames it. */
#define CPU_DNNL_NAME(r, n, p, a) #n,
#define CPU_DNNL_NAME5(r, n, p, a, fail) #n,
static const char *const dnnl_symbols[] = {
    CPU_DNNL_STATUS_FUNCS(CPU_DNNL_NAME)
        CPU_DNNL_OTHER_FUNCS(CPU_DNNL_NAME5) "dnnl_status2str",
    NULL};

#define CPU_DNNL_INDEX(r, n, p, a) DNNL_I_##n,
#define CPU_DNNL_INDEX5(r, n, p, a, fail) DNNL_I_##n,
enum {
  CPU_DNNL_STATUS_FUNCS(CPU_DNNL_INDEX) CPU_DNNL_OTHER_FUNCS(CPU_DNNL_INDEX5)
      DNNL_I_dnnl_status2str,
  DNNL_NUM
};

static void *dnnl_addrs[DNNL_NUM];
static const dnnl_version_t no_version;

static int dnnl_opened(lazylib *lib, char *why, size_t len);

static lazylib dnnl_lib = LAZYLIB_INIT(
    .plugin = CPU_PLUGIN, .what = "oneDNN",
    .soname = "libdnnl.so." LAZYLIB_STR(DNNL_VERSION_MAJOR),
    .env = "WEFT_ONEDNN_LIBRARY", .symbols = dnnl_symbols,
    .addrs = dnnl_addrs, .opened = dnnl_opened);

/* Every name is renamed by cpu_lazy.h: the definitions below are the
 * wrappers, never functions of the library's own name. */
#define CPU_RENAMED(n)                                                         \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "cpu_lz_" #n,                 \
                 #n " is not renamed in cpu_lazy.h");
#define CPU_DNNL_RENAMED(r, n, p, a)                                           \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "cpu_lz_" #n,                 \
                 #n " is not renamed in cpu_lazy.h");
#define CPU_DNNL_RENAMED5(r, n, p, a, fail)                                    \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "cpu_lz_" #n,                 \
                 #n " is not renamed in cpu_lazy.h");
CPU_DNNL_STATUS_FUNCS(CPU_DNNL_RENAMED)
CPU_DNNL_OTHER_FUNCS(CPU_DNNL_RENAMED5)
CPU_RENAMED(dnnl_status2str)

#define CPU_DNNL_STATUS_DEF(r, n, p, a)                                        \
  r n p {                                                                      \
    if (lazylib_open(&dnnl_lib))                                               \
      return dnnl_runtime_error;                                               \
    return ((r(*) p)dnnl_addrs[DNNL_I_##n])a;                                  \
  }
CPU_DNNL_STATUS_FUNCS(CPU_DNNL_STATUS_DEF)
#undef CPU_DNNL_STATUS_DEF

#define CPU_DNNL_OTHER_DEF(r, n, p, a, fail)                                   \
  r n p {                                                                      \
    if (lazylib_open(&dnnl_lib))                                               \
      return fail;                                                             \
    return ((r(*) p)dnnl_addrs[DNNL_I_##n])a;                                  \
  }
CPU_DNNL_OTHER_FUNCS(CPU_DNNL_OTHER_DEF)
#undef CPU_DNNL_OTHER_DEF

const char *dnnl_status2str(dnnl_status_t v) {
  if (lazylib_open(&dnnl_lib))
    return lazylib_error(&dnnl_lib);
  return ((const char *(*)(dnnl_status_t))dnnl_addrs[DNNL_I_dnnl_status2str])(
      v);
}

/* A oneDNN of another major version than the headers' has another ABI. */
static int dnnl_opened(lazylib *lib, char *why, size_t len) {
  const dnnl_version_t *v = dnnl_version();

  (void)lib;
  if (v && v->major == DNNL_VERSION_MAJOR)
    return 0;
  snprintf(why, len,
           "the plugin was built for oneDNN %d.x, and this is %d.%d.%d",
           DNNL_VERSION_MAJOR, v ? v->major : 0, v ? v->minor : 0,
           v ? v->patch : 0);
  return -1;
}

int cpu_dnnl_ready(wf_status *st) {
  if (!lazylib_open(&dnnl_lib))
    return 0;
  return wfx_fail(st, WF_FAILED_PRECONDITION, "%s", lazylib_error(&dnnl_lib));
}

int cpu_dnnl_is_open(void) { return lazylib_is_open(&dnnl_lib); }
#endif /* HAVE_DNNL */

/* ---- OpenBLAS ------------------------------------------------------------ */

#ifdef HAVE_OPENBLAS
CPU_RENAMED(cblas_sgemm)
CPU_RENAMED(cblas_dgemm)
CPU_RENAMED(openblas_get_corename)
CPU_RENAMED(openblas_set_num_threads)

static const char *const blas_symbols[] = {
    "cblas_sgemm", "cblas_dgemm", "openblas_get_corename",
    "openblas_set_num_threads", NULL};
enum { BLAS_SGEMM, BLAS_DGEMM, BLAS_CORENAME, BLAS_SET_THREADS, BLAS_NUM };
static void *blas_addrs[BLAS_NUM];

/* The count openblas_set_num_threads was last given (0: never), applied
 * when the library opens. */
static _Atomic int blas_threads;

static int blas_opened(lazylib *lib, char *why, size_t len) {
  int n = atomic_load(&blas_threads);

  (void)lib;
  (void)why;
  (void)len;
  if (n > 0)
    ((void (*)(int))blas_addrs[BLAS_SET_THREADS])(n);
  return 0;
}

static lazylib blas_lib = LAZYLIB_INIT(
    .plugin = CPU_PLUGIN, .what = "OpenBLAS", .soname = "libopenblas.so.0",
    .env = "WEFT_OPENBLAS_LIBRARY", .symbols = blas_symbols,
    .addrs = blas_addrs, .opened = blas_opened);

/* cpu_openblas_ready has been asked before any of these is called: a
 * library that could not be opened is then never reached. */
void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB,
                 OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                 OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda,
                 OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb,
                 OPENBLAS_CONST float beta, float *C,
                 OPENBLAS_CONST blasint ldc) {
  if (lazylib_open(&blas_lib))
    return;
  ((void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
             blasint, blasint, blasint, float, const float *, blasint,
             const float *, blasint, float, float *,
             blasint))blas_addrs[BLAS_SGEMM])(Order, TransA, TransB, M, N, K,
                                              alpha, A, lda, B, ldb, beta, C,
                                              ldc);
}

void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER Order,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB,
                 OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                 OPENBLAS_CONST blasint K, OPENBLAS_CONST double alpha,
                 OPENBLAS_CONST double *A, OPENBLAS_CONST blasint lda,
                 OPENBLAS_CONST double *B, OPENBLAS_CONST blasint ldb,
                 OPENBLAS_CONST double beta, double *C,
                 OPENBLAS_CONST blasint ldc) {
  if (lazylib_open(&blas_lib))
    return;
  ((void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
             blasint, blasint, blasint, double, const double *, blasint,
             const double *, blasint, double, double *,
             blasint))blas_addrs[BLAS_DGEMM])(Order, TransA, TransB, M, N, K,
                                              alpha, A, lda, B, ldb, beta, C,
                                              ldc);
}

char *openblas_get_corename(void) {
  if (lazylib_open(&blas_lib))
    return NULL;
  return ((char *(*)(void))blas_addrs[BLAS_CORENAME])();
}

/* Kept for the library until it opens; passed on at once when it is. */
void openblas_set_num_threads(int num_threads) {
  atomic_store(&blas_threads, num_threads);
  if (lazylib_is_open(&blas_lib))
    ((void (*)(int))blas_addrs[BLAS_SET_THREADS])(num_threads);
}

int cpu_openblas_ready(wf_status *st) {
  if (!lazylib_open(&blas_lib))
    return 0;
  return wfx_fail(st, WF_FAILED_PRECONDITION, "%s", lazylib_error(&blas_lib));
}

int cpu_openblas_is_open(void) { return lazylib_is_open(&blas_lib); }
#endif /* HAVE_OPENBLAS */
