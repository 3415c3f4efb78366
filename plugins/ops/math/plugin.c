/* plugins/ops/math/plugin.c — the ops_math plugin: definitions of the math
 * ops (inputs, outputs, attributes, flags, documentation), their reference
 * CPU kernels' keys, and the plugin description. Shape inference and the
 * kernels live in binary.c, unary.c, reduce.c and matmul.c; gradients are
 * not registered here.
 *
 * Semantics shared by all kernels here:
 *  - broadcasting is NumPy's: shapes align at the last dimension, each pair
 *    equal or one of them 1;
 *  - floats follow IEEE 754 (NaN propagates, x / 0 = ±inf);
 *  - integer arithmetic wraps (two's complement) and never traps: integer
 *    Div truncates toward zero, x / 0 = 0 and MIN / -1 = MIN. */
#include <config.h>

#include "math_ops.h"

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

static const wf_attr_def attrs_number[] = {T_ATTR(OPC_DTYPES_NUMBER),
                                           WF_ATTR_END};
static const wf_attr_def attrs_signed[] = {T_ATTR(OPC_DTYPES_SIGNED),
                                           WF_ATTR_END};
static const wf_attr_def attrs_float[] = {T_ATTR(OPC_DTYPES_FLOAT),
                                          WF_ATTR_END};
static const wf_attr_def attrs_all[] = {T_ATTR(OPC_DTYPES_ALL), WF_ATTR_END};

static const wf_attr_def attrs_leaky_relu[] = {
    T_ATTR(OPC_DTYPES_FLOAT),
    {WF_STRUCT_INIT(wf_attr_def), .name = "alpha", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = 0.2}},
     .doc = "slope for x < 0"},
    WF_ATTR_END};

static const wf_attr_def attrs_gelu[] = {
    T_ATTR(OPC_DTYPES_FLOAT),
    BOOL_ATTR("approximate", 0,
              "false: the exact x * Phi(x) with the error function; true: "
              "the tanh approximation"),
    WF_ATTR_END};

static const wf_attr_def attrs_cast[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "SrcT", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = OPC_DTYPES_ALL, .doc = "element type of x"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "DstT", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = OPC_DTYPES_ALL, .doc = "element type of y"},
    WF_ATTR_END};

static const wf_attr_def attrs_reduce[] = {
    T_ATTR(OPC_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axes",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 0},
     .doc = "axes to reduce, negative ones counting from the end, each at "
            "most once; empty (the default): all axes"},
    BOOL_ATTR("keep_dims", 0,
              "true: reduced axes stay as dimensions of size 1"),
    WF_ATTR_END};

static const wf_attr_def attrs_argmax[] = {
    T_ATTR(OPC_DTYPES_NUMBER),
    {WF_STRUCT_INIT(wf_attr_def), .name = "axis", .type = WF_ATTR_INT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_INT, .count = 1, .u = {.i = 0}},
     .doc = "the axis searched; negative counts from the end"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "output_type",
     .type = WF_ATTR_DTYPE, .has_default = 1,
     .default_value = {.type = WF_ATTR_DTYPE, .count = 1,
                       .u = {.dtype = WF_INT64}},
     .allowed_dtypes = WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),
     .doc = "element type of the indices: int32 or int64"},
    WF_ATTR_END};

static const wf_attr_def attrs_matmul[] = {
    T_ATTR(OPC_DTYPES_NUMBER),
    BOOL_ATTR("transpose_a", 0, "true: a is stored as (K, M)"),
    BOOL_ATTR("transpose_b", 0, "true: b is stored as (N, K)"),
    WF_ATTR_END};

static const wf_attr_def attrs_batch_matmul[] = {
    T_ATTR(OPC_DTYPES_NUMBER),
    BOOL_ATTR("adj_x", 0, "true: x's matrices are stored as (K, M)"),
    BOOL_ATTR("adj_y", 0, "true: y's matrices are stored as (N, K)"),
    WF_ATTR_END};

static const wf_attr_def attrs_add_n[] = {
    T_ATTR(OPC_DTYPES_NUMBER),
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
OP(op_add_n, "AddN", in_add_n, out_add_n, attrs_add_n, 0, math_shape_all_same,
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
OP(op_cast, "Cast", in_cast, out_cast, attrs_cast, 0, math_shape_same,
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
OP(op_batch_matmul, "BatchMatMul", in_batch_matmul, out_batch_matmul,
   attrs_batch_matmul, 0, math_shape_batch_matmul,
   "z (..., M, N) = x (..., M, K) x y (..., K, N) for each matrix of the "
   "batch; the batch dims (...) of x and y broadcast as in NumPy's matmul. "
   "adj_x / adj_y: that operand's matrices are stored transposed.");

static const wf_op_def *const ops[] = {
    &op_add,     &op_sub,        &op_mul,       &op_div,
    &op_maximum, &op_minimum,    &op_pow,       &op_equal,
    &op_less,    &op_greater,    &op_select,    &op_add_n,
    &op_neg,     &op_abs,        &op_square,    &op_relu,
    &op_exp,     &op_log,        &op_sqrt,      &op_rsqrt,
    &op_tanh,    &op_sigmoid,    &op_leaky_relu, &op_elu,
    &op_gelu,    &op_softplus,   &op_cast,      &op_sum,
    &op_mean,    &op_max,        &op_min,       &op_prod,
    &op_argmax,  &op_matmul,     &op_batch_matmul, NULL};

/* ---- reference kernels ------------------------------------------------- */

/* Elementwise kernels are not marked WF_KERNEL_CHEAP: their cost grows with
 * the tensor, and the executor cannot know the size in advance. */
#define KERNEL(var, nm, tattr, mask, fn)                                       \
  static const wf_kernel_def var = {WF_STRUCT_INIT(wf_kernel_def),             \
                                    .op = (nm),                                \
                                    .device_type = "cpu",                      \
                                    .type_attr = (tattr),                      \
                                    .dtypes = (mask),                          \
                                    .priority = 0,                             \
                                    .label = "reference",                      \
                                    .compute = (fn)}
#define NUM OPC_DTYPES_NUMBER
#define FLT OPC_DTYPES_FLOAT

KERNEL(k_add, "Add", "T", NUM, math_add);
KERNEL(k_sub, "Sub", "T", NUM, math_sub);
KERNEL(k_mul, "Mul", "T", NUM, math_mul);
KERNEL(k_div, "Div", "T", NUM, math_div);
KERNEL(k_maximum, "Maximum", "T", NUM, math_maximum);
KERNEL(k_minimum, "Minimum", "T", NUM, math_minimum);
KERNEL(k_pow, "Pow", "T", NUM, math_pow);
KERNEL(k_equal, "Equal", "T", OPC_DTYPES_ALL, math_equal);
KERNEL(k_less, "Less", "T", NUM, math_less);
KERNEL(k_greater, "Greater", "T", NUM, math_greater);
KERNEL(k_select, "Select", "T", OPC_DTYPES_ALL, math_select);
KERNEL(k_add_n, "AddN", "T", NUM, math_add_n);
KERNEL(k_neg, "Neg", "T", OPC_DTYPES_SIGNED, math_neg);
KERNEL(k_abs, "Abs", "T", NUM, math_abs);
KERNEL(k_square, "Square", "T", NUM, math_square);
KERNEL(k_relu, "Relu", "T", NUM, math_relu);
KERNEL(k_exp, "Exp", "T", FLT, math_exp);
KERNEL(k_log, "Log", "T", FLT, math_log);
KERNEL(k_sqrt, "Sqrt", "T", FLT, math_sqrt);
KERNEL(k_rsqrt, "Rsqrt", "T", FLT, math_rsqrt);
KERNEL(k_tanh, "Tanh", "T", FLT, math_tanh);
KERNEL(k_sigmoid, "Sigmoid", "T", FLT, math_sigmoid);
KERNEL(k_leaky_relu, "LeakyRelu", "T", FLT, math_leaky_relu);
KERNEL(k_elu, "Elu", "T", FLT, math_elu);
KERNEL(k_gelu, "Gelu", "T", FLT, math_gelu);
KERNEL(k_softplus, "Softplus", "T", FLT, math_softplus);
KERNEL(k_cast, "Cast", "SrcT", OPC_DTYPES_ALL, math_cast);
KERNEL(k_sum, "Sum", "T", NUM, math_sum);
KERNEL(k_mean, "Mean", "T", NUM, math_mean);
KERNEL(k_max, "Max", "T", NUM, math_max);
KERNEL(k_min, "Min", "T", NUM, math_min);
KERNEL(k_prod, "Prod", "T", NUM, math_prod);
KERNEL(k_argmax, "ArgMax", "T", NUM, math_argmax);
KERNEL(k_matmul, "MatMul", "T", NUM, math_matmul);
KERNEL(k_batch_matmul, "BatchMatMul", "T", NUM, math_batch_matmul);

static const wf_kernel_def *const kernels[] = {
    &k_add,     &k_sub,      &k_mul,         &k_div,     &k_maximum,
    &k_minimum, &k_pow,      &k_equal,       &k_less,    &k_greater,
    &k_select,  &k_add_n,    &k_neg,         &k_abs,     &k_square,
    &k_relu,    &k_exp,      &k_log,         &k_sqrt,    &k_rsqrt,
    &k_tanh,    &k_sigmoid,  &k_leaky_relu,  &k_elu,     &k_gelu,
    &k_softplus, &k_cast,    &k_sum,         &k_mean,    &k_max,
    &k_min,     &k_prod,     &k_argmax,      &k_matmul,  &k_batch_matmul,
    NULL};

/* ---- the plugin -------------------------------------------------------- */

static int math_init(const wf_host *host, void **state, wf_status *st) {
  /* Every entry used here exists since ABI 1.0; refuse a truncated table. */
  if (!WF_HOST_HAS(host, kernel_output_dtype)) {
    if (WF_HOST_HAS(host, status_set))
      host->status_set(st, WF_FAILED_PRECONDITION,
                       "ops-math: the host table (%u bytes) lacks the kernel "
                       "entries of ABI 1.0",
                       (unsigned)host->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  opc_set_host(host);
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
                   "BatchMatMul, with reference CPU kernels",
    .ops = ops,
    .kernels = kernels,
    .init = math_init,
};

WF_PLUGIN(ops_math, desc)
