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

/* Elements from which an update is shared by the intra-op threads: about
 * 20 us of Adam on one thread. */
#define WF_CPU_APPLY_SPLIT ((int64_t)1 << 15)

/* trn_parallel_fn: [0, n) in one contiguous range per thread, each
 * starting at a multiple of TRN_PIECE. */
static void team_for(trn_body_fn *body, void *arg, int64_t n) {
  int32_t inter, intra;

  cpu_threads(&inter, &intra);
  if (n < WF_CPU_APPLY_SPLIT || intra <= 1) {
    body(arg, 0, n);
    return;
  }
  cpu_omp_threads_n(intra);
#pragma omp parallel num_threads(intra)
  {
    int64_t pieces = (n + TRN_PIECE - 1) / TRN_PIECE;
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t first = pieces * t / nt, last = pieces * (t + 1) / nt;
    int64_t begin = first * TRN_PIECE, end = last * TRN_PIECE;

    if (end > n)
      end = n;
    if (begin < end)
      body(arg, begin, end);
  }
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
