/* plugins/devices/cpu/cpu_rnn.c — fast float32 LSTM, LSTMGrad, GRU and
 * GRUGrad (the rnn op plugin's ops) on oneDNN's vanilla LSTM and GRU
 * primitives, one layer, left to right. The ops' tensors are oneDNN's
 * plain layouts (tnc, ldnc, ldigo, ldgo), so only the weights are
 * reordered, into whatever the primitive prefers (once, kept while their
 * bytes do not change).
 *
 * The backward ops get no workspace from the forward op (a graph tensor
 * cannot hold oneDNN's opaque one), so their plan runs the forward
 * primitive in training mode first, then the backward one. oneDNN
 * accumulates weight gradients: the plan zeroes them before each run.
 * Output shapes are the ops' shape functions' (cpu_output), so bad inputs
 * get the op's own error; empty sizes are computed here as the ops define
 * them. A node whose input width C is 0 (which oneDNN does not take) is
 * declined when its weights' shape says so while placing, and runs on
 * the rnn plugin's reference kernel. */
#include <config.h>

#include "cpu_kernels.h"

#include <string.h>

/* Plan memories. */
enum {
  MEM_X,
  MEM_H0,
  MEM_C0,
  MEM_W,
  MEM_R,
  MEM_B,
  MEM_Y,
  MEM_HT,
  MEM_CT,
  MEM_WS,
  MEM_W_BWD,
  MEM_R_BWD,
  MEM_DY,
  MEM_DHT,
  MEM_DCT,
  MEM_DX,
  MEM_DH0,
  MEM_DC0,
  MEM_DW,
  MEM_DR,
  MEM_DB,
  MEM_COUNT
};

/* The sizes of one call (the ops' layout: x (T, N, C), states (N, H),
 * w (C, G*H), r (H, G*H), b (G*H,); G gates, LSTM 4, GRU 3). */
typedef struct rnn_dims {
  int64_t t, n, c, h;
  int gates;
} rnn_dims;

typedef struct rnn_job {
  int lstm, grad;
  rnn_dims d;
} rnn_job;

/* The user layouts of every tensor of the job, indexed by MEM_*. */
typedef struct rnn_mds {
  dnnl_memory_desc_t m[MEM_COUNT];
} rnn_mds;

static int user_mds(const rnn_job *j, rnn_mds *u, wf_status *st) {
  const rnn_dims *d = &j->d;
  int64_t x[3] = {d->t, d->n, d->c}, y[3] = {d->t, d->n, d->h};
  int64_t s[4] = {1, 1, d->n, d->h};
  int64_t w[5] = {1, 1, d->c, d->gates, d->h};
  int64_t r[5] = {1, 1, d->h, d->gates, d->h};
  int64_t b[4] = {1, 1, d->gates, d->h};

  memset(u, 0, sizeof *u);
  if (cpu_dnnl_md_tag(&u->m[MEM_X], 3, x, dnnl_tnc, st) ||
      cpu_dnnl_md_tag(&u->m[MEM_Y], 3, y, dnnl_tnc, st) ||
      cpu_dnnl_md_tag(&u->m[MEM_H0], 4, s, dnnl_ldnc, st) ||
      cpu_dnnl_md_tag(&u->m[MEM_W], 5, w, dnnl_ldigo, st) ||
      cpu_dnnl_md_tag(&u->m[MEM_R], 5, r, dnnl_ldigo, st) ||
      cpu_dnnl_md_tag(&u->m[MEM_B], 4, b, dnnl_ldgo, st))
    return wfx_code(st);
  u->m[MEM_C0] = u->m[MEM_HT] = u->m[MEM_CT] = u->m[MEM_H0];
  u->m[MEM_DH0] = u->m[MEM_DC0] = u->m[MEM_DHT] = u->m[MEM_DCT] = u->m[MEM_H0];
  u->m[MEM_DX] = u->m[MEM_X];
  u->m[MEM_DY] = u->m[MEM_Y];
  u->m[MEM_DW] = u->m[MEM_W_BWD] = u->m[MEM_W];
  u->m[MEM_DR] = u->m[MEM_R_BWD] = u->m[MEM_R];
  u->m[MEM_DB] = u->m[MEM_B];
  return 0;
}

/* The forward descriptor: data in the user layouts, weights in oneDNN's
 * choice. */
static int rnn_fwd_pd(const rnn_job *j, const rnn_mds *u,
                      dnnl_prop_kind_t prop, dnnl_primitive_desc_t *pd,
                      wf_status *st) {
  dnnl_memory_desc_t w, r;
  dnnl_rnn_desc_t desc;
  dnnl_status_t s;
  int64_t wd[5] = {1, 1, j->d.c, j->d.gates, j->d.h};
  int64_t rd[5] = {1, 1, j->d.h, j->d.gates, j->d.h};

  if (cpu_dnnl_md_tag(&w, 5, wd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&r, 5, rd, dnnl_format_tag_any, st))
    return wfx_code(st);
  if (j->lstm)
    s = dnnl_lstm_forward_desc_init(
        &desc, prop, dnnl_unidirectional_left2right, &u->m[MEM_X],
        &u->m[MEM_H0], &u->m[MEM_C0], &w, &r, &u->m[MEM_B], &u->m[MEM_Y],
        &u->m[MEM_HT], &u->m[MEM_CT], dnnl_rnn_flags_undef);
  else
    s = dnnl_gru_forward_desc_init(&desc, prop, dnnl_unidirectional_left2right,
                                   &u->m[MEM_X], &u->m[MEM_H0], &w, &r,
                                   &u->m[MEM_B], &u->m[MEM_Y], &u->m[MEM_HT],
                                   dnnl_rnn_flags_undef);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, j->lstm ? "LSTM setup" : "GRU setup", st);
  return cpu_dnnl_pd(pd, &desc, NULL, j->lstm ? "LSTM setup" : "GRU setup",
                     st);
}

static int rnn_bwd_pd(const rnn_job *j, const rnn_mds *u,
                      const_dnnl_primitive_desc_t fwd,
                      dnnl_primitive_desc_t *pd, wf_status *st) {
  dnnl_memory_desc_t w, r, dw, dr;
  dnnl_rnn_desc_t desc;
  dnnl_status_t s;
  int64_t wd[5] = {1, 1, j->d.c, j->d.gates, j->d.h};
  int64_t rd[5] = {1, 1, j->d.h, j->d.gates, j->d.h};

  if (cpu_dnnl_md_tag(&w, 5, wd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&r, 5, rd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&dw, 5, wd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&dr, 5, rd, dnnl_format_tag_any, st))
    return wfx_code(st);
  if (j->lstm)
    s = dnnl_lstm_backward_desc_init(
        &desc, dnnl_backward, dnnl_unidirectional_left2right, &u->m[MEM_X],
        &u->m[MEM_H0], &u->m[MEM_C0], &w, &r, &u->m[MEM_B], &u->m[MEM_Y],
        &u->m[MEM_HT], &u->m[MEM_CT], &u->m[MEM_DX], &u->m[MEM_DH0],
        &u->m[MEM_DC0], &dw, &dr, &u->m[MEM_DB], &u->m[MEM_DY],
        &u->m[MEM_DHT], &u->m[MEM_DCT], dnnl_rnn_flags_undef);
  else
    s = dnnl_gru_backward_desc_init(
        &desc, dnnl_backward, dnnl_unidirectional_left2right, &u->m[MEM_X],
        &u->m[MEM_H0], &w, &r, &u->m[MEM_B], &u->m[MEM_Y], &u->m[MEM_HT],
        &u->m[MEM_DX], &u->m[MEM_DH0], &dw, &dr, &u->m[MEM_DB],
        &u->m[MEM_DY], &u->m[MEM_DHT], dnnl_rnn_flags_undef);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "RNN backward setup", st);
  return cpu_dnnl_pd(pd, &desc, fwd, "RNN backward setup", st);
}

#define QMD(pd, q) dnnl_primitive_desc_query_md((pd), (q), 0)

static int rnn_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const rnn_job *j = arg;
  dnnl_primitive_desc_t fwd = NULL, bwd = NULL;
  rnn_mds u;
  int fids[11], fmems[11], nf = 0, rc = 0;
  int dst_flags = j->grad ? 0 : WF_DNNL_OUT;

  if (user_mds(j, &u, st) ||
      rnn_fwd_pd(j, &u,
                 j->grad ? dnnl_forward_training : dnnl_forward_inference,
                 &fwd, st))
    return wfx_code(st);
    /* The forward step: the whole op, or the backward op's first half (its
     * outputs internal, with the workspace). */
#define FARG(id, mem) (fids[nf] = (id), fmems[nf++] = (mem))
  FARG(DNNL_ARG_SRC_LAYER, MEM_X);
  FARG(DNNL_ARG_SRC_ITER, MEM_H0);
  FARG(DNNL_ARG_WEIGHTS_LAYER, MEM_W);
  FARG(DNNL_ARG_WEIGHTS_ITER, MEM_R);
  FARG(DNNL_ARG_BIAS, MEM_B);
  FARG(DNNL_ARG_DST_LAYER, MEM_Y);
  FARG(DNNL_ARG_DST_ITER, MEM_HT);
  if (j->lstm) {
    FARG(DNNL_ARG_SRC_ITER_C, MEM_C0);
    FARG(DNNL_ARG_DST_ITER_C, MEM_CT);
  }
  if (j->grad)
    FARG(DNNL_ARG_WORKSPACE, MEM_WS);
#undef FARG
  if (cpu_dnnl_plan_mem(p, MEM_X, &u.m[MEM_X], NULL, WF_DNNL_IN, st) ||
      cpu_dnnl_plan_mem(p, MEM_H0, &u.m[MEM_H0], NULL, WF_DNNL_IN, st) ||
      (j->lstm &&
       cpu_dnnl_plan_mem(p, MEM_C0, &u.m[MEM_C0], NULL, WF_DNNL_IN, st)) ||
      cpu_dnnl_plan_mem(p, MEM_W, &u.m[MEM_W],
                        QMD(fwd, dnnl_query_weights_md), WF_DNNL_WEIGHTS,
                        st) ||
      cpu_dnnl_plan_mem(p, MEM_R, &u.m[MEM_R],
                        dnnl_primitive_desc_query_md(fwd,
                                                     dnnl_query_weights_md, 1),
                        WF_DNNL_WEIGHTS, st) ||
      cpu_dnnl_plan_mem(p, MEM_B, &u.m[MEM_B],
                        dnnl_primitive_desc_query_md(fwd,
                                                     dnnl_query_weights_md, 2),
                        WF_DNNL_IN, st) ||
      cpu_dnnl_plan_mem(p, MEM_Y, j->grad ? NULL : &u.m[MEM_Y], &u.m[MEM_Y],
                        dst_flags, st) ||
      cpu_dnnl_plan_mem(p, MEM_HT, j->grad ? NULL : &u.m[MEM_HT],
                        &u.m[MEM_HT], dst_flags, st) ||
      (j->lstm && cpu_dnnl_plan_mem(p, MEM_CT, j->grad ? NULL : &u.m[MEM_CT],
                                    &u.m[MEM_CT], dst_flags, st)) ||
      (j->grad &&
       cpu_dnnl_plan_mem(p, MEM_WS, NULL, QMD(fwd, dnnl_query_workspace_md), 0,
                         st)) ||
      cpu_dnnl_plan_step(p, fwd, fids, fmems, nf, st))
    goto fail;
  if (!j->grad)
    goto done;

  if (rnn_bwd_pd(j, &u, fwd, &bwd, st))
    goto fail;
  {
    int bids[20], bmems[20], nb = 0;
#define BARG(id, mem) (bids[nb] = (id), bmems[nb++] = (mem))
    BARG(DNNL_ARG_SRC_LAYER, MEM_X);
    BARG(DNNL_ARG_SRC_ITER, MEM_H0);
    BARG(DNNL_ARG_WEIGHTS_LAYER, MEM_W_BWD);
    BARG(DNNL_ARG_WEIGHTS_ITER, MEM_R_BWD);
    BARG(DNNL_ARG_BIAS, MEM_B);
    BARG(DNNL_ARG_DST_LAYER, MEM_Y);
    BARG(DNNL_ARG_DST_ITER, MEM_HT);
    BARG(DNNL_ARG_WORKSPACE, MEM_WS);
    BARG(DNNL_ARG_DIFF_DST_LAYER, MEM_DY);
    BARG(DNNL_ARG_DIFF_DST_ITER, MEM_DHT);
    BARG(DNNL_ARG_DIFF_SRC_LAYER, MEM_DX);
    BARG(DNNL_ARG_DIFF_SRC_ITER, MEM_DH0);
    BARG(DNNL_ARG_DIFF_WEIGHTS_LAYER, MEM_DW);
    BARG(DNNL_ARG_DIFF_WEIGHTS_ITER, MEM_DR);
    BARG(DNNL_ARG_DIFF_BIAS, MEM_DB);
    if (j->lstm) {
      BARG(DNNL_ARG_SRC_ITER_C, MEM_C0);
      BARG(DNNL_ARG_DST_ITER_C, MEM_CT);
      BARG(DNNL_ARG_DIFF_DST_ITER_C, MEM_DCT);
      BARG(DNNL_ARG_DIFF_SRC_ITER_C, MEM_DC0);
    }
#undef BARG
    if (cpu_dnnl_plan_mem(p, MEM_W_BWD, &u.m[MEM_W],
                          QMD(bwd, dnnl_query_weights_md), WF_DNNL_WEIGHTS,
                          st) ||
        cpu_dnnl_plan_mem(p, MEM_R_BWD, &u.m[MEM_R],
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_weights_md, 1),
                          WF_DNNL_WEIGHTS, st) ||
        cpu_dnnl_plan_mem(p, MEM_DY, &u.m[MEM_DY], NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_DHT, &u.m[MEM_DHT], NULL, WF_DNNL_IN, st) ||
        (j->lstm && cpu_dnnl_plan_mem(p, MEM_DCT, &u.m[MEM_DCT], NULL,
                                      WF_DNNL_IN, st)) ||
        cpu_dnnl_plan_mem(p, MEM_DX, &u.m[MEM_DX], NULL, WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_mem(p, MEM_DH0, &u.m[MEM_DH0], NULL, WF_DNNL_OUT, st) ||
        (j->lstm && cpu_dnnl_plan_mem(p, MEM_DC0, &u.m[MEM_DC0], NULL,
                                      WF_DNNL_OUT, st)) ||
        cpu_dnnl_plan_mem(p, MEM_DW, &u.m[MEM_DW],
                          QMD(bwd, dnnl_query_diff_weights_md), WF_DNNL_ZERO,
                          st) ||
        cpu_dnnl_plan_mem(p, MEM_DR, &u.m[MEM_DR],
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_weights_md, 1),
                          WF_DNNL_ZERO, st) ||
        cpu_dnnl_plan_mem(p, MEM_DB, &u.m[MEM_DB],
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_weights_md, 2),
                          WF_DNNL_ZERO, st) ||
        cpu_dnnl_plan_step(p, bwd, bids, bmems, nb, st))
      goto fail;
  }
  goto done;

fail:
  rc = wfx_code(st);
done:
  dnnl_primitive_desc_destroy(fwd);
  if (bwd)
    dnnl_primitive_desc_destroy(bwd);
  return rc;
}

static int rnn_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  cpu_dnnl_state *s;

  *state = NULL;
  if (cpu_dnnl_state_new(&s, st))
    return wfx_code(st);
  *state = s;
  return 0;
}

/* Runs the call oneDNN does not: no step (T = 0: the last states are the
 * first ones, their gradients flow back unchanged) or no batch or hidden
 * units (every output empty or an empty sum). out[] are the outputs, made;
 * in[] the inputs. */
static void rnn_empty(const rnn_job *j, const wf_tensor *const *in,
                      wf_tensor *const *out, int nout) {
  int nfwd = j->lstm ? 6 : 5;

  for (int i = 0; i < nout; i++)
    if (wfx_host->tensor_nbytes(out[i]))
      memset(wfx_data(out[i]), 0, wfx_host->tensor_nbytes(out[i]));
  if (j->d.t != 0)
    return;
  if (!j->grad) {
    /* h_T = h0, c_T = c0. */
    for (int i = 1; i < nout; i++)
      memcpy(wfx_data(out[i]), wfx_data(in[i]),
             wfx_host->tensor_nbytes(out[i]));
    return;
  }
  /* dh0 = dh_T, dc0 = dc_T. */
  for (int i = 1; i < (j->lstm ? 3 : 2); i++)
    memcpy(wfx_data(out[i]), wfx_data(in[nfwd + i]),
           wfx_host->tensor_nbytes(out[i]));
}

/* The kernels. Inputs and outputs in the ops' order (see rnn_dims). */
static int rnn_compute(wf_kernel_ctx *ctx, cpu_dnnl_state *s, int lstm,
                       int grad, wf_status *st) {
  static const int lstm_in[9] = {MEM_X,  MEM_H0, MEM_C0, MEM_W,  MEM_R,
                                 MEM_B,  MEM_DY, MEM_DHT, MEM_DCT};
  static const int gru_in[7] = {MEM_X, MEM_H0, MEM_W,  MEM_R,
                                MEM_B, MEM_DY, MEM_DHT};
  static const int lstm_out[6] = {MEM_DX, MEM_DH0, MEM_DC0,
                                  MEM_DW, MEM_DR,  MEM_DB};
  static const int gru_out[5] = {MEM_DX, MEM_DH0, MEM_DW, MEM_DR, MEM_DB};
  static const int fwd_out[3] = {MEM_Y, MEM_HT, MEM_CT};
  int nfwd = lstm ? 6 : 5, nin = grad ? (lstm ? 9 : 7) : nfwd;
  int nout = grad ? nfwd : (lstm ? 3 : 2);
  const int *in_mem = lstm ? lstm_in : gru_in;
  const int *out_mem = grad ? (lstm ? lstm_out : gru_out) : fwd_out;
  const char *what = lstm ? (grad ? "LSTM backward" : "LSTM")
                          : (grad ? "GRU backward" : "GRU");
  const wf_tensor *in[9];
  wf_tensor *out[6];
  wf_shape xs, hs;
  void *data[MEM_COUNT] = {NULL};
  uint64_t version[MEM_COUNT] = {0};
  rnn_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  int rc;

  for (int i = 0; i < nin; i++)
    if (wfx_kernel_input(ctx, i, &in[i], NULL, st))
      return wfx_code(st);
  for (int i = 0; i < nout; i++)
    if (!(out[i] = cpu_output(ctx, i, NULL, st)))
      return wfx_code(st);
  /* The shapes agree (the op's shape function saw them): x (T, N, C) and
   * h0 (N, H) give every size. */
  wfx_host->tensor_shape(in[0], &xs);
  wfx_host->tensor_shape(in[1], &hs);
  memset(&j, 0, sizeof j);
  j.lstm = lstm;
  j.grad = grad;
  j.d.t = xs.dims[0], j.d.n = xs.dims[1], j.d.c = xs.dims[2];
  j.d.h = hs.dims[1];
  j.d.gates = lstm ? 4 : 3;
  if (j.d.t == 0 || j.d.n == 0 || j.d.h == 0) {
    rnn_empty(&j, in, out, nout);
    return 0;
  }
  if (j.d.c == 0)
    return cpu_dnnl_unsupported(what, &xs, st);
  for (int i = 0; i < nfwd; i++) {
    wf_shape is;
    wfx_host->tensor_shape(in[i], &is);
    cpu_key_shape(&key, &is);
  }
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, rnn_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported(what, &xs, st);
  }
  for (int i = 0; i < nin; i++) {
    data[in_mem[i]] = wfx_data(in[i]);
    version[in_mem[i]] = cpu_version(in[i]);
  }
  if (grad) {
    data[MEM_W_BWD] = data[MEM_W];
    data[MEM_R_BWD] = data[MEM_R];
    version[MEM_W_BWD] = version[MEM_W];
    version[MEM_R_BWD] = version[MEM_R];
  }
  for (int i = 0; i < nout; i++)
    data[out_mem[i]] = wfx_data(out[i]);
  rc = cpu_dnnl_plan_run(p, data, version, what, st);
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

/* Declines a node whose weights w (C, G*H) are known to have C = 0: an
 * input of no features, which oneDNN's RNN primitives do not take. */
static int rnn_supports(const wf_node *node, int32_t w_input) {
  wf_output w = wfx_host->node_input(node, w_input);
  wf_shape s;

  if (!w.node || wfx_host->node_output_info(w.node, w.index, NULL, &s))
    return 1;
  return !(s.rank == 2 && s.dims[0] == 0);
}

static int lstm_supports(const wf_node *node) { return rnn_supports(node, 3); }
static int gru_supports(const wf_node *node) { return rnn_supports(node, 2); }

static int lstm_fwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return rnn_compute(ctx, state, 1, 0, st);
}

static int lstm_bwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return rnn_compute(ctx, state, 1, 1, st);
}

static int gru_fwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return rnn_compute(ctx, state, 0, 0, st);
}

static int gru_bwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return rnn_compute(ctx, state, 0, 1, st);
}

const wf_kernel_def cpu_k_lstm =
    WFX_KERNEL_FOR("cpu", "onednn", "LSTM", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   lstm_fwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = rnn_create, .destroy = cpu_dnnl_state_free,
                   .supports = lstm_supports);
const wf_kernel_def cpu_k_lstm_grad =
    WFX_KERNEL_FOR("cpu", "onednn", "LSTMGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   lstm_bwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = rnn_create, .destroy = cpu_dnnl_state_free,
                   .supports = lstm_supports);
const wf_kernel_def cpu_k_gru =
    WFX_KERNEL_FOR("cpu", "onednn", "GRU", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   gru_fwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = rnn_create, .destroy = cpu_dnnl_state_free,
                   .supports = gru_supports);
const wf_kernel_def cpu_k_gru_grad =
    WFX_KERNEL_FOR("cpu", "onednn", "GRUGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   gru_bwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = rnn_create, .destroy = cpu_dnnl_state_free,
                   .supports = gru_supports);
