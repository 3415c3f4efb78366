/* weft/plugin_aux.h — the helper layer for plugin authors, over plugin.h
 * the way Lua's lauxlib sits over lua.h: one spelling of the host table
 * (wfx_host), its minimum ABI checked once at init, initialiser macros for
 * the static tables, printf-style statuses, dtype lists and dispatch,
 * shapes and NumPy broadcasting, typed and checked access to inputs,
 * outputs and attributes, elementwise and broadcasting loops, and the node
 * builders of gradient functions.
 *
 * Header only: every helper is a static inline function or a macro that
 * reaches the core through the host table alone, so a plugin built with it
 * links nothing of weft (readelf -d shows no libweft) and works unchanged
 * when linked into a static distribution. There is no library to link and
 * no second ABI to keep: the helpers are compiled into the plugin.
 *
 * Use: in exactly one source file of the plugin, either
 *
 *   WFX_PLUGIN(swish, 1, 0, .name = "example-swish", .ops = ..., ...)
 *
 * which defines the host, an init that checks the host's ABI (at least 1.0
 * here) and the entry point; or, for a plugin with an init of its own,
 *
 *   WFX_HOST_DEFINE(1, 2);                       // file scope
 *   static int my_init(const wf_host *h, void **state, wf_status *st) {
 *     if (WFX_HOST_INIT(h, "my-plugin", st))     // first thing
 *       return WF_FAILED_PRECONDITION;
 *     ...
 *
 * Every other file of the plugin only includes this header and calls
 * wfx_host->entry(...) and the wfx_ helpers.
 *
 * Messages: statuses that a shape function, kernel or kernel create
 * returns reach the user prefixed by the core with the node's name and op
 * ("node 'y' (op 'Swish'): input 1 has shape (3) (rank 1); expected rank
 * 2"), so the helpers name the input, attribute, axis or shapes involved
 * and leave the node to the core. Outside those calls (logs, a gradient
 * function) use wfx_what_*.
 *
 * Thread safety: after init every helper may be called from any thread;
 * they only read the host table and their arguments. */
#ifndef WEFT_PLUGIN_AUX_H
#define WEFT_PLUGIN_AUX_H

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WFX_HIDDEN_ __attribute__((visibility("hidden")))
#define WFX_WEAK_ __attribute__((weak))
#else
#define WFX_HIDDEN_
#define WFX_WEAK_
#endif

/* ------------------------------------------------------------------------ */
/* The host table, set once                                                 */

/* The core's functions, for every file of the plugin: set by
 * WFX_HOST_INIT before anything else of the plugin runs and never changed
 * afterwards (the core's table is static and outlives the plugin). Hidden,
 * so each plugin module has its own; weak, so the plugins of a static
 * distribution share one (they all get the same table). */
extern WFX_HIDDEN_ const wf_host *wfx_host;

/* Bytes of a host table that has every entry of ABI 1.minor: the whole
 * table this header knows for its own minor, else the end of the last
 * entry of that minor (a minor that adds entries adds its case here). */
static inline size_t wfx_host_size_(int minor) {
  if (minor >= WF_ABI_MINOR)
    return sizeof(wf_host);
  if (minor >= 6) /* 1.7 added no entries */
    return offsetof(wf_host, tensor_string) +
           sizeof(((wf_host *)0)->tensor_string);
  if (minor >= 5)
    return offsetof(wf_host, import_add_gradients) +
           sizeof(((wf_host *)0)->import_add_gradients);
  if (minor >= 4)
    return offsetof(wf_host, kernel_var_lock) +
           sizeof(((wf_host *)0)->kernel_var_lock);
  if (minor >= 3)
    return offsetof(wf_host, import_add_signature) +
           sizeof(((wf_host *)0)->import_add_signature);
  if (minor >= 2)
    return offsetof(wf_host, kernel_device_state) +
           sizeof(((wf_host *)0)->kernel_device_state);
  return offsetof(wf_host, config_int) + sizeof(((wf_host *)0)->config_int);
}

/* Checks that host provides ABI major.minor or a later minor of that major
 * and keeps it in wfx_host. Returns 0, or FAILED_PRECONDITION with st set
 * naming the plugin and both versions (the plugin is then refused). Use
 * through WFX_HOST_INIT, which passes the versions of WFX_HOST_DEFINE. */
static inline int wfx_host_set(const wf_host *host, const char *plugin,
                               int major, int minor, wf_status *st) {
  if (!host)
    return WF_FAILED_PRECONDITION;
  if (host->abi_major != major || host->abi_minor < minor ||
      host->struct_size < wfx_host_size_(minor)) {
    if (WF_HOST_HAS(host, status_set))
      host->status_set(st, WF_FAILED_PRECONDITION,
                       "plugin '%s' needs weft's plugin ABI %d.%d (or a "
                       "later %d.x); this weft provides ABI %u.%u (a host "
                       "table of %u bytes)",
                       plugin, major, minor, major, (unsigned)host->abi_major,
                       (unsigned)host->abi_minor, (unsigned)host->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  if (wfx_host != host) /* a later runtime: same table, no write */
    wfx_host = host;
  return 0;
}

/* Defines wfx_host and the plugin's minimum host ABI major.minor (checked
 * by WFX_HOST_INIT). Once per plugin, at file scope. */
#define WFX_HOST_DEFINE(major, minor)                                          \
  WFX_HIDDEN_ WFX_WEAK_ const wf_host *wfx_host;                               \
  _Static_assert((major) == WF_ABI_MAJOR && (minor) <= WF_ABI_MINOR,           \
                 "the plugin needs a newer weft/plugin.h");                    \
  static inline int wfx_host_init_(const wf_host *h, const char *plugin,       \
                                   wf_status *st) {                            \
    return wfx_host_set(h, plugin, (major), (minor), st);                      \
  }                                                                            \
  typedef int wfx_host_defined_

/* Inside the plugin's init, first: 0 when the host is recent enough (then
 * wfx_host is set), else the refusal's code with st set. */
#define WFX_HOST_INIT(h, plugin, st) wfx_host_init_((h), (plugin), (st))

/* The whole plugin in one macro for a plugin without init or state of its
 * own: module name, minimum host ABI, then the members of its
 * wf_plugin_desc (.name, .version, .ops, .kernels, ...). */
#define WFX_PLUGIN(mod, major, minor, ...)                                     \
  WFX_HOST_DEFINE(major, minor);                                               \
  static const wf_plugin_desc wfx_desc_;                                       \
  static int wfx_init_(const wf_host *h, void **state, wf_status *st) {        \
    *state = NULL;                                                             \
    return WFX_HOST_INIT(h, wfx_desc_.name, st);                               \
  }                                                                            \
  static const wf_plugin_desc wfx_desc_ = {WF_STRUCT_INIT(wf_plugin_desc),     \
                                           .init = wfx_init_, __VA_ARGS__};    \
  WF_PLUGIN(mod, wfx_desc_)

/* ------------------------------------------------------------------------ */
/* Statuses                                                                 */

/* Formats a message into st with code (not WF_OK) and returns code, so
 * that `return wfx_fail(st, WF_INVALID_ARGUMENT, "...", ...);` reads as
 * one statement. Messages are cut at 1023 bytes. */
static inline int wfx_vfail(wf_status *st, int code, const char *fmt,
                            va_list ap) {
  char buf[1024];

  assert(code != WF_OK);
  vsnprintf(buf, sizeof buf, fmt, ap);
  wfx_host->status_set(st, code, "%s", buf);
  return code;
}

static inline int wfx_fail(wf_status *st, int code, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);
static inline int wfx_fail(wf_status *st, int code, const char *fmt, ...) {
  va_list ap;
  int rc;

  va_start(ap, fmt);
  rc = wfx_vfail(st, code, fmt, ap);
  va_end(ap);
  return rc;
}

/* st's code (0 when nothing failed). */
static inline int wfx_code(const wf_status *st) {
  return wfx_host->status_code(st);
}

/* ------------------------------------------------------------------------ */
/* Static tables                                                            */

/* A NULL-terminated table of pointers for wf_plugin_desc:
 * .ops = WFX_LIST(wf_op_def, &my_op, WFX_OP(...)). */
#define WFX_LIST(T, ...) ((const T *const[]){__VA_ARGS__, NULL})
/* Arrays of arguments and attributes, their end marker added. */
#define WFX_ARGS(...) ((const wf_arg_def[]){__VA_ARGS__, WF_ARG_END})
#define WFX_ATTRS(...) ((const wf_attr_def[]){__VA_ARGS__, WF_ATTR_END})

/* Pointers to definitions from their members (designated initialisers):
 * WFX_OP(.name = "Swish", .inputs = WFX_ARGS(...), .shape_fn = f). */
#define WFX_OP(...) (&(const wf_op_def){WF_STRUCT_INIT(wf_op_def), __VA_ARGS__})
#define WFX_KERNEL(...)                                                        \
  (&(const wf_kernel_def){WF_STRUCT_INIT(wf_kernel_def), __VA_ARGS__})
#define WFX_DEVICE(...)                                                        \
  (&(const wf_device_def){WF_STRUCT_INIT(wf_device_def), __VA_ARGS__})
#define WFX_READER(...)                                                        \
  (&(const wf_reader_def){WF_STRUCT_INIT(wf_reader_def), __VA_ARGS__})
#define WFX_PASS(...)                                                          \
  (&(const wf_pass_def){WF_STRUCT_INIT(wf_pass_def), __VA_ARGS__})
#define WFX_TRANSPORT(...)                                                     \
  (&(const wf_transport_def){WF_STRUCT_INIT(wf_transport_def), __VA_ARGS__})
#define WFX_IMPORTER(...)                                                      \
  (&(const wf_importer_def){WF_STRUCT_INIT(wf_importer_def), __VA_ARGS__})
/* The gradient of op built by fn; WFX_NO_GRADIENT: op is registered as not
 * differentiable (no gradient flows, and that is no error). */
#define WFX_GRADIENT(opname, fn_)                                              \
  (&(const wf_gradient_def){WF_STRUCT_INIT(wf_gradient_def), .op = (opname),   \
                            .fn = (fn_)})
#define WFX_NO_GRADIENT(opname)                                                \
  (&(const wf_gradient_def){WF_STRUCT_INIT(wf_gradient_def), .op = (opname),   \
                            .flags = WF_GRAD_NOT_DIFFERENTIABLE})
/* Kernel definitions as values, for a named definition
 * (`static const wf_kernel_def k = WFX_KERNEL_FOR(...);`) or an array of
 * them: WFX_KERNEL_INIT from its members; WFX_KERNEL_FOR from the usual
 * ones — device type, label (what `weft ops` shows), op, the dtype
 * attribute and its mask, compute — and optional further members
 * (.priority = ..., .create = ..., .flags = ..., .host_inputs = ...);
 * WFX_CPU_REFERENCE for a reference CPU kernel (priority 0). */
#define WFX_KERNEL_INIT(...)                                                   \
  { WF_STRUCT_INIT(wf_kernel_def), __VA_ARGS__ }
#define WFX_KERNEL_FOR(dev, lbl, opname, tattr, mask, fn, ...)                 \
  WFX_KERNEL_INIT(.op = (opname), .device_type = (dev), .type_attr = (tattr),  \
                  .dtypes = (mask), .label = (lbl),                            \
                  .compute = (fn)__VA_OPT__(, ) __VA_ARGS__)
#define WFX_CPU_REFERENCE(opname, tattr, mask, fn, ...)                        \
  WFX_KERNEL_FOR("cpu", "reference", opname, tattr, mask, fn, __VA_ARGS__)
/* A pointer to a reference CPU kernel, for WFX_LIST. */
#define WFX_CPU_KERNEL(opname, tattr, mask, fn, ...)                           \
  (&(const wf_kernel_def)WFX_CPU_REFERENCE(opname, tattr, mask, fn,            \
                                           __VA_ARGS__))

/* Attribute definitions (elements of WFX_ATTRS). */
#define WFX_ATTR_DTYPE(nm, mask, dc)                                           \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_DTYPE,          \
                                 .allowed_dtypes = (mask), .doc = (dc)         \
  }
/* An attribute of type ty (WF_ATTR_*) that every node must set. */
#define WFX_ATTR_REQUIRED(nm, ty, dc)                                          \
  { WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = (ty), .doc = (dc) }
#define WFX_ATTR_DEFAULT_(nm, ty, member, v, dc)                               \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = (nm), .type = (ty), .has_default = 1,                          \
        .default_value = {.type = (ty), .count = 1, .u = {.member = (v)}},     \
        .doc = (dc)                                                            \
  }
#define WFX_ATTR_INT(nm, dflt, dc)                                             \
  WFX_ATTR_DEFAULT_(nm, WF_ATTR_INT, i, dflt, dc)
#define WFX_ATTR_FLOAT(nm, dflt, dc)                                           \
  WFX_ATTR_DEFAULT_(nm, WF_ATTR_FLOAT, f, dflt, dc)
#define WFX_ATTR_BOOL(nm, dflt, dc)                                            \
  WFX_ATTR_DEFAULT_(nm, WF_ATTR_BOOL, b, dflt, dc)

/* Attribute items (name and value), for gradient nodes. */
#define WFX_ITEM_INT(nm, v)                                                    \
  ((wf_attr_item){.name = (nm),                                                \
                  .value = {.type = WF_ATTR_INT, .count = 1, .u.i = (v)}})
#define WFX_ITEM_FLOAT(nm, v)                                                  \
  ((wf_attr_item){.name = (nm),                                                \
                  .value = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = (v)}})
#define WFX_ITEM_BOOL(nm, v)                                                   \
  ((wf_attr_item){.name = (nm),                                                \
                  .value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = (v)}})
#define WFX_ITEM_DTYPE(nm, v)                                                  \
  ((wf_attr_item){                                                             \
      .name = (nm),                                                            \
      .value = {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = (v)}})
/* A value read with wfx_grad_attr, under a name. */
#define WFX_ITEM_VALUE(nm, v) ((wf_attr_item){.name = (nm), .value = (v)})

/* ------------------------------------------------------------------------ */
/* dtypes                                                                   */

/* Storage of WF_BOOL elements: one byte, 0 or 1 (write only 0/1; read any
 * non-zero byte as true). */
typedef uint8_t wfx_bool;

/* Masks (WF_DTYPE_BIT) of the dtypes plain C kernels handle. */
#define WFX_DTYPES_FLOAT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define WFX_DTYPES_INT WF_DTYPES_INT
#define WFX_DTYPES_SIGNED                                                      \
  (WFX_DTYPES_FLOAT | WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_INT32) |         \
   WF_DTYPE_BIT(WF_INT64))
#define WFX_DTYPES_NUMBER (WFX_DTYPES_FLOAT | WFX_DTYPES_INT)
#define WFX_DTYPES_ALL (WFX_DTYPES_NUMBER | WF_DTYPE_BIT(WF_BOOL))

/* Type lists for instantiating code per dtype (X-macros): each calls
 * X(ctype, suffix, dtype, u) once per type, passing u through:
 *
 *   #define DEF_ADD(T, sfx, dt, u) static void add_##sfx(T *o, ...) {...}
 *   WFX_TYPES_NUMBER(DEF_ADD, _)
 *   static add_fn *const add_table[WF_DTYPE_COUNT] = {
 *       WFX_TYPES_NUMBER(WFX_TABLE_ENTRY, add)};  // [WF_FLOAT32] = add_f32..
 *
 * Suffixes: f32 f64 i8 u8 i32 i64 b8; the masks above name the same sets. */
#define WFX_TYPES_FLOAT(X, u)                                                  \
  X(float, f32, WF_FLOAT32, u)                                                 \
  X(double, f64, WF_FLOAT64, u)
#define WFX_TYPES_INT(X, u)                                                    \
  X(int8_t, i8, WF_INT8, u)                                                    \
  X(uint8_t, u8, WF_UINT8, u)                                                  \
  X(int32_t, i32, WF_INT32, u)                                                 \
  X(int64_t, i64, WF_INT64, u)
#define WFX_TYPES_SIGNED_INT(X, u)                                             \
  X(int8_t, i8, WF_INT8, u)                                                    \
  X(int32_t, i32, WF_INT32, u)                                                 \
  X(int64_t, i64, WF_INT64, u)
#define WFX_TYPES_BOOL(X, u) X(wfx_bool, b8, WF_BOOL, u)
#define WFX_TYPES_NUMBER(X, u) WFX_TYPES_FLOAT(X, u) WFX_TYPES_INT(X, u)
#define WFX_TYPES_ALL(X, u) WFX_TYPES_NUMBER(X, u) WFX_TYPES_BOOL(X, u)
/* [dtype] = name_suffix, for dispatch tables indexed by dtype. */
#define WFX_TABLE_ENTRY(T, sfx, dt, name) [dt] = name##_##sfx,

/* Runs the statements after `st` with the type T defined as the C type of
 * dtype dt (float32 or float64; any number; any number or bool); any other
 * dtype returns UNIMPLEMENTED from the enclosing function, naming it:
 *
 *   WFX_DISPATCH_FLOAT(dtype, st, {
 *     T *y = wfx_data(out); ...
 *   });  */
#define WFX_TCASE_(C, dt, ...)                                                 \
  case dt: {                                                                   \
    typedef C T;                                                               \
    __VA_ARGS__;                                                               \
  } break;
#define WFX_TDEFAULT_(dt, st, which)                                           \
  default:                                                                     \
    return wfx_fail((st), WF_UNIMPLEMENTED,                                    \
                    "no kernel for dtype %s (" which " only)",                 \
                    wfx_dtype_name(dt));
#define WFX_DISPATCH_FLOAT(dt, st, ...)                                        \
  switch (dt) {                                                                \
    WFX_TCASE_(float, WF_FLOAT32, __VA_ARGS__)                                 \
    WFX_TCASE_(double, WF_FLOAT64, __VA_ARGS__)                                \
    WFX_TDEFAULT_(dt, st, "float32 and float64")                               \
  }
#define WFX_DISPATCH_NUMBER(dt, st, ...)                                       \
  switch (dt) {                                                                \
    WFX_TCASE_(float, WF_FLOAT32, __VA_ARGS__)                                 \
    WFX_TCASE_(double, WF_FLOAT64, __VA_ARGS__)                                \
    WFX_TCASE_(int8_t, WF_INT8, __VA_ARGS__)                                   \
    WFX_TCASE_(uint8_t, WF_UINT8, __VA_ARGS__)                                 \
    WFX_TCASE_(int32_t, WF_INT32, __VA_ARGS__)                                 \
    WFX_TCASE_(int64_t, WF_INT64, __VA_ARGS__)                                 \
    WFX_TDEFAULT_(dt, st, "numbers")                                           \
  }
#define WFX_DISPATCH_ALL(dt, st, ...)                                          \
  switch (dt) {                                                                \
    WFX_TCASE_(float, WF_FLOAT32, __VA_ARGS__)                                 \
    WFX_TCASE_(double, WF_FLOAT64, __VA_ARGS__)                                \
    WFX_TCASE_(int8_t, WF_INT8, __VA_ARGS__)                                   \
    WFX_TCASE_(uint8_t, WF_UINT8, __VA_ARGS__)                                 \
    WFX_TCASE_(int32_t, WF_INT32, __VA_ARGS__)                                 \
    WFX_TCASE_(int64_t, WF_INT64, __VA_ARGS__)                                 \
    WFX_TCASE_(wfx_bool, WF_BOOL, __VA_ARGS__)                                 \
    WFX_TDEFAULT_(dt, st, "numbers and bool")                                  \
  }

/* Element size in bytes (1 for bool); 0 for an unknown dtype. */
static inline size_t wfx_dtype_size(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32:
    return 4;
  case WF_FLOAT64:
    return 8;
  case WF_FLOAT16:
    return 2;
  case WF_BFLOAT16:
    return 2;
  case WF_INT8:
    return 1;
  case WF_UINT8:
    return 1;
  case WF_INT32:
    return 4;
  case WF_INT64:
    return 8;
  case WF_BOOL:
    return 1;
  case WF_RESOURCE:
    return sizeof(void *);
  default:
    return 0;
  }
}

/* "float32", "int64", "bool", ...; "invalid" for anything else. Static. */
static inline const char *wfx_dtype_name(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32:
    return "float32";
  case WF_FLOAT64:
    return "float64";
  case WF_FLOAT16:
    return "float16";
  case WF_BFLOAT16:
    return "bfloat16";
  case WF_INT8:
    return "int8";
  case WF_UINT8:
    return "uint8";
  case WF_INT32:
    return "int32";
  case WF_INT64:
    return "int64";
  case WF_BOOL:
    return "bool";
  case WF_RESOURCE:
    return "resource";
  default:
    return "invalid";
  }
}

/* 1 for the floating-point dtypes (float16 and bfloat16 included). */
static inline int wfx_dtype_is_float(int32_t dtype) {
  return dtype == WF_FLOAT32 || dtype == WF_FLOAT64 || dtype == WF_FLOAT16 ||
         dtype == WF_BFLOAT16;
}

/* ------------------------------------------------------------------------ */
/* Shapes                                                                   */

/* A buffer that always holds wfx_shape_str's text. */
#define WFX_SHAPE_STR_MAX (WF_MAX_RANK * 22 + 16)

/* *s = the known shape of that rank (0..WF_MAX_RANK) and dims. */
static inline void wfx_shape_make(wf_shape *s, int rank, const int64_t *dims) {
  assert(rank >= 0 && rank <= WF_MAX_RANK);
  memset(s, 0, sizeof *s);
  s->rank = rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = dims[i];
}

static inline void wfx_shape_set_unknown(wf_shape *s) {
  memset(s, 0, sizeof *s);
  s->rank = WF_UNKNOWN_RANK;
}

static inline void wfx_shape_set_scalar(wf_shape *s) {
  memset(s, 0, sizeof *s);
}

/* 1 when the rank and every dim are known. */
static inline int wfx_shape_is_known(const wf_shape *s) {
  if (s->rank < 0)
    return 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0)
      return 0;
  return 1;
}

/* Element count; -1 when the shape is not fully known. */
static inline int64_t wfx_shape_count(const wf_shape *s) {
  int64_t n = 1;

  if (!wfx_shape_is_known(s))
    return -1;
  for (int i = 0; i < s->rank; i++)
    n *= s->dims[i];
  return n;
}

/* 1 when a and b have one rank and the same dims (unknowns compare as
 * equal only to unknowns). */
static inline int wfx_shape_equal(const wf_shape *a, const wf_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

/* Writes "(2, ?, 3)", "()" or "<unknown>" into buf (always terminated;
 * WFX_SHAPE_STR_MAX bytes hold any shape) and returns buf. */
static inline char *wfx_shape_str(const wf_shape *s, char *buf, size_t len) {
  size_t used = 0;
  int n;

  assert(buf && len > 0);
  buf[0] = '\0';
  if (s->rank < 0) {
    snprintf(buf, len, "<unknown>");
    return buf;
  }
  for (int i = 0; i <= s->rank && used < len; i++) {
    const char *sep = i == 0 ? "(" : ", ";
    if (i == s->rank)
      n = snprintf(buf + used, len - used, "%s)", i ? "" : "(");
    else if (s->dims[i] < 0)
      n = snprintf(buf + used, len - used, "%s?", sep);
    else
      n = snprintf(buf + used, len - used, "%s%" PRId64, sep, s->dims[i]);
    used += n > 0 ? (size_t)n : 0;
  }
  return buf;
}

/* what ": " or nothing, for messages that may name their subject. */
#define WFX_WHAT_(what) (what) ? (what) : "", (what) ? ": " : ""

/* NumPy broadcasting of a and b into *out: shapes align at their last
 * dimension and each pair of dims must be equal or one of them 1. Unknown
 * dims follow what is certain (? with 1 gives ?, ? with d gives d); an
 * unknown rank gives an unknown rank. Incompatible shapes are
 * INVALID_ARGUMENT naming `what` (may be NULL) and both shapes; *out is
 * then unchanged. */
static inline int wfx_broadcast_shapes(const wf_shape *a, const wf_shape *b,
                                       wf_shape *out, const char *what,
                                       wf_status *st) {
  wf_shape r;
  int rank;

  if (a->rank < 0 || b->rank < 0) {
    wfx_shape_set_unknown(out);
    return 0;
  }
  rank = a->rank > b->rank ? a->rank : b->rank;
  wfx_shape_set_scalar(&r);
  r.rank = rank;
  for (int i = 0; i < rank; i++) {
    /* i counts from the last dimension. */
    int ia = a->rank - 1 - i, ib = b->rank - 1 - i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;

    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0)
      d = db;
    else if (db < 0)
      d = da;
    else {
      char sa[WFX_SHAPE_STR_MAX], sb[WFX_SHAPE_STR_MAX];
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s%sshapes %s and %s cannot be broadcast together: "
                      "dimension %d from the end is %" PRId64 " in the first "
                      "and %" PRId64 " in the second (each pair must be "
                      "equal or one of them 1)",
                      WFX_WHAT_(what), wfx_shape_str(a, sa, sizeof sa),
                      wfx_shape_str(b, sb, sizeof sb), i + 1, da, db);
    }
    r.dims[rank - 1 - i] = d;
  }
  *out = r;
  return 0;
}

/* Merges two descriptions of one tensor: equal ranks and dims, unknowns
 * taking the other side's value. INVALID_ARGUMENT naming `what` and both
 * shapes when they conflict (*out unchanged then). */
static inline int wfx_shape_merge(const wf_shape *a, const wf_shape *b,
                                  wf_shape *out, const char *what,
                                  wf_status *st) {
  char sa[WFX_SHAPE_STR_MAX], sb[WFX_SHAPE_STR_MAX];
  wf_shape r;

  if (a->rank < 0 || b->rank < 0) {
    *out = a->rank < 0 ? *b : *a;
    return 0;
  }
  if (a->rank != b->rank)
    goto conflict;
  r = *a;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] < 0)
      r.dims[i] = b->dims[i];
    else if (b->dims[i] >= 0 && b->dims[i] != a->dims[i])
      goto conflict;
  }
  *out = r;
  return 0;

conflict:
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "%s%sshapes %s and %s must be the same", WFX_WHAT_(what),
                  wfx_shape_str(a, sa, sizeof sa),
                  wfx_shape_str(b, sb, sizeof sb));
}

/* Row-major element strides of a known shape (strides[rank - 1] = 1). */
static inline void wfx_shape_strides(const wf_shape *s, int64_t *strides) {
  int64_t acc = 1;

  assert(s->rank >= 0);
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= s->dims[i];
  }
}

/* ------------------------------------------------------------------------ */
/* Axes                                                                     */

/* Normalises axis for a tensor of rank `rank` (negative axes count from
 * the end). INVALID_ARGUMENT naming `what`, the axis and the valid range
 * when out of range (*out is then 0). For an insertion axis (ExpandDims) pass
 * rank + 1. */
static inline int wfx_axis_normalize(int64_t axis, int rank, int *out,
                                     const char *what, wf_status *st) {
  assert(rank >= 0);
  *out = 0;
  if (axis < -(int64_t)rank || axis >= rank) {
    if (rank == 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s%saxis %" PRId64 " is out of range: a scalar has no "
                      "axes",
                      WFX_WHAT_(what), axis);
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s%saxis %" PRId64 " is out of range for rank %d "
                    "(valid: %d to %d)",
                    WFX_WHAT_(what), axis, rank, -rank, rank - 1);
  }
  *out = (int)(axis < 0 ? axis + rank : axis);
  return 0;
}

/* A list of axes as a bit mask (bit i = axis i); an axis out of range or
 * given twice is INVALID_ARGUMENT. An empty list gives 0. */
static inline int wfx_axes_mask(const int64_t *axes, int64_t n, int rank,
                                uint32_t *mask, const char *what,
                                wf_status *st) {
  uint32_t m = 0;

  for (int64_t i = 0; i < n; i++) {
    int a = 0;

    if (wfx_axis_normalize(axes[i], rank, &a, what, st))
      return wfx_code(st);
    if (m & (UINT32_C(1) << a))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "%s%saxis %" PRId64 " is given twice (as axis %d of "
                      "rank %d)",
                      WFX_WHAT_(what), axes[i], a, rank);
    m |= UINT32_C(1) << a;
  }
  *mask = m;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Attributes                                                               */

/* "int", "list(float)", ... for messages. */
static inline const char *wfx_attr_type_name(int32_t type) {
  static const char *const names[] = {"none",   "int",   "float", "bool",
                                      "string", "dtype", "shape", "tensor"};
  static const char *const lists[] = {
      "list(none)",   "list(int)",   "list(float)", "list(bool)",
      "list(string)", "list(dtype)", "list(shape)", "list(tensor)"};
  int32_t base = WF_ATTR_BASE(type);

  if (base < 0 || base > WF_ATTR_TENSOR)
    return "unknown";
  return WF_ATTR_IS_LIST(type) ? lists[base] : names[base];
}

/* Checks a looked-up attribute: found (rc 0) and of type `type`. */
static inline int wfx_attr_check_(int rc, const wf_attr_value *v, int32_t type,
                                  const char *name, wf_status *st) {
  if (rc != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "attribute '%s' (%s) is missing",
                    name, wfx_attr_type_name(type));
  if (v->type != type)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute '%s' has type %s; expected %s", name,
                    wfx_attr_type_name(v->type), wfx_attr_type_name(type));
  return 0;
}

/* Typed reads of an attribute, its default applied, in a shape function
 * (wfx_shape_attr_*), a kernel (wfx_kernel_attr_*) or of a node a pass or
 * a kernel's supports function reads (wfx_node_attr_*, ABI 1.3). A missing attribute
 * or one of another type is INVALID_ARGUMENT naming it and both types.
 * Lists are borrowed from the node for as long as the context is valid.
 * On failure *out is 0 (NULL and a count of 0 for lists). */
#define WFX_ATTR_READERS_(kind, ctxtype)                                       \
  static inline int wfx_##kind##_attr(const ctxtype *ctx, const char *name,    \
                                      int32_t type, wf_attr_value *v,          \
                                      wf_status *st) {                         \
    return wfx_attr_check_(wfx_host->kind##_attr(ctx, name, v), v, type, name, \
                           st);                                                \
  }                                                                            \
  static inline int wfx_##kind##_attr_int(                                     \
      const ctxtype *ctx, const char *name, int64_t *out, wf_status *st) {     \
    wf_attr_value v;                                                           \
    int rc = wfx_##kind##_attr(ctx, name, WF_ATTR_INT, &v, st);                \
    if (rc == 0)                                                               \
      *out = v.u.i;                                                            \
    else                                                                       \
      *out = 0;                                                                \
    return rc;                                                                 \
  }                                                                            \
  static inline int wfx_##kind##_attr_float(                                   \
      const ctxtype *ctx, const char *name, double *out, wf_status *st) {      \
    wf_attr_value v;                                                           \
    int rc = wfx_##kind##_attr(ctx, name, WF_ATTR_FLOAT, &v, st);              \
    if (rc == 0)                                                               \
      *out = v.u.f;                                                            \
    else                                                                       \
      *out = 0;                                                                \
    return rc;                                                                 \
  }                                                                            \
  static inline int wfx_##kind##_attr_bool(                                    \
      const ctxtype *ctx, const char *name, int *out, wf_status *st) {         \
    wf_attr_value v;                                                           \
    int rc = wfx_##kind##_attr(ctx, name, WF_ATTR_BOOL, &v, st);               \
    if (rc == 0)                                                               \
      *out = v.u.b != 0;                                                       \
    else                                                                       \
      *out = 0;                                                                \
    return rc;                                                                 \
  }                                                                            \
  static inline int wfx_##kind##_attr_dtype(                                   \
      const ctxtype *ctx, const char *name, int32_t *out, wf_status *st) {     \
    wf_attr_value v;                                                           \
    int rc = wfx_##kind##_attr(ctx, name, WF_ATTR_DTYPE, &v, st);              \
    if (rc == 0)                                                               \
      *out = v.u.dtype;                                                        \
    else                                                                       \
      *out = WF_DTYPE_INVALID;                                                 \
    return rc;                                                                 \
  }                                                                            \
  static inline int wfx_##kind##_attr_ints(                                    \
      const ctxtype *ctx, const char *name, const int64_t **out,               \
      int64_t *count, wf_status *st) {                                         \
    wf_attr_value v;                                                           \
    int rc = wfx_##kind##_attr(ctx, name, WF_ATTR_LIST | WF_ATTR_INT, &v, st); \
    *out = rc == 0 ? v.u.ints : NULL;                                          \
    *count = rc == 0 ? v.count : 0;                                            \
    return rc;                                                                 \
  }
WFX_ATTR_READERS_(shape, wf_shape_ctx)
WFX_ATTR_READERS_(kernel, wf_kernel_ctx)
WFX_ATTR_READERS_(node, wf_node)

/* A float attribute that must be finite (a slope, an epsilon): as
 * wfx_shape_attr_float, and INVALID_ARGUMENT naming it and its value when
 * it is infinite or NaN. Check it in the shape function, so that a bad node
 * is refused while the graph is built and never reaches a kernel. */
static inline int wfx_shape_attr_finite(const wf_shape_ctx *ctx,
                                        const char *name, double *out,
                                        wf_status *st) {
  if (wfx_shape_attr_float(ctx, name, out, st))
    return wfx_code(st);
  if (!isfinite(*out))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute '%s' must be finite, got %g", name, *out);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Inputs and outputs                                                       */

/* The name of input i as the op defines it is not known here: messages say
 * "input i". Pass dtype WF_DTYPE_INVALID and rank -1 for "any". */

/* Checks a tensor's dtype and rank against what the caller expects. */
static inline int wfx_check_(const char *kind, int32_t i, int32_t dt,
                             const wf_shape *s, int32_t want_dt, int want_rank,
                             wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (want_dt != WF_DTYPE_INVALID && dt != want_dt)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "%s %d has dtype %s; expected %s",
                    kind, (int)i, wfx_dtype_name(dt), wfx_dtype_name(want_dt));
  if (want_rank >= 0 && s->rank >= 0 && s->rank != want_rank)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s %d has shape %s (rank %d); expected rank %d", kind,
                    (int)i, wfx_shape_str(s, buf, sizeof buf), (int)s->rank,
                    want_rank);
  return 0;
}

/* Input i's dtype and shape during shape inference (either may be NULL),
 * checked against want_dtype and want_rank (an unknown rank passes).
 * INTERNAL when the node has no input i (an op definition bug). */
static inline int wfx_shape_input(const wf_shape_ctx *ctx, int32_t i,
                                  int32_t *dtype, wf_shape *shape,
                                  wf_status *st) {
  int32_t dt = WF_DTYPE_INVALID;
  wf_shape s;

  wfx_shape_set_unknown(&s);
  if (shape)
    *shape = s;
  if (dtype)
    *dtype = dt;
  if (wfx_host->shape_input(ctx, i, &dt, &s) != 0)
    return wfx_fail(st, WF_INTERNAL,
                    "shape inference asked for input %d, but the node has %d",
                    (int)i, (int)wfx_host->shape_num_inputs(ctx));
  if (dtype)
    *dtype = dt;
  if (shape)
    *shape = s;
  return 0;
}

static inline int wfx_shape_input_check(const wf_shape_ctx *ctx, int32_t i,
                                        int32_t want_dtype, int want_rank,
                                        int32_t *dtype, wf_shape *shape,
                                        wf_status *st) {
  int32_t dt;
  wf_shape s;

  if (wfx_shape_input(ctx, i, &dt, &s, st) ||
      wfx_check_("input", i, dt, &s, want_dtype, want_rank, st))
    return wfx_code(st);
  if (dtype)
    *dtype = dt;
  if (shape)
    *shape = s;
  return 0;
}

/* Sets output i's shape (a shape function's result). */
static inline void wfx_shape_output(wf_shape_ctx *ctx, int32_t i,
                                    const wf_shape *s) {
  wfx_host->shape_set_output(ctx, i, s);
}

/* A shape function for ops whose outputs all have input 0's shape. */
static inline int wfx_shape_like_input0(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  for (int32_t i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

/* A shape function for ops whose inputs must all describe one shape (e.g.
 * a gradient and the forward input) and whose outputs have it. */
static inline int wfx_shape_all_same(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s, t;

  if (wfx_shape_input(ctx, 0, NULL, &s, st))
    return wfx_code(st);
  for (int32_t i = 1; i < wfx_host->shape_num_inputs(ctx); i++) {
    char what[32];
    snprintf(what, sizeof what, "inputs 0 and %d", (int)i);
    if (wfx_shape_input(ctx, i, NULL, &t, st) ||
        wfx_shape_merge(&s, &t, &s, what, st))
      return wfx_code(st);
  }
  for (int32_t i = 0; i < wfx_host->shape_num_outputs(ctx); i++)
    wfx_host->shape_set_output(ctx, i, &s);
  return 0;
}

/* Input i of a running kernel (a borrowed view, valid for the call) and
 * its shape (may be NULL). INTERNAL when the node has no input i. */
static inline int wfx_kernel_input(const wf_kernel_ctx *ctx, int32_t i,
                                   const wf_tensor **t, wf_shape *shape,
                                   wf_status *st) {
  /* kernel_input answers NULL for an index out of range. */
  const wf_tensor *x = wfx_host->kernel_input(ctx, i);

  *t = x;
  if (!x) {
    if (shape)
      wfx_shape_set_unknown(shape);
    return wfx_fail(st, WF_INTERNAL,
                    "kernel input %d is missing (the node has %d)", (int)i,
                    (int)wfx_host->kernel_num_inputs(ctx));
  }
  if (shape)
    wfx_host->tensor_shape(x, shape);
  return 0;
}

/* The same, checked against want_dtype and want_rank. */
static inline int wfx_kernel_input_check(const wf_kernel_ctx *ctx, int32_t i,
                                         int32_t want_dtype, int want_rank,
                                         const wf_tensor **t, wf_shape *shape,
                                         wf_status *st) {
  wf_shape s;

  if (wfx_kernel_input(ctx, i, t, &s, st) ||
      wfx_check_("input", i, wfx_host->tensor_dtype(*t), &s, want_dtype,
                 want_rank, st))
    return wfx_code(st);
  if (shape)
    *shape = s;
  return 0;
}

/* Inputs 0..n-1 (n <= 8) of a running kernel, which must have one dtype
 * and one shape (an elementwise op's operands): INVALID_ARGUMENT naming
 * the first that differs from input 0. */
static inline int wfx_kernel_inputs_same(const wf_kernel_ctx *ctx, int n,
                                         const wf_tensor **t, wf_shape *shape,
                                         wf_status *st) {
  char sa[WFX_SHAPE_STR_MAX], sb[WFX_SHAPE_STR_MAX];
  wf_shape s0, s;

  assert(n >= 1 && n <= 8);
  for (int i = 0; i < n; i++)
    t[i] = NULL;
  if (wfx_kernel_input(ctx, 0, &t[0], &s0, st))
    return wfx_code(st);
  for (int i = 1; i < n; i++) {
    if (wfx_kernel_input(ctx, i, &t[i], &s, st) ||
        wfx_check_("input", i, wfx_host->tensor_dtype(t[i]), &s,
                   wfx_host->tensor_dtype(t[0]), -1, st))
      return wfx_code(st);
    if (!wfx_shape_equal(&s0, &s))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input %d has shape %s; expected input 0's %s", i,
                      wfx_shape_str(&s, sb, sizeof sb),
                      wfx_shape_str(&s0, sa, sizeof sa));
  }
  if (shape)
    *shape = s0;
  return 0;
}

/* A new output i of the given shape (the node's declared dtype); the
 * context keeps the reference. */
static inline int wfx_kernel_output(wf_kernel_ctx *ctx, int32_t i,
                                    const wf_shape *shape, wf_tensor **out,
                                    wf_status *st) {
  *out = wfx_host->kernel_output_new(ctx, i, shape, st);
  return *out ? 0 : wfx_code(st);
}

/* Locks the variable behind handle for the kernel's in-place update and
 * returns its value (borrowed until var_unlock), in the memory of the
 * device the kernel's node runs on; on a host before ABI 1.4 through
 * var_lock, which finds that device by itself. */
static inline wf_tensor *wfx_var_lock(const wf_kernel_ctx *ctx,
                                      const wf_tensor *handle,
                                      wf_status *st) {
  if (WF_HOST_HAS(wfx_host, kernel_var_lock))
    return wfx_host->kernel_var_lock(ctx, handle, st);
  return wfx_host->var_lock(handle, st);
}

/* A tensor's elements (host memory on devices without memory of their
 * own), its element count and its dtype. */
static inline void *wfx_data(const wf_tensor *t) {
  return wfx_host->tensor_data(t);
}
static inline int64_t wfx_count(const wf_tensor *t) {
  return wfx_host->tensor_count(t);
}
static inline int32_t wfx_dtype(const wf_tensor *t) {
  return wfx_host->tensor_dtype(t);
}

/* "node 'NAME' (OP)" (op may be NULL: "node 'NAME'") into buf, for
 * messages the core does not prefix (logs, helpers outside a shape
 * function or kernel). */
#define WFX_WHAT_MAX 320
static inline char *wfx_what_(const char *node, const char *op, char *buf,
                              size_t len) {
  if (op)
    snprintf(buf, len, "node '%s' (%s)", node ? node : "?", op);
  else
    snprintf(buf, len, "node '%s'", node ? node : "?");
  return buf;
}
static inline char *wfx_what_shape(const wf_shape_ctx *ctx, const char *op,
                                   char *buf, size_t len) {
  return wfx_what_(wfx_host->shape_node_name(ctx), op, buf, len);
}
static inline char *wfx_what_kernel(const wf_kernel_ctx *ctx, const char *op,
                                    char *buf, size_t len) {
  return wfx_what_(wfx_host->kernel_node_name(ctx), op, buf, len);
}

/* ------------------------------------------------------------------------ */
/* Elementwise and broadcasting loops                                       */

/* Most operands one broadcast walks (the output excluded). */
#define WFX_BCAST_MAX 4

/* Walks a row-major output of a fully known shape in rows, giving each
 * operand's element offset for the current row. Adjacent dimensions that
 * broadcast alike are merged, so operands of equal shapes make one row of
 * `count` elements; step[k] is 1, or 0 where operand k repeats along the
 * row. With WFX_BCAST_EACH:
 *
 *   wfx_bcast b;
 *   wfx_bcast_init(&b, &out_shape, 2, in_shapes);
 *   WFX_BCAST_EACH(&b, o, i)
 *     z[o] = x[WFX_BCAST_AT(&b, 0, i)] + y[WFX_BCAST_AT(&b, 1, i)];
 *
 * Also usable for reductions: walk the input as "output" with the
 * keep-dims result as operand to get each element's accumulator. */
typedef struct wfx_bcast {
  int n;                                       /* operands */
  int rank;                                    /* merged rank (>= 1) */
  int64_t dims[WF_MAX_RANK];                   /* merged output dims */
  int64_t strides[WFX_BCAST_MAX][WF_MAX_RANK]; /* element strides, 0: bcast */
  int64_t count;                               /* output elements */
  int64_t inner;                               /* elements per row */
  int64_t rows;                                /* count / inner (0 if empty) */
  int64_t step[WFX_BCAST_MAX];                 /* along a row: 0 or 1 */
  int64_t off[WFX_BCAST_MAX];                  /* offsets of the current row */
  int64_t pos[WF_MAX_RANK];                    /* current row (private) */
} wfx_bcast;

/* Prepares a walk of out (fully known) over n operands (1..WFX_BCAST_MAX)
 * whose shapes in[0..n-1] broadcast to it (asserted: compute out with
 * wfx_broadcast_shapes first). */
static inline void wfx_bcast_init(wfx_bcast *b, const wf_shape *out, int n,
                                  const wf_shape *in) {
  int64_t dims[WF_MAX_RANK], strides[WFX_BCAST_MAX][WF_MAX_RANK];
  int rank = 0;

  assert(n >= 1 && n <= WFX_BCAST_MAX);
  assert(wfx_shape_is_known(out));
  memset(b, 0, sizeof *b);
  b->n = n;
  b->count = wfx_shape_count(out);

  /* Full-rank strides per operand, right-aligned; size-1 output dims move
   * nothing and are dropped. */
  for (int i = 0; i < out->rank; i++) {
    if (out->dims[i] == 1)
      continue;
    dims[rank] = out->dims[i];
    for (int k = 0; k < n; k++) {
      int64_t ist[WF_MAX_RANK];
      int j = i - (out->rank - in[k].rank);

      assert(wfx_shape_is_known(&in[k]) && in[k].rank <= out->rank);
      wfx_shape_strides(&in[k], ist);
      if (j < 0 || in[k].dims[j] == 1) {
        strides[k][rank] = 0;
      } else {
        assert(in[k].dims[j] == out->dims[i]);
        strides[k][rank] = ist[j];
      }
    }
    rank++;
  }
  if (rank == 0) {
    dims[0] = 1;
    for (int k = 0; k < n; k++)
      strides[k][0] = 0;
    rank = 1;
  }

  /* Merge dimension i into the previous one where every operand is
   * contiguous across the pair (which covers "broadcast along both"). */
  b->rank = 0;
  for (int i = 0; i < rank; i++) {
    int r = b->rank, merge = r > 0;

    for (int k = 0; merge && k < n; k++)
      merge = b->strides[k][r - 1] == strides[k][i] * dims[i];
    if (merge) {
      b->dims[r - 1] *= dims[i];
      for (int k = 0; k < n; k++)
        b->strides[k][r - 1] = strides[k][i];
    } else {
      b->dims[r] = dims[i];
      for (int k = 0; k < n; k++)
        b->strides[k][r] = strides[k][i];
      b->rank++;
    }
  }

  b->inner = b->dims[b->rank - 1];
  b->rows = b->count > 0 ? b->count / b->inner : 0;
  for (int k = 0; k < n; k++) {
    b->step[k] = b->strides[k][b->rank - 1];
    assert(b->step[k] == 0 || b->step[k] == 1);
  }
}

/* Advances to the next row (off[] updated). */
static inline void wfx_bcast_next(wfx_bcast *b) {
  for (int d = b->rank - 2; d >= 0; d--) {
    b->pos[d]++;
    for (int k = 0; k < b->n; k++)
      b->off[k] += b->strides[k][d];
    if (b->pos[d] < b->dims[d])
      return;
    for (int k = 0; k < b->n; k++)
      b->off[k] -= b->strides[k][d] * b->dims[d];
    b->pos[d] = 0;
  }
}

/* Loops over every output element of a prepared walk b: o is the output's
 * element index, i the position in the row; operand k's element is
 * WFX_BCAST_AT(b, k, i). The walk is used up. */
#define WFX_BCAST_EACH(b, o, i)                                                \
  for (int64_t wfx_r_ = 0, o = 0; wfx_r_ < (b)->rows;                          \
       wfx_r_++, wfx_bcast_next(b))                                            \
    for (int64_t i = 0; i < (b)->inner && ((o = wfx_r_ * (b)->inner + i), 1);  \
         i++)
#define WFX_BCAST_AT(b, k, i) ((b)->off[k] + (i) * (b)->step[k])

/* Elementwise loops over tensors of one element count: for each element,
 * binds `T x = in[i]` (and `T y = in2[i]`) and stores EXPR into out[i]. T
 * is the element type (as WFX_DISPATCH_* defines it); out is a wf_tensor *
 * from wfx_kernel_output or wfx_map_io, in and in2 const wf_tensor *. */
#define WFX_MAP1(T, out, in, x, EXPR)                                          \
  do {                                                                         \
    T *wfx_o_ = (T *)wfx_data(out);                                            \
    const T *wfx_a_ = (const T *)wfx_data(in);                                 \
    for (int64_t wfx_i_ = 0, wfx_n_ = wfx_count(out); wfx_i_ < wfx_n_;         \
         wfx_i_++) {                                                           \
      T x = wfx_a_[wfx_i_];                                                    \
      wfx_o_[wfx_i_] = (T)(EXPR);                                              \
    }                                                                          \
  } while (0)
#define WFX_MAP2(T, out, in, in2, x, y, EXPR)                                  \
  do {                                                                         \
    T *wfx_o_ = (T *)wfx_data(out);                                            \
    const T *wfx_a_ = (const T *)wfx_data(in);                                 \
    const T *wfx_b_ = (const T *)wfx_data(in2);                                \
    for (int64_t wfx_i_ = 0, wfx_n_ = wfx_count(out); wfx_i_ < wfx_n_;         \
         wfx_i_++) {                                                           \
      T x = wfx_a_[wfx_i_], y = wfx_b_[wfx_i_];                                \
      wfx_o_[wfx_i_] = (T)(EXPR);                                              \
    }                                                                          \
  } while (0)

/* The operands of an elementwise kernel: inputs 0..n-1 (n <= 8) into
 * in[], which must have one dtype and one shape, and a new output 0 of
 * that shape as *out. */
static inline int wfx_map_io(wf_kernel_ctx *ctx, int n, const wf_tensor **in,
                             wf_tensor **out, wf_status *st) {
  wf_shape s;

  *out = NULL;
  if (wfx_kernel_inputs_same(ctx, n, in, &s, st))
    return wfx_code(st);
  return wfx_kernel_output(ctx, 0, &s, out, st);
}

/* The operands of a broadcasting binary kernel: inputs 0 and 1 as a and
 * b (one dtype), a new output 0 of their broadcast shape as *z, and b
 * prepared to walk it. */
static inline int wfx_binary_io(wf_kernel_ctx *ctx, const wf_tensor **a,
                                const wf_tensor **b, wf_tensor **z,
                                wfx_bcast *walk, wf_status *st) {
  wf_shape s[2], out;

  *b = NULL;
  *z = NULL;
  if (wfx_kernel_input(ctx, 0, a, &s[0], st) ||
      wfx_kernel_input_check(ctx, 1, wfx_host->tensor_dtype(*a), -1, b, &s[1],
                             st) ||
      wfx_broadcast_shapes(&s[0], &s[1], &out, "inputs 0 and 1", st) ||
      wfx_kernel_output(ctx, 0, &out, z, st))
    return wfx_code(st);
  wfx_bcast_init(walk, &out, 2, s);
  return 0;
}

/* A shape function for broadcasting binary ops: output 0 gets the
 * broadcast shape of inputs 0 and 1. */
static inline int wfx_shape_broadcast(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape a, b, out;

  if (wfx_shape_input(ctx, 0, NULL, &a, st) ||
      wfx_shape_input(ctx, 1, NULL, &b, st) ||
      wfx_broadcast_shapes(&a, &b, &out, "inputs 0 and 1", st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &out);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Graph passes                                                             */

/* A name for a node a pass adds in place of node `from`: "<from>_<suffix>"
 * written to buf, with the scope's '/' made '_' (the names a pass gives
 * take no scope). Returns buf, or NULL when a node of the working graph
 * already has that name (or it does not fit in len): pass the result to
 * pass_add_node as it is, which makes a name up for NULL. Looks at every
 * node: a pass adding many nodes to a large graph pays for each. */
static inline const char *wfx_pass_name(const wf_pass_ctx *ctx,
                                        const wf_node *from,
                                        const char *suffix, char *buf,
                                        size_t len) {
  int n = snprintf(buf, len, "%s_%s", wfx_host->node_name(from), suffix);
  if (n < 0 || (size_t)n >= len)
    return NULL;
  for (char *c = buf; *c; c++)
    if (*c == '/')
      *c = '_';
  int32_t count = wfx_host->pass_num_nodes(ctx);
  for (int32_t i = 0; i < count; i++)
    if (strcmp(wfx_host->node_name(wfx_host->pass_node(ctx, i)), buf) == 0)
      return NULL;
  return buf;
}

/* ------------------------------------------------------------------------ */
/* Gradient functions                                                       */

/* Node builders for the body of a wf_grad_fn. They pass failure along:
 * when an input's node is NULL they add nothing and return a NULL output
 * (st keeps the first error), so a gradient function builds its whole
 * expression and checks once, at the end, with wfx_grad_done:
 *
 *   wf_output dy = wfx_host->grad_output_grad(ctx, 0);
 *   wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "Mul", dy, y, st));
 *   return wfx_grad_done(st);
 *
 * Nodes are named under the gradient's scope. Only valid during the call. */

/* A node of op on in[0..n-1] with attrs[0..nattrs-1] (copied; NULL when
 * nattrs is 0); returns its output 0. */
static inline wf_output wfx_grad_node(wf_grad_ctx *ctx, const char *op,
                                      const wf_output *in, int n,
                                      const wf_attr_item *attrs, int nattrs,
                                      wf_status *st) {
  wf_output out = {NULL, 0};

  for (int i = 0; i < n; i++)
    if (!in[i].node) {
      /* an earlier builder failed and st says why; else a caller bug */
      if (wfx_code(st) == WF_OK)
        wfx_fail(st, WF_INTERNAL,
                 "gradient of node '%s': input %d of the %s node to add is "
                 "missing",
                 wfx_host->grad_node_name(ctx), i, op);
      return out;
    }
  out.node = wfx_host->grad_add_node(ctx, op, in, n, attrs, nattrs, st);
  return out;
}

static inline wf_output wfx_grad_op1(wf_grad_ctx *ctx, const char *op,
                                     wf_output a, wf_status *st) {
  return wfx_grad_node(ctx, op, &a, 1, NULL, 0, st);
}

static inline wf_output wfx_grad_op2(wf_grad_ctx *ctx, const char *op,
                                     wf_output a, wf_output b, wf_status *st) {
  wf_output in[2] = {a, b};
  return wfx_grad_node(ctx, op, in, 2, NULL, 0, st);
}

static inline wf_output wfx_grad_op3(wf_grad_ctx *ctx, const char *op,
                                     wf_output a, wf_output b, wf_output c,
                                     wf_status *st) {
  wf_output in[3] = {a, b, c};
  return wfx_grad_node(ctx, op, in, 3, NULL, 0, st);
}

/* Sets input i's gradient to g; nothing when g's node is NULL (a failed
 * build, which wfx_grad_done reports). */
static inline void wfx_grad_set(wf_grad_ctx *ctx, int32_t i, wf_output g) {
  if (g.node)
    wfx_host->grad_set_input_grad(ctx, i, g);
}

/* What a gradient function returns at its end: 0, or st's code. */
static inline int wfx_grad_done(wf_status *st) { return wfx_code(st); }

/* 1 when the static shapes of a and b are fully known and equal. */
static inline int wfx_grad_same_known_shape(const wf_grad_ctx *ctx, wf_output a,
                                            wf_output b) {
  wf_shape sa, sb;
  int32_t dt;

  return a.node && b.node &&
         wfx_host->grad_tensor_info(ctx, a, &dt, &sa) == 0 &&
         wfx_host->grad_tensor_info(ctx, b, &dt, &sb) == 0 &&
         wfx_shape_is_known(&sa) && wfx_shape_equal(&sa, &sb);
}

/* Attribute `name` of the forward node, checked to be of type `type`
 * (WF_ATTR_*); INVALID_ARGUMENT naming the node and attribute otherwise.
 * Values are borrowed for the call: pass them on in a WFX_ITEM_VALUE to
 * copy a forward attribute onto a gradient node. */
static inline int wfx_grad_attr(const wf_grad_ctx *ctx, const char *name,
                                int32_t type, wf_attr_value *out,
                                wf_status *st) {
  if (wfx_host->grad_attr(ctx, name, out) != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "gradient of node '%s': attribute '%s' (%s) is missing",
                    wfx_host->grad_node_name(ctx), name,
                    wfx_attr_type_name(type));
  if (out->type != type)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "gradient of node '%s': attribute '%s' has type %s; "
                    "expected %s",
                    wfx_host->grad_node_name(ctx), name,
                    wfx_attr_type_name(out->type), wfx_attr_type_name(type));
  return 0;
}

/* The usual gradient of an op whose backward is an op of its own: input
 * 0's gradient is op(dy, x0, x1, ...) (the gradient arriving at output 0,
 * then the forward node's inputs, at most 7) with the forward node's
 * attributes named in attrs (comma-separated, at most 8; NULL for none)
 * copied onto it. Returns wfx_grad_done's code. */
static inline int wfx_grad_by_op(wf_grad_ctx *ctx, const char *op,
                                 const char *attrs, wf_status *st) {
  const char *node = wfx_host->grad_node_name(ctx);
  char names[8][64];
  wf_attr_item items[8];
  wf_output in[8];
  int n = wfx_host->grad_num_inputs(ctx), na = 0;

  if (n > 7)
    return wfx_fail(st, WF_INTERNAL,
                    "gradient of node '%s': %d inputs for %s (at most 7)", node,
                    n, op);
  in[0] = wfx_host->grad_output_grad(ctx, 0);
  for (int i = 0; i < n; i++)
    in[i + 1] = wfx_host->grad_input(ctx, i);
  for (const char *p = attrs; p && *p && na < 8; na++) {
    size_t len = strcspn(p, ",");
    snprintf(names[na], sizeof names[na], "%.*s", (int)len, p);
    items[na].name = names[na];
    if (wfx_host->grad_attr(ctx, names[na], &items[na].value) != 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "gradient of node '%s': attribute '%s' is missing", node,
                      names[na]);
    p += len + (p[len] == ',');
  }
  if (!in[0].node)
    return wfx_fail(st, WF_INTERNAL,
                    "gradient of node '%s': no gradient arrives at output 0",
                    node);
  wfx_grad_set(ctx, 0, wfx_grad_node(ctx, op, in, n + 1, items, na, st));
  return wfx_grad_done(st);
}

#ifdef __cplusplus
}
#endif
#endif /* WEFT_PLUGIN_AUX_H */
