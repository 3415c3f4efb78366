/* tools/cmd_ops.c — `weft ops`: the registered ops with their arguments,
 * attributes, documentation and gradients, and the kernels each device has
 * for them under the config's [kernels] rules. Options come parsed from
 * tools/weft.c (tools/inspect.h). */
#include <config.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "inspect.h"

static const char *dtype_mask_str(uint32_t mask, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  int any = (mask & WF_DTYPES_ALL) == WF_DTYPES_ALL;
  if (any) {
    used = (size_t)snprintf(buf, len, "any");
    if (used >= len)
      return buf;
  }
  for (int t = 1; wf_dtype_name((wf_dtype)t); t++) {
    if (!(mask & WF_DTYPE_BIT(t)) || (any && (WF_DTYPE_BIT(t) & WF_DTYPES_ALL)))
      continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "",
                     wf_dtype_name((wf_dtype)t));
    if (n < 0 || (size_t)n >= len - used)
      break;
    used += (size_t)n;
  }
  return buf;
}

static const char *attr_type_str(int type, char *buf, size_t len) {
  static const char *const base[] = {"none",   "int",   "float", "bool",
                                     "string", "dtype", "shape", "tensor"};
  int b = WF_ATTR_BASE(type);
  const char *name = b >= 0 && b < 8 ? base[b] : "?";
  if (WF_ATTR_IS_LIST(type))
    snprintf(buf, len, "list(%s)", name);
  else
    snprintf(buf, len, "%s", name);
  return buf;
}

static const char *arg_type_str(const wf_arg_def *a, char *buf, size_t len) {
  const char *t = a->type_attr ? a->type_attr
                               : (wf_dtype_name((wf_dtype)a->dtype)
                                      ? wf_dtype_name((wf_dtype)a->dtype)
                                      : "?");
  if (a->number_attr)
    snprintf(buf, len, "%s * %s", a->number_attr, t);
  else
    snprintf(buf, len, "%s", t);
  return buf;
}

/* Prints json (stealing the reference) on stdout. */

/* Comma-joined device types that have a kernel for op (kernels are sorted by
 * op, then device type), each marked when the config denies all of its
 * kernels for op there. */
static void op_devices(wf_runtime *rt, const char *op, char *buf, size_t len) {
  size_t used = 0;
  int n = wf_runtime_kernel_count(rt);
  buf[0] = '\0';
  for (int i = 0; i < n;) {
    wf_kernel_info k, o;
    int allowed = 0, j = i;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0) {
      i++;
      continue;
    }
    /* Kernels i .. j-1 are op's on k.device_type. */
    for (; j < n; j++) {
      wf_runtime_kernel_get(rt, j, &o);
      if (strcmp(o.op, op) != 0 || strcmp(o.device_type, k.device_type) != 0)
        break;
      allowed += wf_runtime_kernel_denied(rt, j) == NULL;
    }
    int w = snprintf(buf + used, len - used, "%s%s%s", used ? ", " : "",
                     k.device_type,
                     allowed ? "" : " (every kernel denied by the config)");
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
    i = j;
  }
}

/* Per kernel of op on device (indexed like wf_runtime_kernel_get; the
 * caller's array of wf_runtime_kernel_count entries), the WF_DTYPE_BIT mask
 * of the dtypes it is chosen for; bit 0 (WF_DTYPE_INVALID) stands for nodes
 * without a dtype, which only kernels without a type attribute serve. */
static void chosen_masks(wf_runtime *rt, const char *op, const char *device,
                         uint32_t *mask) {
  for (int t = 0; t == 0 || wf_dtype_name((wf_dtype)t); t++) {
    if (t != WF_DTYPE_INVALID && t != WF_STRING &&
        !(WF_DTYPE_BIT(t) & WF_DTYPES_ALL))
      continue;
    int k = wf_runtime_kernel_select(rt, op, device, (wf_dtype)t);
    if (k >= 0)
      mask[k] |= WF_DTYPE_BIT(t);
  }
}

/* What a kernel is chosen for, from its chosen_masks entry: "any" for an
 * untyped kernel chosen for every node, else dtype names; "" for none. */
static const char *chosen_str(const wf_kernel_info *k, uint32_t mask, char *buf,
                              size_t len) {
  const uint32_t every = WF_DTYPES_ALL | WF_DTYPE_BIT(WF_DTYPE_INVALID);
  if (!k->type_attr && (mask & every) == every)
    snprintf(buf, len, "any");
  else if (!(mask & (WF_DTYPES_ALL | WF_DTYPE_BIT(WF_STRING))))
    buf[0] = '\0';
  else
    dtype_mask_str(mask & WF_DTYPES_ALL, buf, len);
  return buf;
}

/* A kernel's dtypes: "any" when it has no type attribute. */
static const char *kernel_dtypes_str(const wf_kernel_info *k, char *buf,
                                     size_t len) {
  if (!k->type_attr) {
    snprintf(buf, len, "any");
    return buf;
  }
  return dtype_mask_str(k->dtypes, buf, len);
}

/* ---- ops -------------------------------------------------------------------
 */

static json_t *args_json(const wf_arg_def *a) {
  json_t *arr = json_array();
  char buf[128];
  for (; arr && a && a->struct_size; a++)
    json_array_append_new(arr,
                          json_pack("{s:s, s:s, s:o}", "name", a->name, "type",
                                    arg_type_str(a, buf, sizeof buf), "doc",
                                    weft_json_str_or_null(a->doc)));
  return arr;
}

/* Op's kernels (on device, or on every device type when NULL) with what
 * the config's [kernels] rules make of them: "denied" and "preferred" (the
 * config item, or null) and "chosen_for" (the dtypes it runs for, "any",
 * or null when it is never chosen first), and "selective" (it may decline
 * a node, which then goes to the next kernel). */
static json_t *kernels_json(wf_runtime *rt, const char *op,
                            const char *device) {
  json_t *arr = json_array();
  char buf[128], chosen[128];
  int n = wf_runtime_kernel_count(rt);
  uint32_t *mask = calloc((size_t)n + 1, sizeof *mask);
  const char *masked = NULL; /* device type mask was filled for */
  if (!mask) {
    json_decref(arr);
    return NULL;
  }
  for (int i = 0; arr && i < n; i++) {
    wf_kernel_info k;
    wf_runtime_kernel_get(rt, i, &k);
    if (strcmp(k.op, op) != 0 || (device && strcmp(k.device_type, device)))
      continue;
    if (!masked || strcmp(masked, k.device_type) != 0) {
      chosen_masks(rt, op, k.device_type, mask);
      masked = k.device_type;
    }
    chosen_str(&k, mask[i], chosen, sizeof chosen);
    json_array_append_new(
        arr,
        json_pack(
            "{s:s, s:s, s:s, s:s, s:i, s:b, s:b, s:b, s:b, s:o, s:o, s:o}",
            "device", k.device_type, "label", k.label ? k.label : "",
            "plugin", k.plugin, "dtypes",
            kernel_dtypes_str(&k, buf, sizeof buf), "priority", k.priority,
            "cheap", !!(k.flags & WF_KERNEL_CHEAP), "async",
            !!(k.flags & WF_KERNEL_ASYNC), "in_place",
            !!(k.flags & WF_KERNEL_IN_PLACE), "selective",
            !!(k.flags & WF_KERNEL_SELECTIVE), "denied",
            weft_json_str_or_null(wf_runtime_kernel_denied(rt, i)), "preferred",
            weft_json_str_or_null(wf_runtime_kernel_preferred(rt, i)),
            "chosen_for", weft_json_str_or_null(chosen[0] ? chosen : NULL)));
  }
  free(mask);
  return arr;
}

/* Prints op's kernels on device by priority: "* " marks one chosen for
 * some dtype, and each says what it is chosen for, or that the config
 * denies or prefers it. */
static void print_kernels(wf_runtime *rt, const char *op, const char *device) {
  int n = wf_runtime_kernel_count(rt), listed = 0, allowed = 0;
  const char *selective = NULL; /* a kernel above that may decline nodes */
  uint32_t *mask = calloc((size_t)n + 1, sizeof *mask);
  char buf[256], chosen[256];
  if (!mask) {
    fprintf(stderr, "weft: out of memory listing kernels\n");
    return;
  }
  chosen_masks(rt, op, device, mask);
  printf("  kernels on %s (highest priority first; * = chosen):\n", device);
  for (int k = 0; k < n; k++) {
    wf_kernel_info ki;
    wf_runtime_kernel_get(rt, k, &ki);
    if (strcmp(ki.op, op) || strcmp(ki.device_type, device))
      continue;
    const char *denied = wf_runtime_kernel_denied(rt, k);
    const char *preferred = wf_runtime_kernel_preferred(rt, k);
    chosen_str(&ki, mask[k], chosen, sizeof chosen);
    printf("    %s%-10s priority %d, dtypes %s, plugin %s",
           chosen[0] ? "* " : "  ", ki.label ? ki.label : "", ki.priority,
           kernel_dtypes_str(&ki, buf, sizeof buf), ki.plugin);
    if (denied)
      printf("; denied by config ([kernels] deny = %s)", denied);
    else if (preferred)
      printf("; preferred by config ([kernels] prefer = %s)", preferred);
    if (chosen[0])
      printf("; chosen for %s", chosen);
    else if (!denied && selective)
      printf("; chosen for the nodes %s declines", selective);
    else if (!denied)
      printf("; not chosen (outranked)");
    if ((ki.flags & WF_KERNEL_SELECTIVE) && !denied) {
      printf("; declines some nodes");
      if (!selective)
        selective = ki.label ? ki.label : "the kernel above";
    }
    printf("\n");
    listed++;
    allowed += denied == NULL;
  }
  if (!listed)
    printf("    (none)\n");
  else if (!allowed)
    printf("    (the config denies every kernel here: nodes of %s are not "
           "placed on %s)\n",
           op, device);
  free(mask);
}

static json_t *op_json(wf_runtime *rt, int i, const char *device) {
  const wf_op_def *d = wf_runtime_op_get(rt, i);
  json_t *attrs = json_array();
  char buf[128];
  for (const wf_attr_def *a = d->attrs; attrs && a && a->struct_size; a++) {
    json_t *aj = json_pack("{s:s, s:s, s:o}", "name", a->name, "type",
                           attr_type_str(a->type, buf, sizeof buf), "doc",
                           weft_json_str_or_null(a->doc));
    if (aj && a->allowed_dtypes)
      json_object_set_new(
          aj, "allowed",
          json_string(dtype_mask_str(a->allowed_dtypes, buf, sizeof buf)));
    if (aj)
      json_object_set_new(aj, "has_default", json_boolean(a->has_default));
    json_array_append_new(attrs, aj);
  }
  int grad = wf_runtime_op_gradient(rt, d->name);
  return json_pack(
      "{s:s, s:s, s:o, s:o, s:o, s:o, s:{s:b, s:b, s:b}, s:s, s:o}", "name",
      d->name, "plugin", wf_runtime_op_plugin(rt, i), "inputs",
      args_json(d->inputs), "outputs", args_json(d->outputs), "attrs", attrs,
      "doc", weft_json_str_or_null(d->doc), "flags", "stateful",
      !!(d->flags & WF_OP_STATEFUL), "commutative",
      !!(d->flags & WF_OP_COMMUTATIVE), "random", !!(d->flags & WF_OP_RANDOM),
      "gradient",
      grad > 0    ? "registered"
      : grad == 0 ? "not differentiable"
                  : "none",
      "kernels", kernels_json(rt, d->name, device));
}

static void print_args(const char *title, const wf_arg_def *a) {
  char buf[128];
  if (!a || !a->struct_size)
    return;
  printf("  %s:\n", title);
  for (; a->struct_size; a++)
    printf("    %-12s %-14s %s\n", a->name, arg_type_str(a, buf, sizeof buf),
           a->doc ? a->doc : "");
}

static void print_op(wf_runtime *rt, int i, const char *device) {
  const wf_op_def *d = wf_runtime_op_get(rt, i);
  char buf[256], tbuf[64];
  printf("%s  (plugin %s)\n", d->name, wf_runtime_op_plugin(rt, i));
  if (d->doc)
    printf("  %s\n", d->doc);
  print_args("inputs", d->inputs);
  print_args("outputs", d->outputs);
  if (d->attrs && d->attrs->struct_size) {
    printf("  attrs:\n");
    for (const wf_attr_def *a = d->attrs; a->struct_size; a++) {
      printf("    %-12s %-14s%s%s %s\n", a->name,
             attr_type_str(a->type, tbuf, sizeof tbuf),
             a->allowed_dtypes ? " in " : "",
             a->allowed_dtypes
                 ? dtype_mask_str(a->allowed_dtypes, buf, sizeof buf)
                 : "",
             a->doc ? a->doc : "");
    }
  }
  int grad = wf_runtime_op_gradient(rt, d->name);
  printf("  gradient: %s\n", grad > 0    ? "registered"
                             : grad == 0 ? "not differentiable"
                                         : "none");
  if (device) {
    print_kernels(rt, d->name, device);
  } else {
    op_devices(rt, d->name, buf, sizeof buf);
    printf("  devices:  %s\n", buf[0] ? buf : "(no kernels)");
  }
}

static int cmd_ops(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_op_count(rt);
  int found = 0;
  json_t *arr = o->json ? json_array() : NULL;
  for (int i = 0; i < n; i++) {
    const wf_op_def *d = wf_runtime_op_get(rt, i);
    if (o->op && strcmp(o->op, d->name) != 0)
      continue;
    found++;
    if (arr)
      json_array_append_new(arr, op_json(rt, i, o->device));
    else
      print_op(rt, i, o->device);
  }
  if (o->op && !found) {
    json_decref(arr);
    fprintf(stderr, "weft ops: no op named '%s' is registered\n", o->op);
    return 1;
  }
  if (arr)
    return weft_emit_json(arr);
  if (!found)
    printf("no ops registered (see `weft plugins`)\n");
  return 0;
}

const weft_inspect_command weft_ops_command = {
    "ops", cmd_ops, 1, "list ops: inputs, outputs, attributes, documentation",
    "usage: weft ops [NAME] [--device TYPE] [--json] [--config FILE]\n\n"
    "Lists every registered op (or only NAME) with its inputs, outputs,\n"
    "attributes, documentation, gradient and the devices that have\n"
    "kernels for it. With --device TYPE, lists that device's kernels for\n"
    "each op, highest priority first, each with the dtypes it is chosen\n"
    "for (marked *), or why the config's [kernels] section denies or\n"
    "prefers it; a kernel outranked for every dtype is 'not chosen', or\n"
    "chosen for the nodes a kernel above it declines.\n"};
