/* examples/hello_graph.c — the smallest complete weft program: build a graph
 * for y = relu(x · W + b), open a session, feed x, fetch y, and print it.
 *
 *   examples/hello_graph
 *
 * Every call that can fail takes a wf_status and returns its code; this
 * program stops at the first error and prints the status message. */
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft.h>

static void check(int failed, wf_status *st, const char *what) {
  if (failed) {
    fprintf(stderr, "hello_graph: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

/* A float32 tensor of the given shape holding vals. */
static wf_tensor *tensor(const int64_t *dims, int rank, const float *vals,
                         wf_status *st) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  check(t == NULL, st, "tensor");
  float *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    p[i] = vals[i];
  return t;
}

static wf_node *constant(wf_graph *g, const char *name, wf_tensor *t,
                         wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node *n = wf_node_desc_finish(d, st);
  check(n == NULL, st, name);
  wf_tensor_release(t); /* the graph keeps its own reference */
  return n;
}

static wf_node *op(wf_graph *g, const char *type, const char *name,
                   wf_node *a, wf_node *b, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, type, name);
  wf_node_desc_add_input(d, (wf_output){a, 0});
  if (b)
    wf_node_desc_add_input(d, (wf_output){b, 0});
  wf_node *n = wf_node_desc_finish(d, st);
  check(n == NULL, st, name);
  return n;
}

int main(void) {
  wf_status *st = wf_status_new();
  /* Plugins come from $WEFT_CONFIG / $WEFT_PLUGIN_PATH / the install. */
  wf_runtime *rt = wf_runtime_new(NULL, st);
  check(rt == NULL, st, "runtime");
  wf_graph *g = wf_graph_new(rt);

  /* x: (N, 3) fed at run time; W: (3, 2); b: (2,). */
  int64_t xdims[2] = {WF_UNKNOWN_DIM, 3};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", xdims, 2);
  wf_node *x = wf_node_desc_finish(d, st);
  check(x == NULL, st, "x");

  int64_t wdims[2] = {3, 2}, bdims[1] = {2};
  const float wv[6] = {1, -1, 0.5f, 2, -2, 0.25f}, bv[2] = {0.5f, -1};
  wf_node *w = constant(g, "W", tensor(wdims, 2, wv, st), st);
  wf_node *b = constant(g, "b", tensor(bdims, 1, bv, st), st);
  wf_node *xw = op(g, "MatMul", "xW", x, w, st);
  wf_node *z = op(g, "BiasAdd", "z", xw, b, st);
  wf_node *y = op(g, "Relu", "y", z, NULL, st);

  wf_session *s = wf_session_new(g, st);
  check(s == NULL, st, "session");
  int64_t in_dims[2] = {2, 3};
  const float xv[6] = {1, 2, 3, -1, 0, 1};
  wf_tensor *xin = tensor(in_dims, 2, xv, st);
  wf_output feed = {x, 0}, fetch = {y, 0};
  wf_tensor *out = NULL;
  check(wf_session_run(s, NULL, &feed, &xin, 1, &fetch, &out, 1, NULL, 0,
                       NULL, st),
        st, "run");

  printf("y = relu(x W + b), x (2, 3), W (3, 2), b (2,):\n");
  const float *yv = wf_tensor_data(out);
  for (int i = 0; i < 2; i++)
    printf("  [% .4f % .4f]\n", (double)yv[2 * i], (double)yv[2 * i + 1]);

  wf_tensor_release(out);
  wf_tensor_release(xin);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
