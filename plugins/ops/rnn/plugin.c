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

static int init(const wf_host *host, void **state, wf_status *st) {
  /* The gradients need the gradient entries of the host table. */
  if (!WF_HOST_HAS(host, grad_node_name)) {
    if (WF_HOST_HAS(host, status_set))
      host->status_set(st, WF_FAILED_PRECONDITION,
                       "ops-rnn: the host table (%u bytes) lacks the "
                       "gradient entries this plugin needs",
                       (unsigned)host->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  opc_set_host(host);
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
