/* core/compile/pass_constant_folding.c — constant folding on a signature's working
 * graph: a node whose data inputs are all constant nodes (of an op with
 * WF_OP_CONSTANT: Const) is evaluated once, with the real CPU kernel, and
 * replaced by constant nodes holding its outputs
 * (when each is within [passes] constant_folding_max_bytes). Folding
 * repeats until nothing more folds, so whole constant subgraphs collapse.
 * A replacement Const waits for whatever the folded node waited for (see
 * collect_gates), so it fires only when the original would have.
 *
 * It never folds stateful, random or fed nodes, nor nodes without a CPU
 * kernel, nor nodes whose kernel fails (that error stays for run time). */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "plugin/settings.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "plugin/kernel_choice.h"
#include "compile/passes.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

#define FOLD_NEVER (WF_OP_STATEFUL | WF_OP_RANDOM | WF_OP_SOURCE_FED)

/* The value of a constant node (an op with WF_OP_CONSTANT: Const), or
 * NULL when n is not one. */
static const wf_tensor *const_value(const wf_node *n) {
  if (!(n->op->def.flags & WF_OP_CONSTANT))
    return NULL;
  const wf_attr_value *v = wf__node_attr(n, "value");
  return v && v->type == WF_ATTR_TENSOR ? v->u.tensor : NULL;
}

/* 1 when n may be folded: a computation of Consts only (or of nothing),
 * with outputs and no resource handles among them. */
static int foldable(const wf_node *n) {
  if ((n->op->def.flags & FOLD_NEVER) || n->num_outputs == 0 || const_value(n))
    return 0;
  for (int o = 0; o < n->num_outputs; o++)
    if (n->output_dtypes[o] == WF_RESOURCE)
      return 0;
  for (int i = 0; i < n->num_inputs; i++)
    if (!const_value(n->inputs[i].node))
      return 0;
  return 1;
}

/* 1 when some data consumer reads n or the signature fetches it: folding
 * anything else would only add Consts nobody reads. */
static int wanted(const wf__work *w, const wf_node *n) {
  if (n->num_data_consumers > 0)
    return 1;
  for (int f = 0; f < w->sig.nfetches; f++)
    if (w->fetches[f].node == n)
      return 1;
  return 0;
}

/* Appends c to the list if it is not there yet. */
static void add_gate(wf_node **gates, int *ngates, wf_node *c) {
  for (int k = 0; k < *ngates; k++)
    if (gates[k] == c)
      return;
  gates[(*ngates)++] = c;
}

/* Which nodes gate n, so that its replacement fires exactly when n would
 * have: n's own control inputs, and those of each input Const (a Const
 * fires once its control inputs have; one without any fires at once and
 * gates nothing, so it is not kept alive as a dependency). Since folded
 * Consts carry their gates the same way, this covers every gate upstream.
 * gates has room for n's and its inputs' control inputs; returns the
 * count. */
static int collect_gates(const wf_node *n, wf_node **gates) {
  int ngates = 0;
  for (int k = 0; k < n->num_control_inputs; k++)
    add_gate(gates, &ngates, n->control_inputs[k]);
  for (int i = 0; i < n->num_inputs; i++) {
    const wf_node *c = n->inputs[i].node;
    for (int k = 0; k < c->num_control_inputs; k++)
      add_gate(gates, &ngates, c->control_inputs[k]);
  }
  return ngates;
}

static int max_gates(const wf_node *n) {
  int m = n->num_control_inputs;
  for (int i = 0; i < n->num_inputs; i++)
    m += n->inputs[i].node->num_control_inputs;
  return m;
}

/* Adds a node of the constant op konst holding t in place of output o of
 * n, gated by gates. */
static wf_node *add_const(wf_graph *g, const char *konst, const wf_node *n,
                          int o, wf_tensor *t, wf_node *const *gates,
                          int ngates, wf_status *st) {
  char base[512], name[560];
  if (n->num_outputs == 1)
    snprintf(base, sizeof base, "%s_folded", n->name);
  else
    snprintf(base, sizeof base, "%s_folded_%d", n->name, o);
  wf_graph_unique_name(g, base, name, sizeof name);
  wf_node_desc *d = wf__node_desc_new_full(g, konst, name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", n->output_dtypes[o]);
  wf_node_desc_set_device(d, n->device);
  for (int k = 0; k < ngates; k++)
    wf_node_desc_add_control_input(d, gates[k]);
  return wf_node_desc_finish(d, st);
}

/* Folds n if its kernel runs and its outputs fit the cap: *folded is set
 * to 1 then. Errors are only those of rewriting the graph. */
static int fold(wf__pass_env *env, const char *konst, wf_node *n,
                int *folded, wf_status *st) {
  wf__work *w = env->work;
  const wf_tensor *stack_in[8], **in = stack_in;
  wf_tensor *stack_out[8], **out = stack_out;
  wf_node *stack_gates[16], **gates = stack_gates;
  wf_status ks = {WF_OK, NULL};
  int nin = n->num_inputs, nout = n->num_outputs, rc = 0, ran = 0;

  *folded = 0;
  if (nin > 8)
    in = wf__calloc((size_t)nin, sizeof *in);
  if (nout > 8)
    out = wf__calloc((size_t)nout, sizeof *out);
  if (max_gates(n) > 16)
    gates = wf__calloc((size_t)max_gates(n), sizeof *gates);
  if (!in || !out || !gates) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "folding node '%s': out of memory", n->name);
    goto done;
  }
  /* No CPU kernel, or one that fails: leave the node to the executor
   * (which reports a failure when the step really runs it). */
  const wf__kernel *k = wf__kernel_select(env->rt, n, "cpu", &ks);
  if (!k)
    goto done;
  for (int i = 0; i < nin; i++)
    in[i] = const_value(n->inputs[i].node);
  if (env->rt->run_kernel(k, n, in, out, &ks)) {
    wf__log(WF_LOG_DEBUG, "constant folding", "node '%s' not folded: %s",
            n->name, wf_status_message(&ks));
    goto done;
  }
  ran = 1;
  for (int o = 0; o < nout; o++) {
    if ((long long)wf_tensor_nbytes(out[o]) >
        env->cfg->constant_folding_max_bytes) {
      wf__log(WF_LOG_DEBUG, "constant folding",
              "node '%s' not folded: output %d has %zu bytes, more than "
              "[passes] constant_folding_max_bytes = %lld",
              n->name, o, wf_tensor_nbytes(out[o]),
              env->cfg->constant_folding_max_bytes);
      goto done;
    }
  }

  int ngates = collect_gates(n, gates);
  for (int o = 0; o < nout; o++) {
    wf_node *c = add_const(w->g, konst, n, o, out[o], gates, ngates, st);
    if (!c) {
      rc = wf_status_code(st);
      wf_status_prefix(st, "folding node '%s'", n->name);
      goto done;
    }
    if (n->num_data_consumers > 0 &&
        wf__graph_redirect(w->g, (wf_output){n, o}, (wf_output){c, 0}, st)) {
      rc = wf_status_code(st);
      goto done;
    }
    for (int f = 0; f < w->sig.nfetches; f++)
      if (w->fetches[f].node == n && w->fetches[f].index == o)
        w->fetches[f] = (wf_output){c, 0};
  }
  *folded = 1;
done:
  if (ran)
    for (int o = 0; o < nout; o++)
      wf_tensor_release(out[o]);
  wf_status_reset(&ks);
  if (in != stack_in)
    wf__free(in);
  if (out != stack_out)
    wf__free(out);
  if (gates != stack_gates)
    wf__free(gates);
  return rc;
}

int wf__pass_constant_folding(wf__pass_env *env, wf_status *st) {
  wf__work *w = env->work;
  unsigned char *live = NULL;
  int rc = 0, changed = 1;

  /* Without a constant op there is nothing to fold into. */
  const wf__op *konst = wf__registry_find_op_with_flag(env->rt->reg,
                                                       WF_OP_CONSTANT);
  if (!konst)
    return 0;
  while (changed && !rc) {
    changed = 0;
    /* Only what the signature still needs: nodes other passes left without
     * consumers are not worth evaluating. */
    int n = w->g->num_nodes;
    live = wf__calloc((size_t)n + 1, 1);
    if (!live) {
      rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "constant folding: out of memory");
      break;
    }
    if (wf__prune(w->g, &w->sig, live, st) < 0) {
      rc = wf_status_code(st);
      break;
    }
    /* Consts added while sweeping are never folded again. */
    for (int id = 0; id < n && !rc; id++) {
      wf_node *nd = w->g->nodes[id];
      int folded = 0;
      if (live[id] && foldable(nd) && wanted(w, nd)) {
        rc = fold(env, konst->def.name, nd, &folded, st);
        changed |= folded;
      }
    }
    wf__free(live);
    live = NULL;
  }
  wf__free(live);
  return rc;
}
