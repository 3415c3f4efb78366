/* lib/train/optimizer.c — the training step of a model (wf_model_minimize):
 * gradients, their mean over a data-parallel job (lib/train/data_parallel.c),
 * optional clipping by global norm, the learning-rate schedule,
 * slot variables and one fused apply op per variable (sparse where the
 * gradient is), then the global step increment.
 *
 * The apply ops come from the train op plugin; their inputs are matched by
 * name with the op definitions, so this file states what each update needs
 * and not the order a plugin chose. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/gradients.h>
#include <weft/layers.h>
#include <weft/parallel.h>

#include <weft/status.h>

#include "model.h"

typedef struct named {
  const char *name;
  wf_output value;
} named;

/* Adds a node of op whose inputs are given by argument name. Every input
 * argument must be named once; INVALID_ARGUMENT naming the missing one
 * otherwise (a plugin whose op lacks it is not the one this code expects). */
static wf_node *add_named(wf_model *m, const char *op, const named *in, int n,
                          const wf_attr_item *attrs, int nattrs,
                          wf_status *st) {
  const wf_op_def *def = wf_runtime_op_find(wf_graph_runtime(m->g), op);
  if (!def) {
    wf_status_set(st, WF_NOT_FOUND,
                  "op '%s' is not registered (is the train op plugin "
                  "loaded?)",
                  op);
    return NULL;
  }
  wf_output ordered[16];
  int num_inputs = 0;
  while (def->inputs && def->inputs[num_inputs].struct_size)
    num_inputs++;
  if (num_inputs > 16) {
    wf_status_set(st, WF_INTERNAL, "op '%s' has too many inputs", op);
    return NULL;
  }
  for (int a = 0; a < num_inputs; a++) {
    int found = 0;
    for (int k = 0; k < n; k++) {
      if (strcmp(in[k].name, def->inputs[a].name) == 0) {
        ordered[a] = in[k].value;
        found = 1;
        break;
      }
    }
    if (!found) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "op '%s' has an input '%s' that the optimizer does not "
                    "provide",
                    op, def->inputs[a].name);
      return NULL;
    }
    if (!ordered[a].node) {
      wf_status_set(st, WF_INTERNAL, "op '%s': input '%s' was not built", op,
                    def->inputs[a].name);
      return NULL;
    }
  }
  return wf_graph_add_op(m->g, op, NULL, ordered, num_inputs, attrs,
                           nattrs, st);
}

wf_optimizer wf_optimizer_defaults(wf_optimizer_kind kind) {
  wf_optimizer o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.kind = kind;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.epsilon = 1e-7;
  o.rho = 0.9;
  o.initial_accumulator = 0.1;
  switch (kind) {
  case WF_OPT_SGD: o.learning_rate = 0.01; break;
  case WF_OPT_MOMENTUM: o.learning_rate = 0.01; o.momentum = 0.9; break;
  case WF_OPT_ADAM: o.learning_rate = 1e-3; break;
  case WF_OPT_ADAMW: o.learning_rate = 1e-3; o.weight_decay = 4e-3; break;
  case WF_OPT_RMSPROP: o.learning_rate = 1e-3; break;
  case WF_OPT_ADAGRAD: o.learning_rate = 1e-3; break;
  }
  return o;
}

static train_var *global_step_var(wf_model *m, wf_status *st) {
  if (m->global_step)
    return m->global_step;
  /* One global step per model, made the first time it is asked for. */
  m->global_step = train_variable(m, "global_step", WF_INT64, NULL, 0,
                                  WF_INIT_ZEROS, 0, 0, st);
  return m->global_step;
}

wf_output wf_model_global_step(wf_model *m, wf_status *st) {
  train_var *v = global_step_var(m, st);
  return v ? train_read(m, v, st) : (wf_output){NULL, 0};
}

static wf_attr_item f_attr(const char *name, double v) {
  return (wf_attr_item){name, {.type = WF_ATTR_FLOAT, .count = 1, .u.f = v}};
}

/* The learning rate as a float32 scalar of the global step. */
static wf_output learning_rate(wf_model *m, const wf_optimizer *o,
                               wf_output step, wf_status *st) {
  wf_output lr;
  switch (o->schedule) {
  case WF_LR_CONSTANT:
    lr = train_scalar(m, WF_FLOAT32, o->learning_rate, st);
    break;
  case WF_LR_EXPONENTIAL: {
    wf_attr_item a[4] = {
        f_attr("learning_rate", o->learning_rate),
        {"decay_steps", {.type = WF_ATTR_INT, .count = 1,
                         .u.i = o->decay_steps}},
        f_attr("decay_rate", o->decay_rate),
        {"staircase", {.type = WF_ATTR_BOOL, .count = 1, .u.b = o->staircase}}};
    lr = train_op(m, "ExponentialDecay", &step, 1, a, 4, st);
    break;
  }
  case WF_LR_COSINE: {
    wf_attr_item a[3] = {
        f_attr("learning_rate", o->learning_rate),
        {"decay_steps", {.type = WF_ATTR_INT, .count = 1,
                         .u.i = o->decay_steps}},
        f_attr("alpha", o->alpha)};
    lr = train_op(m, "CosineDecay", &step, 1, a, 3, st);
    break;
  }
  case WF_LR_PIECEWISE: {
    wf_attr_item a[2] = {
        {"boundaries", {.type = WF_ATTR_LIST | WF_ATTR_INT,
                        .count = o->num_boundaries, .u.ints = o->boundaries}},
        {"values", {.type = WF_ATTR_LIST | WF_ATTR_FLOAT,
                    .count = o->num_boundaries + 1, .u.floats = o->values}}};
    lr = train_op(m, "PiecewiseConstant", &step, 1, a, 2, st);
    break;
  }
  default:
    wf_status_set(st, WF_INVALID_ARGUMENT, "unknown schedule %d",
                  (int)o->schedule);
    return (wf_output){NULL, 0};
  }
  if (lr.node && o->warmup_steps > 0) {
    wf_output in[2] = {step, lr};
    wf_attr_item a[1] = {{"warmup_steps", {.type = WF_ATTR_INT, .count = 1,
                                           .u.i = o->warmup_steps}}};
    lr = train_op(m, "LinearWarmup", in, 2, a, 1, st);
  }
  return lr;
}

/* A zero-initialised (or constant) slot of variable v. */
static wf_output slot(wf_model *m, const train_var *v, const char *suffix,
                      wf_init init, double value, wf_status *st) {
  char name[320];
  snprintf(name, sizeof name, "%s/%s", v->name, suffix);
  train_var *s = train_variable(m, name, v->dtype, v->shape.dims, v->shape.rank,
                               init, value, 0, st);
  return s ? s->handle : (wf_output){NULL, 0};
}

/* One variable's update with dense (or sparse) gradient. */
static wf_node *apply_one(wf_model *m, const wf_optimizer *o,
                          const train_var *v, const wf_gradient *g,
                          wf_output lr, wf_output step1, wf_status *st) {
  int sparse = g->indices.node != NULL;
  named in[16];
  int n = 0;
  wf_attr_item attrs[2];
  int na = 0;
  const char *op = NULL;
  if (v->dtype != WF_FLOAT32) {
    /* The schedule computes in float32; the update wants the var's type. */
    wf_attr_item c = {"DstT", {.type = WF_ATTR_DTYPE, .count = 1,
                               .u.dtype = v->dtype}};
    lr = train_op(m, "Cast", &lr, 1, &c, 1, st);
    if (!lr.node)
      return NULL;
  }
  in[n++] = (named){"var", v->handle};
  in[n++] = (named){"lr", lr};
  if (sparse) {
    in[n++] = (named){"indices", g->indices};
    in[n++] = (named){"values", g->values};
  } else {
    in[n++] = (named){"grad", g->dense};
  }
#define SCALAR(nm, val)                                                        \
  in[n++] = (named){nm, train_scalar(m, v->dtype, (val), st)}
  switch (o->kind) {
  case WF_OPT_SGD:
    op = sparse ? "SparseApplyGradientDescent" : "ApplyGradientDescent";
    break;
  case WF_OPT_MOMENTUM:
    op = sparse ? "SparseApplyMomentum" : "ApplyMomentum";
    in[n++] = (named){"accum", slot(m, v, "Momentum/accum", WF_INIT_ZEROS, 0, st)};
    SCALAR("momentum", o->momentum);
    attrs[na++] = (wf_attr_item){"use_nesterov", {.type = WF_ATTR_BOOL,
                                                  .count = 1, .u.b = o->nesterov}};
    break;
  case WF_OPT_ADAM:
  case WF_OPT_ADAMW:
    op = o->kind == WF_OPT_ADAMW ? "ApplyAdamW"
                                 : (sparse ? "SparseApplyAdam" : "ApplyAdam");
    if (sparse && o->kind == WF_OPT_ADAMW) {
      wf_status_set(st, WF_UNIMPLEMENTED,
                    "variable '%s': AdamW has no sparse update; its gradient "
                    "is sparse",
                    v->name);
      return NULL;
    }
    in[n++] = (named){"m", slot(m, v, "Adam/m", WF_INIT_ZEROS, 0, st)};
    wf_output vslot = slot(m, v, "Adam/v", WF_INIT_ZEROS, 0, st);
    in[n++] = (named){"v", vslot};
    /* vhat is read only with amsgrad; without it v's handle stands in. */
    in[n++] = (named){"vhat", o->amsgrad ? slot(m, v, "Adam/vhat",
                                                WF_INIT_ZEROS, 0, st)
                                         : vslot};
    SCALAR("beta1", o->beta1);
    SCALAR("beta2", o->beta2);
    SCALAR("epsilon", o->epsilon);
    in[n++] = (named){"step", step1};
    if (o->kind == WF_OPT_ADAMW)
      SCALAR("weight_decay", o->weight_decay);
    attrs[na++] = (wf_attr_item){"amsgrad", {.type = WF_ATTR_BOOL, .count = 1,
                                             .u.b = o->amsgrad}};
    break;
  case WF_OPT_RMSPROP:
    op = sparse ? "SparseApplyRMSProp"
                : (o->centered ? "ApplyCenteredRMSProp" : "ApplyRMSProp");
    if (sparse && o->centered) {
      wf_status_set(st, WF_UNIMPLEMENTED,
                    "variable '%s': centered RMSprop has no sparse update",
                    v->name);
      return NULL;
    }
    in[n++] = (named){"ms", slot(m, v, "RMSProp/ms", WF_INIT_ZEROS, 0, st)};
    in[n++] = (named){"mom", slot(m, v, "RMSProp/mom", WF_INIT_ZEROS, 0, st)};
    if (o->centered)
      in[n++] = (named){"mg", slot(m, v, "RMSProp/mg", WF_INIT_ZEROS, 0, st)};
    SCALAR("rho", o->rho);
    SCALAR("momentum", o->momentum);
    SCALAR("epsilon", o->epsilon);
    break;
  case WF_OPT_ADAGRAD:
    op = sparse ? "SparseApplyAdagrad" : "ApplyAdagrad";
    in[n++] = (named){"accum", slot(m, v, "Adagrad/accum", WF_INIT_CONSTANT,
                                    o->initial_accumulator, st)};
    SCALAR("epsilon", o->epsilon);
    break;
  }
#undef SCALAR
  if (!op) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "unknown optimizer %d",
                  (int)o->kind);
    return NULL;
  }
  for (int k = 0; k < n; k++)
    if (!in[k].value.node)
      return NULL; /* st says what failed */
  return add_named(m, op, in, n, attrs, na, st);
}

wf_node *wf_model_minimize(wf_model *m, wf_output loss,
                           const wf_optimizer *opt, wf_status *st) {
  wf_optimizer o;
  memset(&o, 0, sizeof o);
  if (!opt || opt->struct_size < offsetof(wf_optimizer, clip_norm)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "minimize: an optimizer made by wf_optimizer_defaults is "
                  "needed");
    return NULL;
  }
  memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
  if (!loss.node)
    return NULL;

  /* The trainable variables read in the training pass. */
  int nv = 0;
  train_var **vars = calloc((size_t)m->num_vars + 1, sizeof *vars);
  wf_output *xs = calloc((size_t)m->num_vars + 1, sizeof *xs);
  wf_gradient *gs = calloc((size_t)m->num_vars + 1, sizeof *gs);
  wf_node **applies = calloc((size_t)m->num_vars + 1, sizeof *applies);
  wf_output *clip_in = calloc((size_t)m->num_vars + 2, sizeof *clip_in);
  wf_node *train = NULL;
  if (!vars || !xs || !gs || !applies || !clip_in) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "minimize: out of memory");
    goto done;
  }
  for (int i = 0; i < m->num_vars; i++) {
    train_var *v = m->vars[i];
    if (v->trainable && v->read_train.node) {
      vars[nv] = v;
      xs[nv++] = v->read_train;
    }
  }
  if (nv == 0) {
    wf_status_set(st, WF_FAILED_PRECONDITION,
                  "minimize: the model has no trainable variable read in a "
                  "training pass");
    goto done;
  }
  if (wf_graph_add_gradients(m->g, &loss, 1, NULL, xs, nv, gs, st))
    goto done;
  /* Replicas average their gradients before anything reads them (the
   * clipping norm included), so every task applies the same update. */
  if (m->data_parallel &&
      wf_graph_add_gradient_mean(m->g, gs, nv, m->bucket_bytes, st)) {
    wf_status_prefix(st, "minimize");
    goto done;
  }

  if (wf_graph_push_scope(m->g, "train", st))
    goto done;
  train_var *gsv = global_step_var(m, st);
  wf_output step = gsv ? train_read(m, gsv, st) : (wf_output){NULL, 0};
  wf_output one = train_scalar(m, WF_INT64, 1, st);
  wf_output step1 = {NULL, 0};
  if (step.node && one.node) {
    wf_output in[2] = {step, one};
    step1 = train_op(m, "Add", in, 2, NULL, 0, st);
  }
  wf_output lr = step.node ? learning_rate(m, &o, step, st)
                           : (wf_output){NULL, 0};
  if (!step1.node || !lr.node)
    goto pop;

  /* Clipping by global norm over every gradient (sparse values too). */
  if (o.clip_norm > 0) {
    int nc = 0;
    for (int i = 0; i < nv; i++)
      if (gs[i].dense.node || gs[i].values.node)
        clip_in[nc++] = gs[i].dense.node ? gs[i].dense : gs[i].values;
    clip_in[nc] = train_scalar(m, WF_FLOAT32, o.clip_norm, st);
    wf_node *clip = clip_in[nc].node
                        ? wf_graph_add_op(m->g, "ClipByGlobalNorm", NULL,
                                            clip_in, nc + 1, NULL, 0, st)
                        : NULL;
    if (!clip)
      goto pop;
    for (int i = 0, k = 0; i < nv; i++) {
      if (gs[i].dense.node)
        gs[i].dense = (wf_output){clip, k++};
      else if (gs[i].values.node)
        gs[i].values = (wf_output){clip, k++};
    }
  }

  int na = 0;
  for (int i = 0; i < nv; i++) {
    if (!gs[i].dense.node && !gs[i].indices.node)
      continue; /* the loss does not depend on it */
    applies[na] = apply_one(m, &o, vars[i], &gs[i], lr, step1, st);
    if (!applies[na]) {
      wf_status_prefix(st, "minimize: variable '%s'", vars[i]->name);
      goto pop;
    }
    na++;
  }

  /* global_step += 1 after every update; the step target waits for it and
   * for the batch-norm moving averages. */
  wf_node_desc *d = wf_node_desc_new(m->g, "AssignAddVariable", NULL);
  wf_node_desc_add_input(d, gsv->handle);
  wf_node_desc_add_input(d, one);
  for (int i = 0; i < na; i++)
    wf_node_desc_add_control_input(d, applies[i]);
  wf_node *inc = wf_node_desc_finish(d, st);
  if (!inc)
    goto pop;
  d = wf_node_desc_new(m->g, "NoOp", "step");
  wf_node_desc_add_control_input(d, inc);
  for (int i = 0; i < m->num_updates; i++)
    wf_node_desc_add_control_input(d, m->updates[i]);
  train = wf_node_desc_finish(d, st);
pop:
  wf_graph_pop_scope(m->g);
done:
  free(vars);
  free(xs);
  free(gs);
  free(applies);
  free(clip_in);
  return train;
}
