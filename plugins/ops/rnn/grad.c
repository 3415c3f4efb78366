/* plugins/ops/rnn/grad.c — the gradient functions of LSTM and GRU: one
 * backward node (LSTMGrad, GRUGrad) from the forward inputs and the output
 * gradients, ZerosLike (ops-array) standing in for outputs no gradient
 * reaches. The backward ops are not differentiable themselves (no second
 * order through this plugin). */
#include <config.h>

#include "rnn.h"

/* The gradient arriving at output i, or zeros of that output. */
static wf_output grad_or_zeros(wf_grad_ctx *ctx, int32_t i, wf_status *st) {
  wf_output g = wfx_host->grad_output_grad(ctx, i);

  return g.node ? g
                : wfx_grad_op1(ctx, "ZerosLike", wfx_host->grad_output(ctx, i),
                               st);
}

/* in[0..nfwd) the forward inputs, then one gradient per forward output;
 * the backward node's output i is input i's gradient. */
static int rnn_grad(wf_grad_ctx *ctx, const char *op, int nfwd, int nout,
                    wf_status *st) {
  wf_output in[9];
  wf_node *n;

  for (int i = 0; i < nfwd; i++)
    in[i] = wfx_host->grad_input(ctx, i);
  for (int i = 0; i < nout; i++)
    if (!(in[nfwd + i] = grad_or_zeros(ctx, i, st)).node)
      return wfx_grad_done(st);
  if (!(n = wfx_host->grad_add_node(ctx, op, in, nfwd + nout, NULL, 0, st)))
    return wfx_code(st);
  for (int i = 0; i < nfwd; i++)
    wfx_host->grad_set_input_grad(ctx, i, (wf_output){n, i});
  return 0;
}

static int grad_lstm(wf_grad_ctx *ctx, wf_status *st) {
  return rnn_grad(ctx, "LSTMGrad", 6, 3, st);
}

static int grad_gru(wf_grad_ctx *ctx, wf_status *st) {
  return rnn_grad(ctx, "GRUGrad", 5, 2, st);
}

static const wf_gradient_def g_lstm = {WF_STRUCT_INIT(wf_gradient_def),
                                       .op = "LSTM", .fn = grad_lstm};
static const wf_gradient_def g_gru = {WF_STRUCT_INIT(wf_gradient_def),
                                      .op = "GRU", .fn = grad_gru};

const wf_gradient_def *const rnn_gradients[] = {&g_lstm, &g_gru, NULL};
