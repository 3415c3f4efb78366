/* weft/gradients.h — symbolic differentiation as a graph transformation.
 *
 * wf_graph_add_gradients adds to the graph the nodes that compute the
 * gradients of ys with respect to xs, following TensorFlow's algorithm:
 * backwards from ys over the nodes that lie between xs and ys, each node's
 * gradient function run once all gradients arriving at its outputs are
 * known (several are summed with AddN). StopGradient and ops registered as
 * not differentiable let nothing through; an op on the path with no
 * gradient registered is an error naming it. */
#ifndef WEFT_GRADIENTS_H
#define WEFT_GRADIENTS_H

#include <weft/export.h>
#include <weft/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The gradient of one x: dense (node non-NULL), sparse (indices.node
 * non-NULL: rows `indices` of a tensor of shape `dense_shape` hold `values`,
 * repeated indices adding up), or none (all NULL: x does not affect ys). */
typedef struct wf_gradient {
  wf_output dense;
  wf_output indices, values, dense_shape;
} wf_gradient;

/* Adds d(sum of ys)/d(xs). dys, if not NULL, gives the gradient arriving at
 * each y (default: ones of y's shape, i.e. OnesLike(y)). New nodes are
 * named under the scope "gradients" (made unique). On error the graph keeps
 * the nodes added so far (they are unreachable from anything that existed
 * before) and st names the op. Errors: NOT_FOUND (an op on the path has no
 * gradient registered), INVALID_ARGUMENT (bad outputs, non-float ys). */
WF_API int wf_graph_add_gradients(wf_graph *g, const wf_output *ys, int nys,
                                  const wf_output *dys, const wf_output *xs,
                                  int nxs, wf_gradient *dxs, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_GRADIENTS_H */
