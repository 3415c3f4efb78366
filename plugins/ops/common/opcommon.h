/* plugins/ops/common/opcommon.h — what the op plugins share beyond the
 * SDK's helper layer (<weft/plugin_aux.h>, included here, which holds the
 * host, dtypes, shapes, broadcasting, attribute reads and gradient node
 * builders): the gradient helper that needs one of their ops (SumToLike,
 * from ops-math).
 *
 * Linked statically into each op plugin (libopcommon.la); it reaches the
 * core only through the host table (wfx_host). It holds no op definitions
 * and no kernels. */
#ifndef WF_OPS_OPCOMMON_H
#define WF_OPS_OPCOMMON_H

#include <weft/plugin_aux.h>

/* g summed back to the shape of `like` over the dimensions along which
 * like was broadcast to g's shape (ops-math's SumToLike): the gradient of
 * an input of a broadcasting op. Returns g itself when both static shapes
 * are fully known and equal. As the layer's builders, it adds nothing and
 * returns a NULL output when g's node is NULL (st says why). */
wf_output opc_grad_sum_to(wf_grad_ctx *ctx, wf_output g, wf_output like,
                          wf_status *st);

#endif /* WF_OPS_OPCOMMON_H */
