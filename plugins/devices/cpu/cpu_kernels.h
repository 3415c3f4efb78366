/* plugins/devices/cpu/cpu_kernels.h — what the CPU plugin's fast kernels
 * share: the kernel table, the library thread setup, and (with oneDNN) the
 * per-node plan cache that keeps primitives, their memories, reordered
 * weights and scratchpads from one run to the next.
 *
 * Internal to the plugin. The kernels reach the core only through the host
 * table (wfx_host, set by cpu_kernels_init). */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_KERNELS_H
#define WF_PLUGINS_DEVICES_CPU_CPU_KERNELS_H

#include <weft/plugin.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <weft/plugin_aux.h>

#include "epilogue.h"
/* Before the libraries' headers: the names it renames (cpu_lazy.c). */
#include "cpu_lazy.h"
#include "cpu_pieces.h"

#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

/* Priority of every fast kernel: above the reference kernels (0). */
#define WF_CPU_FAST_PRIORITY 10

/* ---- the plugin's side ---------------------------------------------------- */

/* The fast kernels, NULL-terminated: what the libraries found by configure
 * allow (none without oneDNN and OpenBLAS). */
extern const wf_kernel_def *const cpu_kernels[];

/* What each kernel file defines (listed in cpu_kernels). */
#if defined(HAVE_DNNL) || defined(HAVE_OPENBLAS)
#define WF_CPU_HAVE_GEMM 1
extern const wf_kernel_def cpu_k_matmul, cpu_k_batch_matmul,
    cpu_k_fused_matmul;
#endif
#ifdef HAVE_DNNL
extern const wf_kernel_def cpu_k_conv2d, cpu_k_conv2d_backprop_input,
    cpu_k_conv2d_backprop_filter, cpu_k_max_pool, cpu_k_avg_pool,
    cpu_k_max_pool_grad, cpu_k_fused_max_pool_grad_relu, cpu_k_avg_pool_grad,
    cpu_k_softmax, cpu_k_softmax_loops, cpu_k_xent_loops,
    cpu_k_sparse_xent_loops,
    cpu_k_log_softmax, cpu_k_softmax_grad, cpu_k_log_softmax_grad,
    cpu_k_batch_norm, cpu_k_batch_norm_grad, cpu_k_bias_add,
    cpu_k_bias_add_grad, cpu_k_layer_norm, cpu_k_layer_norm_grad,
    cpu_k_fused_conv2d, cpu_k_conv2d_winograd, cpu_k_fused_conv2d_winograd,
    cpu_k_conv2d_own_winograd, cpu_k_fused_conv2d_own_winograd,
    cpu_k_conv2d_shallow, cpu_k_fused_conv2d_shallow,
    cpu_k_conv2d_backprop_filter_shallow, cpu_k_fused_conv2d_max_pool,
    cpu_k_fused_conv2d_max_pool_own_winograd,
    cpu_k_fused_conv2d_max_pool_shallow, cpu_k_fused_conv2d_and_max_pool,
    cpu_k_fused_conv2d_and_max_pool_own_winograd,
    cpu_k_fused_conv2d_and_max_pool_shallow, cpu_k_lstm, cpu_k_lstm_grad,
    cpu_k_gru, cpu_k_gru_grad;
/* cpu_eltwise.c: activations and their backward ops. */
extern const wf_kernel_def cpu_k_relu, cpu_k_leaky_relu,
    cpu_k_elu, cpu_k_sigmoid, cpu_k_tanh, cpu_k_gelu,
    cpu_k_softplus, cpu_k_exp, cpu_k_sqrt, cpu_k_square,
    cpu_k_relu_grad, cpu_k_relu_grad_loops, cpu_k_leaky_relu_grad,
    cpu_k_elu_grad,
    cpu_k_sigmoid_grad, cpu_k_tanh_grad, cpu_k_gelu_grad,
    cpu_k_softplus_grad, cpu_k_sqrt_grad, cpu_k_gelu_loops,
    cpu_k_gelu_grad_loops;
/* cpu_arith.c: arithmetic, sums and Transpose on the intra-op threads. */
extern const wf_kernel_def cpu_k_add, cpu_k_sub, cpu_k_mul, cpu_k_div,
    cpu_k_add_n, cpu_k_sum, cpu_k_mean, cpu_k_sum_to_like, cpu_k_sum_grad,
    cpu_k_mean_grad, cpu_k_transpose;
#define WF_CPU_ARITH_KERNELS                                                   \
  &cpu_k_add, &cpu_k_sub, &cpu_k_mul, &cpu_k_div, &cpu_k_add_n, &cpu_k_sum,    \
      &cpu_k_mean, &cpu_k_sum_to_like, &cpu_k_sum_grad, &cpu_k_mean_grad,      \
      &cpu_k_transpose
/* cpu_apply.c: ops-train's dense updates on the intra-op threads. */
extern const wf_kernel_def cpu_k_apply_gradient_descent,
    cpu_k_apply_momentum, cpu_k_apply_adam, cpu_k_apply_adamw,
    cpu_k_apply_rmsprop, cpu_k_apply_centered_rmsprop,
    cpu_k_apply_adagrad;
#define WF_CPU_APPLY_KERNELS                                                   \
  &cpu_k_apply_gradient_descent, &cpu_k_apply_momentum,                \
      &cpu_k_apply_adam, &cpu_k_apply_adamw, &cpu_k_apply_rmsprop, \
      &cpu_k_apply_centered_rmsprop, &cpu_k_apply_adagrad
#define WF_CPU_ELTWISE_KERNELS                                                 \
  &cpu_k_relu, &cpu_k_leaky_relu, &cpu_k_elu, &cpu_k_sigmoid,  \
      &cpu_k_tanh, &cpu_k_gelu, &cpu_k_softplus, &cpu_k_exp,   \
      &cpu_k_sqrt, &cpu_k_square, &cpu_k_relu_grad,                \
      &cpu_k_relu_grad_loops,                                      \
      &cpu_k_leaky_relu_grad, &cpu_k_elu_grad,                         \
      &cpu_k_sigmoid_grad, &cpu_k_tanh_grad, &cpu_k_gelu_grad,     \
      &cpu_k_softplus_grad, &cpu_k_sqrt_grad, &cpu_k_gelu_loops,          \
      &cpu_k_gelu_grad_loops
#endif

/* Output i, made with the shape the op's shape function gives for this
 * call's inputs (kernel_output_shape): an input the op refuses is the op's
 * own error, so the kernels check no more than what they rely on. NULL
 * with st set on error; *shape (may be NULL) gets the shape. */
static inline wf_tensor *cpu_output(wf_kernel_ctx *ctx, int32_t i,
                                    wf_shape *shape, wf_status *st) {
  wf_shape s;

  if (wfx_host->kernel_output_shape(ctx, i, &s, st))
    return NULL;
  if (shape)
    *shape = s;
  return wfx_host->kernel_output_new(ctx, i, &s, st);
}

/* Output i as cpu_output makes it, all zeros (what an empty sum gives). */
static inline wf_tensor *cpu_output_zeros(wf_kernel_ctx *ctx, int32_t i,
                                          wf_status *st) {
  wf_tensor *t = cpu_output(ctx, i, NULL, st);

  if (t && wfx_host->tensor_nbytes(t))
    memset(wfx_data(t), 0, wfx_host->tensor_nbytes(t));
  return t;
}

/* Sets up the libraries for a runtime's plugin instance: reads the
 * runtime's thread split (host->threads) and gives OpenBLAS and oneDNN's
 * OpenMP `intra` threads each. Opens neither library (cpu_lazy.c opens
 * them on first use). Balanced by cpu_kernels_fini, whose last call
 * destroys the oneDNN engine if one was made. */
int cpu_kernels_init(wf_status *st);
void cpu_kernels_fini(void);

/* The thread split last given to the libraries. */
void cpu_threads(int32_t *inter_op, int32_t *intra_op);

/* Appends the libraries' line of the device description: "threads: ..."
 * with inter-op and intra-op counts, oneDNN's version and ISA, OpenBLAS's
 * core type. At most size bytes, always terminated. */
void cpu_kernels_describe(char *out, size_t size);

/* The threads an intra-op team has now: the intra-op count, or 1 while
 * other work crowds the cores when [threads] adapt = true
 * (cpu_crowding.h). Samples the machine once a period. */
int cpu_team_width(void);

/* Makes the calling thread's OpenMP team size cpu_team_width() (OpenMP
 * keeps it per thread; executor threads start with the library default).
 * Cheap when it has not changed. */
void cpu_omp_threads(void);
/* The same with n threads (at most the intra-op count; n <= 0:
 * cpu_team_width()). */
void cpu_omp_threads_n(int32_t n);

/* Runs fn(arg, t, nt) for every t < nt: on the calling thread alone (nt =
 * 1) unless `share` is set and cpu_team_width() is more than 1, then on an
 * OpenMP team of that width (nt is the team's actual size). Returns when
 * every part has. Each part's writes happen before the return, the
 * caller's writes before the parts (also as ThreadSanitizer sees it).
 * Without oneDNN (no OpenMP), always on the calling thread. */
typedef void cpu_team_fn(void *arg, int t, int nt);
void cpu_team(cpu_team_fn *fn, void *arg, int share);

/* Called by every part of a cpu_team (each part the same number of
 * times), waits until all of them have called it: what each part wrote
 * before, every part may read after (also as ThreadSanitizer sees it).
 * Nothing on a team of one. */
void cpu_team_barrier(void);

/* The most parts cpu_team(fn, arg, share) runs: 1 unless `share` is set
 * and there are several intra-op threads, then the intra-op count. A team
 * may come out smaller (one thread while the cores are crowded, or what
 * OpenMP gives), never larger, so per-part buffers sized by it always
 * suffice. */
int cpu_team_size(int share);

/* The CPUs the plugin's own AVX2 loops serve, each kernel by what was
 * measured against oneDNN 2.6 (which has AVX-512 kernels, and AVX2 ones
 * slower than these):
 * cpu_avx2_fma: AVX2 and FMA, AVX-512 or not: the softmax and
 *   cross-entropy loops, ReluGrad's, the small matrices' batches
 *   (cpu_gemm.c), the Winograd convolutions (cpu_winograd.c, sixteen
 *   lanes to a vector on AVX-512) and _FusedConv2DMaxPool's shallow ones
 *   (cpu_conv_shallow.c), whose pooling in the loops' epilogue saves the
 *   round trip of the convolution's output through memory;
 * cpu_avx2_fma_only: AVX2 and FMA without AVX-512: the shallow
 *   convolutions unpooled, the first layer's filter gradient and the
 *   narrow products, where oneDNN's AVX-512 kernels are faster. */
int cpu_avx2_fma(void);
int cpu_avx2_fma_only(void);

/* Elements of a memory-bound loop (about 20-30 us on one thread) from
 * which cpu_team's kernels share it: waking the team costs a few
 * microseconds. */
#define WF_CPU_SPLIT ((int64_t)1 << 15)

/* ---- the libraries, opened on first use (cpu_lazy.c) ---------------------- */

#ifdef HAVE_DNNL
/* Opens oneDNN if that was not tried yet. 0 when it is open, else
 * FAILED_PRECONDITION with st naming the library, this plugin and why. */
int cpu_dnnl_ready(wf_status *st);
/* 1 once oneDNN is open (opens nothing). */
int cpu_dnnl_is_open(void);
#endif
#ifdef HAVE_OPENBLAS
/* As cpu_dnnl_ready for OpenBLAS: asked before cblas_* is called. */
int cpu_openblas_ready(wf_status *st);
int cpu_openblas_is_open(void);
#endif

#ifdef HAVE_DNNL

/* ---- oneDNN --------------------------------------------------------------- */

/* The CPU engine (valid between init and fini), made by the first call,
 * which opens oneDNN; NULL (logged) when it cannot be made, which the
 * oneDNN call it is given then refuses. */
dnnl_engine_t cpu_dnnl_engine(void);

/* Sets st to INTERNAL (UNIMPLEMENTED for dnnl_unimplemented,
 * RESOURCE_EXHAUSTED for dnnl_out_of_memory) naming what failed and
 * oneDNN's status; returns the code. For failures while running. */
int cpu_dnnl_fail(dnnl_status_t s, const char *what, wf_status *st);
/* For descriptors oneDNN will not make (its status says why): sets st to
 * UNIMPLEMENTED, so that the plan cache records the shape as one oneDNN
 * refuses, unless oneDNN ran out of memory (then RESOURCE_EXHAUSTED).
 * Returns the code. */
int cpu_dnnl_refuse(dnnl_status_t s, const char *what, wf_status *st);
/* For a plan with fallback set: UNIMPLEMENTED naming what (the operation)
 * and the input shape, and that the op's reference kernel runs it when the
 * node is placed with device-cpu's kernels denied ([kernels] deny). */
int cpu_dnnl_unsupported(const char *what, const wf_shape *s, wf_status *st);

/* A plain memory descriptor of f32 dims with row-major strides; dims
 * permuted by perm are laid out in that order (perm NULL: identity). For
 * user tensors in any order without a named format tag. */
int cpu_dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                const int *perm, wf_status *st);
/* The same with a format tag. */
int cpu_dnnl_md_tag(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                    dnnl_format_tag_t tag, wf_status *st);

/* The primitive attributes every kernel uses: user-mode scratchpad (the
 * plan allocates it through the host allocator). Caller destroys. */
int cpu_dnnl_attr(dnnl_primitive_attr_t *attr, wf_status *st);

/* A primitive descriptor for op_desc (hint: the forward one of a backward
 * primitive, or NULL) with cpu_dnnl_attr's attributes. *pd is NULL with
 * st set by cpu_dnnl_refuse when oneDNN makes none. */
int cpu_dnnl_pd(dnnl_primitive_desc_t *pd, const void *op_desc,
                const_dnnl_primitive_desc_t hint, const char *what,
                wf_status *st);

/* As cpu_dnnl_pd for a forward primitive, with f's activation (if any) as
 * an eltwise post-op after the primitive's own output (bias included). */
int cpu_dnnl_pd_fused(dnnl_primitive_desc_t *pd, const void *op_desc,
                      const opc_fused *f, const char *what, wf_status *st);

/* 1 when oneDNN picked its reference (unoptimised) implementation. */
int cpu_dnnl_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* 1 when the implementation works on the layouts directly (oneDNN's jit
 * and brgemm kernels), not through its reference code or an im2col +
 * gemm lowering. */
int cpu_dnnl_pd_is_direct(const_dnnl_primitive_desc_t pd);

/* ---- plans ---------------------------------------------------------------- */

/* A plan runs one or a few primitives (its steps) on one input shape. Its
 * memories are either bound to a tensor at each run (user memories, in the
 * tensor's plain layout) or internal. When a step wants a user tensor in
 * another layout (oneDNN's blocked formats), the plan keeps an internal
 * copy in that layout and reorders at the border: inputs before the steps,
 * outputs after them. Scratchpads and internal buffers come from the host
 * allocator once, when the plan is built.
 *
 * A plan is used by one thread at a time (the cache hands it out
 * exclusively), so binding data handles per run is safe. */

#define WF_DNNL_MAX_MEMS 24
#define WF_DNNL_MAX_STEPS 3
#define WF_DNNL_MAX_ARGS 24

/* Work (see cpu_dnnl_plan_threads) below which a plan runs on one thread:
 * 2^16 input elements of a pooling, 2^20 multiply-adds of a convolution
 * with AVX-512 (16 to a unit), 2^19 with AVX2 (8 to a unit). Measured with oneDNN 2.6 (AVX-512, 1 against 2 threads),
 * microseconds, each primitive alone:
 *   2x2 max pooling 28x28x16, batch 1 (12.5k elements)            0.6  1.8
 *   2x2 max pooling 28x28x16, batch 4 (50k)                       2.0  2.6
 *   2x2 max pooling 28x28x16, batch 8 (100k)                      4.0  3.6
 *   3x3 convolution 28x28, 1 -> 16, batch 1 (113k multiply-adds)  1.9  2.5
 *   3x3 convolution 28x28, 1 -> 16, batch 8 (904k)               12.9  8.4
 *   3x3 convolution 14x14, 16 -> 32, batch 1 (903k)               9.6  6.3
 * and the last one inside bench/cnn_infer at batch 1 (convolution, pool,
 * convolution, pool, product): 17.0 us a step with it on one thread, 19.8
 * on two. Alone, a convolution gains from the second thread from about
 * 2^17 multiply-adds on; between other kernels its share of the data has
 * to cross to the other core's cache and back, and the second thread has
 * to be woken and joined. A convolution's unit is a vector's multiply-adds
 * (16 floats with AVX-512, 8 with AVX2): on an AMD EPYC with AVX2 (2
 * cores), counting 8 put the second convolution at batch 1 on two threads
 * (its node 21.8 -> 15.6 us) and bench/cnn_infer's batch-1 step went from
 * 35.7 to 27.7 us (alternated runs; batch 64 unchanged). */
#define WF_DNNL_SMALL_WORK ((int64_t)1 << 16)

/* Memory flags. */
#define WF_DNNL_IN 0x1      /* a user tensor the steps read */
#define WF_DNNL_OUT 0x2     /* a user tensor the steps write */
#define WF_DNNL_WEIGHTS 0x4 /* IN, reordered once: the reordered copy is
                               kept while the tensor's address and bytes stay
                               the same: known from the core's version of
                               them when it has one (a variable's value),
                               else checked by one comparison against a
                               saved copy, which is cheaper than the
                               reorder's scattered writes */
#define WF_DNNL_ZERO 0x8    /* OUT, zeroed before the steps (primitives that
                               accumulate into it: RNN weight gradients) */

typedef struct cpu_dnnl_mem {
  int flags;
  dnnl_memory_t user;   /* bound to the tensor per run; NULL if internal */
  dnnl_memory_t inner;  /* what the steps use (== user without reorder) */
  dnnl_primitive_t reorder; /* user -> inner (IN) or inner -> user (OUT) */
  void *buf;            /* inner's storage when it is the plan's own */
  /* WF_DNNL_WEIGHTS: the source last reordered (address and bytes), and
   * either its version (non-zero) or a copy of its bytes. */
  const void *src;
  uint64_t version;
  void *copy;
  size_t bytes;
  size_t size; /* bytes of inner */
} cpu_dnnl_mem;

typedef struct cpu_dnnl_step {
  dnnl_primitive_t prim;
  dnnl_memory_t scratch; /* NULL when the step needs none */
  int nargs;
  int mem_of[WF_DNNL_MAX_ARGS]; /* plan memory index per argument */
  dnnl_exec_arg_t args[WF_DNNL_MAX_ARGS + 1];
} cpu_dnnl_step;

typedef struct cpu_dnnl_plan {
  dnnl_stream_t stream;
  int nmems, nsteps;
  cpu_dnnl_mem mems[WF_DNNL_MAX_MEMS];
  cpu_dnnl_step steps[WF_DNNL_MAX_STEPS];
  void *scratch;       /* one buffer for every step (they run in turn) */
  size_t scratch_bytes;
  /* Set when oneDNN cannot run this shape: the kernel reports it
   * (UNIMPLEMENTED, see cpu_dnnl_unsupported) every time this shape comes
   * back, without asking oneDNN again. */
  int fallback;
  /* The OpenMP team its primitives were made for and run with: 1 for
   * work too small to share (see cpu_dnnl_plan_threads), else
   * cpu_team_width() when the plan was made. */
  int threads;
} cpu_dnnl_plan;

/* A new empty plan with its own stream. */
int cpu_dnnl_plan_new(cpu_dnnl_plan **out, wf_status *st);
void cpu_dnnl_plan_free(cpu_dnnl_plan *p);

/* Declares memory index i (0 <= i < WF_DNNL_MAX_MEMS; indices are the
 * kernel's own numbering). user_md: the tensor's plain layout (NULL for an
 * internal memory); want_md: the layout the steps use (NULL: user_md).
 * flags: WF_DNNL_IN/OUT/WEIGHTS, 0 for internal. */
int cpu_dnnl_plan_mem(cpu_dnnl_plan *p, int i,
                      const dnnl_memory_desc_t *user_md,
                      const dnnl_memory_desc_t *want_md, int flags,
                      wf_status *st);

/* Adds a step: a primitive made from pd (borrowed; the caller destroys it)
 * with arguments arg_ids[j] bound to plan memory mem_of[j]. Steps run in
 * the order added. */
int cpu_dnnl_plan_step(cpu_dnnl_plan *p, const_dnnl_primitive_desc_t pd,
                       const int *arg_ids, const int *mem_of, int nargs,
                       wf_status *st);

/* Sizes the plan's OpenMP team from its work (one element loaded or
 * stored, or 16 multiply-adds, per unit) and gives the calling thread that
 * team. Call it first in a build function, before any primitive descriptor
 * is made: oneDNN fixes a primitive's thread count when it is made. Below
 * WF_DNNL_SMALL_WORK the plan runs on the calling thread alone, where
 * waking the other threads and joining them costs more than they save;
 * plans whose build does not call it get cpu_team_width(). */
void cpu_dnnl_plan_threads(cpu_dnnl_plan *p, int64_t work);

/* Allocates the scratchpad for the steps added (call once, after the last
 * step). */
int cpu_dnnl_plan_finish(cpu_dnnl_plan *p, wf_status *st);

/* Runs the plan: data[i] is the tensor data of user memory i (ignored for
 * internal ones); version[i] (version may be NULL: all 0) the core's
 * version of a WF_DNNL_WEIGHTS tensor's bytes (cpu_version). what names the
 * operation in errors. */
int cpu_dnnl_plan_run(cpu_dnnl_plan *p, void *const *data,
                      const uint64_t *version, const char *what,
                      wf_status *st);

/* Runs a plan none of whose memories is reordered (every primitive takes
 * its user memories as they are) from any thread, one plan per thread at
 * a time: binds data as cpu_dnnl_plan_run does and executes its steps on
 * the plan's stream. For the parts of a cpu_team, which have no status of
 * their own: returns oneDNN's status (dnnl_success, or the first
 * failure's). */
dnnl_status_t cpu_dnnl_plan_exec(cpu_dnnl_plan *p, void *const *data);

/* The core's version of t's bytes (tensor_version, ABI 1.5), or 0 when the
 * core has none for it or is older. */
static inline uint64_t cpu_version(const wf_tensor *t) {
  return WF_HOST_HAS(wfx_host, tensor_version)
             ? wfx_host->tensor_version(t)
             : 0;
}

/* ---- the per-node cache ---------------------------------------------------- */

/* Longest key a kernel builds: every input's rank and dims, plus a few
 * kernel-chosen words. */
#define WF_CPU_KEY_MAX 112

typedef struct cpu_key {
  int n;
  int64_t w[WF_CPU_KEY_MAX];
} cpu_key;

/* Appends s's rank and dims (asserts room). */
void cpu_key_shape(cpu_key *k, const wf_shape *s);
/* Appends one word. */
void cpu_key_word(cpu_key *k, int64_t v);

/* Plans of one node, keyed by shape (and whatever else the kernel puts in
 * the key), at most WF_DNNL_CACHE_MAX of them, least recently used out.
 * A plan is handed to one caller at a time; a caller that finds every
 * plan of its key busy gets a new one (added when there is room, else
 * freed after use), so concurrent steps never wait on each other's
 * primitives. */
#define WF_DNNL_CACHE_MAX 8

typedef int cpu_dnnl_build_fn(void *arg, cpu_dnnl_plan *p, wf_status *st);

typedef struct cpu_dnnl_cache_entry {
  cpu_key key;
  int width; /* cpu_team_width() when the plan was made */
  cpu_dnnl_plan *plan;
  uint64_t used; /* tick of the last get */
  int busy;
} cpu_dnnl_cache_entry;

typedef struct cpu_dnnl_cache {
  pthread_mutex_t lock;
  uint64_t tick;
  int n;
  cpu_dnnl_cache_entry e[WF_DNNL_CACHE_MAX];
} cpu_dnnl_cache;

void cpu_dnnl_cache_init(cpu_dnnl_cache *c);
void cpu_dnnl_cache_deinit(cpu_dnnl_cache *c);

/* A plan for key, built by build(arg, plan, st) when no idle one exists.
 * Return it with cpu_dnnl_cache_put. NULL with st set when building
 * failed. A build that returns UNIMPLEMENTED gives a plan with fallback set
 * instead (st cleared). */
cpu_dnnl_plan *cpu_dnnl_cache_get(cpu_dnnl_cache *c, const cpu_key *key,
                                  cpu_dnnl_build_fn *build, void *arg,
                                  wf_status *st);
void cpu_dnnl_cache_put(cpu_dnnl_cache *c, cpu_dnnl_plan *p);

/* A kernel's per-node state for the simple oneDNN kernels: the cache and
 * a few parsed attributes. Made by cpu_dnnl_state_new (create callbacks)
 * and freed by cpu_dnnl_state_free (destroy callbacks). */
typedef struct cpu_dnnl_state {
  cpu_dnnl_cache cache;
  int64_t attr[16]; /* what the kernel parsed at create */
  double fattr[2];
} cpu_dnnl_state;

int cpu_dnnl_state_new(cpu_dnnl_state **out, wf_status *st);
void cpu_dnnl_state_free(void *state);

#endif /* HAVE_DNNL */

#endif /* WF_PLUGINS_DEVICES_CPU_CPU_KERNELS_H */
