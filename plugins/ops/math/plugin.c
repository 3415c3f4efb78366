/* plugins/ops/math/plugin.c — the ops_math plugin: definitions of the math
 * ops (inputs, outputs, attributes, flags, documentation) and of the fused
 * backward ops their gradients use, the keys of their reference CPU
 * kernels, the gradient registrations, and the plugin description. Shape
 * inference and the kernels live in binary.c, unary.c, reduce.c, matmul.c,
 * unary_grad.c and reduce_grad.c; the gradient functions in grad.c.
 *
 * Semantics shared by all kernels here:
 *  - broadcasting is NumPy's: shapes align at the last dimension, each pair
 *    equal or one of them 1;
 *  - floats follow IEEE 754 (NaN propagates, x / 0 = ±inf);
 *  - integer arithmetic wraps (two's complement) and never traps: integer
 *    Div truncates toward zero, x / 0 = 0 and MIN / -1 = MIN. */
#include <config.h>

#include "math_ops.h"
#include "epilogue.h"

/* ---- attribute definitions --------------------------------------------- */

#define T_ATTR(mask)                                                           \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,           \
    .allowed_dtypes = (mask), .doc = "element type of the tensors"            \
  }
#define BOOL_ATTR(nm, def, dc)                                                 \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_BOOL,           \
    .has_default = 1,                                                          \
    .default_value = {.type = WF_ATTR_BOOL, .count = 1, .u = {.b = (def)}},    \
    .doc = (dc)                                                                \
  }

static const wf_attr_def attrs_number[] = {T_ATTR(WFX_DTYPES_NUMBER),
                                           WF_ATTR_END};
static const wf_attr_def attrs_signed[] = {T_ATTR(WFX_DTYPES_SIGNED),
                                           WF_ATTR_END};
static const wf_attr_def attrs_float[] = {T_ATTR(WFX_DTYPES_FLOAT),
                                          WF_ATTR_END};
static const wf_attr_def attrs_all[] = {T_ATTR(WFX_DTYPES_ALL), WF_ATTR_END};

static const wf_attr_def attrs_leaky_relu[] = {
    T_ATTR(WFX_DTYPES_FLOAT),
    {WF_STRUCT_INIT(wf_attr_def), .name = "alpha", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = 0.2}},
     .doc = "slope for x < 0"},
    WF_ATTR_END};

static const wf_attr_def attrs_gelu[] = {
    T_ATTR(WFX_DTYPES_FLOAT),
    BOOL_ATTR("approximate", 0,
              "false: the exact x * Phi(x) with the error function; true: "
              "the tanh approximation"),
    WF_ATTR_END};

static const wf_attr_def attrs_cast[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "SrcT", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WFX_DTYPES_ALL, .doc = "element type of x"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "DstT", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WFX_DTYPES_ALL, .doc = "element type of y"},
    WF_ATTR_END};

static const wf_attr_def attrs_reduce[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axes",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},
     .doc = "axes to reduce, negative ones counting from the end, each at "
            "most once; empty (the default): all axes"},
    BOOL_ATTR("keep_dims", 0,
              "true: reduced axes stay as dimensions of size 1"),
    WF_ATTR_END};

static const wf_attr_def attrs_reduce_grad[] = {
    T_ATTR(WFX_DTYPES_FLOAT),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axes",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},
     .doc = "the forward reduction's axes (empty: all)"},
    BOOL_ATTR("keep_dims", 0, "the forward reduction's keep_dims"),
    WF_ATTR_END};

static const wf_attr_def attrs_sum_to_like[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "Tlike", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WFX_DTYPES_ALL,
     .doc = "element type of like (only its shape is read)"},
    WF_ATTR_END};

static const wf_attr_def attrs_argmax[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axis", .type = WF_ATTR_INT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_INT, .count = 1, .u = {.i = 0}},
     .doc = "the axis searched; negative counts from the end"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "output_type", .type = WF_ATTR_DTYPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_DTYPE,
                       .count = 1,
                       .u = {.dtype = WF_INT64}},
     .allowed_dtypes = WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
     .doc = "element type of the indices: int32 or int64"},
    WF_ATTR_END};

static const wf_attr_def attrs_matmul[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    BOOL_ATTR("transpose_a", 0, "true: a is stored as (K, M)"),
    BOOL_ATTR("transpose_b", 0, "true: b is stored as (N, K)"), WF_ATTR_END};

static const char *const fused_bias_only[] = {"BiasAdd"};
static const wf_attr_def attrs_fused_matmul[] = {
    T_ATTR(WFX_DTYPES_FLOAT),
    BOOL_ATTR("transpose_a", 0, "true: a is stored as (K, M)"),
    BOOL_ATTR("transpose_b", 0, "true: b is stored as (N, K)"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "fused_ops",
     .type = WF_ATTR_LIST | WF_ATTR_STRING, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_STRING,
                       .count = 1,
                       .u = {.strings = fused_bias_only}},
     .doc = OPC_FUSED_OPS_DOC},
    {WF_STRUCT_INIT(wf_attr_def), .name = "alpha", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = 0.2}},
     .doc = "LeakyRelu's slope for x < 0"},
    WF_ATTR_END};

static const wf_attr_def attrs_batch_matmul[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    BOOL_ATTR("adj_x", 0, "true: x's matrices are stored as (K, M)"),
    BOOL_ATTR("adj_y", 0, "true: y's matrices are stored as (N, K)"),
    WF_ATTR_END};

static const wf_attr_def attrs_add_n[] = {
    T_ATTR(WFX_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1, .doc = "number of inputs (at least 1)"},
    WF_ATTR_END};

/* ---- argument lists ---------------------------------------------------- */

static const wf_arg_def in_xy[] = {
    WF_ARG_T("x", "T", "(...) any shape"),
    WF_ARG_T("y", "T", "(...) broadcastable with x"), WF_ARG_END};
static const wf_arg_def in_x[] = {WF_ARG_T("x", "T", "(...) any shape"),
                                  WF_ARG_END};
static const wf_arg_def out_z[] = {
    WF_ARG_T("z", "T", "(...) x and y's shapes broadcast"), WF_ARG_END};
static const wf_arg_def out_z_bool[] = {
    WF_ARG_FIXED("z", WF_BOOL, "(...) x and y's shapes broadcast"),
    WF_ARG_END};
static const wf_arg_def out_y[] = {WF_ARG_T("y", "T", "(...) x's shape"),
                                   WF_ARG_END};
static const wf_arg_def in_cast[] = {
    WF_ARG_T("x", "SrcT", "(...) any shape"), WF_ARG_END};
static const wf_arg_def out_cast[] = {
    WF_ARG_T("y", "DstT", "(...) x's shape"), WF_ARG_END};
static const wf_arg_def out_reduce[] = {
    WF_ARG_T("y", "T",
             "x's shape without the reduced axes (keep_dims: with them as "
             "1); () when every axis is reduced"),
    WF_ARG_END};
static const wf_arg_def out_argmax[] = {
    WF_ARG_T("index", "output_type", "x's shape without axis"), WF_ARG_END};
static const wf_arg_def in_matmul[] = {
    WF_ARG_T("a", "T", "(M, K), or (K, M) with transpose_a"),
    WF_ARG_T("b", "T", "(K, N), or (N, K) with transpose_b"), WF_ARG_END};
static const wf_arg_def out_matmul[] = {WF_ARG_T("product", "T", "(M, N)"),
                                        WF_ARG_END};
static const wf_arg_def in_fused_matmul[] = {
    WF_ARG_T("a", "T", "(M, K), or (K, M) with transpose_a"),
    WF_ARG_T("b", "T", "(K, N), or (N, K) with transpose_b"),
    WF_ARG_T("bias", "T", "(N,)"), WF_ARG_END};
static const wf_arg_def in_batch_matmul[] = {
    WF_ARG_T("x", "T", "(..., M, K), or (..., K, M) with adj_x"),
    WF_ARG_T("y", "T", "(..., K, N), or (..., N, K) with adj_y"),
    WF_ARG_END};
static const wf_arg_def out_batch_matmul[] = {
    WF_ARG_T("z", "T", "(..., M, N): batch dims of x and y broadcast"),
    WF_ARG_END};
static const wf_arg_def in_add_n[] = {
    WF_ARG_LIST("inputs", "T", "N", "N tensors of one shape (...)"),
    WF_ARG_END};
static const wf_arg_def out_add_n[] = {
    WF_ARG_T("sum", "T", "(...) the inputs' shape"), WF_ARG_END};
static const wf_arg_def in_select[] = {
    WF_ARG_FIXED("condition", WF_BOOL, "(...) broadcastable with x and y"),
    WF_ARG_T("x", "T", "(...) taken where condition is true"),
    WF_ARG_T("y", "T", "(...) taken where condition is false"), WF_ARG_END};
static const wf_arg_def out_select[] = {
    WF_ARG_T("z", "T", "(...) condition, x and y's shapes broadcast"),
    WF_ARG_END};

static const wf_arg_def in_sum_to_like[] = {
    WF_ARG_T("x", "T", "(...) a tensor that like's shape broadcasts to"),
    WF_ARG_T("like", "Tlike",
             "(...) rank at most x's; each dim (aligned at the end) 1 or "
             "x's"),
    WF_ARG_END};
static const wf_arg_def out_sum_to_like[] = {
    WF_ARG_T("y", "T", "(...) like's shape"), WF_ARG_END};
/* The fused backward ops of the activations: (dy, x) or (dy, y). */
static const wf_arg_def in_dy_x[] = {
    WF_ARG_T("dy", "T", "(...) gradient arriving at the forward output"),
    WF_ARG_T("x", "T", "(...) the forward input; dy's shape"), WF_ARG_END};
static const wf_arg_def in_dy_y[] = {
    WF_ARG_T("dy", "T", "(...) gradient arriving at the forward output"),
    WF_ARG_T("y", "T", "(...) the forward output; dy's shape"), WF_ARG_END};
static const wf_arg_def out_dx[] = {
    WF_ARG_T("dx", "T", "(...) gradient of the forward input; dy's shape"),
    WF_ARG_END};
static const wf_arg_def in_reduce_grad[] = {
    WF_ARG_T("dy", "T", "gradient arriving at the reduction's output: x's "
                        "reduced shape"),
    WF_ARG_T("x", "T", "(...) the reduction's input"), WF_ARG_END};
static const wf_arg_def in_max_min_grad[] = {
    WF_ARG_T("dy", "T", "gradient arriving at the reduction's output: x's "
                        "reduced shape"),
    WF_ARG_T("x", "T", "(...) the reduction's input"),
    WF_ARG_T("y", "T", "the reduction's output: dy's shape"), WF_ARG_END};
static const wf_arg_def out_reduce_grad[] = {
    WF_ARG_T("dx", "T", "(...) gradient of x: x's shape"), WF_ARG_END};

/* ---- op definitions ---------------------------------------------------- */

#define OP(var, nm, in, out, at, fl, shape, dc)                                \
  static const wf_op_def var = {WF_STRUCT_INIT(wf_op_def),                     \
                                .name = (nm),                                  \
                                .inputs = (in),                                \
                                .outputs = (out),                              \
                                .attrs = (at),                                 \
                                .flags = (fl),                                 \
                                .shape_fn = (shape),                           \
                                .doc = (dc)}
#define COMM WF_OP_COMMUTATIVE

OP(op_add, "Add", in_xy, out_z, attrs_number, COMM, math_shape_broadcast,
   "z = x + y elementwise, broadcasting x (...) and y (...) as NumPy does. "
   "Integers wrap on overflow.");
OP(op_sub, "Sub", in_xy, out_z, attrs_number, 0, math_shape_broadcast,
   "z = x - y elementwise with broadcasting. Integers wrap on overflow.");
OP(op_mul, "Mul", in_xy, out_z, attrs_number, COMM, math_shape_broadcast,
   "z = x * y elementwise with broadcasting. Integers wrap on overflow.");
OP(op_div, "Div", in_xy, out_z, attrs_number, 0, math_shape_broadcast,
   "z = x / y elementwise with broadcasting. Floats: IEEE division (x / 0 "
   "is +-inf, 0 / 0 is NaN). Integers: truncated toward zero as in C "
   "(-7 / 2 = -3), x / 0 = 0 without any error, and the most negative "
   "value / -1 wraps to itself.");
OP(op_maximum, "Maximum", in_xy, out_z, attrs_number, COMM,
   math_shape_broadcast,
   "z = max(x, y) elementwise with broadcasting; NaN in either gives NaN.");
OP(op_minimum, "Minimum", in_xy, out_z, attrs_number, COMM,
   math_shape_broadcast,
   "z = min(x, y) elementwise with broadcasting; NaN in either gives NaN.");
OP(op_pow, "Pow", in_xy, out_z, attrs_number, 0, math_shape_broadcast,
   "z = x ** y elementwise with broadcasting. Floats: C's pow. Integers: "
   "exact powers that wrap on overflow (0 ** 0 = 1); a negative exponent "
   "is refused at run time (INVALID_ARGUMENT).");
OP(op_equal, "Equal", in_xy, out_z_bool, attrs_all, COMM, math_shape_broadcast,
   "z = (x == y) elementwise with broadcasting, as bool. NaN equals "
   "nothing.");
OP(op_less, "Less", in_xy, out_z_bool, attrs_number, 0, math_shape_broadcast,
   "z = (x < y) elementwise with broadcasting, as bool.");
OP(op_greater, "Greater", in_xy, out_z_bool, attrs_number, 0,
   math_shape_broadcast,
   "z = (x > y) elementwise with broadcasting, as bool.");
OP(op_select, "Select", in_select, out_select, attrs_all, 0, math_shape_select,
   "z = condition ? x : y elementwise; the three shapes broadcast together "
   "(NumPy's where).");
OP(op_add_n, "AddN", in_add_n, out_add_n, attrs_add_n, WF_OP_ADD_N,
   math_shape_all_same,
   "sum = inputs[0] + ... + inputs[N-1] elementwise; all N inputs have one "
   "shape (no broadcasting). Floats are summed in double precision.");

OP(op_neg, "Neg", in_x, out_y, attrs_signed, 0, math_shape_same,
   "y = -x elementwise (float and signed integer types; the most negative "
   "integer wraps to itself).");
OP(op_abs, "Abs", in_x, out_y, attrs_number, 0, math_shape_same,
   "y = |x| elementwise (the most negative integer wraps to itself; uint8 "
   "is unchanged).");
OP(op_square, "Square", in_x, out_y, attrs_number, 0, math_shape_same,
   "y = x * x elementwise. Integers wrap on overflow.");
OP(op_relu, "Relu", in_x, out_y, attrs_number, 0, math_shape_same,
   "y = max(x, 0) elementwise; NaN stays NaN.");
OP(op_exp, "Exp", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = e ** x elementwise.");
OP(op_log, "Log", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = ln(x) elementwise (ln 0 = -inf, ln of a negative = NaN).");
OP(op_sqrt, "Sqrt", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = sqrt(x) elementwise (NaN for x < 0).");
OP(op_rsqrt, "Rsqrt", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = 1 / sqrt(x) elementwise (+inf at 0).");
OP(op_tanh, "Tanh", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = tanh(x) elementwise.");
OP(op_sigmoid, "Sigmoid", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = 1 / (1 + e ** -x) elementwise, computed without overflow and with "
   "full relative precision in both tails.");
OP(op_leaky_relu, "LeakyRelu", in_x, out_y, attrs_leaky_relu, 0,
   math_shape_same,
   "y = x for x >= 0, alpha * x for x < 0 (alpha: attr, default 0.2).");
OP(op_elu, "Elu", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = x for x >= 0, e ** x - 1 for x < 0 (computed with expm1).");
OP(op_gelu, "Gelu", in_x, out_y, attrs_gelu, 0, math_shape_same,
   "y = x * Phi(x), Phi the standard normal CDF: exactly x / 2 * erfc(-x / "
   "sqrt 2) by default; with approximate, x / 2 * (1 + tanh(sqrt(2 / pi) * "
   "(x + 0.044715 x ** 3))).");
OP(op_softplus, "Softplus", in_x, out_y, attrs_float, 0, math_shape_same,
   "y = ln(1 + e ** x) elementwise, as max(x, 0) + log1p(e ** -|x|) so that "
   "it neither overflows nor loses the small tail.");
OP(op_cast, "Cast", in_cast, out_cast, attrs_cast, WF_OP_CAST,
   math_shape_same,
   "y = x converted from SrcT to DstT, any pair of float32, float64, int8, "
   "uint8, int32, int64 and bool. Float to integer truncates toward zero, "
   "saturates at the integer type's limits and maps NaN to 0; integer to "
   "narrower integer wraps (two's complement); to bool: x != 0 (NaN is "
   "true); from bool: 0 or 1; other conversions round to nearest.");

OP(op_sum, "Sum", in_x, out_reduce, attrs_reduce, 0, math_shape_reduce,
   "y = the sum of x (...) over axes. Floats accumulate in double with "
   "compensation; integers wrap. An empty reduction gives 0.");
OP(op_mean, "Mean", in_x, out_reduce, attrs_reduce, 0, math_shape_reduce,
   "y = the mean of x (...) over axes. Integers: the wrapped sum divided by "
   "the count, truncated toward zero. An empty reduction gives NaN for "
   "floats and 0 for integers.");
OP(op_max, "Max", in_x, out_reduce, attrs_reduce, 0, math_shape_reduce,
   "y = the largest element of x (...) over axes; NaN if any is NaN. An "
   "empty reduction gives -inf for floats, the type's minimum for "
   "integers.");
OP(op_min, "Min", in_x, out_reduce, attrs_reduce, 0, math_shape_reduce,
   "y = the smallest element of x (...) over axes; NaN if any is NaN. An "
   "empty reduction gives +inf for floats, the type's maximum for "
   "integers.");
OP(op_prod, "Prod", in_x, out_reduce, attrs_reduce, 0, math_shape_reduce,
   "y = the product of x (...) over axes. Floats multiply in double; "
   "integers wrap. An empty reduction gives 1.");
OP(op_argmax, "ArgMax", in_x, out_argmax, attrs_argmax, 0, math_shape_argmax,
   "index = position of the largest element of x (..., D, ...) along axis, "
   "in output_type: the first of equal maxima, and the first NaN if any. "
   "An empty axis (D = 0) is refused.");

OP(op_matmul, "MatMul", in_matmul, out_matmul, attrs_matmul, 0,
   math_shape_matmul,
   "product (M, N) = a (M, K) x b (K, N), either operand optionally stored "
   "transposed. float32 accumulates in double; integers wrap.");
OP(op_fused_matmul, "_FusedMatMul", in_fused_matmul, out_matmul,
   attrs_fused_matmul, 0, math_shape_fused_matmul,
   "product (M, N) = act(a (M, K) x b (K, N) + bias (N,)) in one op, with "
   "MatMul's transpose attributes; act is fused_ops' second step, if any. "
   "Made by the graph's fusion pass on executed graphs; not "
   "differentiable. float32 and float64.");
OP(op_batch_matmul, "BatchMatMul", in_batch_matmul, out_batch_matmul,
   attrs_batch_matmul, 0, math_shape_batch_matmul,
   "z (..., M, N) = x (..., M, K) x y (..., K, N) for each matrix of the "
   "batch; the batch dims (...) of x and y broadcast as in NumPy's matmul. "
   "adj_x / adj_y: that operand's matrices are stored transposed.");

OP(op_sum_to_like, "SumToLike", in_sum_to_like, out_sum_to_like,
   attrs_sum_to_like, 0, math_shape_sum_to_like,
   "y = x summed over the dimensions along which like's shape was "
   "broadcast to x's (the leading dims like lacks, and those where like has "
   "1), giving like's shape: the gradient of an input of a broadcasting op. "
   "x (2, 3, 4) with like (3, 1) gives (3, 1). Floats accumulate in double "
   "with compensation; integers wrap.");

OP(op_relu_grad, "ReluGrad", in_dy_x, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = dy where x > 0, else 0 (0 at the kink x = 0): the gradient of "
   "Relu.");
OP(op_leaky_relu_grad, "LeakyReluGrad", in_dy_x, out_dx, attrs_leaky_relu, 0,
   math_shape_all_same,
   "dx = dy where x > 0, else alpha * dy: the gradient of LeakyRelu with "
   "the same alpha.");
OP(op_abs_grad, "AbsGrad", in_dy_x, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = sign(x) * dy (0 at x = 0; NaN for NaN x): the gradient of Abs.");
OP(op_elu_grad, "EluGrad", in_dy_y, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = dy where y > 0, else dy * (y + 1) (= dy * e^x), from Elu's output "
   "y.");
OP(op_sigmoid_grad, "SigmoidGrad", in_dy_y, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = dy * y * (1 - y), from Sigmoid's output y.");
OP(op_tanh_grad, "TanhGrad", in_dy_y, out_dx, attrs_float, 0,
   math_shape_all_same, "dx = dy * (1 - y * y), from Tanh's output y.");
OP(op_sqrt_grad, "SqrtGrad", in_dy_y, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = dy / (2 y), from Sqrt's output y (+-inf where y = 0).");
OP(op_rsqrt_grad, "RsqrtGrad", in_dy_y, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = -dy * y^3 / 2, from Rsqrt's output y.");
OP(op_softplus_grad, "SoftplusGrad", in_dy_x, out_dx, attrs_float, 0,
   math_shape_all_same,
   "dx = dy * sigmoid(x), computed without overflow: the gradient of "
   "Softplus.");
OP(op_gelu_grad, "GeluGrad", in_dy_x, out_dx, attrs_gelu, 0,
   math_shape_all_same,
   "dx = dy * Gelu'(x) for the same form as the forward op: Phi(x) + x "
   "phi(x) exactly (phi the standard normal density), or the derivative "
   "of the tanh approximation with approximate.");

OP(op_sum_grad, "SumGrad", in_reduce_grad, out_reduce_grad,
   attrs_reduce_grad, 0, math_shape_reduce_grad,
   "dx = dy repeated over the axes a Sum with these axes and keep_dims "
   "reduced: the gradient of Sum.");
OP(op_mean_grad, "MeanGrad", in_reduce_grad, out_reduce_grad,
   attrs_reduce_grad, 0, math_shape_reduce_grad,
   "dx = dy repeated over the reduced axes and divided by the number of "
   "elements each output averaged: the gradient of Mean.");
OP(op_max_min_grad, "MaxMinGrad", in_max_min_grad, out_reduce_grad,
   attrs_reduce_grad, 0, math_shape_reduce_grad,
   "dx = dy / k at the elements of x equal to their group's result y, 0 "
   "elsewhere, k the number of such ties in the group (TensorFlow's rule); "
   "a NaN result routes nothing: the gradient of Max and of Min.");
OP(op_prod_grad, "ProdGrad", in_reduce_grad, out_reduce_grad,
   attrs_reduce_grad, 0, math_shape_reduce_grad,
   "dx_i = dy * the product of the other elements of i's group, computed "
   "from products before and after i (no division, exact where x has "
   "zeros): the gradient of Prod.");

static const wf_op_def *const ops[] = {
    &op_add,     &op_sub,        &op_mul,       &op_div,
    &op_maximum, &op_minimum,    &op_pow,       &op_equal,
    &op_less,    &op_greater,    &op_select,    &op_add_n,
    &op_neg,     &op_abs,        &op_square,    &op_relu,
    &op_exp,     &op_log,        &op_sqrt,      &op_rsqrt,
    &op_tanh,    &op_sigmoid,    &op_leaky_relu, &op_elu,
    &op_gelu,    &op_softplus,   &op_cast,      &op_sum,
    &op_mean,    &op_max,        &op_min,       &op_prod,
    &op_argmax,  &op_matmul,     &op_batch_matmul, &op_fused_matmul,
    &op_sum_to_like, &op_relu_grad, &op_leaky_relu_grad, &op_abs_grad,
    &op_elu_grad, &op_sigmoid_grad, &op_tanh_grad, &op_sqrt_grad,
    &op_rsqrt_grad, &op_softplus_grad, &op_gelu_grad, &op_sum_grad,
    &op_mean_grad, &op_max_min_grad, &op_prod_grad, NULL};

/* ---- reference kernels ------------------------------------------------- */

/* Elementwise kernels are not marked WF_KERNEL_CHEAP: their cost grows with
 * the tensor, and the executor cannot know the size in advance. */
#define NUM WFX_DTYPES_NUMBER
#define FLT WFX_DTYPES_FLOAT

static const wf_kernel_def k_add = WFX_CPU_REFERENCE("Add", "T", NUM, math_add);
static const wf_kernel_def k_sub = WFX_CPU_REFERENCE("Sub", "T", NUM, math_sub);
static const wf_kernel_def k_mul = WFX_CPU_REFERENCE("Mul", "T", NUM, math_mul);
static const wf_kernel_def k_div = WFX_CPU_REFERENCE("Div", "T", NUM, math_div);
static const wf_kernel_def k_maximum =
    WFX_CPU_REFERENCE("Maximum", "T", NUM, math_maximum);
static const wf_kernel_def k_minimum =
    WFX_CPU_REFERENCE("Minimum", "T", NUM, math_minimum);
static const wf_kernel_def k_pow = WFX_CPU_REFERENCE("Pow", "T", NUM, math_pow);
static const wf_kernel_def k_equal =
    WFX_CPU_REFERENCE("Equal", "T", WFX_DTYPES_ALL, math_equal);
static const wf_kernel_def k_less =
    WFX_CPU_REFERENCE("Less", "T", NUM, math_less);
static const wf_kernel_def k_greater =
    WFX_CPU_REFERENCE("Greater", "T", NUM, math_greater);
static const wf_kernel_def k_select =
    WFX_CPU_REFERENCE("Select", "T", WFX_DTYPES_ALL, math_select);
static const wf_kernel_def k_add_n =
    WFX_CPU_REFERENCE("AddN", "T", NUM, math_add_n);
static const wf_kernel_def k_neg =
    WFX_CPU_REFERENCE("Neg", "T", WFX_DTYPES_SIGNED, math_neg);
static const wf_kernel_def k_abs = WFX_CPU_REFERENCE("Abs", "T", NUM, math_abs);
static const wf_kernel_def k_square =
    WFX_CPU_REFERENCE("Square", "T", NUM, math_square);
static const wf_kernel_def k_relu =
    WFX_CPU_REFERENCE("Relu", "T", NUM, math_relu);
static const wf_kernel_def k_exp = WFX_CPU_REFERENCE("Exp", "T", FLT, math_exp);
static const wf_kernel_def k_log = WFX_CPU_REFERENCE("Log", "T", FLT, math_log);
static const wf_kernel_def k_sqrt =
    WFX_CPU_REFERENCE("Sqrt", "T", FLT, math_sqrt);
static const wf_kernel_def k_rsqrt =
    WFX_CPU_REFERENCE("Rsqrt", "T", FLT, math_rsqrt);
static const wf_kernel_def k_tanh =
    WFX_CPU_REFERENCE("Tanh", "T", FLT, math_tanh);
static const wf_kernel_def k_sigmoid =
    WFX_CPU_REFERENCE("Sigmoid", "T", FLT, math_sigmoid);
static const wf_kernel_def k_leaky_relu =
    WFX_CPU_REFERENCE("LeakyRelu", "T", FLT, math_leaky_relu);
static const wf_kernel_def k_elu = WFX_CPU_REFERENCE("Elu", "T", FLT, math_elu);
static const wf_kernel_def k_gelu =
    WFX_CPU_REFERENCE("Gelu", "T", FLT, math_gelu);
static const wf_kernel_def k_softplus =
    WFX_CPU_REFERENCE("Softplus", "T", FLT, math_softplus);
static const wf_kernel_def k_cast =
    WFX_CPU_REFERENCE("Cast", "SrcT", WFX_DTYPES_ALL, math_cast);
static const wf_kernel_def k_sum = WFX_CPU_REFERENCE("Sum", "T", NUM, math_sum);
static const wf_kernel_def k_mean =
    WFX_CPU_REFERENCE("Mean", "T", NUM, math_mean);
static const wf_kernel_def k_max = WFX_CPU_REFERENCE("Max", "T", NUM, math_max);
static const wf_kernel_def k_min = WFX_CPU_REFERENCE("Min", "T", NUM, math_min);
static const wf_kernel_def k_prod =
    WFX_CPU_REFERENCE("Prod", "T", NUM, math_prod);
static const wf_kernel_def k_argmax =
    WFX_CPU_REFERENCE("ArgMax", "T", NUM, math_argmax);
static const wf_kernel_def k_matmul =
    WFX_CPU_REFERENCE("MatMul", "T", NUM, math_matmul);
static const wf_kernel_def k_batch_matmul =
    WFX_CPU_REFERENCE("BatchMatMul", "T", NUM, math_batch_matmul);
static const wf_kernel_def k_fused_matmul =
    WFX_CPU_REFERENCE("_FusedMatMul", "T", FLT, math_fused_matmul);
static const wf_kernel_def k_sum_to_like =
    WFX_CPU_REFERENCE("SumToLike", "T", NUM, math_sum_to_like);
static const wf_kernel_def k_relu_grad =
    WFX_CPU_REFERENCE("ReluGrad", "T", FLT, math_relu_grad);
static const wf_kernel_def k_leaky_relu_grad =
    WFX_CPU_REFERENCE("LeakyReluGrad", "T", FLT, math_leaky_relu_grad);
static const wf_kernel_def k_abs_grad =
    WFX_CPU_REFERENCE("AbsGrad", "T", FLT, math_abs_grad);
static const wf_kernel_def k_elu_grad =
    WFX_CPU_REFERENCE("EluGrad", "T", FLT, math_elu_grad);
static const wf_kernel_def k_sigmoid_grad =
    WFX_CPU_REFERENCE("SigmoidGrad", "T", FLT, math_sigmoid_grad);
static const wf_kernel_def k_tanh_grad =
    WFX_CPU_REFERENCE("TanhGrad", "T", FLT, math_tanh_grad);
static const wf_kernel_def k_sqrt_grad =
    WFX_CPU_REFERENCE("SqrtGrad", "T", FLT, math_sqrt_grad);
static const wf_kernel_def k_rsqrt_grad =
    WFX_CPU_REFERENCE("RsqrtGrad", "T", FLT, math_rsqrt_grad);
static const wf_kernel_def k_softplus_grad =
    WFX_CPU_REFERENCE("SoftplusGrad", "T", FLT, math_softplus_grad);
static const wf_kernel_def k_gelu_grad =
    WFX_CPU_REFERENCE("GeluGrad", "T", FLT, math_gelu_grad);
static const wf_kernel_def k_sum_grad =
    WFX_CPU_REFERENCE("SumGrad", "T", FLT, math_sum_grad);
static const wf_kernel_def k_mean_grad =
    WFX_CPU_REFERENCE("MeanGrad", "T", FLT, math_mean_grad);
static const wf_kernel_def k_max_min_grad =
    WFX_CPU_REFERENCE("MaxMinGrad", "T", FLT, math_max_min_grad);
static const wf_kernel_def k_prod_grad =
    WFX_CPU_REFERENCE("ProdGrad", "T", FLT, math_prod_grad);

static const wf_kernel_def *const kernels[] = {
    &k_add,     &k_sub,      &k_mul,         &k_div,     &k_maximum,
    &k_minimum, &k_pow,      &k_equal,       &k_less,    &k_greater,
    &k_select,  &k_add_n,    &k_neg,         &k_abs,     &k_square,
    &k_relu,    &k_exp,      &k_log,         &k_sqrt,    &k_rsqrt,
    &k_tanh,    &k_sigmoid,  &k_leaky_relu,  &k_elu,     &k_gelu,
    &k_softplus, &k_cast,    &k_sum,         &k_mean,    &k_max,
    &k_min,     &k_prod,     &k_argmax,      &k_matmul,  &k_batch_matmul, &k_fused_matmul,
    &k_sum_to_like, &k_relu_grad, &k_leaky_relu_grad, &k_abs_grad,
    &k_elu_grad, &k_sigmoid_grad, &k_tanh_grad, &k_sqrt_grad, &k_rsqrt_grad,
    &k_softplus_grad, &k_gelu_grad, &k_sum_grad, &k_mean_grad,
    &k_max_min_grad, &k_prod_grad, NULL};

/* ---- gradients --------------------------------------------------------- */

/* The gradients of Maximum, Minimum, Pow, Select and SumToLike build
 * ZerosLike or OnesLike nodes from ops-array. ops-array is not listed in
 * `requires`: the forward ops work without it, and building one of those
 * gradients without it fails naming the missing op. */

#define GRAD(var, nm, f)                                                       \
  static const wf_gradient_def var = {WF_STRUCT_INIT(wf_gradient_def),         \
                                      .op = (nm), .fn = (f)}
/* Outputs that do not depend differentiably on the inputs (indices, bools):
 * registered so that autodiff stops there instead of reporting a missing
 * gradient. */
#define NO_GRAD(var, nm)                                                       \
  static const wf_gradient_def var = {WF_STRUCT_INIT(wf_gradient_def),         \
                                      .op = (nm),                              \
                                      .flags = WF_GRAD_NOT_DIFFERENTIABLE}

GRAD(g_add, "Add", math_grad_add);
GRAD(g_sub, "Sub", math_grad_sub);
GRAD(g_mul, "Mul", math_grad_mul);
GRAD(g_div, "Div", math_grad_div);
GRAD(g_maximum, "Maximum", math_grad_maximum);
GRAD(g_minimum, "Minimum", math_grad_minimum);
GRAD(g_pow, "Pow", math_grad_pow);
GRAD(g_select, "Select", math_grad_select);
GRAD(g_add_n, "AddN", math_grad_add_n);
GRAD(g_neg, "Neg", math_grad_neg);
GRAD(g_abs, "Abs", math_grad_abs);
GRAD(g_square, "Square", math_grad_square);
GRAD(g_relu, "Relu", math_grad_relu);
GRAD(g_exp, "Exp", math_grad_exp);
GRAD(g_log, "Log", math_grad_log);
GRAD(g_sqrt, "Sqrt", math_grad_sqrt);
GRAD(g_rsqrt, "Rsqrt", math_grad_rsqrt);
GRAD(g_tanh, "Tanh", math_grad_tanh);
GRAD(g_sigmoid, "Sigmoid", math_grad_sigmoid);
GRAD(g_leaky_relu, "LeakyRelu", math_grad_leaky_relu);
GRAD(g_elu, "Elu", math_grad_elu);
GRAD(g_gelu, "Gelu", math_grad_gelu);
GRAD(g_softplus, "Softplus", math_grad_softplus);
GRAD(g_cast, "Cast", math_grad_cast);
GRAD(g_sum, "Sum", math_grad_sum);
GRAD(g_mean, "Mean", math_grad_mean);
GRAD(g_max, "Max", math_grad_max_min);
GRAD(g_min, "Min", math_grad_max_min);
GRAD(g_prod, "Prod", math_grad_prod);
GRAD(g_matmul, "MatMul", math_grad_matmul);
GRAD(g_batch_matmul, "BatchMatMul", math_grad_batch_matmul);
GRAD(g_sum_to_like, "SumToLike", math_grad_sum_to_like);
GRAD(g_sum_grad, "SumGrad", math_grad_sum_grad);
GRAD(g_mean_grad, "MeanGrad", math_grad_mean_grad);
GRAD(g_relu_grad, "ReluGrad", math_grad_relu_grad);
GRAD(g_leaky_relu_grad, "LeakyReluGrad", math_grad_leaky_relu_grad);
GRAD(g_abs_grad, "AbsGrad", math_grad_abs_grad);
GRAD(g_sigmoid_grad, "SigmoidGrad", math_grad_sigmoid_grad);
GRAD(g_tanh_grad, "TanhGrad", math_grad_tanh_grad);
GRAD(g_sqrt_grad, "SqrtGrad", math_grad_sqrt_grad);
GRAD(g_elu_grad, "EluGrad", math_grad_elu_grad);
GRAD(g_softplus_grad, "SoftplusGrad", math_grad_softplus_grad);
NO_GRAD(g_argmax, "ArgMax");
NO_GRAD(g_equal, "Equal");
NO_GRAD(g_less, "Less");
NO_GRAD(g_greater, "Greater");

static const wf_gradient_def *const gradients[] = {
    &g_add,       &g_sub,          &g_mul,        &g_div,
    &g_maximum,   &g_minimum,      &g_pow,        &g_select,
    &g_add_n,     &g_neg,          &g_abs,        &g_square,
    &g_relu,      &g_exp,          &g_log,        &g_sqrt,
    &g_rsqrt,     &g_tanh,         &g_sigmoid,    &g_leaky_relu,
    &g_elu,       &g_gelu,         &g_softplus,   &g_cast,
    &g_sum,       &g_mean,         &g_max,        &g_min,
    &g_prod,      &g_matmul,       &g_batch_matmul, &g_sum_to_like,
    &g_sum_grad,  &g_mean_grad,    &g_relu_grad,  &g_leaky_relu_grad,
    &g_abs_grad,  &g_sigmoid_grad, &g_tanh_grad,  &g_sqrt_grad,
    &g_elu_grad,  &g_softplus_grad, &g_argmax,    &g_equal,
    &g_less,      &g_greater,      NULL};

/* ---- the plugin -------------------------------------------------------- */

/* arithmetic.c: the arithmetic simplification pass. */
extern const wf_pass_def math_arithmetic_pass;
static const wf_pass_def *const passes[] = {&math_arithmetic_pass, NULL};

/* The host table, for every file of the plugin: the arithmetic pass uses
 * an entry of ABI 1.8 (pass_kernel_device). */
WFX_HOST_DEFINE(1, 8);

static int math_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-math", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-math",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "math ops: elementwise arithmetic with broadcasting, "
                   "activations, Cast, reductions, ArgMax, MatMul and "
                   "BatchMatMul, with reference CPU kernels and gradients "
                   "(fused backward ops included), and the arithmetic "
                   "simplification pass",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .passes = passes,
    .init = math_init,
};

WF_PLUGIN(ops_math, desc)
