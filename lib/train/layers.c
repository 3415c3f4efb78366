/* lib/train/layers.c — the layers API (weft/layers.h): model variables with
 * their initializers, layers, losses and metrics, built from the ops of the
 * standard plugins by name.
 *
 * The recurrent layers wrap the GRU and LSTM ops of the rnn plugin (one
 * layer, one direction, zero initial state); there is no orthogonal
 * initializer, so their recurrent kernels are Glorot-uniform.
 *
 * It only adds graph nodes; the optimizer step is lib/train/optimizer.c's. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/layers.h>
#include <weft/tensor.h>

#include <weft/status.h>

#include "model.h"

/* ---- small builders ------------------------------------------------------ */

wf_output train_op(wf_model *m, const char *op, const wf_output *in, int n,
                   const wf_attr_item *attrs, int nattrs, wf_status *st) {
  wf_node *nd = wf_graph_add_op(m->g, op, NULL, in, n, attrs, nattrs, st);
  return (wf_output){nd, 0};
}

wf_output train_const_tensor(wf_model *m, wf_tensor *t, wf_status *st) {
  wf_attr_item a[2] = {
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}},
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = wf_tensor_dtype(t)}}};
  wf_output o = train_op(m, "Const", NULL, 0, a, 2, st);
  wf_tensor_release(t);
  return o;
}

wf_output train_scalar(wf_model *m, wf_dtype dt, double v, wf_status *st) {
  wf_tensor *t = wf_tensor_new(dt, NULL, 0, st);
  if (!t)
    return (wf_output){NULL, 0};
  switch (dt) {
  case WF_FLOAT32: *(float *)wf_tensor_data(t) = (float)v; break;
  case WF_FLOAT64: *(double *)wf_tensor_data(t) = v; break;
  case WF_INT32: *(int32_t *)wf_tensor_data(t) = (int32_t)v; break;
  case WF_INT64: *(int64_t *)wf_tensor_data(t) = (int64_t)v; break;
  default:
    wf_tensor_release(t);
    wf_status_set(st, WF_INVALID_ARGUMENT, "scalar constant of dtype %s",
                  wf_dtype_name(dt));
    return (wf_output){NULL, 0};
  }
  return train_const_tensor(m, t, st);
}

static wf_output op1(wf_model *m, const char *op, wf_output a, wf_status *st) {
  return a.node ? train_op(m, op, &a, 1, NULL, 0, st) : a;
}

static wf_output op2(wf_model *m, const char *op, wf_output a, wf_output b,
                     wf_status *st) {
  if (!a.node)
    return a;
  if (!b.node)
    return b;
  wf_output in[2] = {a, b};
  return train_op(m, op, in, 2, NULL, 0, st);
}

static wf_attr_item int_list(const char *name, const int64_t *v, int n) {
  return (wf_attr_item){name, {.type = WF_ATTR_LIST | WF_ATTR_INT,
                               .count = n, .u.ints = v}};
}

static wf_attr_item str_attr(const char *name, const char *v) {
  return (wf_attr_item){name, {.type = WF_ATTR_STRING, .count = 1, .u.s = v}};
}

/* ---- the model ----------------------------------------------------------- */

wf_model *wf_model_new(wf_graph *g, uint64_t seed, wf_status *st) {
  wf_model *m = calloc(1, sizeof *m);
  if (!m) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
    return NULL;
  }
  m->g = g;
  m->seed = seed;
  m->training = 1;
  return m;
}

static void clear_counters(wf_model *m) {
  for (int i = 0; i < m->num_counter_keys; i++)
    free(m->counter_keys[i]);
  m->num_counter_keys = 0;
}

void wf_model_free(wf_model *m) {
  if (!m)
    return;
  for (int i = 0; i < m->num_vars; i++) {
    free(m->vars[i]->name);
    free(m->vars[i]);
  }
  free(m->vars);
  free(m->updates);
  clear_counters(m);
  free(m->counter_keys);
  free(m->counter_vals);
  free(m);
}

void wf_model_begin(wf_model *m, int training) {
  m->training = training != 0;
  m->num_updates_pass = 0;
  clear_counters(m);
}

/* The pass-local unique form of base: base, base_1, base_2, ... in order of
 * request, the same in every pass. Written into buf. The counters say
 * how many times each base was asked for in this pass. */
static int unique_in_pass(wf_model *m, const char *base, char *buf,
                          size_t len, wf_status *st) {
  int i;
  for (i = 0; i < m->num_counter_keys; i++)
    if (strcmp(m->counter_keys[i], base) == 0)
      break;
  if (i < m->num_counter_keys) {
    snprintf(buf, len, "%s_%d", base, m->counter_vals[i]++);
    return 0;
  }
  snprintf(buf, len, "%s", base);
  char *key = strdup(base);
  char **keys = key ? realloc(m->counter_keys,
                              (size_t)(m->num_counter_keys + 1) * sizeof *keys)
                    : NULL;
  if (keys)
    m->counter_keys = keys;
  int *vals = keys ? realloc(m->counter_vals,
                             (size_t)(m->num_counter_keys + 1) * sizeof *vals)
                   : NULL;
  if (!vals) {
    free(key);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
  }
  m->counter_vals = vals;
  m->counter_keys[m->num_counter_keys] = key;
  m->counter_vals[m->num_counter_keys++] = 1;
  return 0;
}

static const char *init_op_name(wf_init init) {
  switch (init) {
  case WF_INIT_ZEROS: return "Zeros";
  case WF_INIT_ONES: return "Ones";
  case WF_INIT_CONSTANT: return "Constant";
  case WF_INIT_UNIFORM: return "RandomUniform";
  case WF_INIT_NORMAL: return "RandomNormal";
  case WF_INIT_TRUNCATED_NORMAL: return "TruncatedNormal";
  case WF_INIT_GLOROT_UNIFORM: return "GlorotUniform";
  case WF_INIT_GLOROT_NORMAL: return "GlorotNormal";
  case WF_INIT_HE_UNIFORM: return "HeUniform";
  case WF_INIT_HE_NORMAL: return "HeNormal";
  case WF_INIT_LECUN_NORMAL: return "LeCunNormal";
  }
  return NULL;
}

/* Builds the initial value of variable v and its AssignVariable. */
static int build_initializer(wf_model *m, train_var *v, wf_init init,
                             double value, wf_status *st) {
  const char *op = init_op_name(init);
  if (!op)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "variable '%s': unknown initializer %d", v->name,
                         (int)init);
  wf_attr_item a[6];
  int n = 0;
  a[n++] = (wf_attr_item){"dtype", {.type = WF_ATTR_DTYPE, .count = 1,
                                    .u.dtype = v->dtype}};
  a[n++] = (wf_attr_item){"shape", {.type = WF_ATTR_SHAPE, .count = 1,
                                    .u.shape = v->shape}};
  switch (init) {
  case WF_INIT_ZEROS:
  case WF_INIT_ONES:
    break;
  case WF_INIT_CONSTANT:
    a[n++] = (wf_attr_item){"value", {.type = WF_ATTR_FLOAT, .count = 1,
                                      .u.f = value}};
    break;
  case WF_INIT_UNIFORM:
    a[n++] = (wf_attr_item){"minval", {.type = WF_ATTR_FLOAT, .count = 1,
                                       .u.f = -value}};
    a[n++] = (wf_attr_item){"maxval", {.type = WF_ATTR_FLOAT, .count = 1,
                                       .u.f = value}};
    break;
  case WF_INIT_NORMAL:
  case WF_INIT_TRUNCATED_NORMAL:
    a[n++] = (wf_attr_item){"stddev", {.type = WF_ATTR_FLOAT, .count = 1,
                                       .u.f = value}};
    break;
  default:
    break;
  }
  if (init != WF_INIT_ZEROS && init != WF_INIT_ONES &&
      init != WF_INIT_CONSTANT) {
    a[n++] = (wf_attr_item){"seed", {.type = WF_ATTR_INT, .count = 1,
                                     .u.i = (int64_t)(m->seed & 0x7fffffff)}};
    a[n++] = (wf_attr_item){"seed2", {.type = WF_ATTR_INT, .count = 1,
                                      .u.i = m->num_vars + 1}};
  }
  wf_output initial = train_op(m, op, NULL, 0, a, n, st);
  if (!initial.node)
    goto fail;
  wf_output in[2] = {v->handle, initial};
  wf_node *assign = wf_graph_add_op(m->g, "AssignVariable", NULL, in, 2,
                                      NULL, 0, st);
  if (!assign)
    goto fail;
  v->assign = assign;
  return 0;
fail:
  wf_status_prefix(st, "initializer of variable '%s'", v->name);
  return wf_status_code(st);
}

wf_output train_read(wf_model *m, const train_var *v, wf_status *st) {
  wf_attr_item a[2] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = v->dtype}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = v->shape}}};
  return train_op(m, "ReadVariable", &v->handle, 1, a, 2, st);
}

train_var *train_variable(wf_model *m, const char *name, wf_dtype dtype,
                         const int64_t *dims, int rank, wf_init init,
                         double init_value, int trainable, wf_status *st) {
  char full[256];
  if (unique_in_pass(m, name, full, sizeof full, st))
    return NULL;
  wf_shape shape;
  wf_shape_init(&shape, dims, rank);
  train_var *v = NULL;
  for (int i = 0; i < m->num_vars && !v; i++)
    if (strcmp(m->vars[i]->name, full) == 0)
      v = m->vars[i];
  if (v) {
    /* An earlier pass made it: the same layer, so the same shape. */
    if (v->dtype != dtype || !wf_shape_equal(&v->shape, &shape)) {
      char a[128], b[128];
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "variable '%s' was %s %s in an earlier pass, now %s %s: "
                    "build every pass with the same layers",
                    full, wf_dtype_name(v->dtype),
                    wf_shape_str(&v->shape, a, sizeof a),
                    wf_dtype_name(dtype), wf_shape_str(&shape, b, sizeof b));
      return NULL;
    }
    return v;
  }
  if (m->num_vars == m->cap_vars) {
    int cap = m->cap_vars ? 2 * m->cap_vars : 16;
    train_var **grown = realloc(m->vars, (size_t)cap * sizeof *grown);
    if (!grown) {
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
      return NULL;
    }
    m->vars = grown;
    m->cap_vars = cap;
  }
  v = calloc(1, sizeof *v);
  if (!v || !(v->name = strdup(full))) {
    free(v);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
    return NULL;
  }
  v->dtype = dtype;
  v->shape = shape;
  v->trainable = trainable;
  wf_attr_item a[3] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dtype}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = shape}},
      {"shared_name", {.type = WF_ATTR_STRING, .count = 1, .u.s = v->name}}};
  wf_node *h = wf_graph_add_op(m->g, "VarHandle", NULL, NULL, 0, a, 3, st);
  if (!h || (v->handle = (wf_output){h, 0},
             build_initializer(m, v, init, init_value, st))) {
    free(v->name);
    free(v);
    return NULL;
  }
  m->vars[m->num_vars++] = v;
  return v;
}

wf_output wf_model_variable(wf_model *m, const char *name, wf_dtype dtype,
                            const int64_t *dims, int rank, wf_init init,
                            double init_value, int trainable, wf_status *st) {
  train_var *v = train_variable(m, name, dtype, dims, rank, init, init_value,
                               trainable, st);
  if (!v)
    return (wf_output){NULL, 0};
  wf_output r = train_read(m, v, st);
  if (r.node && m->training)
    v->read_train = r;
  return r;
}

wf_node *wf_model_init_op(wf_model *m, wf_status *st) {
  /* Data-parallel replicas then take task 0's values, whatever their own
   * seeds drew. */
  wf_node *bcast = m->data_parallel ? train_broadcast(m, 1, st) : NULL;
  if (m->data_parallel && !bcast)
    return NULL;
  wf_node_desc *d = wf_node_desc_new(m->g, "NoOp", "init");
  for (int i = 0; i < m->num_vars; i++)
    wf_node_desc_add_control_input(d, m->vars[i]->assign);
  if (bcast)
    wf_node_desc_add_control_input(d, bcast);
  return wf_node_desc_finish(d, st);
}

int wf_model_num_variables(const wf_model *m) { return m->num_vars; }

const char *wf_model_variable_name(const wf_model *m, int i,
                                   wf_output *handle, int *trainable) {
  if (i < 0 || i >= m->num_vars)
    return NULL;
  if (handle)
    *handle = m->vars[i]->handle;
  if (trainable)
    *trainable = m->vars[i]->trainable;
  return m->vars[i]->name;
}

/* ---- layers ---------------------------------------------------------------- */

/* Pushes a graph scope named after the layer; pops in layer_end. */
static int layer_begin(wf_model *m, const char *kind, char *name, size_t len,
                       wf_status *st) {
  if (unique_in_pass(m, kind, name, len, st))
    return -1;
  return wf_graph_push_scope(m->g, name, st);
}

static wf_output layer_end(wf_model *m, const char *name, wf_output out,
                           wf_status *st) {
  wf_graph_pop_scope(m->g);
  if (!out.node)
    wf_status_prefix(st, "layer '%s'", name);
  return out;
}

wf_output wf_layer_activation(wf_model *m, wf_output x, wf_activation act,
                              wf_status *st) {
  switch (act) {
  case WF_ACT_NONE: return x;
  case WF_ACT_RELU: return op1(m, "Relu", x, st);
  case WF_ACT_SIGMOID: return op1(m, "Sigmoid", x, st);
  case WF_ACT_TANH: return op1(m, "Tanh", x, st);
  case WF_ACT_GELU: return op1(m, "Gelu", x, st);
  case WF_ACT_ELU: return op1(m, "Elu", x, st);
  case WF_ACT_SOFTMAX: return op1(m, "Softmax", x, st);
  }
  wf_status_set(st, WF_INVALID_ARGUMENT, "unknown activation %d", (int)act);
  return (wf_output){NULL, 0};
}

static int64_t static_dim(wf_output x, int i) {
  wf_shape s;
  if (!x.node)
    return -1;
  wf_node_output_shape(x.node, x.index, &s);
  return i < s.rank ? s.dims[i] : -1;
}

static int static_rank(wf_output x) {
  wf_shape s;
  if (!x.node)
    return -1;
  wf_node_output_shape(x.node, x.index, &s);
  return s.rank;
}

/* A Const int64 vector (-1, dims[1..rank-1]): the target of a Reshape that
 * keeps the leading (batch) dimension open. */
static wf_output reshape_open(wf_model *m, wf_output x, const int64_t *dims,
                              int rank, wf_status *st) {
  if (!x.node)
    return x;
  int64_t r = rank;
  wf_tensor *t = wf_tensor_new(WF_INT64, &r, 1, st);
  if (!t)
    return (wf_output){NULL, 0};
  int64_t *v = wf_tensor_data(t);
  v[0] = -1;
  for (int i = 1; i < rank; i++)
    v[i] = dims[i];
  return op2(m, "Reshape", x, train_const_tensor(m, t, st), st);
}

/* x (R, D) -> x W + b with W (D, units) and b (units,) the variables
 * <layer>/kernel and <layer>/bias (the first initialised by kernel_init,
 * the second zeros). */
static wf_output affine(wf_model *m, const char *layer, wf_output x,
                        int64_t d, int units, wf_init kernel_init,
                        wf_status *st) {
  int64_t kd[2] = {d, units}, bd[1] = {units};
  char vn[192];
  snprintf(vn, sizeof vn, "%s/kernel", layer);
  train_var *k = train_variable(m, vn, WF_FLOAT32, kd, 2, kernel_init, 0, 1, st);
  snprintf(vn, sizeof vn, "%s/bias", layer);
  train_var *b = k ? train_variable(m, vn, WF_FLOAT32, bd, 1, WF_INIT_ZEROS, 0,
                                   1, st)
                  : NULL;
  if (!b)
    return (wf_output){NULL, 0};
  k->is_kernel = 1;
  wf_output kr = train_read(m, k, st), br = train_read(m, b, st);
  if (m->training) {
    k->read_train = kr;
    b->read_train = br;
  }
  return op2(m, "BiasAdd", op2(m, "MatMul", x, kr, st), br, st);
}

wf_output wf_layer_dense_with_initializer(wf_model *m, wf_output x,
                                          int units, wf_activation act,
                                          wf_init kernel_init, wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  if (!x.node)
    return x;
  wf_shape s;
  wf_node_output_shape(x.node, x.index, &s);
  /* A sequence (N, T, D) takes the same W at every position; an image
   * (N, H, W, C) is refused: it wants a flatten first. */
  int known = (s.rank == 2 || s.rank == 3) && s.dims[s.rank - 1] > 0 &&
              (s.rank == 2 || s.dims[1] >= 0);
  if (!known) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dense layer: input '%s' must be (N, D) or a sequence "
                  "(N, T, D) with T and D known",
                  wf_node_name(x.node));
    return out;
  }
  if (layer_begin(m, "dense", name, sizeof name, st))
    return out;
  int64_t d = s.dims[s.rank - 1];
  wf_output x2 = x;
  if (s.rank > 2) {
    int64_t flat[2] = {-1, d};
    x2 = reshape_open(m, x, flat, 2, st);
  }
  out = affine(m, name, x2, d, units, kernel_init, st);
  out = wf_layer_activation(m, out, act, st);
  if (s.rank > 2) {
    s.dims[s.rank - 1] = units;
    out = reshape_open(m, out, s.dims, s.rank, st);
  }
  return layer_end(m, name, out, st);
}

wf_output wf_layer_dense(wf_model *m, wf_output x, int units,
                         wf_activation act, wf_status *st) {
  return wf_layer_dense_with_initializer(
      m, x, units, act,
      act == WF_ACT_RELU ? WF_INIT_HE_UNIFORM : WF_INIT_GLOROT_UNIFORM, st);
}

wf_output wf_layer_conv2d(wf_model *m, wf_output x, int filters, int kh,
                          int kw, int stride, const char *padding,
                          wf_activation act, wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  if (!x.node)
    return x;
  int64_t c = static_dim(x, 3);
  if (static_rank(x) != 4 || c <= 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "conv2d layer: input '%s' must be (N, H, W, C) with C known",
                  wf_node_name(x.node));
    return out;
  }
  if (layer_begin(m, "conv2d", name, sizeof name, st))
    return out;
  int64_t kd[4] = {kh, kw, c, filters}, bd[1] = {filters};
  char vn[160];
  snprintf(vn, sizeof vn, "%s/kernel", name);
  train_var *k = train_variable(
      m, vn, WF_FLOAT32, kd, 4,
      act == WF_ACT_RELU ? WF_INIT_HE_UNIFORM : WF_INIT_GLOROT_UNIFORM, 0, 1,
      st);
  snprintf(vn, sizeof vn, "%s/bias", name);
  train_var *b = k ? train_variable(m, vn, WF_FLOAT32, bd, 1, WF_INIT_ZEROS, 0,
                                   1, st)
                  : NULL;
  if (k && b) {
    k->is_kernel = 1;
    wf_output kr = train_read(m, k, st), br = train_read(m, b, st);
    if (m->training) {
      k->read_train = kr;
      b->read_train = br;
    }
    const int64_t strides[4] = {1, stride, stride, 1};
    wf_attr_item a[2] = {int_list("strides", strides, 4),
                         str_attr("padding", padding)};
    wf_output in[2] = {x, kr};
    if (kr.node)
      out = train_op(m, "Conv2D", in, 2, a, 2, st);
    out = op2(m, "BiasAdd", out, br, st);
    out = wf_layer_activation(m, out, act, st);
  }
  return layer_end(m, name, out, st);
}

static wf_output pool(wf_model *m, const char *op, const char *kind,
                      wf_output x, int size, int stride, const char *padding,
                      wf_status *st) {
  char name[128];
  if (!x.node)
    return x;
  if (layer_begin(m, kind, name, sizeof name, st))
    return (wf_output){NULL, 0};
  const int64_t k[4] = {1, size, size, 1}, s[4] = {1, stride, stride, 1};
  wf_attr_item a[3] = {int_list("ksize", k, 4), int_list("strides", s, 4),
                       str_attr("padding", padding)};
  wf_output out = train_op(m, op, &x, 1, a, 3, st);
  return layer_end(m, name, out, st);
}

wf_output wf_layer_max_pool(wf_model *m, wf_output x, int size, int stride,
                            const char *padding, wf_status *st) {
  return pool(m, "MaxPool", "max_pool", x, size, stride, padding, st);
}

wf_output wf_layer_avg_pool(wf_model *m, wf_output x, int size, int stride,
                            const char *padding, wf_status *st) {
  return pool(m, "AvgPool", "avg_pool", x, size, stride, padding, st);
}

wf_output wf_layer_flatten(wf_model *m, wf_output x, wf_status *st) {
  if (!x.node)
    return x;
  int rank = static_rank(x);
  int64_t inner = 1;
  for (int i = 1; i < rank; i++) {
    int64_t d = static_dim(x, i);
    if (d < 0) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "flatten: dimension %d of '%s' is not known", i,
                    wf_node_name(x.node));
      return (wf_output){NULL, 0};
    }
    inner *= d;
  }
  if (rank < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "flatten: '%s' needs a known rank of at least 1",
                  wf_node_name(x.node));
    return (wf_output){NULL, 0};
  }
  int64_t two = 2;
  wf_tensor *shape = wf_tensor_new(WF_INT64, &two, 1, st);
  if (!shape)
    return (wf_output){NULL, 0};
  ((int64_t *)wf_tensor_data(shape))[0] = -1;
  ((int64_t *)wf_tensor_data(shape))[1] = inner;
  wf_output s = train_const_tensor(m, shape, st);
  return op2(m, "Reshape", x, s, st);
}

wf_output wf_layer_dropout(wf_model *m, wf_output x, double rate,
                           wf_status *st) {
  if (!x.node || !m->training || rate <= 0)
    return x;
  char name[128];
  if (layer_begin(m, "dropout", name, sizeof name, st))
    return (wf_output){NULL, 0};
  wf_attr_item a[3] = {
      {"rate", {.type = WF_ATTR_FLOAT, .count = 1, .u.f = rate}},
      {"seed", {.type = WF_ATTR_INT, .count = 1,
                .u.i = (int64_t)(m->seed & 0x7fffffff)}},
      {"seed2", {.type = WF_ATTR_INT, .count = 1, .u.i = ++m->num_random}}};
  wf_output out = train_op(m, "Dropout", &x, 1, a, 3, st);
  return layer_end(m, name, out, st);
}

int train_add_update(wf_model *m, wf_node *n, wf_status *st) {
  wf_node **grown =
      realloc(m->updates, (size_t)(m->num_updates + 1) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "model: out of memory");
  m->updates = grown;
  m->updates[m->num_updates++] = n;
  return 0;
}

wf_output wf_layer_batch_norm(wf_model *m, wf_output x, double momentum,
                              double epsilon, wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  if (!x.node)
    return x;
  int rank = static_rank(x);
  int64_t c = rank > 0 ? static_dim(x, rank - 1) : -1;
  if (c <= 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "batch_norm: the last dimension of '%s' must be known",
                  wf_node_name(x.node));
    return out;
  }
  if (layer_begin(m, "batch_norm", name, sizeof name, st))
    return out;
  int64_t cd[1] = {c};
  char vn[160];
  struct {
    const char *suffix;
    wf_init init;
    int trainable;
  } spec[4] = {{"gamma", WF_INIT_ONES, 1},
               {"beta", WF_INIT_ZEROS, 1},
               {"moving_mean", WF_INIT_ZEROS, 0},
               {"moving_variance", WF_INIT_ONES, 0}};
  train_var *v[4];
  wf_output r[4];
  for (int i = 0; i < 4; i++) {
    snprintf(vn, sizeof vn, "%s/%s", name, spec[i].suffix);
    v[i] = train_variable(m, vn, WF_FLOAT32, cd, 1, spec[i].init, 0,
                          spec[i].trainable, st);
    if (!v[i])
      return layer_end(m, name, out, st);
    r[i] = train_read(m, v[i], st);
    if (!r[i].node)
      return layer_end(m, name, out, st);
    if (m->training)
      v[i]->read_train = r[i];
  }
  const char *fmt = rank == 4 ? "NHWC" : "NHWC";
  wf_attr_item a[3] = {
      {"epsilon", {.type = WF_ATTR_FLOAT, .count = 1, .u.f = epsilon}},
      {"is_training", {.type = WF_ATTR_BOOL, .count = 1, .u.b = m->training}},
      str_attr("data_format", fmt)};
  wf_output in[5] = {x, r[0], r[1], r[2], r[3]};
  wf_node *bn = wf_graph_add_op(m->g, "BatchNorm", NULL, in, 5, a, 3, st);
  if (!bn)
    return layer_end(m, name, out, st);
  out = (wf_output){bn, 0};
  if (m->training) {
    /* moving = moving * momentum + batch * (1 - momentum) */
    for (int i = 0; i < 2; i++) {
      wf_output batch = {bn, 1 + i};
      wf_output mom = train_scalar(m, WF_FLOAT32, momentum, st);
      wf_output rest = train_scalar(m, WF_FLOAT32, 1.0 - momentum, st);
      wf_output upd = op2(m, "Add", op2(m, "Mul", r[2 + i], mom, st),
                          op2(m, "Mul", batch, rest, st), st);
      if (!upd.node)
        return layer_end(m, name, (wf_output){NULL, 0}, st);
      wf_output ain[2] = {v[2 + i]->handle, upd};
      wf_node *assign = wf_graph_add_op(m->g, "AssignVariable", NULL, ain,
                                          2, NULL, 0, st);
      if (!assign || train_add_update(m, assign, st))
        return layer_end(m, name, (wf_output){NULL, 0}, st);
    }
  }
  return layer_end(m, name, out, st);
}

/* ---- recurrent layers ------------------------------------------------------ */

static wf_output int64_vector(wf_model *m, const int64_t *v, int64_t n,
                              wf_status *st) {
  wf_tensor *t = wf_tensor_new(WF_INT64, &n, 1, st);
  if (!t)
    return (wf_output){NULL, 0};
  memcpy(wf_tensor_data(t), v, (size_t)n * sizeof *v);
  return train_const_tensor(m, t, st);
}

/* (A, B, C) -> (B, A, C): batch-major to time-major and back. */
static wf_output swap_leading(wf_model *m, wf_output x, wf_status *st) {
  static const int64_t perm[3] = {1, 0, 2};
  return op2(m, "Transpose", x, int64_vector(m, perm, 3, st), st);
}

/* Float32 zeros (N, units), N the first dimension of x as run: the initial
 * state of a recurrent layer over any batch size. */
static wf_output zero_state(wf_model *m, wf_output x, int units,
                            wf_status *st) {
  static const int64_t first = 0, one = 1;
  const int64_t h = units;
  wf_attr_item out_type = {"out_type", {.type = WF_ATTR_DTYPE, .count = 1,
                                        .u.dtype = WF_INT64}};
  wf_attr_item axis = {"axis", {.type = WF_ATTR_INT, .count = 1, .u.i = 0}};
  wf_output shape = train_op(m, "Shape", &x, 1, &out_type, 1, st);
  wf_output in[3] = {shape, int64_vector(m, &first, 1, st),
                     int64_vector(m, &one, 1, st)};
  if (!in[0].node || !in[1].node || !in[2].node)
    return (wf_output){NULL, 0};
  wf_output parts[2] = {train_op(m, "Slice", in, 3, NULL, 0, st),
                        int64_vector(m, &h, 1, st)};
  if (!parts[0].node || !parts[1].node)
    return (wf_output){NULL, 0};
  wf_output dims = train_op(m, "Concat", parts, 2, &axis, 1, st);
  return op2(m, "Fill", dims, train_scalar(m, WF_FLOAT32, 0.0, st), st);
}

/* A GRU (gates 3) or LSTM (gates 4) layer as weft/layers.h describes. */
static wf_output recurrent(wf_model *m, const char *kind, const char *op,
                           int gates, wf_output x, int units,
                           wf_output *sequence, wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  if (sequence)
    *sequence = out;
  if (!x.node)
    return x;
  int64_t c = static_dim(x, 2);
  if (static_rank(x) != 3 || c <= 0 || units < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "%s layer: input '%s' must be (N, T, C) with C known and "
                  "units (%d) at least 1",
                  kind, wf_node_name(x.node), units);
    return out;
  }
  if (layer_begin(m, kind, name, sizeof name, st))
    return out;
  int64_t gh = (int64_t)gates * units;
  int64_t kd[2] = {c, gh}, rd[2] = {units, gh}, bd[1] = {gh};
  char vn[160];
  snprintf(vn, sizeof vn, "%s/kernel", name);
  train_var *k = train_variable(m, vn, WF_FLOAT32, kd, 2,
                               WF_INIT_GLOROT_UNIFORM, 0, 1, st);
  snprintf(vn, sizeof vn, "%s/recurrent_kernel", name);
  train_var *r = k ? train_variable(m, vn, WF_FLOAT32, rd, 2,
                                   WF_INIT_GLOROT_UNIFORM, 0, 1, st)
                  : NULL;
  snprintf(vn, sizeof vn, "%s/bias", name);
  train_var *b = r ? train_variable(m, vn, WF_FLOAT32, bd, 1, WF_INIT_ZEROS,
                                   0, 1, st)
                  : NULL;
  if (!b)
    return layer_end(m, name, out, st);
  k->is_kernel = r->is_kernel = 1;
  wf_output kr = train_read(m, k, st), rr = train_read(m, r, st),
            br = train_read(m, b, st);
  if (m->training) {
    k->read_train = kr;
    r->read_train = rr;
    b->read_train = br;
  }
  wf_output xt = swap_leading(m, x, st);
  wf_output h0 = zero_state(m, x, units, st);
  if (!kr.node || !rr.node || !br.node || !xt.node || !h0.node)
    return layer_end(m, name, out, st);
  /* x, h0, (c0,) w, r, b: the LSTM's cell starts at zero too. */
  wf_output in[6] = {xt, h0, h0, kr, rr, br};
  int n = 0;
  wf_output args[6];
  for (int i = 0; i < 6; i++)
    if (i != 2 || gates == 4)
      args[n++] = in[i];
  wf_node *cell = wf_graph_add_op(m->g, op, NULL, args, n, NULL, 0, st);
  if (!cell)
    return layer_end(m, name, out, st);
  out = (wf_output){cell, 1};
  if (sequence) {
    *sequence = swap_leading(m, (wf_output){cell, 0}, st);
    if (!sequence->node)
      out = *sequence;
  }
  return layer_end(m, name, out, st);
}

wf_output wf_layer_gru(wf_model *m, wf_output x, int units,
                       wf_output *sequence, wf_status *st) {
  return recurrent(m, "gru", "GRU", 3, x, units, sequence, st);
}

wf_output wf_layer_lstm(wf_model *m, wf_output x, int units,
                        wf_output *sequence, wf_status *st) {
  return recurrent(m, "lstm", "LSTM", 4, x, units, sequence, st);
}

/* ---- transformer layers ------------------------------------------------ */

/* x's static shape when it is (N, T, D) with T and D known; else st set
 * naming the layer. */
static int sequence_shape(wf_output x, const char *kind, wf_shape *s,
                          wf_status *st) {
  wf_node_output_shape(x.node, x.index, s);
  if (s->rank != 3 || s->dims[1] <= 0 || s->dims[2] <= 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: input '%s' must be (N, T, D) with T and D known",
                         kind, wf_node_name(x.node));
  return 0;
}

wf_output wf_layer_layer_norm(wf_model *m, wf_output x, double epsilon,
                              wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  if (!x.node)
    return x;
  int rank = static_rank(x);
  int64_t c = rank > 0 ? static_dim(x, rank - 1) : -1;
  if (c <= 0 || !(epsilon >= 0)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "layer_norm: the last dimension of '%s' must be known and "
                  "epsilon (%g) at least 0",
                  wf_node_name(x.node), epsilon);
    return out;
  }
  if (layer_begin(m, "layer_norm", name, sizeof name, st))
    return out;
  int64_t cd[1] = {c};
  char vn[160];
  snprintf(vn, sizeof vn, "%s/gamma", name);
  train_var *g = train_variable(m, vn, WF_FLOAT32, cd, 1, WF_INIT_ONES, 0, 1,
                               st);
  snprintf(vn, sizeof vn, "%s/beta", name);
  train_var *b = g ? train_variable(m, vn, WF_FLOAT32, cd, 1, WF_INIT_ZEROS,
                                   0, 1, st)
                  : NULL;
  if (b) {
    wf_output gr = train_read(m, g, st), br = train_read(m, b, st);
    if (m->training) {
      g->read_train = gr;
      b->read_train = br;
    }
    if (gr.node && br.node) {
      wf_output in[3] = {x, gr, br};
      wf_attr_item a = {"epsilon",
                        {.type = WF_ATTR_FLOAT, .count = 1, .u.f = epsilon}};
      out = train_op(m, "LayerNorm", in, 3, &a, 1, st);
    }
  }
  return layer_end(m, name, out, st);
}

wf_output wf_layer_positional_embedding(wf_model *m, wf_output x,
                                        wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  wf_shape s;
  if (!x.node)
    return x;
  if (sequence_shape(x, "positional_embedding", &s, st))
    return out;
  if (layer_begin(m, "positional_embedding", name, sizeof name, st))
    return out;
  char vn[160];
  snprintf(vn, sizeof vn, "%s/embeddings", name);
  train_var *p = train_variable(m, vn, WF_FLOAT32, s.dims + 1, 2,
                               WF_INIT_NORMAL, 0.02, 1, st);
  if (p) {
    wf_output pr = train_read(m, p, st);
    if (m->training)
      p->read_train = pr;
    out = op2(m, "Add", x, pr, st);
  }
  return layer_end(m, name, out, st);
}

/* (N, T, H*dh) <-> (N, H, T, dh). */
static wf_output split_heads(wf_model *m, wf_output x, int64_t t, int heads,
                             int64_t dh, wf_status *st) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  const int64_t dims[4] = {-1, t, heads, dh};
  wf_output r = reshape_open(m, x, dims, 4, st);
  return op2(m, "Transpose", r, int64_vector(m, perm, 4, st), st);
}

static wf_output merge_heads(wf_model *m, wf_output x, int64_t t, int64_t d,
                             wf_status *st) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  const int64_t dims[2] = {-1, d};
  (void)t;
  wf_output r = op2(m, "Transpose", x, int64_vector(m, perm, 4, st), st);
  return reshape_open(m, r, dims, 2, st);
}

wf_output wf_layer_multi_head_attention(wf_model *m, wf_output x,
                                        int num_heads, wf_status *st) {
  char name[128], sub[160];
  wf_output out = {NULL, 0};
  wf_shape s;
  if (!x.node)
    return x;
  if (sequence_shape(x, "multi_head_attention", &s, st))
    return out;
  int64_t t = s.dims[1], d = s.dims[2];
  if (num_heads < 1 || d % num_heads != 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "multi_head_attention: %d heads do not divide the %lld "
                  "features of '%s'",
                  num_heads, (long long)d, wf_node_name(x.node));
    return out;
  }
  if (layer_begin(m, "multi_head_attention", name, sizeof name, st))
    return out;
  int64_t dh = d / num_heads;
  const int64_t flat[2] = {-1, d};
  wf_output x2 = reshape_open(m, x, flat, 2, st);
  static const char *const proj[3] = {"query", "key", "value"};
  wf_output h[3];
  for (int i = 0; i < 3; i++) {
    snprintf(sub, sizeof sub, "%s/%s", name, proj[i]);
    h[i] = affine(m, sub, x2, d, (int)d, WF_INIT_GLOROT_UNIFORM, st);
    h[i] = split_heads(m, h[i], t, num_heads, dh, st);
  }
  /* softmax(q k^T / sqrt(dh)) v, the scale applied to q (T > dh in the
   * usual shapes, so fewer multiplications than on the scores). */
  h[0] = op2(m, "Mul", h[0], train_scalar(m, WF_FLOAT32, 1.0 / sqrt((double)dh),
                                          st), st);
  wf_attr_item adj = {"adj_y", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}};
  wf_output qk[2] = {h[0], h[1]};
  wf_output scores = h[0].node && h[1].node
                         ? train_op(m, "BatchMatMul", qk, 2, &adj, 1, st)
                         : (wf_output){NULL, 0};
  wf_output probs = op1(m, "Softmax", scores, st);
  wf_output ctx = op2(m, "BatchMatMul", probs, h[2], st);
  wf_output merged = merge_heads(m, ctx, t, d, st);
  snprintf(sub, sizeof sub, "%s/output", name);
  if (merged.node)
    out = affine(m, sub, merged, d, (int)d, WF_INIT_GLOROT_UNIFORM, st);
  out = reshape_open(m, out, s.dims, 3, st);
  return layer_end(m, name, out, st);
}

wf_output wf_layer_transformer_encoder(wf_model *m, wf_output x,
                                       int num_heads, int mlp_units,
                                       wf_status *st) {
  char name[128];
  wf_output out = {NULL, 0};
  wf_shape s;
  if (!x.node)
    return x;
  if (sequence_shape(x, "transformer_encoder", &s, st))
    return out;
  if (mlp_units < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "transformer_encoder: mlp_units is %d (must be >= 1)",
                  mlp_units);
    return out;
  }
  if (layer_begin(m, "transformer_encoder", name, sizeof name, st))
    return out;
  wf_output a = wf_layer_layer_norm(m, x, 1e-5, st);
  a = wf_layer_multi_head_attention(m, a, num_heads, st);
  wf_output h = op2(m, "Add", x, a, st);
  wf_output f = wf_layer_layer_norm(m, h, 1e-5, st);
  f = wf_layer_dense(m, f, mlp_units, WF_ACT_GELU, st);
  f = wf_layer_dense(m, f, (int)s.dims[2], WF_ACT_NONE, st);
  out = op2(m, "Add", h, f, st);
  return layer_end(m, name, out, st);
}

wf_output wf_layer_global_avg_pool(wf_model *m, wf_output x, wf_status *st) {
  if (!x.node)
    return x;
  int rank = static_rank(x);
  if (rank < 3) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "global_avg_pool: '%s' must have a known rank of at least 3 "
                  "((N, T, C) or (N, H, W, C))",
                  wf_node_name(x.node));
    return (wf_output){NULL, 0};
  }
  int64_t axes[WF_MAX_RANK];
  for (int i = 1; i < rank - 1; i++)
    axes[i - 1] = i;
  wf_attr_item a[1] = {int_list("axes", axes, rank - 2)};
  return train_op(m, "Mean", &x, 1, a, 1, st);
}

/* ---- losses and metrics -------------------------------------------------------- */

static wf_output mean_all(wf_model *m, wf_output x, wf_status *st) {
  wf_attr_item a[1] = {int_list("axes", NULL, 0)};
  return x.node ? train_op(m, "Mean", &x, 1, a, 1, st) : x;
}

wf_output wf_loss_sparse_softmax_cross_entropy(wf_model *m, wf_output logits,
                                               wf_output labels,
                                               wf_status *st) {
  if (!logits.node || !labels.node)
    return logits.node ? labels : logits;
  wf_output in[2] = {logits, labels};
  wf_output per = train_op(m, "SparseSoftmaxCrossEntropyWithLogits", in, 2,
                           NULL, 0, st);
  return mean_all(m, per, st);
}

wf_output wf_loss_softmax_cross_entropy(wf_model *m, wf_output logits,
                                        wf_output labels, wf_status *st) {
  if (!logits.node || !labels.node)
    return logits.node ? labels : logits;
  wf_output in[2] = {logits, labels};
  wf_output per =
      train_op(m, "SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, st);
  return mean_all(m, per, st);
}

wf_output wf_loss_mean_squared_error(wf_model *m, wf_output pred,
                                     wf_output target, wf_status *st) {
  return mean_all(m, op1(m, "Square", op2(m, "Sub", pred, target, st), st),
                  st);
}

wf_output wf_loss_l2(wf_model *m, double scale, wf_status *st) {
  wf_output terms[256];
  int n = 0;
  wf_attr_item a[1] = {int_list("axes", NULL, 0)};
  for (int i = 0; i < m->num_vars && n < 256; i++) {
    train_var *v = m->vars[i];
    if (!v->is_kernel || !v->trainable || !v->read_train.node)
      continue;
    wf_output sq = op1(m, "Square", v->read_train, st);
    wf_output s = sq.node ? train_op(m, "Sum", &sq, 1, a, 1, st) : sq;
    if (!s.node)
      return s;
    terms[n++] = s;
  }
  if (n == 0)
    return train_scalar(m, WF_FLOAT32, 0.0, st);
  wf_output total = n == 1 ? terms[0] : train_op(m, "AddN", terms, n, NULL, 0, st);
  return op2(m, "Mul", total, train_scalar(m, WF_FLOAT32, scale / 2.0, st), st);
}

wf_output wf_metric_accuracy(wf_model *m, wf_output logits, wf_output labels,
                             wf_status *st) {
  if (!logits.node || !labels.node)
    return logits.node ? labels : logits;
  wf_dtype lt = wf_node_output_dtype(labels.node, labels.index);
  wf_attr_item a[2] = {
      {"axis", {.type = WF_ATTR_INT, .count = 1, .u.i = 1}},
      {"output_type", {.type = WF_ATTR_DTYPE, .count = 1,
                       .u.dtype = lt == WF_INT32 ? WF_INT32 : WF_INT64}}};
  wf_output pred = train_op(m, "ArgMax", &logits, 1, a, 2, st);
  wf_output lab = labels;
  if (lt != WF_INT32 && lt != WF_INT64) {
    wf_attr_item c = {"DstT", {.type = WF_ATTR_DTYPE, .count = 1,
                               .u.dtype = WF_INT64}};
    lab = train_op(m, "Cast", &labels, 1, &c, 1, st);
  }
  wf_output eq = op2(m, "Equal", pred, lab, st);
  wf_attr_item c = {"DstT", {.type = WF_ATTR_DTYPE, .count = 1,
                             .u.dtype = WF_FLOAT32}};
  wf_output f = eq.node ? train_op(m, "Cast", &eq, 1, &c, 1, st) : eq;
  return mean_all(m, f, st);
}

wf_output wf_layer_dense_init(wf_model *m, wf_output x, int units,
                              wf_activation act, wf_init kernel_init,
                              wf_status *st) {
  return wf_layer_dense_with_initializer(m, x, units, act, kernel_init, st);
}
