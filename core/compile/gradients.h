/* core/compile/gradients.h — autodiff's pieces for other rooms
 * (core/compile/gradients.c; the application API is weft/gradients.h). */
#ifndef WF_CORE_GRADIENTS_H
#define WF_CORE_GRADIENTS_H

#include <weft/gradients.h>

/* The gradient gr as one dense output in *out: gr->dense itself, or for a
 * sparse one the node autodiff adds where it needs a dense value (the
 * rows added up into a tensor of dense_shape); a NULL node for no
 * gradient. 0, or the code with st set (NOT_FOUND: no loaded plugin
 * defines the op). */
int wf__gradient_dense(wf_graph *g, const wf_gradient *gr, wf_output *out,
                       wf_status *st);

#endif
