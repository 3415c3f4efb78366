/* tests/plugins/clash_matmul.c — "test-clash": a third-party plugin that
 * defines MatMul with one input, clashing with ops-math's MatMul. Whatever
 * the search order, ops-math is registered first and this plugin is the
 * one refused (tests/plugins/test_op_clash.sh). Written on the helper
 * layer; it has no kernel (it is never loaded). */
#include <weft/plugin_aux.h>

WFX_PLUGIN(clash_matmul, 1, 0, .name = "test-clash", .version = "1.0",
           .ops = WFX_LIST(wf_op_def,
                           WFX_OP(.name = "MatMul",
                                  .inputs = WFX_ARGS(WF_ARG_FIXED(
                                      "a", WF_FLOAT32, "(N) the only input")),
                                  .outputs = WFX_ARGS(WF_ARG_FIXED(
                                      "y", WF_FLOAT32, "(N) output")),
                                  .shape_fn = wfx_shape_like_input0,
                                  .doc = "Not ops-math's MatMul.")))
