/* tests/tools/test_graph_cli_fixture.c — writes the graph file that
 * test_graph_cli.sh looks into: a small classifier built with the layers
 * API (dense layers, one of them on a requested device, dropout, softmax
 * cross-entropy, Adam), with the built-in plugins of the build tree. Prints
 * the names the script needs as NAME=VALUE lines. Not a test by itself. */
#include <config.h>

#include <stdio.h>

#include <weft/weft.h>

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dt,
                             const int64_t *dims, int rank, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

int main(int argc, char **argv) {
  const int64_t xd[2] = {8, 12}, yd[1] = {8};
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  wf_graph *g = NULL;
  wf_model *m = NULL;
  wf_node *train = NULL, *init = NULL;
  wf_output x, y, h, loss = {NULL, 0};
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  int rc = 1;

  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.wfg\n", argv[0]);
    return 2;
  }
  rt = wf_runtime_new(NULL, st);
  if (!rt)
    goto done;
  g = wf_graph_new(rt);
  x = placeholder(g, "x", WF_FLOAT32, xd, 2, st);
  y = placeholder(g, "labels", WF_INT32, yd, 1, st);
  if (!x.node || !y.node || !(m = wf_model_new(g, 7, st)))
    goto done;
  wf_model_begin(m, 1);
  if (wf_graph_push_device(g, "cpu:0", st))
    goto done;
  h = wf_layer_dense(m, x, 16, WF_ACT_RELU, st);
  wf_graph_pop_device(g);
  if (h.node)
    h = wf_layer_dropout(m, h, 0.25, st);
  if (h.node)
    h = wf_layer_dense(m, h, 4, WF_ACT_NONE, st);
  if (h.node)
    loss = wf_loss_sparse_softmax_cross_entropy(m, h, y, st);
  if (!loss.node || !(train = wf_model_minimize(m, loss, &opt, st)) ||
      !(init = wf_model_init_op(m, st)) || wf_graph_save(g, argv[1], st))
    goto done;
  printf("loss=%s:%d\ntrain=%s\ninit=%s\nlogits=%s\n", wf_node_name(loss.node),
         (int)loss.index, wf_node_name(train), wf_node_name(init),
         wf_node_name(h.node));
  rc = 0;
done:
  if (rc)
    fprintf(stderr, "%s: %s\n", argv[0], wf_status_message(st));
  wf_model_free(m);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return rc;
}
