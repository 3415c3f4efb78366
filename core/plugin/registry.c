/* core/plugin/registry.c — the registry of what plugins registered: normalised
 * copies of their op, kernel, gradient, device-type, reader and pass
 * definitions, checked for well-formedness and for conflicts between
 * plugins, added all or nothing per plugin; and the choice of one kernel
 * for an op on a device type under the config's [kernels] deny and prefer
 * rules.
 *
 * Loading plugins and calling their functions is not done here (see
 * core/plugin/runtime.c and core/plugin/loader.c). */
#include <config.h>

#include "plugin/registry.h"

#include <assert.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <weft/status.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "graph/tensor_internal.h"
#include "plugin/settings.h"
#include "base/status_internal.h"

/* Upper bounds that catch an unterminated array in a plugin before we walk
 * off into unrelated memory. */
#define MAX_ARGS 1024
#define MAX_ATTRS 1024

struct wf__registry {
  wf__op **ops; /* sorted by name */
  int num_ops, cap_ops;
  wf__kernel **kernels; /* sorted by op, device type, priority (high first) */
  int num_kernels, cap_kernels;
  wf__gradient **gradients; /* registration order */
  int num_gradients, cap_gradients;
  wf__device_type **devices;
  int num_devices, cap_devices;
  wf__reader **readers;
  int num_readers, cap_readers;
  wf__pass **passes; /* sorted by order, then name */
  int num_passes, cap_passes;
  char **plugin_names; /* owned copies, referenced by the entries */
  int num_plugin_names, cap_plugin_names;
  atomic_int noticed; /* wf__registry_claim_notice was called */
};

/* Entries of one plugin, checked but not yet part of the registry. */
typedef struct batch {
  const char *plugin;
  wf__op **ops;
  int num_ops;
  wf__kernel **kernels;
  int num_kernels;
  wf__gradient **gradients;
  int num_gradients;
  wf__device_type **devices;
  int num_devices;
  wf__reader **readers;
  int num_readers;
  wf__pass **passes;
  int num_passes;
} batch;

/* ---- small helpers ------------------------------------------------------- */

static int str_eq(const char *a, const char *b) {
  if (!a || !b)
    return a == b;
  return strcmp(a, b) == 0;
}

static const char *str_or(const char *s, const char *dflt) {
  return s ? s : dflt;
}

static int is_empty(const char *s) { return !s || !*s; }

/* Counts a NULL-terminated array of pointers. */
static int count_ptrs(const void *const *p) {
  int n = 0;
  if (p)
    while (p[n])
      n++;
  return n;
}

/* Grows *arr (of pointers) to hold at least need entries. */
static int reserve(void ***arr, int *cap, int need) {
  void **p;
  int ncap;
  if (need <= *cap)
    return 0;
  ncap = *cap ? *cap : 16;
  while (ncap < need)
    ncap *= 2;
  p = wf__realloc(*arr, (size_t)ncap * sizeof *p);
  if (!p)
    return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

static wf_code oom(wf_status *st, const char *plugin) {
  return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "plugin '%s': out of memory while registering it",
                       plugin);
}

/* The header every boundary struct starts with. */
typedef struct struct_header {
  WF_STRUCT_HEADER;
} struct_header;

/* Copies a boundary struct of (possibly older or newer) size into dst in the
 * current layout: members the plugin's struct lacks are zero, members beyond
 * ours are ignored, and the header then says the current size and ABI.
 * min_size covers the header and the struct's first member (every struct of
 * ABI 1.0 has at least those). */
static int normalise(void *dst, size_t dst_size, const void *src,
                     size_t min_size, const char *plugin, const char *what,
                     wf_status *st) {
  struct_header hdr;
  size_t n;

  if (!src)
    return wf_status_set(st, WF_INVALID_ARGUMENT, "plugin '%s': %s is NULL",
                         plugin, what);
  memcpy(&hdr, src, sizeof hdr);
  if (hdr.abi_major != WF_ABI_MAJOR)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': %s was built for ABI %u.%u, this core "
                         "has ABI %d.%d",
                         plugin, what, (unsigned)hdr.abi_major,
                         (unsigned)hdr.abi_minor, WF_ABI_MAJOR, WF_ABI_MINOR);
  if (hdr.struct_size < min_size)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': %s has struct_size %u, below the "
                         "smallest valid size %zu",
                         plugin, what, (unsigned)hdr.struct_size, min_size);
  n = hdr.struct_size < dst_size ? hdr.struct_size : dst_size;
  memset(dst, 0, dst_size);
  memcpy(dst, src, n);
  hdr.struct_size = (uint32_t)dst_size;
  hdr.abi_major = WF_ABI_MAJOR;
  hdr.abi_minor = WF_ABI_MINOR;
  memcpy(dst, &hdr, sizeof hdr);
  return WF_OK;
}

/* The struct_size of the boundary struct at p. */
static uint32_t size_at(const void *p) {
  struct_header hdr;
  memcpy(&hdr, p, sizeof hdr);
  return hdr.struct_size;
}

#define MIN_SIZE(T, first) (offsetof(T, first) + sizeof(((T *)0)->first))

/* Counts the elements of an array that ends with a struct_size of 0, each
 * element at least min_size bytes, into *n; an error names plugin and what
 * when an element's size is bogus or no end marker comes within max. */
static int count_elems(const void *arr, size_t max, size_t min_size,
                       const char *plugin, const char *what, int *n,
                       wf_status *st) {
  const unsigned char *p = arr;
  *n = 0;
  if (!arr)
    return WF_OK;
  for (;;) {
    uint32_t size = size_at(p);
    if (size == 0)
      return WF_OK;
    if (size < min_size || size % _Alignof(void *) != 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': %s %d has struct_size %u, which is "
                           "not a valid element size",
                           plugin, what, *n, (unsigned)size);
    if ((size_t)++ * n > max)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': %s has more than %zu entries (missing "
                           "end marker?)",
                           plugin, what, max);
    p += size;
  }
}

/* ---- ops: normalising and checking --------------------------------------- */

static void op_free(wf__op *op) {
  if (!op)
    return;
  wf__free(op->inputs);
  wf__free(op->outputs);
  wf__free(op->attrs);
  wf__free(op);
}

/* Copies a terminated array of boundary structs into a new array of n
 * current-layout elements plus a zeroed terminator. */
static int copy_elems(void **out, const void *arr, int n, size_t elem_size,
                      size_t min_size, const char *plugin, const char *what,
                      wf_status *st) {
  const unsigned char *p = arr;
  unsigned char *dst = wf__calloc((size_t)n + 1, elem_size);
  if (!dst)
    return oom(st, plugin);
  for (int i = 0; i < n; i++) {
    uint32_t size = size_at(p);
    if (normalise(dst + (size_t)i * elem_size, elem_size, p, min_size, plugin,
                  what, st)) {
      wf__free(dst);
      return wf_status_code(st);
    }
    p += size;
  }
  *out = dst;
  return WF_OK;
}

static const wf_attr_def *find_attr_def(const wf__op *op, const char *name) {
  int i = wf__op_attr_index(op, name);
  return i < 0 ? NULL : &op->attrs[i];
}

static int is_valid_attr_type(int32_t type) {
  int base = WF_ATTR_BASE(type);
  if (type & ~(WF_ATTR_LIST | 0xff))
    return 0;
  return base >= WF_ATTR_INT && base <= WF_ATTR_TENSOR;
}

static int is_valid_dtype(int32_t d) {
  return d > WF_DTYPE_INVALID && d < WF__DTYPE_END;
}

/* Checks one attribute definition of op (already normalised). */
static int check_attr_def(const wf__op *op, int i, const char *plugin,
                          wf_status *st) {
  const wf_attr_def *a = &op->attrs[i];
  const char *opn = op->def.name;
  int base = WF_ATTR_BASE(a->type);

  if (is_empty(a->name))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': attr %d has no name", plugin,
                         opn, i);
  for (int j = 0; j < i; j++)
    if (strcmp(op->attrs[j].name, a->name) == 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': attr '%s' is defined twice",
                           plugin, opn, a->name);
  if (!is_valid_attr_type(a->type))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': attr '%s' has invalid type %d",
                         plugin, opn, a->name, (int)a->type);
  if (a->allowed_dtypes && base != WF_ATTR_DTYPE)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': attr '%s' of type %s has "
                         "allowed_dtypes, which only dtype attrs may have",
                         plugin, opn, a->name, wf__attr_type_name(a->type));
  if (a->allowed_dtypes & ~(uint32_t)WF__DTYPES_KNOWN)
    return wf_status_set(
        st, WF_INVALID_ARGUMENT,
        "plugin '%s': op '%s': attr '%s' allows dtype bits "
        "0x%x that name no dtype",
        plugin, opn, a->name,
        (unsigned)(a->allowed_dtypes & ~(uint32_t)WF__DTYPES_KNOWN));
  if (a->has_minimum && base != WF_ATTR_INT && !WF_ATTR_IS_LIST(a->type))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': attr '%s' of type %s has a "
                         "minimum, which only ints and lists may have",
                         plugin, opn, a->name, wf__attr_type_name(a->type));
  if (!a->has_default)
    return WF_OK;

  /* The default must have the attr's own type and satisfy its limits. */
  {
    const wf_attr_value *d = &a->default_value;
    char buf[128];
    if (d->type != a->type)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': attr '%s' is %s but its "
                           "default is %s",
                           plugin, opn, a->name, wf__attr_type_name(a->type),
                           wf__attr_type_name(d->type));
    if (WF_ATTR_IS_LIST(d->type)) {
      if (d->count < 0 || (d->count > 0 && !d->u.ints))
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "plugin '%s': op '%s': attr '%s' has a default "
                             "list with count %lld and %s items",
                             plugin, opn, a->name, (long long)d->count,
                             d->u.ints ? "some" : "no");
      if (a->has_minimum && d->count < a->minimum)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "plugin '%s': op '%s': attr '%s' default has %lld "
                             "items, fewer than its minimum %lld",
                             plugin, opn, a->name, (long long)d->count,
                             (long long)a->minimum);
      if (base == WF_ATTR_DTYPE)
        for (int64_t k = 0; k < d->count; k++)
          if (!is_valid_dtype(d->u.dtypes[k]) ||
              (a->allowed_dtypes &&
               !(a->allowed_dtypes & WF_DTYPE_BIT(d->u.dtypes[k]))))
            return wf_status_set(st, WF_INVALID_ARGUMENT,
                                 "plugin '%s': op '%s': attr '%s' default "
                                 "item %lld is not an allowed dtype",
                                 plugin, opn, a->name, (long long)k);
    } else if (base == WF_ATTR_INT && a->has_minimum && d->u.i < a->minimum) {
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': attr '%s' default %lld is "
                           "below its minimum %lld",
                           plugin, opn, a->name, (long long)d->u.i,
                           (long long)a->minimum);
    } else if (base == WF_ATTR_DTYPE &&
               (!is_valid_dtype(d->u.dtype) ||
                (a->allowed_dtypes &&
                 !(a->allowed_dtypes & WF_DTYPE_BIT(d->u.dtype))))) {
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': attr '%s' default %s is "
                           "not an allowed dtype",
                           plugin, opn, a->name,
                           wf__attr_str(d, buf, sizeof buf));
    } else if (base == WF_ATTR_TENSOR && !d->u.tensor) {
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': attr '%s' has a NULL "
                           "tensor as default",
                           plugin, opn, a->name);
    }
  }
  return WF_OK;
}

/* Checks argument i of the inputs (or outputs) of op. */
static int check_arg_def(const wf__op *op, const wf_arg_def *args, int i,
                         const char *kind, const char *plugin, wf_status *st) {
  const wf_arg_def *g = &args[i];
  const char *opn = op->def.name;
  const wf_attr_def *a;

  if (is_empty(g->name))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': %s %d has no name", plugin, opn,
                         kind, i);
  for (int j = 0; j < i; j++)
    if (strcmp(args[j].name, g->name) == 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': %s '%s' is defined twice",
                           plugin, opn, kind, g->name);
  if ((g->dtype != WF_DTYPE_INVALID) == !is_empty(g->type_attr))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': %s '%s' must have exactly one "
                         "of a fixed dtype and a type_attr",
                         plugin, opn, kind, g->name);
  if (g->dtype != WF_DTYPE_INVALID && !is_valid_dtype(g->dtype))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': op '%s': %s '%s' has invalid dtype %d",
                         plugin, opn, kind, g->name, (int)g->dtype);
  if (!is_empty(g->type_attr)) {
    /* A list(dtype) attribute types a list output item by item. */
    int type_list;
    a = find_attr_def(op, g->type_attr);
    type_list = a && a->type == (WF_ATTR_LIST | WF_ATTR_DTYPE);
    if (!a || (a->type != WF_ATTR_DTYPE && !type_list) ||
        (type_list && (strcmp(kind, "output") != 0 || g->number_attr)))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': %s '%s' takes its type from "
                           "attr '%s', which %s",
                           plugin, opn, kind, g->name, g->type_attr,
                           !a ? "does not exist"
                           : type_list
                               ? "is a list(dtype): only outputs without a "
                                 "number_attr may take one"
                               : "is not of type dtype");
  }
  if (g->number_attr) {
    a = find_attr_def(op, g->number_attr);
    if (!a || a->type != WF_ATTR_INT)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': op '%s': %s '%s' takes its length "
                           "from attr '%s', which %s",
                           plugin, opn, kind, g->name, g->number_attr,
                           a ? "is not of type int" : "does not exist");
  }
  return WF_OK;
}

static int is_op_name(const char *s) {
  if (is_empty(s) ||
      !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
      return 0;
  return 1;
}

/* Normalises and checks one op definition into a new wf__op. */
static int op_make(const wf_op_def *src, int index, const char *plugin,
                   wf__op **out, wf_status *st) {
  char what[96];
  wf__op *op = wf__calloc(1, sizeof *op);
  void *arr = NULL;

  if (!op)
    return oom(st, plugin);
  snprintf(what, sizeof what, "op %d", index);
  if (normalise(&op->def, sizeof op->def, src, MIN_SIZE(wf_op_def, name),
                plugin, what, st))
    goto fail;
  if (!is_op_name(op->def.name)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': op %d has name '%s'; op names are a letter or "
                  "'_' followed by letters, digits, '_' or '.'",
                  plugin, index, str_or(op->def.name, "(null)"));
    goto fail;
  }
  snprintf(what, sizeof what, "op '%s': input", op->def.name);
  if (count_elems(op->def.inputs, MAX_ARGS, MIN_SIZE(wf_arg_def, name), plugin,
                  what, &op->num_inputs, st) ||
      copy_elems(&arr, op->def.inputs, op->num_inputs, sizeof(wf_arg_def),
                 MIN_SIZE(wf_arg_def, name), plugin, what, st))
    goto fail;
  op->inputs = arr;
  snprintf(what, sizeof what, "op '%s': output", op->def.name);
  if (count_elems(op->def.outputs, MAX_ARGS, MIN_SIZE(wf_arg_def, name), plugin,
                  what, &op->num_outputs, st) ||
      copy_elems(&arr, op->def.outputs, op->num_outputs, sizeof(wf_arg_def),
                 MIN_SIZE(wf_arg_def, name), plugin, what, st))
    goto fail;
  op->outputs = arr;
  snprintf(what, sizeof what, "op '%s': attr", op->def.name);
  if (count_elems(op->def.attrs, MAX_ATTRS, MIN_SIZE(wf_attr_def, name), plugin,
                  what, &op->num_attrs, st) ||
      copy_elems(&arr, op->def.attrs, op->num_attrs, sizeof(wf_attr_def),
                 MIN_SIZE(wf_attr_def, name), plugin, what, st))
    goto fail;
  op->attrs = arr;
  op->def.inputs = op->inputs;
  op->def.outputs = op->outputs;
  op->def.attrs = op->attrs;
  op->plugin = plugin;

  for (int i = 0; i < op->num_attrs; i++)
    if (check_attr_def(op, i, plugin, st))
      goto fail;
  for (int i = 0; i < op->num_inputs; i++)
    if (check_arg_def(op, op->inputs, i, "input", plugin, st))
      goto fail;
  for (int i = 0; i < op->num_outputs; i++)
    if (check_arg_def(op, op->outputs, i, "output", plugin, st))
      goto fail;
  *out = op;
  return WF_OK;

fail:
  op_free(op);
  return wf_status_code(st);
}

/* ---- ops: comparing two definitions -------------------------------------- */

static const char *arg_type_str(const wf_arg_def *g) {
  return g->type_attr ? g->type_attr : str_or(wf_dtype_name(g->dtype), "?");
}

/* Writes the first difference between args a and b (count n each) into
 * buf; returns 1 when there is one. */
static int args_differ(const wf_arg_def *a, int na, const wf_arg_def *b, int nb,
                       const char *kind, char *buf, size_t len) {
  if (na != nb) {
    snprintf(buf, len, "%d %ss vs %d", na, kind, nb);
    return 1;
  }
  for (int i = 0; i < na; i++) {
    if (!str_eq(a[i].name, b[i].name) || a[i].dtype != b[i].dtype ||
        !str_eq(a[i].type_attr, b[i].type_attr) ||
        !str_eq(a[i].number_attr, b[i].number_attr)) {
      snprintf(buf, len, "%s %d: '%s' of type %s%s%s vs '%s' of type %s%s%s",
               kind, i, a[i].name, arg_type_str(&a[i]),
               a[i].number_attr ? " times " : "", str_or(a[i].number_attr, ""),
               b[i].name, arg_type_str(&b[i]),
               b[i].number_attr ? " times " : "", str_or(b[i].number_attr, ""));
      return 1;
    }
  }
  return 0;
}

/* Writes the first difference between two op definitions into buf; returns
 * 0 when they are the same (documentation and shape functions aside: two
 * plugins cannot share a function pointer). */
static int op_differs(const wf__op *a, const wf__op *b, char *buf, size_t len) {
  char va[96], vb[96];
  if (args_differ(a->inputs, a->num_inputs, b->inputs, b->num_inputs, "input",
                  buf, len) ||
      args_differ(a->outputs, a->num_outputs, b->outputs, b->num_outputs,
                  "output", buf, len))
    return 1;
  if (a->def.flags != b->def.flags) {
    snprintf(buf, len, "flags 0x%x vs 0x%x", (unsigned)a->def.flags,
             (unsigned)b->def.flags);
    return 1;
  }
  if (a->num_attrs != b->num_attrs) {
    snprintf(buf, len, "%d attrs vs %d", a->num_attrs, b->num_attrs);
    return 1;
  }
  for (int i = 0; i < a->num_attrs; i++) {
    const wf_attr_def *x = &a->attrs[i], *y = &b->attrs[i];
    if (!str_eq(x->name, y->name) || x->type != y->type) {
      snprintf(buf, len, "attr %d: '%s' of type %s vs '%s' of type %s", i,
               x->name, wf__attr_type_name(x->type), y->name,
               wf__attr_type_name(y->type));
      return 1;
    }
    if (x->has_default != y->has_default ||
        (x->has_default &&
         !wf__attr_equal(&x->default_value, &y->default_value))) {
      snprintf(buf, len, "attr '%s': default %s vs %s", x->name,
               x->has_default ? wf__attr_str(&x->default_value, va, sizeof va)
                              : "none",
               y->has_default ? wf__attr_str(&y->default_value, vb, sizeof vb)
                              : "none");
      return 1;
    }
    if (x->allowed_dtypes != y->allowed_dtypes) {
      snprintf(buf, len, "attr '%s': allowed dtypes 0x%x vs 0x%x", x->name,
               (unsigned)x->allowed_dtypes, (unsigned)y->allowed_dtypes);
      return 1;
    }
    if (x->has_minimum != y->has_minimum ||
        (x->has_minimum && x->minimum != y->minimum)) {
      snprintf(buf, len, "attr '%s': minimum %lld vs %lld", x->name,
               x->has_minimum ? (long long)x->minimum : 0LL,
               y->has_minimum ? (long long)y->minimum : 0LL);
      return 1;
    }
  }
  return 0;
}

/* ---- kernels, gradients and the rest ------------------------------------- */

static int kernel_make(const wf_kernel_def *src, int index, const char *plugin,
                       wf__kernel **out, wf_status *st) {
  char what[64];
  wf__kernel *k = wf__calloc(1, sizeof *k);
  if (!k)
    return oom(st, plugin);
  snprintf(what, sizeof what, "kernel %d", index);
  if (normalise(&k->def, sizeof k->def, src, MIN_SIZE(wf_kernel_def, op),
                plugin, what, st))
    goto fail;
  k->plugin = plugin;
  /* Flags later than the kernel's ABI minor are not its to set. */
  {
    struct_header hdr;
    memcpy(&hdr, src, sizeof hdr);
    if (hdr.abi_minor < 7)
      k->def.flags &= ~WF_KERNEL_IN_PLACE;
  }
  if (is_empty(k->def.op)) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "plugin '%s': kernel %d names no op",
                  plugin, index);
    goto fail;
  }
  if (is_empty(k->def.device_type)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': kernel %d for op '%s' names no device type",
                  plugin, index, k->def.op);
    goto fail;
  }
  if (!k->def.compute) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': kernel for op '%s' on '%s' has no compute "
                  "function",
                  plugin, k->def.op, k->def.device_type);
    goto fail;
  }
  if (k->def.type_attr && (k->def.dtypes & WF__DTYPES_KNOWN) == 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': kernel for op '%s' on '%s' constrains attr "
                  "'%s' but its dtype mask allows no dtype",
                  plugin, k->def.op, k->def.device_type, k->def.type_attr);
    goto fail;
  }
  *out = k;
  return WF_OK;

fail:
  wf__free(k);
  return wf_status_code(st);
}

/* The dtypes a kernel accepts; a kernel without type_attr accepts all. */
static uint32_t kernel_mask(const wf__kernel *k) {
  return k->def.type_attr ? k->def.dtypes : (uint32_t)WF_DTYPES_ALL;
}

static int kernels_clash(const wf__kernel *a, const wf__kernel *b) {
  return strcmp(a->def.op, b->def.op) == 0 &&
         strcmp(a->def.device_type, b->def.device_type) == 0 &&
         a->def.priority == b->def.priority &&
         (kernel_mask(a) & kernel_mask(b)) != 0;
}

static wf_code kernel_clash_error(const wf__kernel *old, const wf__kernel *k,
                                  wf_status *st) {
  return wf_status_set(
      st, WF_ALREADY_EXISTS,
      "kernel for op '%s' on '%s' with priority %d is registered by plugin "
      "'%s' and again by plugin '%s' for overlapping dtypes (mask 0x%x vs "
      "0x%x); give one a different priority",
      k->def.op, k->def.device_type, (int)k->def.priority, old->plugin,
      k->plugin, (unsigned)kernel_mask(old), (unsigned)kernel_mask(k));
}

static int gradient_make(const wf_gradient_def *src, int index,
                         const char *plugin, wf__gradient **out,
                         wf_status *st) {
  char what[64];
  wf__gradient *g = wf__calloc(1, sizeof *g);
  if (!g)
    return oom(st, plugin);
  snprintf(what, sizeof what, "gradient %d", index);
  if (normalise(&g->def, sizeof g->def, src, MIN_SIZE(wf_gradient_def, op),
                plugin, what, st))
    goto fail;
  g->plugin = plugin;
  if (is_empty(g->def.op)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': gradient %d names no op", plugin, index);
    goto fail;
  }
  if (!g->def.fn && !(g->def.flags & WF_GRAD_NOT_DIFFERENTIABLE)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': gradient of op '%s' has no function and is "
                  "not marked WF_GRAD_NOT_DIFFERENTIABLE",
                  plugin, g->def.op);
    goto fail;
  }
  *out = g;
  return WF_OK;

fail:
  wf__free(g);
  return wf_status_code(st);
}

static int device_make(const wf_device_def *src, int index, const char *plugin,
                       void *state, wf__device_type **out, wf_status *st) {
  char what[64];
  wf__device_type *d = wf__calloc(1, sizeof *d);
  const char *missing = NULL;
  if (!d)
    return oom(st, plugin);
  snprintf(what, sizeof what, "device type %d", index);
  if (normalise(&d->def, sizeof d->def, src, MIN_SIZE(wf_device_def, type),
                plugin, what, st))
    goto fail;
  d->plugin = plugin;
  d->plugin_state = state;
  if (is_empty(d->def.type)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': device type %d has no name", plugin, index);
    goto fail;
  }
  /* A device type must list its instances. alloc and free come as a pair;
   * without them its tensors live in host memory (the host allocator). */
  if (!d->def.enumerate)
    missing = "an enumerate function";
  else if (!d->def.alloc != !d->def.free)
    missing = d->def.alloc ? "a free function to go with its alloc"
                           : "an alloc function to go with its free";
  if (missing) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': device type '%s' lacks %s", plugin, d->def.type,
                  missing);
    goto fail;
  }
  *out = d;
  return WF_OK;

fail:
  wf__free(d);
  return wf_status_code(st);
}

static int reader_make(const wf_reader_def *src, int index, const char *plugin,
                       wf__reader **out, wf_status *st) {
  char what[64];
  wf__reader *r = wf__calloc(1, sizeof *r);
  if (!r)
    return oom(st, plugin);
  snprintf(what, sizeof what, "reader %d", index);
  if (normalise(&r->def, sizeof r->def, src, MIN_SIZE(wf_reader_def, name),
                plugin, what, st))
    goto fail;
  r->plugin = plugin;
  if (is_empty(r->def.name)) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "plugin '%s': reader %d has no name",
                  plugin, index);
    goto fail;
  }
  *out = r;
  return WF_OK;

fail:
  wf__free(r);
  return wf_status_code(st);
}

static int pass_make(const wf_pass_def *src, int index, const char *plugin,
                     wf__pass **out, wf_status *st) {
  char what[64];
  wf__pass *p = wf__calloc(1, sizeof *p);
  if (!p)
    return oom(st, plugin);
  snprintf(what, sizeof what, "pass %d", index);
  if (normalise(&p->def, sizeof p->def, src, MIN_SIZE(wf_pass_def, name),
                plugin, what, st))
    goto fail;
  p->plugin = plugin;
  if (is_empty(p->def.name)) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "plugin '%s': pass %d has no name",
                  plugin, index);
    goto fail;
  }
  if (!p->def.run) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "plugin '%s': pass '%s' has no run function", plugin,
                  p->def.name);
    goto fail;
  }
  *out = p;
  return WF_OK;

fail:
  wf__free(p);
  return wf_status_code(st);
}

/* ---- the registry -------------------------------------------------------- */

wf__registry *wf__registry_new(void) {
  wf__registry *r = wf__calloc(1, sizeof(wf__registry));
  if (r)
    atomic_init(&r->noticed, 0);
  return r;
}

void wf__registry_free(wf__registry *r) {
  if (!r)
    return;
  for (int i = 0; i < r->num_ops; i++)
    op_free(r->ops[i]);
  for (int i = 0; i < r->num_kernels; i++)
    wf__free(r->kernels[i]);
  for (int i = 0; i < r->num_gradients; i++)
    wf__free(r->gradients[i]);
  for (int i = 0; i < r->num_devices; i++)
    wf__free(r->devices[i]);
  for (int i = 0; i < r->num_readers; i++)
    wf__free(r->readers[i]);
  for (int i = 0; i < r->num_passes; i++)
    wf__free(r->passes[i]);
  for (int i = 0; i < r->num_plugin_names; i++)
    wf__free(r->plugin_names[i]);
  wf__free(r->ops);
  wf__free(r->kernels);
  wf__free(r->gradients);
  wf__free(r->devices);
  wf__free(r->readers);
  wf__free(r->passes);
  wf__free(r->plugin_names);
  wf__free(r);
}

static void batch_free(batch *b) {
  for (int i = 0; i < b->num_ops; i++)
    op_free(b->ops[i]);
  for (int i = 0; i < b->num_kernels; i++)
    wf__free(b->kernels[i]);
  for (int i = 0; i < b->num_gradients; i++)
    wf__free(b->gradients[i]);
  for (int i = 0; i < b->num_devices; i++)
    wf__free(b->devices[i]);
  for (int i = 0; i < b->num_readers; i++)
    wf__free(b->readers[i]);
  for (int i = 0; i < b->num_passes; i++)
    wf__free(b->passes[i]);
  wf__free(b->ops);
  wf__free(b->kernels);
  wf__free(b->gradients);
  wf__free(b->devices);
  wf__free(b->readers);
  wf__free(b->passes);
}

/* Index of the first op whose name is >= name. */
static int op_lower_bound(const wf__registry *r, const char *name) {
  int lo = 0, hi = r->num_ops;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (strcmp(r->ops[mid]->def.name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const wf__op *wf__registry_find_op(const wf__registry *r, const char *name) {
  int i = op_lower_bound(r, name);
  if (i < r->num_ops && strcmp(r->ops[i]->def.name, name) == 0)
    return r->ops[i];
  return NULL;
}

const wf__op *wf__registry_find_op_with_flag(const wf__registry *r,
                                             uint32_t flag) {
  for (int i = 0; i < r->num_ops; i++)
    if (r->ops[i]->def.flags & flag)
      return r->ops[i];
  return NULL;
}

/* The op called name among the batch's first n ops, or NULL. */
static const wf__op *batch_find_op(const batch *b, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (b->ops[i] && strcmp(b->ops[i]->def.name, name) == 0)
      return b->ops[i];
  return NULL;
}

/* Normalises and checks the plugin's ops into b. An op that is already
 * registered identically is dropped from b (it is accepted once). */
static int stage_ops(const wf__registry *r, batch *b, const wf_plugin_desc *d,
                     wf_status *st) {
  int n = count_ptrs((const void *const *)d->ops);
  char diff[512];
  if (n == 0)
    return WF_OK;
  b->ops = wf__calloc((size_t)n, sizeof *b->ops);
  if (!b->ops)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__op *op = NULL;
    const wf__op *old;
    if (op_make(d->ops[i], i, b->plugin, &op, st))
      return wf_status_code(st);
    old = batch_find_op(b, b->num_ops, op->def.name);
    if (old) {
      int differs = op_differs(old, op, diff, sizeof diff);
      op_free(op);
      if (differs)
        return wf_status_set(st, WF_ALREADY_EXISTS,
                             "op '%s' is defined twice, differently, by "
                             "plugin '%s' (%s)",
                             old->def.name, b->plugin, diff);
      continue;
    }
    old = wf__registry_find_op(r, op->def.name);
    if (old) {
      int differs = op_differs(old, op, diff, sizeof diff);
      if (differs) {
        wf_status_set(st, WF_ALREADY_EXISTS,
                      "op '%s' is defined by plugin '%s' and differently by "
                      "plugin '%s' (%s), which is refused; a plugin's own "
                      "ops may carry a vendor domain (acme.%s) to avoid "
                      "such clashes",
                      old->def.name, old->plugin, b->plugin, diff,
                      old->def.name);
        op_free(op);
        return WF_ALREADY_EXISTS;
      }
      op_free(op);
      continue;
    }
    b->ops[b->num_ops++] = op;
  }
  return WF_OK;
}

/* Checks a kernel's type_attr against its op when the op is known now (from
 * the registry or this plugin); a kernel for an op yet to come is taken on
 * trust and only found once the op exists. */
static int check_kernel_op(const wf__registry *r, const batch *b,
                           const wf__kernel *k, wf_status *st) {
  const wf__op *op = wf__registry_find_op(r, k->def.op);
  const wf_attr_def *a;
  if (!op)
    op = batch_find_op(b, b->num_ops, k->def.op);
  if (!op || !k->def.type_attr)
    return WF_OK;
  a = find_attr_def(op, k->def.type_attr);
  if (!a || a->type != WF_ATTR_DTYPE)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "plugin '%s': kernel for op '%s' on '%s' constrains "
                         "attr '%s', which op '%s' (plugin '%s') %s",
                         k->plugin, k->def.op, k->def.device_type,
                         k->def.type_attr, op->def.name, op->plugin,
                         a ? "has, but not of type dtype" : "does not have");
  return WF_OK;
}

static int stage_kernels(const wf__registry *r, batch *b,
                         const wf_plugin_desc *d, wf_status *st) {
  int n = count_ptrs((const void *const *)d->kernels);
  if (n == 0)
    return WF_OK;
  b->kernels = wf__calloc((size_t)n, sizeof *b->kernels);
  if (!b->kernels)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__kernel *k = NULL;
    if (kernel_make(d->kernels[i], i, b->plugin, &k, st))
      return wf_status_code(st);
    b->kernels[b->num_kernels++] = k;
    if (check_kernel_op(r, b, k, st))
      return wf_status_code(st);
    for (int j = 0; j < r->num_kernels; j++)
      if (kernels_clash(r->kernels[j], k))
        return kernel_clash_error(r->kernels[j], k, st);
    for (int j = 0; j < b->num_kernels - 1; j++)
      if (kernels_clash(b->kernels[j], k))
        return kernel_clash_error(b->kernels[j], k, st);
  }
  return WF_OK;
}

static int stage_gradients(const wf__registry *r, batch *b,
                           const wf_plugin_desc *d, wf_status *st) {
  int n = count_ptrs((const void *const *)d->gradients);
  if (n == 0)
    return WF_OK;
  b->gradients = wf__calloc((size_t)n, sizeof *b->gradients);
  if (!b->gradients)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__gradient *g = NULL;
    const wf__gradient *old;
    if (gradient_make(d->gradients[i], i, b->plugin, &g, st))
      return wf_status_code(st);
    b->gradients[b->num_gradients++] = g;
    old = wf__registry_find_gradient(r, g->def.op);
    for (int j = 0; !old && j < b->num_gradients - 1; j++)
      if (strcmp(b->gradients[j]->def.op, g->def.op) == 0)
        old = b->gradients[j];
    if (old)
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "gradient of op '%s' is registered by plugin '%s' "
                           "and again by plugin '%s'",
                           g->def.op, old->plugin, g->plugin);
  }
  return WF_OK;
}

static int stage_devices(const wf__registry *r, batch *b,
                         const wf_plugin_desc *d, void *state, wf_status *st) {
  int n = count_ptrs((const void *const *)d->devices);
  if (n == 0)
    return WF_OK;
  b->devices = wf__calloc((size_t)n, sizeof *b->devices);
  if (!b->devices)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__device_type *t = NULL;
    const wf__device_type *old = NULL;
    if (device_make(d->devices[i], i, b->plugin, state, &t, st))
      return wf_status_code(st);
    b->devices[b->num_devices++] = t;
    for (int j = 0; !old && j < r->num_devices; j++)
      if (strcmp(r->devices[j]->def.type, t->def.type) == 0)
        old = r->devices[j];
    for (int j = 0; !old && j < b->num_devices - 1; j++)
      if (strcmp(b->devices[j]->def.type, t->def.type) == 0)
        old = b->devices[j];
    if (old)
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "device type '%s' is registered by plugin '%s' and "
                           "again by plugin '%s'",
                           t->def.type, old->plugin, t->plugin);
  }
  return WF_OK;
}

static int stage_readers(const wf__registry *r, batch *b,
                         const wf_plugin_desc *d, wf_status *st) {
  int n = count_ptrs((const void *const *)d->readers);
  if (n == 0)
    return WF_OK;
  b->readers = wf__calloc((size_t)n, sizeof *b->readers);
  if (!b->readers)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__reader *x = NULL;
    const wf__reader *old = NULL;
    if (reader_make(d->readers[i], i, b->plugin, &x, st))
      return wf_status_code(st);
    b->readers[b->num_readers++] = x;
    for (int j = 0; !old && j < r->num_readers; j++)
      if (strcmp(r->readers[j]->def.name, x->def.name) == 0)
        old = r->readers[j];
    for (int j = 0; !old && j < b->num_readers - 1; j++)
      if (strcmp(b->readers[j]->def.name, x->def.name) == 0)
        old = b->readers[j];
    if (old)
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "reader '%s' is registered by plugin '%s' and "
                           "again by plugin '%s'",
                           x->def.name, old->plugin, x->plugin);
  }
  return WF_OK;
}

static int stage_passes(const wf__registry *r, batch *b,
                        const wf_plugin_desc *d, wf_status *st) {
  int n = count_ptrs((const void *const *)d->passes);
  if (n == 0)
    return WF_OK;
  b->passes = wf__calloc((size_t)n, sizeof *b->passes);
  if (!b->passes)
    return oom(st, b->plugin);
  for (int i = 0; i < n; i++) {
    wf__pass *p = NULL;
    const wf__pass *old = NULL;
    if (pass_make(d->passes[i], i, b->plugin, &p, st))
      return wf_status_code(st);
    b->passes[b->num_passes++] = p;
    for (int j = 0; !old && j < r->num_passes; j++)
      if (strcmp(r->passes[j]->def.name, p->def.name) == 0)
        old = r->passes[j];
    for (int j = 0; !old && j < b->num_passes - 1; j++)
      if (strcmp(b->passes[j]->def.name, p->def.name) == 0)
        old = b->passes[j];
    if (old)
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "pass '%s' is registered by plugin '%s' and again "
                           "by plugin '%s'",
                           p->def.name, old->plugin, p->plugin);
  }
  return WF_OK;
}

/* Orders kernels by op, device type, then priority (highest first); equal
 * keys keep registration order. */
static int kernel_cmp(const wf__kernel *a, const wf__kernel *b) {
  int c = strcmp(a->def.op, b->def.op);
  if (c)
    return c;
  c = strcmp(a->def.device_type, b->def.device_type);
  if (c)
    return c;
  return (b->def.priority > a->def.priority) -
         (b->def.priority < a->def.priority);
}

static int pass_cmp(const wf__pass *a, const wf__pass *b) {
  if (a->def.order != b->def.order)
    return a->def.order < b->def.order ? -1 : 1;
  return strcmp(a->def.name, b->def.name);
}

/* Inserts item into a sorted array with room for it, after its equals. */
#define SORTED_INSERT(arr, n, item, cmp)                                       \
  do {                                                                         \
    int pos_ = (n);                                                            \
    while (pos_ > 0 && cmp((arr)[pos_ - 1], (item)) > 0)                       \
      pos_--;                                                                  \
    memmove(&(arr)[pos_ + 1], &(arr)[pos_],                                    \
            (size_t)((n)-pos_) * sizeof(arr)[0]);                              \
    (arr)[pos_] = (item);                                                      \
    (n)++;                                                                     \
  } while (0)

static int op_cmp(const wf__op *a, const wf__op *b) {
  return strcmp(a->def.name, b->def.name);
}

int wf__registry_add(wf__registry *r, const char *plugin, void *state,
                     const wf_plugin_desc *desc, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  batch b;
  char *name;
  int rc;

  assert(r && desc);
  /* The checks below return wf_status_code(st): they need a real status. */
  if (!st)
    st = &local;
  memset(&b, 0, sizeof b);
  if (is_empty(plugin)) {
    rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                       "a plugin without a name cannot register anything");
    goto out;
  }
  name = wf__strdup(plugin);
  if (!name) {
    rc = oom(st, plugin);
    goto out;
  }
  b.plugin = name;

  if (stage_ops(r, &b, desc, st) || stage_kernels(r, &b, desc, st) ||
      stage_gradients(r, &b, desc, st) ||
      stage_devices(r, &b, desc, state, st) || stage_readers(r, &b, desc, st) ||
      stage_passes(r, &b, desc, st))
    goto fail;

  /* Make room everywhere first, so that adding below cannot fail half way. */
  if (reserve((void ***)&r->ops, &r->cap_ops, r->num_ops + b.num_ops) ||
      reserve((void ***)&r->kernels, &r->cap_kernels,
              r->num_kernels + b.num_kernels) ||
      reserve((void ***)&r->gradients, &r->cap_gradients,
              r->num_gradients + b.num_gradients) ||
      reserve((void ***)&r->devices, &r->cap_devices,
              r->num_devices + b.num_devices) ||
      reserve((void ***)&r->readers, &r->cap_readers,
              r->num_readers + b.num_readers) ||
      reserve((void ***)&r->passes, &r->cap_passes,
              r->num_passes + b.num_passes) ||
      reserve((void ***)&r->plugin_names, &r->cap_plugin_names,
              r->num_plugin_names + 1)) {
    oom(st, plugin);
    goto fail;
  }

  for (int i = 0; i < b.num_ops; i++)
    SORTED_INSERT(r->ops, r->num_ops, b.ops[i], op_cmp);
  for (int i = 0; i < b.num_kernels; i++)
    SORTED_INSERT(r->kernels, r->num_kernels, b.kernels[i], kernel_cmp);
  for (int i = 0; i < b.num_gradients; i++)
    r->gradients[r->num_gradients++] = b.gradients[i];
  for (int i = 0; i < b.num_devices; i++)
    r->devices[r->num_devices++] = b.devices[i];
  for (int i = 0; i < b.num_readers; i++)
    r->readers[r->num_readers++] = b.readers[i];
  for (int i = 0; i < b.num_passes; i++)
    SORTED_INSERT(r->passes, r->num_passes, b.passes[i], pass_cmp);
  r->plugin_names[r->num_plugin_names++] = name;
  /* The entries now belong to the registry; free only the staging arrays. */
  wf__free(b.ops);
  wf__free(b.kernels);
  wf__free(b.gradients);
  wf__free(b.devices);
  wf__free(b.readers);
  wf__free(b.passes);
  rc = WF_OK;
  goto out;

fail:
  batch_free(&b);
  wf__free(name);
  rc = wf_status_code(st);
out:
  wf_status_reset(&local);
  return rc;
}

int wf__registry_op_count(const wf__registry *r) { return r->num_ops; }

const wf__op *wf__registry_op_at(const wf__registry *r, int i) {
  assert(i >= 0 && i < r->num_ops);
  return r->ops[i];
}

int wf__registry_kernel_count(const wf__registry *r) { return r->num_kernels; }

const wf__kernel *wf__registry_kernel_at(const wf__registry *r, int i) {
  assert(i >= 0 && i < r->num_kernels);
  return r->kernels[i];
}

int wf__registry_kernel_first(const wf__registry *r, const char *op,
                              const char *device_type) {
  int lo = 0, hi = r->num_kernels;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    const wf__kernel *k = r->kernels[mid];
    int c = strcmp(k->def.op, op);
    if (c == 0)
      c = strcmp(k->def.device_type, device_type);
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* ---- choosing a kernel under the config's rules -------------------------- */

/* 1 when label holds name as the whole or as one '/'-separated part,
 * ignoring case. */
static int label_has(const char *label, const char *name) {
  size_t n = strlen(name);
  if (!label)
    return 0;
  if (strcasecmp(label, name) == 0)
    return 1;
  for (const char *p = label; *p;) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncasecmp(p, name, n) == 0)
      return 1;
    p += len + (end ? 1 : 0);
  }
  return 0;
}

int wf__kernel_rule_matches(const char *item, const wf__kernel *k) {
  const char *colon = strchr(item, ':');
  if (colon) {
    size_t n = (size_t)(colon - item);
    if (strncmp(k->def.op, item, n) != 0 || k->def.op[n] != '\0')
      return 0;
    item = colon + 1;
    if (strcmp(item, "*") == 0)
      return 1;
  }
  return label_has(k->def.label, item);
}

const char *wf__kernel_denied(const struct wf_config *cfg, const wf__kernel *k,
                              const char **at) {
  if (!cfg)
    return NULL;
  for (int i = 0; i < cfg->kernel_deny.n; i++) {
    if (!wf__kernel_rule_matches(cfg->kernel_deny.items[i], k))
      continue;
    if (at)
      *at = i < cfg->kernel_deny_at.n ? cfg->kernel_deny_at.items[i] : "config";
    return cfg->kernel_deny.items[i];
  }
  return NULL;
}

const char *wf__kernel_preferred(const struct wf_config *cfg,
                                 const wf__kernel *k, int *rank) {
  if (rank)
    *rank = INT_MAX;
  if (!cfg)
    return NULL;
  for (int i = 0; i < cfg->kernel_prefer.n; i++) {
    if (!wf__kernel_rule_matches(cfg->kernel_prefer.items[i], k))
      continue;
    if (rank)
      *rank = i;
    return cfg->kernel_prefer.items[i];
  }
  return NULL;
}

/* wf__registry_choose_kernel among the kernels of exactly device_type. */
static const wf__kernel *
choose_of_type(const wf__registry *r, const struct wf_config *cfg,
               const char *op, const char *device_type,
               wf__attr_dtype_fn *dtype_of, const void *user,
               const wf_node *node, wf__kernel_choice *out) {
  wf__kernel_choice c = {-1, 0, 0, 0, 0, 0};
  int best_rank = INT_MAX;

  assert(r && op && device_type && dtype_of);
  if (wf__registry_find_op(r, op)) {
    /* The sort order puts the highest priority first: a later kernel wins
     * only by a better prefer rank. */
    for (int i = wf__registry_kernel_first(r, op, device_type);
         i < r->num_kernels; i++) {
      const wf__kernel *k = r->kernels[i];
      int rank;
      if (strcmp(k->def.op, op) != 0 ||
          strcmp(k->def.device_type, device_type) != 0)
        break;
      c.num_kernels++;
      if (k->def.type_attr) {
        wf_dtype dt = dtype_of(k->def.type_attr, user);
        if (dt <= WF_DTYPE_INVALID || dt >= WF__DTYPE_END ||
            !(k->def.dtypes & WF_DTYPE_BIT(dt)))
          continue;
      }
      c.num_fitting++;
      if (wf__kernel_denied(cfg, k, NULL)) {
        c.num_denied++;
        continue;
      }
      if (wf__kernel_preferred(cfg, k, &rank))
        c.num_preferred++;
      if (c.index >= 0 && rank >= best_rank)
        continue; /* outranked: not asked whether it supports the node */
      if (node && k->def.supports && !k->def.supports(node)) {
        c.num_declined++;
        continue;
      }
      c.index = i;
      best_rank = rank;
    }
  }
  if (out)
    *out = c;
  return c.index < 0 ? NULL : r->kernels[c.index];
}

const wf__kernel *
wf__registry_choose_kernel(const wf__registry *r, const struct wf_config *cfg,
                           const char *op, const char *device_type,
                           wf__attr_dtype_fn *dtype_of, const void *user,
                           const wf_node *node, wf__kernel_choice *out) {
  wf__kernel_choice any;
  const wf__kernel *k =
      choose_of_type(r, cfg, op, device_type, dtype_of, user, node, out);
  if (k || strcmp(device_type, WF_KERNEL_ANY_DEVICE) == 0 ||
      strcmp(device_type, "host") == 0)
    return k;
  /* A device type without a kernel of its own for op takes one that works
   * on any device. */
  k = choose_of_type(r, cfg, op, WF_KERNEL_ANY_DEVICE, dtype_of, user, node,
                     &any);
  if (k && out)
    *out = any;
  return k;
}

/* wf__attr_dtype_fn giving every attribute the dtype at user. */
static wf_dtype fixed_dtype(const char *attr, const void *user) {
  (void)attr;
  return *(const wf_dtype *)user;
}

const wf__kernel *wf__registry_find_allowed_kernel(
    const wf__registry *r, const struct wf_config *cfg, const char *op,
    const char *device_type, wf_dtype dtype, wf__kernel_choice *out) {
  return wf__registry_choose_kernel(r, cfg, op, device_type, fixed_dtype,
                                    &dtype, NULL, out);
}

const wf__kernel *wf__registry_find_kernel(const wf__registry *r,
                                           const char *op,
                                           const char *device_type,
                                           wf_dtype dtype) {
  return wf__registry_find_allowed_kernel(r, NULL, op, device_type, dtype,
                                          NULL);
}

int wf__registry_claim_notice(wf__registry *r) {
  return atomic_exchange(&r->noticed, 1) == 0;
}

const wf__gradient *wf__registry_find_gradient(const wf__registry *r,
                                               const char *op) {
  for (int i = 0; i < r->num_gradients; i++)
    if (strcmp(r->gradients[i]->def.op, op) == 0)
      return r->gradients[i];
  return NULL;
}

int wf__registry_device_type_count(const wf__registry *r) {
  return r->num_devices;
}

const wf__device_type *wf__registry_device_type_at(const wf__registry *r,
                                                   int i) {
  assert(i >= 0 && i < r->num_devices);
  return r->devices[i];
}

int wf__registry_reader_count(const wf__registry *r) { return r->num_readers; }

const wf__reader *wf__registry_reader_at(const wf__registry *r, int i) {
  assert(i >= 0 && i < r->num_readers);
  return r->readers[i];
}

int wf__registry_pass_count(const wf__registry *r) { return r->num_passes; }

const wf__pass *wf__registry_pass_at(const wf__registry *r, int i) {
  assert(i >= 0 && i < r->num_passes);
  return r->passes[i];
}
