/* weft/layers.h — a small layers and training API for C programs.
 *
 * A model collects the variables its layers create (each with an
 * initializer), builds forward passes into a graph, and adds losses,
 * metrics and an optimizer step. A forward pass is built once per mode:
 * wf_model_begin(m, 1) for training (dropout active, batch statistics) and
 * wf_model_begin(m, 0) for inference; the second pass reuses the variables
 * of the first, matched by layer order, so both passes live in one graph
 * and share their weights.
 *
 *   wf_model *m = wf_model_new(g, seed, st);
 *   wf_model_begin(m, 1);
 *   wf_output h = wf_layer_dense(m, x, 256, WF_ACT_RELU, st);
 *   ...
 *   wf_node *train = wf_model_minimize(m, loss, &opt, st);
 *   wf_node *init = wf_model_init_op(m, st);   // run once as a target
 *
 * Every builder returns its output (node NULL on error, with st set naming
 * the layer); after an error the model stays usable but the graph keeps
 * the nodes added so far. */
#ifndef WEFT_LAYERS_H
#define WEFT_LAYERS_H

#include <weft/export.h>
#include <weft/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_model wf_model;

typedef enum wf_init {
  WF_INIT_ZEROS = 0,
  WF_INIT_ONES,
  WF_INIT_CONSTANT,        /* value: init_value */
  WF_INIT_UNIFORM,         /* [-init_value, init_value] */
  WF_INIT_NORMAL,          /* N(0, init_value^2) */
  WF_INIT_TRUNCATED_NORMAL,/* N(0, init_value^2) cut at 2 stddev */
  WF_INIT_GLOROT_UNIFORM,  /* Xavier */
  WF_INIT_GLOROT_NORMAL,
  WF_INIT_HE_UNIFORM,      /* Kaiming */
  WF_INIT_HE_NORMAL,
  WF_INIT_LECUN_NORMAL
} wf_init;

typedef enum wf_activation {
  WF_ACT_NONE = 0,
  WF_ACT_RELU,
  WF_ACT_SIGMOID,
  WF_ACT_TANH,
  WF_ACT_GELU,
  WF_ACT_ELU,
  WF_ACT_SOFTMAX
} wf_activation;

/* A model building into g (which must outlive it). seed is the graph seed
 * of every initializer and dropout (each also gets its own op seed, in
 * creation order), so a model built the same way starts the same way.
 * Owned by the caller; NULL with st set when out of memory. */
WF_API wf_model *wf_model_new(wf_graph *g, uint64_t seed, wf_status *st);
WF_API void wf_model_free(wf_model *m);
/* Starts a forward pass in training (1) or inference (0) mode. Layers are
 * matched with those of earlier passes by their order and kind. */
WF_API void wf_model_begin(wf_model *m, int training);

/* A variable of the model: its current value (ReadVariable) in this pass.
 * name is made unique in the model; init_value parametrises WF_INIT_
 * CONSTANT/UNIFORM/NORMAL/TRUNCATED_NORMAL. trainable variables are what
 * wf_model_minimize updates. */
WF_API wf_output wf_model_variable(wf_model *m, const char *name,
                                   wf_dtype dtype, const int64_t *dims,
                                   int rank, wf_init init, double init_value,
                                   int trainable, wf_status *st);
/* A node that, run as a target, initialises every variable created so far
 * (slots of optimizers included). Build it after the optimizer. After a
 * data-parallel minimize it also sets every variable to task 0's value
 * once initialised (a Broadcast: every task of the job must run it). */
WF_API wf_node *wf_model_init_op(wf_model *m, wf_status *st);
WF_API int wf_model_num_variables(const wf_model *m);
/* Name (borrowed), handle output and whether variable i is trainable. */
WF_API const char *wf_model_variable_name(const wf_model *m, int i,
                                          wf_output *handle, int *trainable);

/* ---- layers (NHWC for images) ------------------------------------------- */

/* x (N, D) -> act(x W + b), W (D, units) initialised Glorot-uniform (He-
 * uniform under ReLU), b zeros. x may also be a sequence (N, T, D) with T
 * known: the same W and b apply at every position, giving (N, T, units).
 * Images (rank 4) are refused: flatten them first. */
WF_API wf_output wf_layer_dense(wf_model *m, wf_output x, int units,
                                wf_activation act, wf_status *st);
/* As wf_layer_dense with a chosen kernel initializer. */
WF_API wf_output wf_layer_dense_with_initializer(wf_model *m, wf_output x,
                                                 int units, wf_activation act,
                                                 wf_init kernel_init,
                                                 wf_status *st);
/* The same function under its first name, kept so that programs built
 * against it still link; new code uses wf_layer_dense_with_initializer. */
WF_API wf_output wf_layer_dense_init(wf_model *m, wf_output x, int units,
                                     wf_activation act, wf_init kernel_init,
                                     wf_status *st);
/* x (N, H, W, C) -> act(conv(x, K) + b), K (kh, kw, C, filters), stride on
 * H and W, padding "SAME" or "VALID". */
WF_API wf_output wf_layer_conv2d(wf_model *m, wf_output x, int filters,
                                 int kh, int kw, int stride,
                                 const char *padding, wf_activation act,
                                 wf_status *st);
WF_API wf_output wf_layer_max_pool(wf_model *m, wf_output x, int size,
                                   int stride, const char *padding,
                                   wf_status *st);
WF_API wf_output wf_layer_avg_pool(wf_model *m, wf_output x, int size,
                                   int stride, const char *padding,
                                   wf_status *st);
/* (N, ...) -> (N, prod(...)). */
WF_API wf_output wf_layer_flatten(wf_model *m, wf_output x, wf_status *st);
/* Drops a fraction rate of x in training passes (scaling the rest by
 * 1/(1-rate)); the identity in inference passes. */
WF_API wf_output wf_layer_dropout(wf_model *m, wf_output x, double rate,
                                  wf_status *st);
/* Batch normalisation over the last axis: batch statistics in training
 * passes (and moving averages updated with momentum), the moving averages
 * in inference passes. */
WF_API wf_output wf_layer_batch_norm(wf_model *m, wf_output x,
                                     double momentum, double epsilon,
                                     wf_status *st);
WF_API wf_output wf_layer_activation(wf_model *m, wf_output x,
                                     wf_activation act, wf_status *st);
/* Recurrent layers over a batch-major sequence x (N, T, C), C known, one
 * layer, one direction, starting from a zero state. Each returns the last
 * hidden state (N, units); when sequence is not NULL it also gets every
 * hidden state, (N, T, units). x is transposed to the ops' time-major
 * (T, N, C) inside (and the states back).
 * Variables, under the layer's name ("gru", "gru_1", ...; "lstm", ...):
 * kernel (C, G*units) and recurrent_kernel (units, G*units), both Glorot-
 * uniform (there is no orthogonal initializer), and bias (G*units,) zeros
 * (no forget-gate bias of 1 for the LSTM); gate blocks as the GRU and LSTM
 * ops order them (GRU: G = 3, update, reset, output; the reset gate applied
 * before the recurrent product; LSTM: G = 4, i, f, g, o). The ops come
 * from the rnn op plugin. On error *sequence's node is NULL too. */
WF_API wf_output wf_layer_gru(wf_model *m, wf_output x, int units,
                              wf_output *sequence, wf_status *st);
WF_API wf_output wf_layer_lstm(wf_model *m, wf_output x, int units,
                               wf_output *sequence, wf_status *st);

/* ---- transformer layers ------------------------------------------------- */

/* Layer normalisation over the last axis of x (..., C), C known: (x - mean)
 * / sqrt(variance + epsilon) * gamma + beta per row, gamma (C,) ones and
 * beta (C,) zeros (variables <layer>/gamma and /beta). The same in training
 * and inference passes. The LayerNorm op comes from the nn op plugin. */
WF_API wf_output wf_layer_layer_norm(wf_model *m, wf_output x,
                                     double epsilon, wf_status *st);
/* x (N, T, D), T and D known, plus a learned (T, D) table of position
 * embeddings (<layer>/embeddings, N(0, 0.02^2)), one row per position. */
WF_API wf_output wf_layer_positional_embedding(wf_model *m, wf_output x,
                                               wf_status *st);
/* Multi-head self-attention over x (N, T, D), T and D known, num_heads
 * dividing D: queries, keys and values are x Wq + bq, x Wk + bk and
 * x Wv + bv (each (D, D), Glorot-uniform; variables <layer>/query/kernel,
 * ...), split into num_heads heads of D / num_heads; each head computes
 * softmax(q k^T / sqrt(D / num_heads)) v over all T positions (no mask);
 * the heads are joined and projected by Wo, bo (<layer>/output/...).
 * Returns (N, T, D). */
WF_API wf_output wf_layer_multi_head_attention(wf_model *m, wf_output x,
                                               int num_heads, wf_status *st);
/* One pre-LayerNorm transformer encoder block over x (N, T, D):
 *   h = x + attention(layer_norm(x)),
 *   y = h + dense_D(gelu(dense_mlp_units(layer_norm(h)))),
 * layer norms with epsilon 1e-5, the exact (erf) GELU, no dropout.
 * Returns (N, T, D). */
WF_API wf_output wf_layer_transformer_encoder(wf_model *m, wf_output x,
                                              int num_heads, int mlp_units,
                                              wf_status *st);
/* The mean over every axis but the first and the last: (N, T, C) ->
 * (N, C), (N, H, W, C) -> (N, C). No variables. */
WF_API wf_output wf_layer_global_avg_pool(wf_model *m, wf_output x,
                                          wf_status *st);

/* ---- losses and metrics --------------------------------------------------- */

/* Mean softmax cross-entropy of logits (N, C) against integer labels (N,). */
WF_API wf_output wf_loss_sparse_softmax_cross_entropy(wf_model *m,
                                                      wf_output logits,
                                                      wf_output labels,
                                                      wf_status *st);
/* Mean softmax cross-entropy against probability labels (N, C). */
WF_API wf_output wf_loss_softmax_cross_entropy(wf_model *m, wf_output logits,
                                               wf_output labels,
                                               wf_status *st);
/* Mean of (pred - target)^2. */
WF_API wf_output wf_loss_mean_squared_error(wf_model *m, wf_output pred,
                                            wf_output target, wf_status *st);
/* scale * sum of w^2 / 2 over the model's trainable kernels (not biases). */
WF_API wf_output wf_loss_l2(wf_model *m, double scale, wf_status *st);
/* Fraction (float32 scalar) of rows whose argmax equals the label. */
WF_API wf_output wf_metric_accuracy(wf_model *m, wf_output logits,
                                    wf_output labels, wf_status *st);

/* ---- optimizers ------------------------------------------------------------- */

typedef enum wf_optimizer_kind {
  WF_OPT_SGD = 0,
  WF_OPT_MOMENTUM, /* momentum, nesterov */
  WF_OPT_ADAM,     /* beta1, beta2, epsilon, amsgrad */
  WF_OPT_ADAMW,    /* as Adam, plus weight_decay */
  WF_OPT_RMSPROP,  /* rho, momentum, epsilon, centered */
  WF_OPT_ADAGRAD   /* initial_accumulator, epsilon */
} wf_optimizer_kind;

typedef enum wf_lr_schedule {
  WF_LR_CONSTANT = 0,
  WF_LR_EXPONENTIAL, /* lr * decay_rate^(step / decay_steps), staircase */
  WF_LR_PIECEWISE,   /* values[i] while step < boundaries[i] */
  WF_LR_COSINE       /* cosine from lr to lr*alpha over decay_steps */
} wf_lr_schedule;

typedef struct wf_optimizer {
  uint32_t struct_size; /* sizeof(wf_optimizer) */
  wf_optimizer_kind kind;
  double learning_rate;
  double momentum;      /* MOMENTUM, RMSPROP */
  int nesterov;         /* MOMENTUM */
  double beta1, beta2;  /* ADAM, ADAMW */
  double epsilon;       /* ADAM, ADAMW, RMSPROP, ADAGRAD */
  int amsgrad;          /* ADAM, ADAMW */
  double weight_decay;  /* ADAMW */
  double rho;           /* RMSPROP */
  int centered;         /* RMSPROP */
  double initial_accumulator; /* ADAGRAD */
  double clip_norm;     /* > 0: clip gradients by this global norm */
  /* Learning-rate schedule from the global step. */
  wf_lr_schedule schedule;
  int64_t decay_steps;
  double decay_rate;
  int staircase;
  double alpha;
  const int64_t *boundaries; /* PIECEWISE: n boundaries, n + 1 values */
  const double *values;
  int num_boundaries;
  int64_t warmup_steps; /* > 0: linear warm-up from 0 over these steps */
} wf_optimizer;

/* The defaults of each kind (Adam: lr 1e-3, betas 0.9/0.999, eps 1e-7;
 * SGD: lr 0.01; ...). */
WF_API wf_optimizer wf_optimizer_defaults(wf_optimizer_kind kind);

/* Makes m a replica of a data-parallel job (weft/parallel.h): the
 * gradients wf_model_minimize builds are averaged over the tasks of the job
 * before clipping, in AllReduce buckets of at most bucket_bytes (<= 0: the
 * default, WF_PARALLEL_BUCKET_BYTES), and the init op ends with a
 * broadcast of task 0's variables. Call it before wf_model_minimize.
 * NOT_FOUND when no loaded plugin provides AllReduce and Broadcast. */
WF_API int wf_model_set_data_parallel(wf_model *m, int64_t bucket_bytes,
                                      wf_status *st);

/* Adds the training step for loss: gradients of loss with respect to every
 * trainable variable read in the training pass, their mean over the tasks
 * of the job when m is data-parallel (fused AllReduce buckets; a
 * sparse gradient is made dense first, so its variable gets the dense
 * update; see weft/parallel.h), optional clipping, the
 * schedule, one fused apply op per variable (sparse where the gradient is),
 * the batch-norm moving-average updates, and the global step increment.
 * Returns the node to run as a target each step. */
WF_API wf_node *wf_model_minimize(wf_model *m, wf_output loss,
                                  const wf_optimizer *opt, wf_status *st);
/* The global step (int64 scalar) as read in the current pass. */
WF_API wf_output wf_model_global_step(wf_model *m, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_LAYERS_H */
