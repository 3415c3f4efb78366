/* plugins/ops/rnn/rnn.h — what the files of the rnn op plugin share: the
 * op and kernel definitions plugin.c lists, the dimension checks of LSTM,
 * GRU and their backward ops, and the double-precision reference cells.
 *
 * The layout, common to both ops (G gates: LSTM 4, GRU 3):
 *   x  (T, N, C)   input sequence, time first
 *   h0 (N, H)      initial hidden state (c0 (N, H): LSTM's initial cell)
 *   w  (C, G*H)    input weights, one block of H columns per gate
 *   r  (H, G*H)    recurrent weights, the same blocks
 *   b  (G*H,)      bias, the same blocks
 *   y  (T, N, H)   every hidden state; h_T (N, H) (and c_T) the last ones
 * LSTM gates in order i, f, g, o; GRU gates u, r, o. This is oneDNN's
 * ldigo / ldgo layout with one layer and one direction, so the CPU
 * plugin's oneDNN kernels take the tensors as they are. */
#ifndef WF_OPS_RNN_H
#define WF_OPS_RNN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* The sizes of one call. */
typedef struct rnn_dims {
  int64_t t, n, c, h;
  int gates; /* 4: LSTM, 3: GRU */
} rnn_dims;

/* Checks the forward inputs' shapes against each other: in[] holds x, h0,
 * (c0 when has_c), w, r, b in that order. Unknown dims (-1) and unknown
 * ranks are allowed (shape inference) and left -1 in *d. INVALID_ARGUMENT
 * naming the input, its shape and what it must be otherwise. */
int rnn_check(const wf_shape *in, int gates, int has_c, rnn_dims *d,
              wf_status *st);

/* Checks a backward op's output gradients: dy (T, N, H), dh_T (N, H) and,
 * when has_c, dc_T (N, H), in[] in that order, against d. */
int rnn_check_grads(const wf_shape *in, int has_c, const rnn_dims *d,
                    wf_status *st);

/* Shapes of the forward outputs (y, h_T, c_T) and of the inputs (x, h0,
 * w, r, b) from d, unknown dims as -1. */
void rnn_shape_y(const rnn_dims *d, wf_shape *s);
void rnn_shape_state(const rnn_dims *d, wf_shape *s);
void rnn_shape_x(const rnn_dims *d, wf_shape *s);
void rnn_shape_w(const rnn_dims *d, wf_shape *s);
void rnn_shape_r(const rnn_dims *d, wf_shape *s);
void rnn_shape_b(const rnn_dims *d, wf_shape *s);

/* Reads the first n inputs of a kernel with their shapes. */
int rnn_inputs(wf_kernel_ctx *ctx, int n, const wf_tensor **t, wf_shape *s,
               wf_status *st);

/* A float32 or float64 tensor's elements as doubles, into a new host
 * allocation (NULL with st set when out of memory; n may be 0). */
double *rnn_to_double(const wf_tensor *t, wf_status *st);
/* Writes v[0..count) into t (float32 or float64), rounding. */
void rnn_from_double(wf_tensor *t, const double *v);

/* out (m, n) += a (m, k) b (k, n), all row-major with leading dimensions
 * lda, ldb, ldo. trans_b: b is stored (n, k) (out += a b^T). trans_a: a
 * is stored (k, m) (out += a^T b). */
void rnn_gemm(double *out, int64_t ldo, const double *a, int64_t lda,
              const double *b, int64_t ldb, int64_t m, int64_t n, int64_t k,
              int trans_a, int trans_b);

static inline double rnn_sigmoid(double v) {
  return v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
}

/* The LSTM's forward pass in double: hs and cs ((T + 1) * N * H) get
 * h_0 .. h_T and c_0 .. c_T; acts (T * N * 4H), when not NULL, the gate
 * activations i, f, g, o of each step. */
void rnn_lstm_forward(const rnn_dims *d, const double *x, const double *h0,
                      const double *c0, const double *w, const double *r,
                      const double *b, double *hs, double *cs, double *acts);

/* The GRU's forward pass in double: hs ((T + 1) * N * H) gets h_0 .. h_T;
 * acts (T * N * 3H), when not NULL, the gates u, r, o of each step. */
void rnn_gru_forward(const rnn_dims *d, const double *x, const double *h0,
                     const double *w, const double *r, const double *b,
                     double *hs, double *acts);

/* ---- what plugin.c lists ------------------------------------------------- */

extern const wf_op_def rnn_lstm_op, rnn_lstm_grad_op, rnn_gru_op,
    rnn_gru_grad_op;
extern const wf_kernel_def rnn_lstm_kernel, rnn_lstm_grad_kernel,
    rnn_gru_kernel, rnn_gru_grad_kernel;
extern const wf_gradient_def *const rnn_gradients[];

#endif /* WF_OPS_RNN_H */
