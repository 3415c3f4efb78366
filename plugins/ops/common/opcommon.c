/* plugins/ops/common/opcommon.c — the op plugins' shared gradient helper
 * declared in opcommon.h. Everything goes through the host table; nothing
 * here calls libweft. */
#include <config.h>

#include "opcommon.h"

wf_output opc_grad_sum_to(wf_grad_ctx *ctx, wf_output g, wf_output like,
                          wf_status *st) {
  if (g.node && wfx_grad_same_known_shape(ctx, g, like))
    return g;
  return wfx_grad_op2(ctx, "SumToLike", g, like, st);
}
