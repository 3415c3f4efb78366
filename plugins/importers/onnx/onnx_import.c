/* plugins/importers/onnx/onnx_import.c — the ONNX importer plugin: reads
 * a ModelProto (protobuf-c, generated from libonnx-dev's onnx.proto at
 * build time), checks its opsets, makes its graph inputs Placeholders
 * (symbolic dimensions unknown), its initializers variables (float) or
 * constants, maps each node through onnx_ops.c, and adds the signature
 * "serving_default" keyed by the graph's input and output names. Every
 * error names the file, and the node (name and op type) where there is
 * one. It does not run anything, nor import training info, sparse
 * initializers or functions (refused when a node needs them). */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_internal.h"

/* ---- values by name ----------------------------------------------------- */

static size_t hash(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

ox_val *ox_find(ox_imp *im, const char *name) {
  for (ox_val *v = im->table[hash(name) % im->table_size]; v; v = v->next)
    if (strcmp(v->name, name) == 0)
      return v;
  return NULL;
}

/* A new value called name (an existing one is replaced: ONNX graphs are
 * SSA, a redefinition is refused by the caller). */
static ox_val *val_new(ox_imp *im, const char *name, wf_status *st) {
  ox_val *v = calloc(1, sizeof *v);
  if (!v || !(v->name = strdup(name))) {
    free(v);
    wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  v->shape.rank = -1;
  size_t b = hash(name) % im->table_size;
  v->next = im->table[b];
  im->table[b] = v;
  return v;
}

static void vals_free(ox_imp *im) {
  if (!im->table)
    return;
  for (size_t b = 0; b < im->table_size; b++)
    for (ox_val *v = im->table[b], *nx; v; v = nx) {
      nx = v->next;
      if (v->konst)
        wfx_host->tensor_release(v->konst);
      free(v->seq);
      free(v->name);
      free(v);
    }
  free(im->table);
  im->table = NULL;
}

/* ---- names ------------------------------------------------------------- */

/* Graph names allow letters, digits, '_', '.', '-': others become '_'. */
static void sanitize(const char *in, char *out, size_t len) {
  size_t k = 0;
  for (; in && *in && k + 1 < len; in++) {
    char c = *in;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    out[k++] = ok ? c : '_';
  }
  if (k == 0 && len > 1)
    out[k++] = 'v';
  out[k] = 0;
}

static void unique_name(ox_imp *im, const char *base, char *out, size_t len) {
  do
    snprintf(out, len, "%s_%lld", base, (long long)im->counter++);
  while (wfx_host->import_find_node(im->ctx, out));
}

/* ---- nodes ------------------------------------------------------------- */

int32_t ox_dtype_of(wf_output o) {
  int32_t dt = WF_DTYPE_INVALID;
  wf_shape s;
  if (o.node)
    wfx_host->node_output_info(o.node, o.index, &dt, &s);
  return dt;
}

void ox_shape_of(wf_output o, wf_shape *s) {
  int32_t dt;
  s->rank = -1;
  if (o.node && wfx_host->node_output_info(o.node, o.index, &dt, s) != 0)
    s->rank = -1;
}

int ox_fail(ox_node *n, wf_status *st, int code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  (void)n;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return wfx_fail(st, code, "%s", buf);
}

static wf_output add_named(ox_imp *im, const char *base, const char *op,
                           const wf_output *in, int nin,
                           const wf_attr_item *a, int na, wf_status *st) {
  wf_output out = {NULL, 0};
  char name[160];
  if (wfx_code(st))
    return out;
  for (int i = 0; i < nin; i++)
    if (!in[i].node) {
      wfx_fail(st, WF_INTERNAL, "input %d of a %s node is missing", i, op);
      return out;
    }
  unique_name(im, base, name, sizeof name);
  out.node = wfx_host->import_add_node(im->ctx, op, name, in, nin, a, na, st);
  return out;
}

wf_output ox_add(ox_node *n, const char *op, const wf_output *in, int nin,
                 const wf_attr_item *a, int na, wf_status *st) {
  return add_named(n->im, n->base, op, in, nin, a, na, st);
}

wf_output ox_add1(ox_node *n, const char *op, wf_output x, wf_status *st) {
  return ox_add(n, op, &x, 1, NULL, 0, st);
}

wf_output ox_add2(ox_node *n, const char *op, wf_output x, wf_output y,
                  wf_status *st) {
  wf_output in[2] = {x, y};
  return ox_add(n, op, in, 2, NULL, 0, st);
}

static wf_output const_named(ox_imp *im, const char *base, wf_tensor *t,
                             wf_status *st) {
  wf_output out = {NULL, 0};
  if (!t)
    return out;
  wf_attr_item a[2] = {
      {"dtype",
       {.type = WF_ATTR_DTYPE, .count = 1,
        .u.dtype = wfx_host->tensor_dtype(t)}},
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}}};
  out = add_named(im, base, "Const", NULL, 0, a, 2, st);
  wfx_host->tensor_release(t);
  return out;
}

wf_output ox_const(ox_node *n, wf_tensor *t, wf_status *st) {
  return const_named(n->im, n->base, t, st);
}

wf_output ox_const_i64(ox_node *n, const int64_t *v, int count,
                       wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {count}};
  wf_output none = {NULL, 0};
  if (wfx_code(st))
    return none;
  wf_tensor *t = wfx_host->tensor_new(WF_INT64, &s, st);
  if (!t)
    return none;
  if (count)
    memcpy(wfx_host->tensor_data(t), v, (size_t)count * sizeof *v);
  return ox_const(n, t, st);
}

wf_output ox_scalar_i64(ox_node *n, int64_t v, wf_status *st) {
  return ox_scalar(n, WF_INT64, (double)v, st);
}

wf_output ox_scalar(ox_node *n, int32_t dtype, double v, wf_status *st) {
  wf_shape s = {.rank = 0};
  wf_output none = {NULL, 0};
  if (wfx_code(st))
    return none;
  wf_tensor *t = wfx_host->tensor_new(dtype, &s, st);
  if (!t)
    return none;
  void *d = wfx_host->tensor_data(t);
  switch (dtype) {
  case WF_FLOAT32:
    *(float *)d = (float)v;
    break;
  case WF_FLOAT64:
    *(double *)d = v;
    break;
  case WF_INT8:
    *(int8_t *)d = (int8_t)v;
    break;
  case WF_UINT8:
    *(uint8_t *)d = (uint8_t)v;
    break;
  case WF_INT32:
    *(int32_t *)d = (int32_t)v;
    break;
  case WF_INT64:
    *(int64_t *)d = (int64_t)v;
    break;
  case WF_BOOL:
    *(uint8_t *)d = v != 0;
    break;
  default:
    wfx_host->tensor_release(t);
    wfx_fail(st, WF_UNIMPLEMENTED, "a %s constant is not supported",
             wfx_dtype_name(dtype));
    return none;
  }
  return ox_const(n, t, st);
}

/* A weight: VarHandle, its assignment from a Const (run once, marked with
 * import_add_init), and the ReadVariable the model computes with. */
static wf_output make_weight(ox_imp *im, ox_val *v, wf_status *st) {
  wf_output none = {NULL, 0};
  char base[96], hname[128];
  sanitize(v->name, base, sizeof base);
  unique_name(im, base, hname, sizeof hname);
  wf_attr_item ha[3] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = v->dtype}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = v->shape}},
      {"shared_name", {.type = WF_ATTR_STRING, .count = 1, .u.s = hname}}};
  wf_output h = add_named(im, base, "VarHandle", NULL, 0, ha, 3, st);
  wf_output c = const_named(im, base, wfx_host->tensor_retain(v->konst), st);
  wf_output in[2] = {h, c};
  wf_output as = add_named(im, base, "AssignVariable", in, 2, NULL, 0, st);
  if (!as.node || wfx_host->import_add_init(im->ctx, as.node, st))
    return none;
  return add_named(im, base, "ReadVariable", in, 1, ha, 2, st);
}

wf_output ox_weight(ox_node *n, const char *name, wf_tensor *t,
                    wf_status *st) {
  ox_val v = {.name = (char *)name, .konst = t, .weight = 1};
  wf_output o = {NULL, 0};
  if (!t)
    return o;
  v.dtype = wfx_host->tensor_dtype(t);
  wfx_host->tensor_shape(t, &v.shape);
  if (!wfx_code(st))
    o = make_weight(n->im, &v, st);
  wfx_host->tensor_release(t);
  return o;
}

wf_output ox_use(ox_node *n, ox_val *v, wf_status *st) {
  if (v->out.node || wfx_code(st))
    return v->out;
  if (v->is_seq) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "'%s' is a sequence where a tensor is expected", v->name);
    return v->out;
  }
  if (!v->konst) {
    wfx_fail(st, WF_INTERNAL, "value '%s' has no node", v->name);
    return v->out;
  }
  if (v->weight)
    v->out = make_weight(n->im, v, st);
  else {
    char base[96];
    sanitize(v->name, base, sizeof base);
    v->out = const_named(n->im, base, wfx_host->tensor_retain(v->konst), st);
  }
  return v->out;
}

static ox_val *out_val(ox_node *n, int i, wf_status *st) {
  const char *name = n->p->output[i];
  if (ox_find(n->im, name)) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "output %d '%s' is already defined earlier in the graph", i,
             name);
    return NULL;
  }
  return val_new(n->im, name, st);
}

int ox_set_out(ox_node *n, int i, wf_output out, wf_status *st) {
  if (wfx_code(st))
    return wfx_code(st);
  if (!out.node)
    return wfx_fail(st, WF_INTERNAL, "output %d was not built", i);
  if (i >= n->nout || !n->p->output[i][0])
    return 0; /* an optional output nobody reads */
  ox_val *v = out_val(n, i, st);
  if (!v)
    return wfx_code(st);
  v->out = out;
  wfx_host->node_output_info(out.node, out.index, &v->dtype, &v->shape);
  return 0;
}

int ox_set_seq_out(ox_node *n, int i, const wf_output *elems, int k,
                   int32_t dtype, wf_status *st) {
  if (wfx_code(st))
    return wfx_code(st);
  if (i >= n->nout || !n->p->output[i][0])
    return 0;
  ox_val *v = out_val(n, i, st);
  if (!v)
    return wfx_code(st);
  v->is_seq = 1;
  v->dtype = dtype;
  v->nseq = k;
  v->seq = malloc(sizeof *v->seq * (size_t)(k ? k : 1));
  if (!v->seq)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int j = 0; j < k; j++)
    v->seq[j] = elems[j];
  return 0;
}

int ox_set_const_out(ox_node *n, int i, wf_tensor *t, wf_status *st) {
  if (!t)
    return wfx_code(st);
  if (wfx_code(st) || i >= n->nout || !n->p->output[i][0]) {
    wfx_host->tensor_release(t);
    return wfx_code(st);
  }
  ox_val *v = out_val(n, i, st);
  if (!v) {
    wfx_host->tensor_release(t);
    return wfx_code(st);
  }
  v->konst = t;
  v->dtype = wfx_host->tensor_dtype(t);
  wfx_host->tensor_shape(t, &v->shape);
  return 0;
}

/* ---- attributes -------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(const ox_node *n, const char *name) {
  for (size_t i = 0; i < n->p->n_attribute; i++)
    if (n->p->attribute[i]->name &&
        strcmp(n->p->attribute[i]->name, name) == 0)
      return n->p->attribute[i];
  return NULL;
}

int64_t ox_attr_i(const ox_node *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a ? a->i : dflt;
}

double ox_attr_f(const ox_node *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a ? a->f : dflt;
}

const char *ox_attr_s(const ox_node *n, const char *name, const char *dflt,
                      char *buf, size_t len) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a || !a->has_s)
    snprintf(buf, len, "%s", dflt);
  else
    snprintf(buf, len, "%.*s", (int)a->s.len, (const char *)a->s.data);
  return buf;
}

/* An empty list's values: protobuf-c leaves its pointer NULL, and callers
 * copy count values from it (memcpy must not be given NULL, even for 0
 * bytes). */
static const int64_t no_ints[1];
static const float no_floats[1];

int ox_attr_ints(const ox_node *n, const char *name, const int64_t **v) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a)
    return -1;
  *v = a->n_ints ? a->ints : no_ints;
  return (int)a->n_ints;
}

int ox_attr_floats(const ox_node *n, const char *name, const float **v) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a)
    return -1;
  *v = a->n_floats ? a->floats : no_floats;
  return (int)a->n_floats;
}

int ox_const_ints(ox_node *n, int i, int64_t *v, int max, wf_status *st) {
  (void)st;
  if (i >= n->nin || !n->in[i] || !n->in[i]->konst)
    return -1;
  const wf_tensor *t = n->in[i]->konst;
  int64_t count = wfx_host->tensor_count(t);
  int32_t dt = wfx_host->tensor_dtype(t);
  const void *d = wfx_host->tensor_data(t);
  for (int64_t k = 0; k < count && k < max; k++)
    v[k] = dt == WF_INT64   ? ((const int64_t *)d)[k]
           : dt == WF_INT32 ? ((const int32_t *)d)[k]
                            : 0;
  if (dt != WF_INT64 && dt != WF_INT32)
    return -1;
  return (int)count;
}

/* ---- the model --------------------------------------------------------- */

static int read_file(const char *path, uint8_t **buf, size_t *len,
                     wf_status *st) {
  FILE *f = fopen(path, "rb");
  struct stat sb;
  *buf = NULL;
  if (!f)
    return wfx_fail(st, WF_NOT_FOUND, "%s: cannot open: %s", path,
                    strerror(errno));
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return wfx_fail(st, WF_INVALID_ARGUMENT, "%s: not a regular file", path);
  }
  *len = (size_t)sb.st_size;
  *buf = malloc(*len ? *len : 1);
  if (!*buf) {
    fclose(f);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  }
  size_t got = fread(*buf, 1, *len, f);
  fclose(f);
  if (got != *len) {
    free(*buf);
    *buf = NULL;
    return wfx_fail(st, WF_DATA_LOSS, "%s: read error", path);
  }
  return 0;
}

/* Prefixes st's message with the file and, when there is one, the node. */
static int located(ox_imp *im, const Onnx__NodeProto *p, int idx,
                   wf_status *st) {
  char msg[1024];
  int code = wfx_code(st);
  snprintf(msg, sizeof msg, "%s", wfx_host->status_message(st));
  if (p)
    wfx_host->status_set(st, code, "%s: node %d '%s' (%s%s%s): %s", im->path,
                         idx, p->name && *p->name ? p->name : "",
                         p->domain && *p->domain ? p->domain : "",
                         p->domain && *p->domain ? "." : "",
                         p->op_type ? p->op_type : "?", msg);
  else
    wfx_host->status_set(st, code, "%s: %s", im->path, msg);
  return code;
}

static int value_info_shape(const Onnx__ValueInfoProto *vi, int32_t *dtype,
                            wf_shape *shape, wf_status *st) {
  const Onnx__TypeProto *tp = vi->type;
  shape->rank = -1;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !tp->tensor_type)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "graph value '%s' is not a tensor (sequences, maps and "
                    "optionals are not supported)",
                    vi->name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  *dtype = ox_dtype(tt->elem_type);
  if (*dtype == WF_DTYPE_INVALID)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "graph value '%s' has element type %s, which weft lacks",
                    vi->name, ox_onnx_type_name(tt->elem_type));
  if (!tt->shape)
    return 0;
  if (tt->shape->n_dim > WF_MAX_RANK)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "graph value '%s' has rank %zu, above weft's %d",
                    vi->name, tt->shape->n_dim, WF_MAX_RANK);
  shape->rank = (int32_t)tt->shape->n_dim;
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    shape->dims[i] =
        d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                d->dim_value >= 0
            ? d->dim_value
            : -1;
  }
  return 0;
}

static int check_opsets(ox_imp *im, const Onnx__ModelProto *m,
                        wf_status *st) {
  im->opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    const char *d = o->domain ? o->domain : "";
    if (*d == 0 || strcmp(d, "ai.onnx") == 0) {
      if (o->version < OX_OPSET_MIN || o->version > OX_OPSET_MAX)
        return wfx_fail(st, WF_UNIMPLEMENTED,
                        "opset %lld of the default domain is outside the "
                        "supported range %d..%d",
                        (long long)o->version, OX_OPSET_MIN, OX_OPSET_MAX);
      im->opset = (int)o->version;
    } else if (strcmp(d, "ai.onnx.preview.training") == 0) {
      if (o->version != 1)
        return wfx_fail(st, WF_UNIMPLEMENTED,
                        "opset %lld of domain 'ai.onnx.preview.training' is "
                        "not supported (only 1)",
                        (long long)o->version);
      im->preview_training = 1;
    }
  }
  if (im->opset < 0) {
    if (m->n_opset_import && !im->preview_training)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "the model imports no opset of the default domain");
    /* IR version 1: opset implied; a model of training ops alone has
     * none (0: its nodes of the default domain are refused) */
    im->opset = m->n_opset_import ? 0 : 1;
  }
  return 0;
}

/* ai.onnx.preview.training's Gradient: the gradients of the value named
 * by y (its elements summed) with respect to the inputs named by xs,
 * built by weft's autodiff; the inputs named by zs are held constant (a
 * value that affects y only through them has no path to differentiate).
 * An x that does not affect y gets zeros. */
static int m_gradient(ox_node *n, wf_status *st) {
  const Onnx__AttributeProto *xs = ox_attr(n, "xs"), *zs = ox_attr(n, "zs");
  char yname[512];
  ox_val *yv;
  wf_output y, x[OX_MAX_IO], dx[OX_MAX_IO];
  int nx;

  ox_attr_s(n, "y", "", yname, sizeof yname);
  if (!xs || !xs->n_strings || !yname[0])
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "Gradient needs the attributes xs (strings) and y");
  nx = (int)xs->n_strings;
  if (nx + (zs ? (int)zs->n_strings : 0) != n->nin || nx != n->nout)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "Gradient has %d inputs and %d outputs for %d xs and %d "
                   "zs (one input per x and z, one output per x)",
                   n->nin, n->nout, nx, zs ? (int)zs->n_strings : 0);
  for (int i = 0; i < nx; i++) {
    const ProtobufCBinaryData *b = &xs->strings[i];
    if (!n->in[i] || strlen(n->p->input[i]) != b->len ||
        memcmp(n->p->input[i], b->data, b->len) != 0)
      return ox_fail(n, st, WF_INVALID_ARGUMENT,
                     "input %d of Gradient is not xs[%d] '%.*s'", i, i,
                     (int)b->len, (const char *)b->data);
  }
  if (!(yv = ox_find(n->im, yname)))
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "Gradient's y '%s' is not defined before the node", yname);
  if (!WF_HOST_HAS(wfx_host, import_add_gradients))
    return ox_fail(n, st, WF_UNIMPLEMENTED,
                   "Gradient needs weft's plugin ABI 1.5 (import_add_gradients)");
  y = ox_use(n, yv, st);
  for (int i = 0; i < nx; i++)
    x[i] = ox_use(n, n->in[i], st);
  if (wfx_code(st))
    return wfx_code(st);
  if (wfx_host->import_add_gradients(n->im->ctx, y, x, nx, dx, st))
    return wfx_code(st);
  for (int i = 0; i < nx; i++) {
    if (!dx[i].node)
      dx[i] = ox_add1(n, "ZerosLike", x[i], st);
    if (ox_set_out(n, i, dx[i], st))
      return wfx_code(st);
  }
  return 0;
}

static int map_node(ox_imp *im, const Onnx__NodeProto *p, wf_status *st) {
  ox_node n = {.im = im, .p = p};
  const char *d = p->domain ? p->domain : "";
  ox_build_fn *fn;
  if (!p->op_type || !*p->op_type)
    return wfx_fail(st, WF_INVALID_ARGUMENT, "a node without an op type");
  int preview = strcmp(d, "ai.onnx.preview.training") == 0;
  if (preview && im->preview_training)
    fn = strcmp(p->op_type, "Gradient") == 0
             ? m_gradient
             : ox_training_mapping(p->op_type);
  else if (*d && strcmp(d, "ai.onnx") != 0)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "domain '%s' is not supported (only the default domain%s)",
                    d, preview ? "; the model imports no opset of it" : "");
  else if (im->opset == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "the model imports no opset of the default domain");
  else
    fn = ox_mapping(p->op_type, im->opset);
  if (!fn && preview)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "op %s of domain 'ai.onnx.preview.training' is not "
                    "supported (Gradient, Adagrad, Adam and Momentum are)",
                    p->op_type);
  if (!fn)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "op %s (opset %d) is not supported by weft's importer",
                    p->op_type, im->opset);
  if (p->n_input > OX_MAX_IO || p->n_output > OX_MAX_IO)
    return wfx_fail(st, WF_UNIMPLEMENTED, "more than %d inputs or outputs",
                    OX_MAX_IO);
  n.nin = (int)p->n_input;
  n.nout = (int)p->n_output;
  for (int i = 0; i < n.nin; i++) {
    if (!p->input[i][0])
      continue; /* an optional input left out */
    n.in[i] = ox_find(im, p->input[i]);
    if (!n.in[i])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input %d '%s' is not defined before the node (no "
                      "graph input, initializer or earlier output)",
                      i, p->input[i]);
  }
  sanitize(p->name && *p->name ? p->name
                               : (p->n_output ? p->output[0] : p->op_type),
           n.base, sizeof n.base);
  return fn(&n, st);
}

static int import_graph(ox_imp *im, const Onnx__GraphProto *g,
                        wf_status *st) {
  int rc = 0;
  const char **in_keys = NULL, **out_keys = NULL;
  wf_output *ins = NULL, *outs = NULL;
  char(*keys)[96] = NULL;
  int nin = 0, nout = 0;

  if (g->n_sparse_initializer)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "sparse initializers are not supported");
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *tp = g->initializer[i];
    if (!tp->name || !*tp->name)
      return wfx_fail(st, WF_INVALID_ARGUMENT, "initializer %zu has no name",
                      i);
    if (ox_find(im, tp->name))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "initializer '%s' is defined twice", tp->name);
    wf_tensor *t = ox_tensor(tp, im->dir, st);
    if (!t) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", wfx_host->status_message(st));
      return wfx_fail(st, wfx_code(st), "initializer '%s': %s", tp->name,
                      msg);
    }
    ox_val *v = val_new(im, tp->name, st);
    if (!v) {
      wfx_host->tensor_release(t);
      return wfx_code(st);
    }
    v->konst = t;
    v->dtype = wfx_host->tensor_dtype(t);
    wfx_host->tensor_shape(t, &v->shape);
    /* weights: float tensors; a single float stays a constant, so that
     * folding and the fusion passes see its value */
    v->weight = wfx_dtype_is_float(v->dtype) && v->dtype != WF_FLOAT16 &&
                v->dtype != WF_BFLOAT16 && wfx_host->tensor_count(t) > 1;
  }

  size_t cap = g->n_input + g->n_output + 1;
  ins = calloc(cap, sizeof *ins);
  outs = calloc(cap, sizeof *outs);
  in_keys = calloc(cap, sizeof *in_keys);
  out_keys = calloc(cap, sizeof *out_keys);
  keys = calloc(cap, sizeof *keys);
  if (!ins || !outs || !in_keys || !out_keys || !keys) {
    rc = wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }

  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    int32_t dt = WF_DTYPE_INVALID;
    wf_shape s;
    if (!vi->name || !*vi->name) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT, "graph input %zu has no name",
                    i);
      goto done;
    }
    ox_val *v = ox_find(im, vi->name);
    if (v && v->konst)
      continue; /* an initializer listed as an input (IR < 4): a weight */
    if (v) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "graph input '%s' is listed twice", vi->name);
      goto done;
    }
    if ((rc = value_info_shape(vi, &dt, &s, st)))
      goto done;
    char base[96];
    sanitize(vi->name, base, sizeof base);
    wf_attr_item a[2] = {
        {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dt}},
        {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = s}}};
    wf_output p = add_named(im, base, "Placeholder", NULL, 0, a, 2, st);
    if (!p.node || !(v = val_new(im, vi->name, st))) {
      rc = wfx_code(st);
      goto done;
    }
    v->out = p;
    v->dtype = dt;
    v->shape = s;
    /* keys: the sanitised name, made unique */
    snprintf(keys[nin], sizeof keys[0], "%s", base);
    for (int k = 0; k < nin; k++)
      if (strcmp(keys[k], keys[nin]) == 0)
        snprintf(keys[nin], sizeof keys[0], "%.80s_%d", base, nin);
    in_keys[nin] = keys[nin];
    ins[nin++] = p;
  }

  for (size_t i = 0; i < g->n_node; i++) {
    if (map_node(im, g->node[i], st)) {
      rc = located(im, g->node[i], (int)i, st);
      goto fail_located;
    }
  }

  for (size_t i = 0; i < g->n_output; i++) {
    const Onnx__ValueInfoProto *vo = g->output[i];
    ox_val *v = vo->name ? ox_find(im, vo->name) : NULL;
    if (!v) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "graph output '%s' is computed by no node",
                    vo->name ? vo->name : "");
      goto done;
    }
    ox_node n = {.im = im};
    snprintf(n.base, sizeof n.base, "output");
    wf_output o = ox_use(&n, v, st);
    /* A graph output that is a graph input or a constant still needs a
     * node of its own, so that the signature fetches something computed. */
    if (o.node && (v->konst || wfx_host->node_num_inputs(o.node) == 0 ||
                   strcmp(wfx_host->node_op(o.node), "ReadVariable") == 0))
      o = ox_add1(&n, "Identity", o, st);
    if (!o.node) {
      rc = wfx_code(st);
      goto done;
    }
    char *key = keys[g->n_input + i];
    sanitize(vo->name, key, sizeof keys[0]);
    for (int k = 0; k < nout; k++)
      if (strcmp(out_keys[k], key) == 0)
        snprintf(key, sizeof keys[0], "output_%zu", i);
    out_keys[nout] = key;
    outs[nout++] = o;
  }
  if (nout == 0) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT, "the graph has no output");
    goto done;
  }
  rc = wfx_host->import_add_signature(im->ctx, "serving_default", in_keys,
                                      ins, nin, out_keys, outs, nout, st);
done:
  if (rc)
    rc = located(im, NULL, -1, st);
fail_located:
  free(ins);
  free(outs);
  free(in_keys);
  free(out_keys);
  free(keys);
  return rc;
}

static int onnx_import(wf_import_ctx *ctx, const char *path, wf_status *st) {
  ox_imp im = {.ctx = ctx, .path = path};
  uint8_t *buf = NULL;
  size_t len = 0;
  Onnx__ModelProto *m = NULL;
  int rc;

  if ((rc = read_file(path, &buf, &len, st)))
    return rc;
  m = onnx__model_proto__unpack(NULL, len, buf);
  if (!m) {
    rc = wfx_fail(st, WF_DATA_LOSS,
                  "%s: not an ONNX model (the protobuf message is truncated "
                  "or corrupt)",
                  path);
    goto done;
  }
  if (!m->graph) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT, "%s: the model has no graph",
                  path);
    goto done;
  }
  if (m->n_functions) {
    /* model-local functions: only a node that uses one fails below */
  }
  const char *slash = strrchr(path, '/');
  if (slash)
    snprintf(im.dir, sizeof im.dir, "%.*s", (int)(slash - path), path);
  else
    snprintf(im.dir, sizeof im.dir, ".");
  im.ir_version = m->ir_version;
  if ((rc = check_opsets(&im, m, st))) {
    rc = located(&im, NULL, -1, st);
    goto done;
  }
  im.table_size = 1024;
  while (im.table_size < 2 * (m->graph->n_node + m->graph->n_initializer +
                              m->graph->n_input))
    im.table_size *= 2;
  im.table = calloc(im.table_size, sizeof *im.table);
  if (!im.table) {
    rc = wfx_fail(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    goto done;
  }
  rc = import_graph(&im, m->graph, st);
done:
  vals_free(&im);
  if (m)
    onnx__model_proto__free_unpacked(m, NULL);
  free(buf);
  return rc;
}

/* A ModelProto usually starts with ir_version (field 1, varint: 0x08) and
 * a small version number. */
static int onnx_sniff(const void *head, size_t n) {
  const uint8_t *b = head;
  return n >= 2 && b[0] == 0x08 && b[1] >= 1 && b[1] <= 20;
}

static const wf_importer_def onnx_importer = {
    WF_STRUCT_INIT(wf_importer_def),
    .name = "onnx",
    .doc = "ONNX models (ModelProto, opsets 1-18 of the default domain): "
           "graph inputs become Placeholders, float initializers variables",
    .extensions = ".onnx",
    .sniff = onnx_sniff,
    .import = onnx_import};

WFX_PLUGIN(importer_onnx, 1, 3, .name = "importer-onnx", .version = "1.0",
           .license = "MIT",
           .description = "imports ONNX models into weft graphs",
           .ops = ox_plugin_ops, .kernels = ox_plugin_kernels,
           .passes = WFX_LIST(wf_pass_def, &ox_fuse_layer_norm_pass,
                              &ox_fuse_gelu_pass, &ox_fuse_bias_pass,
                              &ox_nhwc_pass),
           .importers = WFX_LIST(wf_importer_def, &onnx_importer))
