/* plugins/devices/cpu/cpu_apply.c — the dense optimizer updates
 * (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdamW,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad) on the intra-op
 * threads: the update ops-train runs (plugins/numerics/optim.c: the same
 * checks, locking and arithmetic) with its element loop split across an
 * OpenMP team. Each
 * element's update is independent and computed the same way wherever the
 * loop is cut, so the results are the reference kernel's bits.
 *
 * Why: Adam's update (a division and a square root per element) is the
 * largest single cost of a small model's training step after the matrix
 * products. When it computed in double, the mlp's 235k parameters took
 * about 0.3 ms of its 0.78 ms step on one thread (2 cores, AVX-512); in
 * float32 it is 3.6x faster (2-core AVX2 machine).
 *
 * Variables below WF_CPU_SPLIT elements (about 20 us of Adam on one
 * thread) stay on the calling thread: waking the team costs more than it
 * saves. */
#include <config.h>

#include "cpu_kernels.h"
#include "optim.h"

#include <string.h>

typedef struct apply_job {
  trn_body_fn *body;
  void *arg;
  cpu_pieces pieces;
} apply_job;

/* Part t of nt: its pieces (ranges starting at multiples of TRN_PIECE),
 * its own share's first. */
static void apply_part(void *arg, int t, int nt) {
  apply_job *j = arg;
  cpu_piece_walk w = cpu_pieces_walk(&j->pieces, t);
  int64_t begin, end;

  (void)nt;
  while (cpu_pieces_take(&w, &begin, &end))
    j->body(j->arg, begin, end);
}

/* trn_parallel_fn: [0, n) in pieces taken in turn by the team. */
static void team_for(trn_body_fn *body, void *arg, int64_t n) {
  apply_job j = {.body = body, .arg = arg};
  int share = n >= WF_CPU_SPLIT;

  /* pieces of a few microseconds at least */
  cpu_pieces_init(&j.pieces, n, TRN_PIECE, WF_CPU_SPLIT / 8,
                  cpu_team_size(share));
  cpu_team(apply_part, &j, share);
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
