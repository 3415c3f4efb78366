/* plugins/devices/cpu/cpu_kernels.c — the CPU plugin's table of fast
 * kernels and the process-wide library setup behind them: the thread
 * counts given to OpenBLAS and to oneDNN's OpenMP runtime, the oneDNN
 * engine (made on first use, since oneDNN is opened then: cpu_lazy.c), and
 * the libraries' line of the device description.
 *
 * It runs no kernel itself (cpu_gemm.c, cpu_conv.c, cpu_pool.c,
 * cpu_eltwise.c, cpu_softmax.c, cpu_bnorm.c, cpu_bias.c, cpu_layernorm.c,
 * cpu_rnn.c, cpu_apply.c and cpu_arith.c do) but holds cpu_team, the
 * OpenMP region the last two share their loops through, and
 * cpu_team_width, the team those regions and new oneDNN plans get (one
 * thread while the cores are crowded: cpu_crowding.h). It does not pin
 * threads (the core's pool does; OpenMP's and OpenBLAS's own threads are
 * left where the system puts them). */
#include <config.h>

#include "cpu_kernels.h"
#include "cpu_crowding.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#endif
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

const wf_kernel_def *const cpu_kernels[] = {
#ifdef WF_CPU_HAVE_GEMM
    &cpu_k_matmul,
    &cpu_k_batch_matmul,
    &cpu_k_fused_matmul,
#endif
#ifdef HAVE_DNNL
    &cpu_k_conv2d,
    &cpu_k_fused_conv2d,
    &cpu_k_conv2d_winograd,
    &cpu_k_fused_conv2d_winograd,
    &cpu_k_conv2d_own_winograd,
    &cpu_k_fused_conv2d_own_winograd,
    &cpu_k_conv2d_shallow,
    &cpu_k_fused_conv2d_shallow,
    &cpu_k_conv2d_backprop_filter_shallow,
    &cpu_k_fused_conv2d_max_pool,
    &cpu_k_fused_conv2d_max_pool_own_winograd,
    &cpu_k_fused_conv2d_max_pool_shallow,
    &cpu_k_fused_conv2d_and_max_pool,
    &cpu_k_fused_conv2d_and_max_pool_own_winograd,
    &cpu_k_fused_conv2d_and_max_pool_shallow,
    &cpu_k_conv2d_backprop_input,
    &cpu_k_conv2d_backprop_filter,
    &cpu_k_max_pool,
    &cpu_k_avg_pool,
    &cpu_k_max_pool_grad,
    &cpu_k_fused_max_pool_grad_relu,
    &cpu_k_avg_pool_grad,
    &cpu_k_softmax_loops,
    &cpu_k_xent_loops,
    &cpu_k_sparse_xent_loops,
    &cpu_k_softmax,
    &cpu_k_log_softmax,
    &cpu_k_softmax_grad,
    &cpu_k_log_softmax_grad,
    &cpu_k_batch_norm,
    &cpu_k_batch_norm_grad,
    &cpu_k_bias_add,
    &cpu_k_bias_add_grad,
    &cpu_k_layer_norm,
    &cpu_k_layer_norm_grad,
    WF_CPU_ELTWISE_KERNELS,
    WF_CPU_APPLY_KERNELS,
    WF_CPU_ARITH_KERNELS,
    &cpu_k_lstm,
    &cpu_k_lstm_grad,
    &cpu_k_gru,
    &cpu_k_gru_grad,
#endif
    NULL};

/* ---- threads and the engine --------------------------------------------- */

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static int lib_users; /* plugin instances between init and fini */
static _Atomic int32_t inter_threads = 1, intra_threads = 1;
#ifdef HAVE_DNNL
/* Made by the first kernel that needs it, which opens oneDNN. */
static _Atomic(dnnl_engine_t) engine;
/* The intra-op count this thread last gave OpenMP (0: never). */
static _Thread_local int32_t omp_set_here;
#endif

int cpu_kernels_init(wf_status *st) {
  int32_t inter = 1, intra = 1;

  (void)st;
  if (WF_HOST_HAS(wfx_host, threads) && wfx_host->threads)
    wfx_host->threads(&inter, &intra);
  if (inter < 1)
    inter = 1;
  if (intra < 1)
    intra = 1;
  pthread_mutex_lock(&lib_lock);
  lib_users++;
  /* The split of the runtime created last wins: the libraries keep one
   * process-wide setting. OpenBLAS is given it when it opens
   * (cpu_lazy.c), or at once if it is open. */
  atomic_store(&inter_threads, inter);
  atomic_store(&intra_threads, intra);
  /* [threads] adapt: off unless set true (-1: no config to say). */
  cpu_crowd_enable(WF_HOST_HAS(wfx_host, config_int) &&
                   wfx_host->config_int("threads", "adapt") == 1);
#ifdef HAVE_OPENBLAS
  openblas_set_num_threads(intra);
#endif
  pthread_mutex_unlock(&lib_lock);
#ifdef HAVE_DNNL
  cpu_omp_threads();
#endif
  return 0;
}

void cpu_kernels_fini(void) {
  pthread_mutex_lock(&lib_lock);
  assert(lib_users > 0);
#ifdef HAVE_DNNL
  if (lib_users == 1) {
    dnnl_engine_t e = atomic_exchange(&engine, NULL);
    if (e)
      dnnl_engine_destroy(e);
  }
#endif
  lib_users--;
  pthread_mutex_unlock(&lib_lock);
}

void cpu_threads(int32_t *inter_op, int32_t *intra_op) {
  *inter_op = atomic_load(&inter_threads);
  *intra_op = atomic_load(&intra_threads);
}

/* The crowding last logged (the first thread to see a change logs it). */
static atomic_int crowding_logged;

int cpu_team_width(void) {
  int32_t intra = atomic_load(&intra_threads);
  int crowded;

  if (intra <= 1)
    return 1;
  crowded = cpu_crowd_poll();
  if (crowded != atomic_load_explicit(&crowding_logged, memory_order_relaxed) &&
      atomic_exchange(&crowding_logged, crowded) != crowded)
    wfx_host->log(WF_LOG_INFO, "device-cpu",
                  crowded ? "other work crowds the cores: intra-op teams of "
                            "one thread until a core is free"
                          : "a core is free again: intra-op teams of %d "
                            "threads",
                  (int)intra);
  return crowded ? 1 : (int)intra;
}

void cpu_omp_threads(void) { cpu_omp_threads_n(0); }

void cpu_omp_threads_n(int32_t n) {
#ifdef HAVE_DNNL
  int32_t intra = atomic_load(&intra_threads);

  if (n <= 0)
    n = cpu_team_width();
  if (n > intra)
    n = intra;
  if (omp_set_here != n) {
    omp_set_num_threads(n);
    omp_set_here = n;
  }
#else
  (void)n;
#endif
}

int cpu_avx2_fma(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

int cpu_avx2_fma_only(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  return cpu_avx2_fma() && !__builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

/* ---- the intra-op team ---------------------------------------------------- */

/* Under ThreadSanitizer: libgomp is not instrumented, so the fork and join
 * of cpu_team's parallel region (which order the caller's writes before the
 * team's reads, and the team's writes before what follows) are shown to it
 * by hand. Nothing otherwise. */
#if defined(__SANITIZE_THREAD__)
#define CPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CPU_TSAN 1
#endif
#endif
#ifdef CPU_TSAN
#include <sanitizer/tsan_interface.h>
#define CPU_HAPPENS_BEFORE(p) __tsan_release(p)
#define CPU_HAPPENS_AFTER(p) __tsan_acquire(p)
#else
#define CPU_HAPPENS_BEFORE(p) ((void)(p))
#define CPU_HAPPENS_AFTER(p) ((void)(p))
#endif
#ifdef HAVE_DNNL
/* Their addresses name the fork and the join. Static, not per call: a
 * team thread reads the region's shared variables (where a per-call name
 * would be) before its first statement runs. Concurrent regions thus look
 * ordered to ThreadSanitizer, which can only hide races, never invent
 * them. */
static char team_fork, team_join, team_barrier;
#endif
/* cpu_team's own accesses are the compiler's passing of the region's
 * shared variables (written by the caller before the fork, read by each
 * team thread as it starts, before any statement can announce the fork):
 * they are left uninstrumented. The parts it runs are instrumented. */
#ifdef CPU_TSAN
#define CPU_TEAM_PLUMBING __attribute__((no_sanitize("thread")))
#else
#define CPU_TEAM_PLUMBING
#endif

CPU_TEAM_PLUMBING
void cpu_team(cpu_team_fn *fn, void *arg, int share) {
#ifdef HAVE_DNNL
  int32_t intra = share ? cpu_team_width() : 1;

  if (intra <= 1) {
    fn(arg, 0, 1);
    return;
  }
  cpu_omp_threads_n(intra);
  CPU_HAPPENS_BEFORE(&team_fork);
#pragma omp parallel num_threads(intra)
  {
    CPU_HAPPENS_AFTER(&team_fork);
    fn(arg, omp_get_thread_num(), omp_get_num_threads());
    CPU_HAPPENS_BEFORE(&team_join);
  }
  CPU_HAPPENS_AFTER(&team_join);
#else
  (void)share;
  fn(arg, 0, 1);
#endif
}

void cpu_team_barrier(void) {
#ifdef HAVE_DNNL
  CPU_HAPPENS_BEFORE(&team_barrier);
#pragma omp barrier
  CPU_HAPPENS_AFTER(&team_barrier);
#endif
}

int cpu_team_size(int share) {
#ifdef HAVE_DNNL
  int32_t intra = atomic_load(&intra_threads);

  return share && intra > 1 ? (int)intra : 1;
#else
  (void)share;
  return 1;
#endif
}

void cpu_kernels_describe(char *out, size_t size) {
  int32_t inter, intra;
  int n = 0;

  if (size == 0)
    return;
  cpu_threads(&inter, &intra);
  n = snprintf(out, size,
               "threads: %d inter-op x %d intra-op (each kernel library "
               "gets %d)",
               (int)inter, (int)intra, (int)intra);
#ifdef HAVE_DNNL
  /* Describing the device opens no library: until a kernel opened it,
   * the version is the one the plugin was built with. */
  if (n >= 0 && (size_t)n < size && cpu_dnnl_is_open()) {
    const dnnl_version_t *v = dnnl_version();
    n += snprintf(out + n, size - (size_t)n,
                  "; oneDNN %d.%d.%d (OpenMP, %s)", v->major, v->minor,
                  v->patch, dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
  } else if (n >= 0 && (size_t)n < size) {
    n += snprintf(out + n, size - (size_t)n,
                  "; oneDNN %d.%d (OpenMP; opened by the first kernel that "
                  "uses it)",
                  DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
  }
#endif
#ifdef HAVE_OPENBLAS
  if (n >= 0 && (size_t)n < size && cpu_openblas_is_open())
    n += snprintf(out + n, size - (size_t)n, "; OpenBLAS (%s kernels)",
                  openblas_get_corename());
  else if (n >= 0 && (size_t)n < size)
    n += snprintf(out + n, size - (size_t)n,
                  "; OpenBLAS (opened by the first kernel that uses it)");
#endif
  (void)n;
}

#ifdef HAVE_DNNL
dnnl_engine_t cpu_dnnl_engine(void) {
  dnnl_engine_t e = atomic_load(&engine);
  dnnl_status_t s;

  if (e)
    return e;
  pthread_mutex_lock(&lib_lock);
  e = atomic_load(&engine);
  if (!e) {
    assert(lib_users > 0);
    s = dnnl_engine_create(&e, dnnl_cpu, 0);
    if (s != dnnl_success) {
      /* The call given a NULL engine fails, and says so; a oneDNN that
       * could not be opened is named by that call's message. */
      e = NULL;
      if (cpu_dnnl_is_open())
        wfx_host->log(WF_LOG_ERROR, "device-cpu",
                      "oneDNN could not create its CPU engine (%s)",
                      dnnl_status2str(s));
    }
    atomic_store(&engine, e);
  }
  pthread_mutex_unlock(&lib_lock);
  return e;
}
#endif
