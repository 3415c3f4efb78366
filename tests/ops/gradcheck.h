/* tests/ops/gradcheck.h — checks symbolic gradients against central finite
 * differences, for the gradient tests of every op plugin. It knows nothing
 * about any particular op: a test describes its inputs and a callback that
 * builds y from them, and gc_check does the rest through the public API.
 *
 * What gc_check does, for a spec with inputs x_0 .. x_{n-1}:
 *  1. builds a graph of float64 Placeholders x_i (of the given shapes, or of
 *     the given ranks with every dim unknown when spec.unknown_dims is set),
 *     calls spec.build to make y from them (y must be float64: cast back
 *     inside build when the op under test works in another type), and adds
 *     loss = Sum(y * w) for a float64 Placeholder w;
 *  2. calls wf_graph_add_gradients(loss -> x_0 .. x_{n-1}) and checks each
 *     gradient's static shape is compatible with x_i's;
 *  3. at spec.points random points (values from each input's gc_input),
 *     with a new random w in [-1, 1] of y's shape each time (so the
 *     gradient arriving at y is random, not ones), runs the session once
 *     for the analytic gradients (dense, or sparse rows scattered into a
 *     dense array with repeated indices adding up, or none = zero), and
 *     twice per element of every x_i for the central difference
 *       (loss(x + h e_j) - loss(x - h e_j)) / 2h,  h = step * max(1, |x_j|);
 *  4. compares each pair: |analytic - numeric| <= rtol * max(|analytic|,
 *     |numeric|) + atol. Defaults: step 1e-6, rtol 1e-6, atol 1e-7 (for
 *     float64 ops on values of order 1; an op that computes in float32 needs
 *     about step 1e-3, rtol 2e-3, atol 1e-4).
 * Every mismatch is printed to stderr with the spec's name, the input, the
 * element (flat index and coordinates), x there, and both values (at most
 * 8 per input and point).
 *
 * Choosing points: finite differences are only valid where the function is
 * smooth within h of the point. Keep inputs away from kinks by
 * construction: gc_input.min_abs keeps |x| away from 0 (Relu, Abs),
 * min_gap keeps the values of one input apart (Max, Min ties), and a fill
 * callback can place values anywhere else it must (Maximum(x, y) with x
 * and y never close).
 *
 * Using it from another test (engineer D: array and nn gradients): add
 * tests/ops/gradcheck.c and gradcheck.h to the program's SOURCES, load the
 * plugins the ops need and a device (ops-math, ops-array and device_cpu are
 * needed in any case: the loss uses Mul and Sum and their gradients), and
 * in each test:
 *
 *   static int build_tanh(wf_graph *g, const wf_output *x, wf_output *y,
 *                         const void *arg, wf_status *st) {
 *     return gc_op(g, "Tanh", x, 1, NULL, y, st);
 *   }
 *   static void test_tanh_gradient(void **state) {
 *     gc_spec s = {.name = "Tanh", .num_inputs = 1, .build = build_tanh,
 *                  .in = {{.rank = 2, .dims = {3, 4}, .lo = -2, .hi = 2}}};
 *     assert_int_equal(gc_check(rt, &s), 0);
 *   }
 *
 * gc_check returns 0 when every element matched, the number of mismatches
 * otherwise, or -1 when the graph, gradients or session could not be made
 * (the status is printed). Not thread-safe; each call builds and frees its
 * own graph and session. */
#ifndef WF_TESTS_GRADCHECK_H
#define WF_TESTS_GRADCHECK_H

#include <stdint.h>

#include <weft/weft.h>

#define GC_MAX_INPUTS 4

/* A small deterministic generator (splitmix64). */
typedef struct gc_rng {
  uint64_t state;
} gc_rng;

/* Uniform in [lo, hi). */
double gc_uniform(gc_rng *r, double lo, double hi);

/* Fills x[0..n-1] with the values of one input at one point; arg is the
 * gc_input's fill_arg. */
typedef void gc_fill_fn(double *x, int64_t n, gc_rng *r, const void *arg);

/* How the values of one input are drawn. With fill NULL: uniform in
 * [lo, hi) (both 0: [-2, 2)), redrawn while |x| < min_abs, and, when
 * min_gap > 0, spread so that any two values are at least min_gap apart
 * (hi - lo must leave room: (n - 1) * min_gap < hi - lo). */
typedef struct gc_input {
  int rank;
  int64_t dims[WF_MAX_RANK];
  double lo, hi;
  double min_abs;
  double min_gap;
  gc_fill_fn *fill;
  const void *fill_arg;
} gc_input;

/* Builds y (float64) from the placeholders x[0..num_inputs-1] into graph
 * g; may add any other nodes (Consts, Casts). Returns 0, or the code with
 * st set. arg is the spec's build_arg. */
typedef int gc_build_fn(wf_graph *g, const wf_output *x, wf_output *y,
                        const void *arg, wf_status *st);

typedef struct gc_spec {
  const char *name; /* in every message: op and case, "Add (3,1)+(1,4)" */
  int num_inputs;   /* 1 .. GC_MAX_INPUTS */
  gc_input in[GC_MAX_INPUTS];
  gc_build_fn *build;
  const void *build_arg;
  int unknown_dims; /* placeholders of known rank, every dim unknown */
  int points;       /* random points to check; 0: 2 */
  double step;      /* relative step h; 0: 1e-6 */
  double rtol;      /* 0: 1e-6 */
  double atol;      /* 0: 1e-7 */
  uint64_t seed;    /* 0: derived from name */
  /* Bit i set: input i must get no gradient at all (wf_gradient all NULL);
   * a gradient there counts as a mismatch. */
  uint32_t no_gradient;
} gc_spec;

int gc_check(wf_runtime *rt, const gc_spec *spec);

/* ---- building helpers for gc_build_fn ---------------------------------- */

/* A node of op on in[0..n-1] with the given attributes (NULL-terminated
 * list of names and values; may be NULL); *y = its output 0. */
typedef struct gc_attr {
  const char *name;
  wf_attr_value value;
} gc_attr;
int gc_op(wf_graph *g, const char *op, const wf_output *in, int n,
          const gc_attr *attrs, wf_output *y, wf_status *st);

/* Attribute values for gc_attr lists. */
#define GC_BOOL(v) {.type = WF_ATTR_BOOL, .count = 1, .u.b = (v)}
#define GC_INT(v) {.type = WF_ATTR_INT, .count = 1, .u.i = (v)}
#define GC_FLOAT(v) {.type = WF_ATTR_FLOAT, .count = 1, .u.f = (v)}
#define GC_DTYPE(v) {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = (v)}
#define GC_INTS(p, n)                                                          \
  {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = (n), .u.ints = (p)}

/* A Const of dtype and shape holding data (count * element size bytes);
 * *y = its output. */
int gc_const(wf_graph *g, wf_dtype dtype, const int64_t *dims, int rank,
             const void *data, wf_output *y, wf_status *st);

#endif /* WF_TESTS_GRADCHECK_H */
