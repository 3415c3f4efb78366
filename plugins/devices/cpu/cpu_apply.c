/* plugins/devices/cpu/cpu_apply.c — the dense optimizer updates
 * (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdamW,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad) on the intra-op
 * threads: the update ops-train runs (plugins/numerics/optim.c: the same
 * checks, locking and arithmetic) with its element loop split across an
 * OpenMP team. Each
 * element's update is independent and computed the same way wherever the
 * loop is cut, so the results are the reference kernel's bits.
 *
 * Why: Adam's update in double (division and square root per element) is
 * the largest single cost of a small model's training step. On the
 * development machine (2 cores, AVX-512), the mlp's 235k parameters took
 * about 0.3 ms of its 0.78 ms step on one thread.
 *
 * Variables below WF_CPU_APPLY_SPLIT elements stay on the calling thread
 * (waking the team costs more than it saves). */
#include <config.h>

#include "cpu_kernels.h"
#include "optim.h"

#include <omp.h>
#include <string.h>

/* Under ThreadSanitizer: libgomp is not instrumented, so the fork and join
 * of the parallel region below (which order the caller's writes before the
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
/* Their addresses name the fork and the join. Static, not per call: a
 * team thread reads the region's shared variables (where a per-call name
 * would be) before its first statement runs. Concurrent regions thus look
 * ordered to ThreadSanitizer, which can only hide races, never invent
 * them. */
static char team_fork, team_join;
/* team_for's own accesses are the compiler's passing of the region's
 * shared variables (written by the caller before the fork, read by each
 * team thread as it starts, before any statement can announce the fork):
 * they are left uninstrumented. The bodies it runs are instrumented. */
#ifdef CPU_TSAN
#define CPU_TEAM_PLUMBING __attribute__((no_sanitize("thread")))
#else
#define CPU_TEAM_PLUMBING
#endif

/* Elements from which an update is shared by the intra-op threads: about
 * 20 us of Adam on one thread. */
#define WF_CPU_APPLY_SPLIT ((int64_t)1 << 15)

/* trn_parallel_fn: [0, n) in one contiguous range per thread, each
 * starting at a multiple of TRN_PIECE. */
CPU_TEAM_PLUMBING
static void team_for(trn_body_fn *body, void *arg, int64_t n) {
  int32_t inter, intra;

  cpu_threads(&inter, &intra);
  if (n < WF_CPU_APPLY_SPLIT || intra <= 1) {
    body(arg, 0, n);
    return;
  }
  cpu_omp_threads_n(intra);
  CPU_HAPPENS_BEFORE(&team_fork);
#pragma omp parallel num_threads(intra)
  {
    CPU_HAPPENS_AFTER(&team_fork);
    int64_t pieces = (n + TRN_PIECE - 1) / TRN_PIECE;
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t first = pieces * t / nt, last = pieces * (t + 1) / nt;
    int64_t begin = first * TRN_PIECE, end = last * TRN_PIECE;

    if (end > n)
      end = n;
    if (begin < end)
      body(arg, begin, end);
    CPU_HAPPENS_BEFORE(&team_join);
  }
  CPU_HAPPENS_AFTER(&team_join);
}

/* The kernel's state: the update of its op. */
static int apply_create(const char *op, void **state, wf_status *st) {
  *state = (void *)trn_dense_update(op);
  if (!*state)
    return wfx_fail(st, WF_INTERNAL, "no dense optimizer update %s", op);
  return 0;
}

static int apply_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return trn_update_apply(ctx, state, team_for, st);
}

/* The create of the kernel of op `name`: each update op has its own. */
#define APPLY_CREATE(var, name)                                                \
  static int create_##var(wf_kernel_ctx *ctx, void **state, wf_status *st) {   \
    (void)ctx;                                                                 \
    return apply_create((name), state, st);                                    \
  }

APPLY_CREATE(cpu_k_apply_gradient_descent, "ApplyGradientDescent")
const wf_kernel_def cpu_k_apply_gradient_descent =
    WFX_KERNEL_FOR("cpu", "threads", "ApplyGradientDescent", "T", TRN_DTYPES,
                   apply_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = create_cpu_k_apply_gradient_descent);
APPLY_CREATE(cpu_k_apply_momentum, "ApplyMomentum")
const wf_kernel_def cpu_k_apply_momentum = WFX_KERNEL_FOR(
    "cpu", "threads", "ApplyMomentum", "T", TRN_DTYPES, apply_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = create_cpu_k_apply_momentum);
APPLY_CREATE(cpu_k_apply_adam, "ApplyAdam")
const wf_kernel_def cpu_k_apply_adam = WFX_KERNEL_FOR(
    "cpu", "threads", "ApplyAdam", "T", TRN_DTYPES, apply_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = create_cpu_k_apply_adam);
APPLY_CREATE(cpu_k_apply_adamw, "ApplyAdamW")
const wf_kernel_def cpu_k_apply_adamw = WFX_KERNEL_FOR(
    "cpu", "threads", "ApplyAdamW", "T", TRN_DTYPES, apply_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = create_cpu_k_apply_adamw);
APPLY_CREATE(cpu_k_apply_rmsprop, "ApplyRMSProp")
const wf_kernel_def cpu_k_apply_rmsprop = WFX_KERNEL_FOR(
    "cpu", "threads", "ApplyRMSProp", "T", TRN_DTYPES, apply_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = create_cpu_k_apply_rmsprop);
APPLY_CREATE(cpu_k_apply_centered_rmsprop, "ApplyCenteredRMSProp")
const wf_kernel_def cpu_k_apply_centered_rmsprop =
    WFX_KERNEL_FOR("cpu", "threads", "ApplyCenteredRMSProp", "T", TRN_DTYPES,
                   apply_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = create_cpu_k_apply_centered_rmsprop);
APPLY_CREATE(cpu_k_apply_adagrad, "ApplyAdagrad")
const wf_kernel_def cpu_k_apply_adagrad = WFX_KERNEL_FOR(
    "cpu", "threads", "ApplyAdagrad", "T", TRN_DTYPES, apply_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = create_cpu_k_apply_adagrad);
