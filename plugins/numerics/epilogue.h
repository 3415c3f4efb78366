/* plugins/numerics/epilogue.h — the epilogue of the fused ops _FusedMatMul
 * and _FusedConv2D: their `fused_ops` attribute (BiasAdd, then at most one
 * activation) and the bias-and-activation pass over an output. The math
 * and nn op plugins and the CPU device plugin all use this one copy, so a
 * fused op's activation gives the same bits wherever it runs; it does no
 * matrix product or convolution itself. */
#ifndef WF_NUMERICS_EPILOGUE_H
#define WF_NUMERICS_EPILOGUE_H

#include <stdint.h>

#include <weft/plugin_aux.h>

/* The activation after the bias. */
typedef enum opc_act {
  OPC_ACT_NONE = 0,
  OPC_ACT_RELU,
  OPC_ACT_SIGMOID,
  OPC_ACT_TANH,
  OPC_ACT_ELU,
  OPC_ACT_GELU,      /* exact: x/2 * erfc(-x / sqrt 2) */
  OPC_ACT_LEAKY_RELU /* slope alpha for x < 0 */
} opc_act;

typedef struct opc_fused {
  int act;      /* opc_act */
  double alpha; /* OPC_ACT_LEAKY_RELU */
} opc_fused;

/* The `fused_ops` list attribute's documentation, for the op tables. */
#define OPC_FUSED_OPS_DOC                                                      \
  "the fused steps in order: \"BiasAdd\", then at most one of \"Relu\", "     \
  "\"Sigmoid\", \"Tanh\", \"Elu\", \"Gelu\" (exact), \"LeakyRelu\" (slope "   \
  "attr alpha)"

/* Reads attributes fused_ops and alpha of the node; INVALID_ARGUMENT naming
 * the offending entry when the list is not BiasAdd followed by at most one
 * known activation. */
int opc_fused_shape_attrs(const wf_shape_ctx *ctx, opc_fused *f,
                          wf_status *st);
int opc_fused_kernel_attrs(const wf_kernel_ctx *ctx, opc_fused *f,
                           wf_status *st);

/* y, viewed as (outer, c, inner) of dtype (float32 or float64), gets
 * y[o, k, i] = act(y[o, k, i] + bias[k]), the bias added in the dtype as
 * BiasAdd does and the activation computed as the math plugin's op. */
void opc_fused_apply(int32_t dtype, void *y, const void *bias, int64_t outer,
                     int64_t c, int64_t inner, const opc_fused *f);

#endif /* WF_NUMERICS_EPILOGUE_H */
