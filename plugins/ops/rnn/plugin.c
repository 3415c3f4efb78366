/* plugins/ops/rnn/plugin.c — the rnn op plugin (module ops_rnn): LSTM and
 * GRU over whole sequences, their backward ops and gradients, with
 * reference CPU kernels (lstm.c, gru.c, rnn.c, grad.c). The fast oneDNN
 * kernels are the CPU device plugin's. */
#include <config.h>

#include "rnn.h"

static const wf_op_def *const ops[] = {&rnn_lstm_op, &rnn_lstm_grad_op,
                                       &rnn_gru_op, &rnn_gru_grad_op, NULL};

static const wf_kernel_def *const kernels[] = {
    &rnn_lstm_kernel, &rnn_lstm_grad_kernel, &rnn_gru_kernel,
    &rnn_gru_grad_kernel, NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every
 * entry it uses. */
WFX_HOST_DEFINE(1, 0);

static int init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-rnn", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-rnn",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "Recurrent layers: LSTM and GRU over whole sequences "
                   "(T, N, C), their backward ops LSTMGrad and GRUGrad and "
                   "gradients, with reference CPU kernels",
    .ops = ops,
    .kernels = kernels,
    .gradients = rnn_gradients,
    .init = init,
};

WF_PLUGIN(ops_rnn, desc)
