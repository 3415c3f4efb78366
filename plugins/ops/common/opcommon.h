/* plugins/ops/common/opcommon.h — helpers shared by the op plugins: shapes
 * and NumPy broadcasting, a broadcast iterator for kernels, dtype dispatch
 * macros, axis normalisation, typed attribute reads with clear errors, and
 * node-building helpers for gradient functions.
 *
 * Linked statically into each op plugin (libopcommon.la); it reaches the
 * core only through the host table the plugin hands to opc_set_host, never
 * through libweft. It holds no op definitions and no kernels.
 *
 * Conventions: every fallible helper takes `wf_status *st` last, sets it
 * through the host table and returns the code (0 on success). Messages name
 * the attribute, input, axis or shapes involved but not the node: the core
 * prefixes every status a shape function or kernel returns with the node's
 * name and op, so inside those pass what = NULL to the helpers below.
 * After opc_set_host every helper is safe to call from several threads at
 * once (they only read shared state). */
#ifndef WF_OPS_OPCOMMON_H
#define WF_OPS_OPCOMMON_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin.h>

/* ------------------------------------------------------------------------ */
/* The host table                                                           */

/* Keeps the host table for every helper below. Call it first thing in the
 * plugin's init; host is borrowed and must outlive the plugin (the core's
 * table is static). Each plugin has its own copy of this library, so each
 * plugin sets its own. */
void opc_set_host(const wf_host *host);
/* The table given to opc_set_host (asserts it was set). */
const wf_host *opc_host(void);

/* Formats a message into st (code, printf-style) and returns code. Use for
 * every error a plugin reports, so that long messages are formatted once
 * here (the host's status_set takes no va_list). */
int opc_fail(wf_status *st, int code, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);

/* ------------------------------------------------------------------------ */
/* dtypes                                                                   */

/* Storage of WF_BOOL elements: one byte, 0 or 1 (kernels write only 0/1 and
 * read any non-zero byte as true). */
typedef uint8_t opc_bool;

/* The dtypes the reference kernels implement (no float16/bfloat16). */
#define OPC_DTYPES_FLOAT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define OPC_DTYPES_INT WF_DTYPES_INT
#define OPC_DTYPES_SIGNED                                                      \
  (OPC_DTYPES_FLOAT | WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_INT32) |         \
   WF_DTYPE_BIT(WF_INT64))
#define OPC_DTYPES_NUMBER (OPC_DTYPES_FLOAT | OPC_DTYPES_INT)
#define OPC_DTYPES_ALL (OPC_DTYPES_NUMBER | WF_DTYPE_BIT(WF_BOOL))

/* Type lists for instantiating a kernel body per dtype (X-macros). Each
 * calls X(ctype, suffix, dtype, u) once per type, passing u through:
 *
 *   #define DEF_ADD(T, sfx, dt, u) static void add_##sfx(...) { T *o; ... }
 *   OPC_TYPES_NUMBER(DEF_ADD, _)
 *   static add_fn *const add_table[WF_DTYPE_COUNT] = {
 *     OPC_TYPES_NUMBER(OPC_TABLE_ENTRY, add)   // [WF_FLOAT32] = add_f32, ...
 *   };
 *
 * Suffixes: f32 f64 i8 u8 i32 i64 b8 (bool, stored as opc_bool). The set
 * macros and the OPC_DTYPES_* masks above name the same types. */
#define OPC_TYPES_FLOAT(X, u)                                                  \
  X(float, f32, WF_FLOAT32, u)                                                 \
  X(double, f64, WF_FLOAT64, u)
#define OPC_TYPES_INT(X, u)                                                    \
  X(int8_t, i8, WF_INT8, u)                                                    \
  X(uint8_t, u8, WF_UINT8, u)                                                  \
  X(int32_t, i32, WF_INT32, u)                                                 \
  X(int64_t, i64, WF_INT64, u)
#define OPC_TYPES_SIGNED_INT(X, u)                                             \
  X(int8_t, i8, WF_INT8, u)                                                    \
  X(int32_t, i32, WF_INT32, u)                                                 \
  X(int64_t, i64, WF_INT64, u)
#define OPC_TYPES_BOOL(X, u) X(opc_bool, b8, WF_BOOL, u)
#define OPC_TYPES_NUMBER(X, u) OPC_TYPES_FLOAT(X, u) OPC_TYPES_INT(X, u)
#define OPC_TYPES_ALL(X, u) OPC_TYPES_NUMBER(X, u) OPC_TYPES_BOOL(X, u)

/* Designated initialiser [dtype] = name_suffix, for dispatch tables indexed
 * by dtype (see above). Entries for other dtypes stay NULL. */
#define OPC_TABLE_ENTRY(T, sfx, dt, name) [dt] = name##_##sfx,

/* Element size in bytes (1 for bool); 0 for dtypes this library does not
 * know. */
size_t opc_dtype_size(int32_t dtype);
/* "float32", "int64", "bool", ...; "invalid" for anything else. Static. */
const char *opc_dtype_name(int32_t dtype);
/* 1 for float32/float64 (and float16/bfloat16), else 0. */
int opc_dtype_is_float(int32_t dtype);

/* ------------------------------------------------------------------------ */
/* Shapes                                                                   */

/* Buffer size that always holds opc_shape_str's text. */
#define OPC_SHAPE_STR_MAX (WF_MAX_RANK * 22 + 16)

/* *s = the known shape of that rank and dims (rank 0..WF_MAX_RANK). */
void opc_shape_make(wf_shape *s, int rank, const int64_t *dims);
/* *s = unknown rank. */
void opc_shape_set_unknown(wf_shape *s);
/* *s = a scalar (rank 0). */
void opc_shape_set_scalar(wf_shape *s);
/* 1 when the rank and every dim are known. */
int opc_shape_is_known(const wf_shape *s);
/* Element count; -1 when the shape is not fully known. */
int64_t opc_shape_count(const wf_shape *s);
/* Writes "(2, ?, 3)", "()" or "<unknown>" into buf (always terminated; use
 * OPC_SHAPE_STR_MAX bytes) and returns buf. */
char *opc_shape_str(const wf_shape *s, char *buf, size_t len);

/* NumPy broadcasting of a and b into *out: shapes align at their last
 * dimension, and each pair of dims must be equal or one of them 1. Unknown
 * dims follow what is certain: ? with 1 gives ?, ? with d (d != 1) gives d,
 * ? with ? gives ?; an unknown rank gives an unknown rank. Incompatible
 * shapes are INVALID_ARGUMENT naming `what` (e.g. "node 'add' (Add)") and
 * both shapes; *out is then unchanged. what may be NULL. */
int opc_broadcast_shapes(const wf_shape *a, const wf_shape *b, wf_shape *out,
                         const char *what, wf_status *st);

/* Merges two descriptions of the same tensor: equal ranks and dims, unknowns
 * taking the other side's value. INVALID_ARGUMENT naming `what` and both
 * shapes when they conflict; *out unchanged then. */
int opc_shape_merge(const wf_shape *a, const wf_shape *b, wf_shape *out,
                    const char *what, wf_status *st);

/* ------------------------------------------------------------------------ */
/* Broadcast iteration for kernels                                          */

/* Most operands one broadcast walks (output excluded). */
#define OPC_BCAST_MAX 4

/* Walks a row-major output of a fully known shape in rows, giving each
 * operand's element offset for the current row. Adjacent dimensions that
 * broadcast alike are merged, so an elementwise op on equal shapes is one
 * row of `count` elements.
 *
 *   opc_bcast b;
 *   opc_bcast_init(&b, &out_shape, 2, in_shapes);
 *   for (int64_t r = 0; r < b.rows; r++, opc_bcast_next(&b)) {
 *     T *o = out + r * b.inner;
 *     const T *x = a + b.off[0], *y = c + b.off[1];
 *     for (int64_t j = 0; j < b.inner; j++)
 *       o[j] = x[j * b.step[0]] + y[j * b.step[1]];
 *   }
 *
 * step[k] is 1 or 0 (the operand repeats along the row). Also usable for
 * reductions: walk the input as "output" with the keep-dims result shape as
 * operand to get, for each input element, the offset of its accumulator. */
typedef struct opc_bcast {
  int n;                            /* operands */
  int rank;                         /* merged rank (>= 1) */
  int64_t dims[WF_MAX_RANK];        /* merged output dims */
  int64_t strides[OPC_BCAST_MAX][WF_MAX_RANK]; /* element strides, 0 = bcast */
  int64_t count;                    /* output elements */
  int64_t inner;                    /* elements per row: dims[rank - 1] */
  int64_t rows;                     /* count / inner; 0 when count is 0 */
  int64_t step[OPC_BCAST_MAX];      /* operand stride along a row: 0 or 1 */
  int64_t off[OPC_BCAST_MAX];       /* operand offsets of the current row */
  int64_t pos[WF_MAX_RANK];         /* index of the current row (private) */
} opc_bcast;

/* Prepares a walk of out (fully known) over n operands (1..OPC_BCAST_MAX)
 * whose shapes in[0..n-1] must broadcast to out (asserted: compute out with
 * opc_broadcast_shapes first). */
void opc_bcast_init(opc_bcast *b, const wf_shape *out, int n,
                    const wf_shape *in);
/* Advances to the next row (off[] updated). */
void opc_bcast_next(opc_bcast *b);

/* Row-major element strides of a known shape (strides[rank - 1] = 1). */
void opc_shape_strides(const wf_shape *s, int64_t *strides);

/* ------------------------------------------------------------------------ */
/* Axes                                                                     */

/* Normalises axis for a tensor of rank `rank` (rank >= 0): negative axes
 * count from the end. INVALID_ARGUMENT naming `what`, the axis and the valid
 * range [-rank, rank) when out of range. For an insertion axis (ExpandDims)
 * pass rank + 1. */
int opc_axis_normalize(int64_t axis, int rank, int *out, const char *what,
                       wf_status *st);

/* Normalises a list of axes into a bit mask (bit i = axis i). Duplicates
 * (after normalisation) are INVALID_ARGUMENT, as is any axis out of range.
 * An empty list gives 0: what that means is the op's business. */
int opc_axes_mask(const int64_t *axes, int64_t n, int rank, uint32_t *mask,
                  const char *what, wf_status *st);

/* ------------------------------------------------------------------------ */
/* Attributes and inputs                                                    */

/* Typed reads of an attribute (its default applied by the core). A missing
 * attribute or one of another type is INVALID_ARGUMENT naming the
 * attribute, and the expected and actual types. List results are
 * borrowed from the node and valid while the context is. */
int opc_shape_attr_int(const wf_shape_ctx *ctx, const char *name,
                       int64_t *out, wf_status *st);
int opc_shape_attr_float(const wf_shape_ctx *ctx, const char *name,
                         double *out, wf_status *st);
int opc_shape_attr_bool(const wf_shape_ctx *ctx, const char *name, int *out,
                        wf_status *st);
int opc_shape_attr_dtype(const wf_shape_ctx *ctx, const char *name,
                         int32_t *out, wf_status *st);
int opc_shape_attr_ints(const wf_shape_ctx *ctx, const char *name,
                        const int64_t **out, int64_t *count, wf_status *st);

int opc_kernel_attr_int(const wf_kernel_ctx *ctx, const char *name,
                        int64_t *out, wf_status *st);
int opc_kernel_attr_float(const wf_kernel_ctx *ctx, const char *name,
                          double *out, wf_status *st);
int opc_kernel_attr_bool(const wf_kernel_ctx *ctx, const char *name, int *out,
                         wf_status *st);
int opc_kernel_attr_dtype(const wf_kernel_ctx *ctx, const char *name,
                          int32_t *out, wf_status *st);
int opc_kernel_attr_ints(const wf_kernel_ctx *ctx, const char *name,
                         const int64_t **out, int64_t *count, wf_status *st);

/* Input i's dtype and shape during shape inference (dtype, shape may be
 * NULL); INTERNAL when the core has no such input (an op definition bug). */
int opc_shape_input(const wf_shape_ctx *ctx, int32_t i, int32_t *dtype,
                    wf_shape *shape, wf_status *st);

/* "node 'NAME' (OP)" (op may be NULL: "node 'NAME'") into buf; returns buf.
 * For messages that the core does not prefix (logs, helpers called outside
 * a shape function or kernel). */
#define OPC_WHAT_MAX 320
char *opc_what_shape(const wf_shape_ctx *ctx, const char *op, char *buf,
                     size_t len);
char *opc_what_kernel(const wf_kernel_ctx *ctx, const char *op, char *buf,
                      size_t len);

/* Input i of a running kernel with its shape (borrowed view; shape may be
 * NULL). INTERNAL when input i is missing. */
int opc_kernel_input(const wf_kernel_ctx *ctx, int32_t i,
                     const wf_tensor **t, wf_shape *shape, wf_status *st);

/* ------------------------------------------------------------------------ */
/* Gradient functions                                                       */

/* Helpers for the body of a wf_grad_fn. The node builders take outputs made
 * by earlier calls and pass failure along: when an input's node is NULL
 * they add nothing and return a NULL output (st keeps the first error, or
 * gets INTERNAL naming the op when the NULL came from elsewhere). A
 * gradient function can therefore build its whole expression and check
 * once, at the end:
 *
 *   static int grad_mul(wf_grad_ctx *ctx, wf_status *st) {
 *     const wf_host *h = opc_host();
 *     wf_output x = h->grad_input(ctx, 0), y = h->grad_input(ctx, 1);
 *     wf_output dz = h->grad_output_grad(ctx, 0);
 *     opc_grad_set(ctx, 0,
 *                  opc_grad_sum_to(ctx, opc_grad_op2(ctx, "Mul", dz, y, st),
 *                                  x, st));
 *     ...
 *     return opc_grad_done(st);
 *   }
 *
 * Nodes are added with the host's grad_add_node (named under the
 * gradient's scope); op names are those of the loaded plugins, e.g. "Mul"
 * and "SumToLike" from ops-math, "ZerosLike" and "Reshape" from ops-array.
 * Every helper is only valid during the wf_grad_fn call. */

/* A node of op on inputs in[0..n-1] with attrs[0..nattrs-1] (copied by the
 * core; may be NULL when nattrs is 0); returns its output 0. */
wf_output opc_grad_node(wf_grad_ctx *ctx, const char *op, const wf_output *in,
                        int n, const wf_attr_item *attrs, int nattrs,
                        wf_status *st);
/* The same with one, two or three inputs and no attributes. */
wf_output opc_grad_op1(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_status *st);
wf_output opc_grad_op2(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_output b, wf_status *st);
wf_output opc_grad_op3(wf_grad_ctx *ctx, const char *op, wf_output a,
                       wf_output b, wf_output c, wf_status *st);

/* g summed back to the shape of `like` over the dimensions along which
 * like was broadcast to g's shape (ops-math's SumToLike): the gradient of
 * an input of a broadcasting op. Returns g itself when both static shapes
 * are fully known and equal. */
wf_output opc_grad_sum_to(wf_grad_ctx *ctx, wf_output g, wf_output like,
                          wf_status *st);

/* 1 when the static shapes of a and b are fully known and equal. */
int opc_grad_same_known_shape(const wf_grad_ctx *ctx, wf_output a,
                              wf_output b);

/* Sets input i's gradient to g; does nothing when g's node is NULL (a
 * failed build, reported by opc_grad_done). */
void opc_grad_set(wf_grad_ctx *ctx, int32_t i, wf_output g);

/* What a gradient function returns at its end: 0, or st's code. */
int opc_grad_done(wf_status *st);

/* Attribute `name` of the forward node into *out, checked to be of type
 * `type` (WF_ATTR_*); INVALID_ARGUMENT naming it otherwise. Values are
 * borrowed from the graph for the call; pass them on unchanged in a
 * wf_attr_item to copy a forward attribute onto a gradient node. */
int opc_grad_attr(const wf_grad_ctx *ctx, const char *name, int32_t type,
                  wf_attr_value *out, wf_status *st);

/* Attribute items for opc_grad_node. */
#define OPC_ATTR_BOOL(nm, v)                                                   \
  ((wf_attr_item){.name = (nm),                                                \
                  .value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = (v)}})
#define OPC_ATTR_DTYPE(nm, v)                                                  \
  ((wf_attr_item){.name = (nm),                                                \
                  .value = {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = (v)}})
/* A forward attribute value (from opc_grad_attr) under a name. */
#define OPC_ATTR_VALUE(nm, v) ((wf_attr_item){.name = (nm), .value = (v)})

#endif /* WF_OPS_OPCOMMON_H */
