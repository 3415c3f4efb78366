/* tests/serve/make_model.c — writes the small saved model the server's tests
 * serve: `make_model DIR SCALE`. Its signatures cover what the server must
 * handle (every value below is scaled by SCALE, so versions differ):
 *   serving_default  x float32 (N, 4) -> y float32 (N, 3) = x W SCALE + b,
 *                    cls int64 (N) = argmax of y
 *   add              a, b float64 (N, 2) -> sum float64 (N, 2) = a + b,
 *                    pos bool (N, 2) = a != 0
 *   bytes            u uint8 (N, L) -> total int32 (N) = sum of each row
 *   fixed            s int32 (3) -> twice int32 (3) = s + s (no batch
 *                    dimension: never batched)
 * It exports through the public API only, as any program would. */
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft.h>

static wf_status *st;

static void check(int failed, const char *what) {
  if (failed) {
    fprintf(stderr, "make_model: %s: %s\n", what, wf_status_message(st));
    exit(1);
  }
}

static wf_node *placeholder(wf_graph *g, const char *name, wf_dtype t,
                            const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", t);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  wf_node *n = wf_node_desc_finish(d, st);
  check(!n, name);
  return n;
}

static wf_node *constant(wf_graph *g, const char *name, const int64_t *dims,
                         int rank, const float *vals) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, st);
  check(!t, name);
  float *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    p[i] = vals[i];
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node *n = wf_node_desc_finish(d, st);
  check(!n, name);
  wf_tensor_release(t);
  return n;
}

static wf_node *op2(wf_graph *g, const char *type, const char *name, wf_node *a,
                    wf_node *b) {
  wf_node_desc *d = wf_node_desc_new(g, type, name);
  wf_node_desc_add_input(d, (wf_output){a, 0});
  if (b)
    wf_node_desc_add_input(d, (wf_output){b, 0});
  wf_node *n = wf_node_desc_finish(d, st);
  check(!n, name);
  return n;
}

static wf_node *cast(wf_graph *g, const char *name, wf_node *x, wf_dtype from,
                     wf_dtype to) {
  wf_node_desc *d = wf_node_desc_new(g, "Cast", name);
  wf_node_desc_add_input(d, (wf_output){x, 0});
  wf_node_desc_set_attr_dtype(d, "SrcT", from);
  wf_node_desc_set_attr_dtype(d, "DstT", to);
  wf_node *n = wf_node_desc_finish(d, st);
  check(!n, name);
  return n;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_model DIR SCALE\n");
    return 2;
  }
  float scale = strtof(argv[2], NULL);
  st = wf_status_new();
  wf_runtime *rt = wf_runtime_new(NULL, st);
  check(!rt, "runtime");
  wf_graph *g = wf_graph_new(rt);

  int64_t xd[2] = {-1, 4}, wd[2] = {4, 3}, bd[1] = {3};
  float wv[12] = {1, 0, -1, 0.5f, 2, 0, -1, 1, 3, 0.25f, -0.5f, 1};
  for (int i = 0; i < 12; i++)
    wv[i] *= scale;
  const float bv[3] = {0.1f, -0.2f, 0.3f};
  wf_node *x = placeholder(g, "x", WF_FLOAT32, xd, 2);
  wf_node *w = constant(g, "W", wd, 2, wv);
  wf_node *b = constant(g, "b", bd, 1, bv);
  wf_node *y = op2(g, "BiasAdd", "y", op2(g, "MatMul", "xW", x, w), b);
  wf_node_desc *d = wf_node_desc_new(g, "ArgMax", "cls");
  wf_node_desc_add_input(d, (wf_output){y, 0});
  wf_node_desc_set_attr_int(d, "axis", 1);
  wf_node_desc_set_attr_dtype(d, "output_type", WF_INT64);
  wf_node *cls = wf_node_desc_finish(d, st);
  check(!cls, "cls");

  int64_t ad[2] = {-1, 2};
  wf_node *a = placeholder(g, "a", WF_FLOAT64, ad, 2);
  wf_node *bb = placeholder(g, "bb", WF_FLOAT64, ad, 2);
  wf_node *sum = op2(g, "Add", "sum", a, bb);
  wf_node *pos = cast(g, "pos", a, WF_FLOAT64, WF_BOOL);

  int64_t ud[2] = {-1, -1};
  wf_node *u = placeholder(g, "u", WF_UINT8, ud, 2);
  wf_node *u32 = cast(g, "u32", u, WF_UINT8, WF_INT32);
  d = wf_node_desc_new(g, "Sum", "total");
  wf_node_desc_add_input(d, (wf_output){u32, 0});
  int64_t axes[1] = {1};
  wf_node_desc_set_attr_int_list(d, "axes", axes, 1);
  wf_node *total = wf_node_desc_finish(d, st);
  check(!total, "total");

  int64_t sd[1] = {3};
  wf_node *s = placeholder(g, "s", WF_INT32, sd, 1);
  wf_node *twice = op2(g, "Add", "twice", s, s);

  wf_session *sess = wf_session_new(g, st);
  check(!sess, "session");
  const char *k0[] = {"x"}, *o0[] = {"y", "cls"};
  wf_output i0[] = {{x, 0}}, f0[] = {{y, 0}, {cls, 0}};
  const char *k1[] = {"a", "b"}, *o1[] = {"sum", "pos"};
  wf_output i1[] = {{a, 0}, {bb, 0}}, f1[] = {{sum, 0}, {pos, 0}};
  const char *k2[] = {"u"}, *o2[] = {"total"};
  wf_output i2[] = {{u, 0}}, f2[] = {{total, 0}};
  const char *k3[] = {"s"}, *o3[] = {"twice"};
  wf_output i3[] = {{s, 0}}, f3[] = {{twice, 0}};
  wf_signature_def sigs[] = {{"serving_default", 1, k0, i0, 2, o0, f0},
                             {"add", 2, k1, i1, 2, o1, f1},
                             {"bytes", 1, k2, i2, 1, o2, f2},
                             {"fixed", 1, k3, i3, 1, o3, f3}};
  check(wf_saved_model_export(sess, argv[1], sigs, 4, st), "export");
  wf_session_free(sess);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}
