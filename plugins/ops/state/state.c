/* plugins/ops/state/state.c — the state op plugin (module ops_state):
 * resource variables. VarHandle names a variable owned by the session;
 * ReadVariable, AssignVariable, AssignAddVariable, AssignSubVariable and
 * VarIsInitialized act on it through the host table's var_* entries.
 *
 * The variable store itself (lifetime, locking, copy-on-write snapshots) is
 * the core's; this plugin only defines the ops and their CPU kernels. No
 * gradients are registered: autodiff differentiates with respect to
 * ReadVariable's output, and nothing here has a float output on a path.
 *
 * Concurrency (from weft/plugin.h): a read is a snapshot — the value before
 * or after any one update, never a mix; an update made while a reader still
 * holds the old value writes into a copy. Assign replaces the value
 * atomically; AssignAdd/AssignSub update in place under the variable's
 * lock, so increments from concurrent steps never get lost. */
#include <config.h>

#include <inttypes.h>
#include <string.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* Messages here do not name the node: the core prefixes every status a
 * shape function or kernel returns with the node's name and op. They do
 * name the variable, which may be shared by several nodes. */

/* ---- attribute and argument definitions -------------------------------- */

#define STATE_DTYPES WFX_DTYPES_ALL

static const wf_attr_def var_handle_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = STATE_DTYPES, .doc = "element type of the variable"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .doc = "shape of the variable; must be fully known"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shared_name",
     .type = WF_ATTR_STRING, .has_default = 1,
     .default_value = {.type = WF_ATTR_STRING, .count = 1, .u = {.s = ""}},
     .doc = "name of the variable in the session; \"\" (the default): the "
            "node's name. Nodes with one shared_name share one variable"},
    WF_ATTR_END};

static const wf_attr_def read_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = STATE_DTYPES,
     .doc = "element type of the variable (copied from its VarHandle)"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE,
                       .count = 1,
                       .u = {.shape = {.rank = WF_UNKNOWN_RANK}}},
     .doc = "shape of the variable (copied from its VarHandle); unknown "
            "rank or dims accepted"},
    WF_ATTR_END};

static const wf_attr_def assign_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = STATE_DTYPES,
     .doc = "element type of the value (inferred from it)"},
    WF_ATTR_END};

static const wf_attr_def assign_add_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WFX_DTYPES_NUMBER,
     .doc = "element type of the value (inferred from it)"},
    WF_ATTR_END};

static const wf_arg_def out_resource[] = {
    WF_ARG_FIXED("resource", WF_RESOURCE, "() handle of the variable"),
    WF_ARG_END};
static const wf_arg_def in_resource[] = {
    WF_ARG_FIXED("resource", WF_RESOURCE, "() handle of the variable"),
    WF_ARG_END};
static const wf_arg_def out_value[] = {
    WF_ARG_T("value", "dtype", "(...) the variable's shape: a snapshot"),
    WF_ARG_END};
static const wf_arg_def in_assign[] = {
    WF_ARG_FIXED("resource", WF_RESOURCE, "() handle of the variable"),
    WF_ARG_T("value", "dtype", "(...) exactly the variable's shape"),
    WF_ARG_END};
static const wf_arg_def out_initialized[] = {
    WF_ARG_FIXED("is_initialized", WF_BOOL,
                 "() true once the variable has been assigned"),
    WF_ARG_END};

/* ---- shape functions --------------------------------------------------- */

static int var_handle_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  wf_shape scalar;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_host->shape_attr(ctx, "shape", &v) != 0 || v.type != WF_ATTR_SHAPE)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' (shape) is missing");
  if (!wfx_shape_is_known(&v.u.shape))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' is %s: a variable's shape must be "
                    "fully known",
                    wfx_shape_str(&v.u.shape, buf, sizeof buf));
  wfx_shape_set_scalar(&scalar);
  wfx_host->shape_set_output(ctx, 0, &scalar);
  return 0;
}

static int read_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;

  if (wfx_host->shape_attr(ctx, "shape", &v) != 0 || v.type != WF_ATTR_SHAPE)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' (shape) is missing");
  wfx_host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

/* Inputs that carry a handle must be scalars (they always are when they
 * come from VarHandle; a Placeholder of resources could be anything). */
static int handle_input_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  if (s.rank > 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'resource' has shape %s; a variable handle is a "
                    "scalar",
                    wfx_shape_str(&s, buf, sizeof buf));
  return 0;
}

static int initialized_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape scalar;

  if (handle_input_shape(ctx, st))
    return wfx_code(st);
  wfx_shape_set_scalar(&scalar);
  wfx_host->shape_set_output(ctx, 0, &scalar);
  return 0;
}

/* ---- kernels ----------------------------------------------------------- */

static int var_handle_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  return wfx_host->kernel_variable(ctx, st);
}

static int read_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *handle;
  wf_tensor *value;
  wf_attr_value want_shape;
  int32_t want_dtype;
  wf_shape s;
  char got[WFX_SHAPE_STR_MAX], want[WFX_SHAPE_STR_MAX];
  int rc;

  if (wfx_kernel_input(ctx, 0, &handle, NULL, st) ||
      wfx_kernel_attr_dtype(ctx, "dtype", &want_dtype, st))
    return wfx_code(st);
  value = wfx_host->var_read(handle, st);
  if (!value)
    return wfx_code(st);
  wfx_host->tensor_shape(value, &s);
  if (wfx_dtype(value) != want_dtype) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                  "variable '%s' holds %s but the read expects %s (its "
                  "'dtype' attribute)",
                  wfx_host->var_name(handle), wfx_dtype_name(wfx_dtype(value)),
                  wfx_dtype_name(want_dtype));
    goto fail;
  }
  if (wfx_host->kernel_attr(ctx, "shape", &want_shape) == 0 &&
      want_shape.type == WF_ATTR_SHAPE) {
    wf_shape merged;
    if (wfx_shape_merge(&s, &want_shape.u.shape, &merged, NULL, st)) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "variable '%s' has shape %s but the read expects %s "
                    "(its 'shape' attribute)",
                    wfx_host->var_name(handle),
                    wfx_shape_str(&s, got, sizeof got),
                    wfx_shape_str(&want_shape.u.shape, want, sizeof want));
      goto fail;
    }
  }
  rc = wfx_host->kernel_output_set(ctx, 0, value, st);

fail:
  wfx_host->tensor_release(value);
  return rc;
}

static int assign_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *handle, *value;

  if (wfx_kernel_input(ctx, 0, &handle, NULL, st) ||
      wfx_kernel_input(ctx, 1, &value, NULL, st))
    return wfx_code(st);
  /* The variable keeps a reference to the value rather than a copy. That
   * is safe although the view is const: a tensor with more than one
   * reference is never written in place (weft/tensor.h), and the core
   * copies before an in-place update of a shared value. */
  return wfx_host->var_assign(handle, (wf_tensor *)value, st);
}

/* dst[i] = dst[i] + sign * src[i]; integers wrap (unsigned arithmetic). */
#define UNSIGNED_OF_f32 float
#define UNSIGNED_OF_f64 double
#define UNSIGNED_OF_i8 uint8_t
#define UNSIGNED_OF_u8 uint8_t
#define UNSIGNED_OF_i32 uint32_t
#define UNSIGNED_OF_i64 uint64_t
#define DEF_ACCUMULATE(T, sfx, dt, u)                                          \
  static void accumulate_##sfx(void *dst_, const void *src_, int64_t n,        \
                               int subtract) {                                 \
    T *dst = dst_;                                                             \
    const T *src = src_;                                                       \
    if (subtract)                                                              \
      for (int64_t i = 0; i < n; i++)                                          \
        dst[i] = (T)((UNSIGNED_OF_##sfx)dst[i] - (UNSIGNED_OF_##sfx)src[i]);   \
    else                                                                       \
      for (int64_t i = 0; i < n; i++)                                          \
        dst[i] = (T)((UNSIGNED_OF_##sfx)dst[i] + (UNSIGNED_OF_##sfx)src[i]);   \
  }
WFX_TYPES_NUMBER(DEF_ACCUMULATE, _)

typedef void accumulate_fn(void *dst, const void *src, int64_t n,
                           int subtract);
static accumulate_fn *const accumulate_table[WF_DTYPE_COUNT] = {
    WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, accumulate)};

/* AssignAdd (subtract 0) and AssignSub (subtract 1): in place under the
 * variable's lock. */
static int update_in_place(wf_kernel_ctx *ctx, int subtract, wf_status *st) {
  const wf_tensor *handle, *delta;
  wf_tensor *var;
  wf_shape vs, ds;
  int32_t vdt, ddt;
  char sv[WFX_SHAPE_STR_MAX], sd[WFX_SHAPE_STR_MAX];
  int rc = 0;

  if (wfx_kernel_input(ctx, 0, &handle, NULL, st) ||
      wfx_kernel_input(ctx, 1, &delta, &ds, st))
    return wfx_code(st);
  var = wfx_var_lock(ctx, handle, st);
  if (!var)
    return wfx_code(st);
  vdt = wfx_dtype(var);
  ddt = wfx_dtype(delta);
  wfx_host->tensor_shape(var, &vs);
  if (vdt != ddt || vs.rank != ds.rank ||
      memcmp(vs.dims, ds.dims, sizeof vs.dims[0] * (size_t)vs.rank) != 0) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                  "variable '%s' is %s %s but the value to %s is %s %s",
                  wfx_host->var_name(handle), wfx_dtype_name(vdt),
                  wfx_shape_str(&vs, sv, sizeof sv),
                  subtract ? "subtract" : "add", wfx_dtype_name(ddt),
                  wfx_shape_str(&ds, sd, sizeof sd));
    goto done;
  }
  if (!accumulate_table[vdt]) {
    rc = wfx_fail(st, WF_UNIMPLEMENTED, "no %s kernel for %s",
                  subtract ? "AssignSubVariable" : "AssignAddVariable",
                  wfx_dtype_name(vdt));
    goto done;
  }
  accumulate_table[vdt](wfx_data(var), wfx_data(delta), wfx_count(var),
                        subtract);

done:
  wfx_host->var_unlock(handle);
  return rc;
}

static int assign_add_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  return update_in_place(ctx, 0, st);
}

static int assign_sub_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  return update_in_place(ctx, 1, st);
}

static int initialized_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *handle;
  wf_tensor *value, *out;
  wf_shape scalar;
  int initialized;

  if (wfx_kernel_input(ctx, 0, &handle, NULL, st))
    return wfx_code(st);
  /* var_read's FAILED_PRECONDITION is its documented answer for "never
   * assigned": that is a result here, not an error. */
  value = wfx_host->var_read(handle, st);
  if (!value) {
    if (wfx_code(st) != WF_FAILED_PRECONDITION)
      return wfx_code(st);
    wfx_host->status_set(st, WF_OK, "%s", "");
    initialized = 0;
  } else {
    wfx_host->tensor_release(value);
    initialized = 1;
  }
  wfx_shape_set_scalar(&scalar);
  out = wfx_host->kernel_output_new(ctx, 0, &scalar, st);
  if (!out)
    return wfx_code(st);
  *(wfx_bool *)wfx_data(out) = (wfx_bool)initialized;
  return 0;
}

/* ---- tables ------------------------------------------------------------ */

#define OP(var, nm, in, out, at, fl, shape, dc)                                \
  static const wf_op_def var = {WF_STRUCT_INIT(wf_op_def),                     \
                                .name = (nm),                                  \
                                .inputs = (in),                                \
                                .outputs = (out),                              \
                                .attrs = (at),                                 \
                                .flags = (fl),                                 \
                                .shape_fn = (shape),                           \
                                .doc = (dc)}

OP(op_var_handle, "VarHandle", NULL, out_resource, var_handle_attrs,
   WF_OP_STATEFUL | WF_OP_VARIABLE, var_handle_shape,
   "Outputs the handle () of the session's variable called shared_name (or "
   "this node's name), of attrs dtype and fully known shape (...). The "
   "variable is created uninitialised the first time a step runs the node "
   "and lives as long as the session; reading it before an assignment is "
   "FAILED_PRECONDITION. Nodes naming one variable must agree on its dtype "
   "and shape.");
OP(op_read, "ReadVariable", in_resource, out_value, read_attrs,
   WF_OP_STATEFUL, read_shape,
   "value (...) = the current value of the variable, as a snapshot: it "
   "never changes afterwards, even when the variable is updated in place "
   "while the value is still in use (the update writes into a copy), and "
   "it is the value before or after any one concurrent update, never a "
   "mix. The dtype and shape attrs are copied from the VarHandle; a "
   "variable that does not match them is INVALID_ARGUMENT naming it. A "
   "variable never assigned is FAILED_PRECONDITION naming it. Gradients "
   "with respect to a variable are taken at this op's output.");
OP(op_assign, "AssignVariable", in_assign, NULL, assign_attrs,
   WF_OP_STATEFUL, handle_input_shape,
   "Makes value (...) the variable's value (the first assignment "
   "initialises it). The dtype and shape must be the variable's; otherwise "
   "INVALID_ARGUMENT naming the variable. The replacement is atomic: "
   "concurrent reads see the old or the new value, and earlier snapshots "
   "keep theirs. No outputs: run it as a target.");
OP(op_assign_add, "AssignAddVariable", in_assign, NULL, assign_add_attrs,
   WF_OP_STATEFUL, handle_input_shape,
   "variable += value, elementwise and in place, under the variable's "
   "lock: concurrent AssignAdd/AssignSub steps never lose an update. value "
   "has exactly the variable's dtype and shape (...) (no broadcasting); "
   "otherwise INVALID_ARGUMENT naming the variable. Snapshots taken before "
   "keep their values. Integers wrap. A variable never assigned is "
   "FAILED_PRECONDITION naming it. No outputs.");
OP(op_assign_sub, "AssignSubVariable", in_assign, NULL, assign_add_attrs,
   WF_OP_STATEFUL, handle_input_shape,
   "variable -= value, elementwise and in place, under the variable's "
   "lock; everything else as AssignAddVariable.");
OP(op_initialized, "VarIsInitialized", in_resource, out_initialized, NULL,
   WF_OP_STATEFUL, initialized_shape,
   "is_initialized () = whether the variable has been assigned. The answer "
   "may be out of date as soon as it is given if another step assigns the "
   "variable concurrently.");

static const wf_op_def *const ops[] = {
    &op_var_handle, &op_read,       &op_assign,      &op_assign_add,
    &op_assign_sub, &op_initialized, NULL};

/* Kernels that only pass handles and references: they run on any device,
 * whatever memory its tensors live in (the core moves values between
 * memories); VarIsInitialized's answer is written on the host. */

/* Handle work is constant time; the elementwise updates are not. */
static const wf_kernel_def k_var_handle = WFX_KERNEL_FOR(
    WF_KERNEL_ANY_DEVICE, "reference", "VarHandle", "dtype", STATE_DTYPES,
    var_handle_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_read = WFX_KERNEL_FOR(
    WF_KERNEL_ANY_DEVICE, "reference", "ReadVariable", "dtype", STATE_DTYPES,
    read_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_assign = WFX_KERNEL_FOR(
    WF_KERNEL_ANY_DEVICE, "reference", "AssignVariable", "dtype", STATE_DTYPES,
    assign_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_assign_add = WFX_CPU_REFERENCE(
    "AssignAddVariable", "dtype", WFX_DTYPES_NUMBER, assign_add_compute);
static const wf_kernel_def k_assign_sub = WFX_CPU_REFERENCE(
    "AssignSubVariable", "dtype", WFX_DTYPES_NUMBER, assign_sub_compute);
static const wf_kernel_def k_initialized = WFX_KERNEL_FOR(
    WF_KERNEL_ANY_DEVICE, "reference", "VarIsInitialized", NULL, 0,
    initialized_compute, .flags = WF_KERNEL_CHEAP, .host_outputs = 1);

static const wf_kernel_def *const kernels[] = {
    &k_var_handle, &k_read,       &k_assign,      &k_assign_add,
    &k_assign_sub, &k_initialized, NULL};

/* ---- the plugin -------------------------------------------------------- */

/* The host table, for every file of the plugin: ABI 1.0 has every
 * entry it uses. */
WFX_HOST_DEFINE(1, 0);

static int state_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-state", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-state",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "resource variables: VarHandle, ReadVariable, "
                   "AssignVariable, AssignAddVariable, AssignSubVariable, "
                   "VarIsInitialized, with CPU kernels over the session's "
                   "variable store",
    .ops = ops,
    .kernels = kernels,
    .init = state_init,
};

WF_PLUGIN(ops_state, desc)
