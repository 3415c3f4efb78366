/* core/io/graph_file.c — graph files (weft/graph_file.h): a graph to and from
 * the protobuf messages of core/io/graph.proto, atomic saves, and loading that
 * checks every field before it adds a node, so that a damaged or hostile
 * file is refused with the file, the node and the problem named.
 *
 * Variable values are not stored (checkpoints hold them) and neither are
 * shapes (the node-adding path infers them again). */
#include <config.h>

#include <weft/graph_file.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/graph.h>
#include <weft/status.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "io/crc32c.h"
#include "io/file_io.h"
#include "graph/graph_internal.h"
#include "io/graph.pb-c.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"
#include "base/strmap.h"
#include "graph/tensor_internal.h"

#define MAGIC "weft.graph"
/* Nesting of graph.proto's messages is 6 deep; anything deeper is not
 * ours, and the explanation of a decoding failure stops there. */
#define MAX_EXPLAIN_DEPTH 16

/* ---- errors -------------------------------------------------------------- */

static wf_code file_error(wf_status *st, wf_code code, const char *what,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets st to "graph file 'what': <message>"; returns code. */
static wf_code file_error(wf_status *st, wf_code code, const char *what,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__status_vset(st, code, fmt, ap);
  va_end(ap);
  wf_status_prefix(st, "graph file '%s'", what);
  return code;
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

/* Copies nbytes of elements of size esize from src to dst, reversing the
 * bytes of each (little- to big-endian and back). */
static void copy_swapped(void *dst, const void *src, size_t nbytes,
                         size_t esize) {
  const unsigned char *s = src;
  unsigned char *d = dst;
  for (size_t o = 0; o + esize <= nbytes; o += esize)
    for (size_t k = 0; k < esize; k++)
      d[o + k] = s[o + esize - 1 - k];
}

/* ---- an arena for the messages being written ------------------------------
 */

/* Everything the writer builds (messages, pointer arrays) lives until the
 * bytes are out; one arena frees it all at once. */
typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk;

typedef struct arena {
  chunk *head;
} arena;

/* n zeroed bytes, 16-byte aligned; NULL when out of memory. */
static void *arena_alloc(arena *a, size_t n) {
  chunk *c = a->head;
  void *p;
  n = (n + 15) & ~(size_t)15;
  if (n == 0)
    n = 16;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    c = wf__calloc(1, sizeof *c + cap);
    if (!c)
      return NULL;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
  }
  p = c->data + c->used;
  c->used += n;
  return p;
}

static void arena_free(arena *a) {
  while (a->head) {
    chunk *next = a->head->next;
    wf__free(a->head);
    a->head = next;
  }
}

/* ---- writing: graph -> messages --------------------------------------------
 */

typedef struct writer {
  arena mem;
  const wf_graph *g;
  const char *what;   /* for messages: the path, or "buffer" */
  wf__strmap sources; /* op name -> its Weft__OpSource */
  Weft__OpSource **source_list;
  size_t nsources, cap_sources;
  char producer[64];
} writer;

#define NEW(w, T, init) ((T *)new_message((w), sizeof(T), &(T)init))

static void *new_message(writer *w, size_t size, const void *init) {
  void *p = arena_alloc(&w->mem, size);
  if (p)
    memcpy(p, init, size);
  return p;
}

static void *new_array(writer *w, size_t n, size_t elem) {
  return arena_alloc(&w->mem, n * elem);
}

static wf_code writer_oom(writer *w, wf_status *st) {
  return file_error(st, WF_RESOURCE_EXHAUSTED, w->what,
                    "out of memory serialising the graph");
}

/* Records which plugin registered n's op (once per op). */
static int note_op_source(writer *w, const wf_node *n, wf_status *st) {
  const char *op = n->op->def.name;
  Weft__OpSource *src;
  const wf__plugin *p;

  if (wf__strmap_get(&w->sources, op))
    return WF_OK;
  src = NEW(w, Weft__OpSource, WEFT__OP_SOURCE__INIT);
  if (!src)
    return writer_oom(w, st);
  src->op = (char *)op;
  src->plugin = (char *)n->op->plugin;
  p = n->op->plugin ? wf__runtime_find_loaded(w->g->rt, n->op->plugin) : NULL;
  if (p && p->desc.version && *p->desc.version)
    src->plugin_version = (char *)p->desc.version;
  if (w->nsources == w->cap_sources) {
    size_t cap = w->cap_sources ? 2 * w->cap_sources : 16;
    Weft__OpSource **grown = wf__realloc(w->source_list, cap * sizeof *grown);
    if (!grown)
      return writer_oom(w, st);
    w->source_list = grown;
    w->cap_sources = cap;
  }
  if (wf__strmap_put(&w->sources, op, src))
    return writer_oom(w, st);
  w->source_list[w->nsources++] = src;
  return WF_OK;
}

static Weft__Shape *shape_to_pb(writer *w, const wf_shape *s) {
  Weft__Shape *ps = NEW(w, Weft__Shape, WEFT__SHAPE__INIT);
  if (!ps)
    return NULL;
  if (s->rank < 0) {
    ps->has_unknown_rank = 1;
    ps->unknown_rank = 1;
    return ps;
  }
  ps->n_dims = (size_t)s->rank;
  ps->dims = new_array(w, ps->n_dims, sizeof *ps->dims);
  if (!ps->dims)
    return NULL;
  for (int i = 0; i < s->rank; i++)
    ps->dims[i] = s->dims[i] < 0 ? WF_UNKNOWN_DIM : s->dims[i];
  return ps;
}

/* The tensor's message; its data points into t on a little-endian host.
 * NULL with st set. */
static Weft__Tensor *tensor_to_pb(writer *w, const wf_tensor *t,
                                  const wf_node *n, const char *attr,
                                  wf_status *st) {
  Weft__Tensor *pt;
  size_t nbytes;
  const void *data;

  if (!t) {
    file_error(st, WF_INVALID_ARGUMENT, w->what,
               "node '%s' (op '%s'): attribute '%s' holds no tensor", n->name,
               n->op->def.name, attr);
    return NULL;
  }
  if (t->dtype == WF_RESOURCE || t->dtype == WF_DTYPE_INVALID) {
    file_error(st, WF_INVALID_ARGUMENT, w->what,
               "node '%s' (op '%s'): attribute '%s' holds a %s tensor, "
               "which graph files cannot store",
               n->name, n->op->def.name, attr,
               t->dtype == WF_RESOURCE ? "resource" : "dtype-less");
    return NULL;
  }
  pt = NEW(w, Weft__Tensor, WEFT__TENSOR__INIT);
  if (!pt)
    goto oom;
  pt->has_dtype = 1;
  pt->dtype = (Weft__DType)t->dtype;
  pt->n_dims = (size_t)t->shape.rank;
  pt->dims = new_array(w, pt->n_dims, sizeof *pt->dims);
  if (!pt->dims)
    goto oom;
  for (int i = 0; i < t->shape.rank; i++)
    pt->dims[i] = t->shape.dims[i];
  nbytes = wf_tensor_nbytes(t);
  data = wf_tensor_data(t);
  if (!host_is_little_endian() && t->dtype == WF_STRING) {
    /* the offsets ahead of the strings */
    unsigned char *le = new_array(w, nbytes, 1);
    size_t head = ((size_t)wf_tensor_count(t) + 1) * 8;
    if (!le)
      goto oom;
    copy_swapped(le, data, head, 8);
    memcpy(le + head, (const unsigned char *)data + head, nbytes - head);
    data = le;
  } else if (!host_is_little_endian() && wf_dtype_size(t->dtype) > 1 &&
             nbytes) {
    void *le = new_array(w, nbytes, 1);
    if (!le)
      goto oom;
    copy_swapped(le, data, nbytes, wf_dtype_size(t->dtype));
    data = le;
  }
  pt->has_data = 1;
  pt->data.len = nbytes;
  pt->data.data = (uint8_t *)data;
  pt->has_crc32c = 1;
  pt->crc32c = wf__crc32c(0, data, nbytes);
  return pt;

oom:
  writer_oom(w, st);
  return NULL;
}

/* Fills pv from v (arrays borrowed from the graph where they fit). */
static int attr_to_pb(writer *w, const wf_node *n, const char *name,
                      const wf_attr_value *v, Weft__AttrValue *pv,
                      wf_status *st) {
  size_t count = v->count > 0 ? (size_t)v->count : 0;

  switch (v->type) {
  case WF_ATTR_INT:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_I;
    pv->i = v->u.i;
    return WF_OK;
  case WF_ATTR_FLOAT:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_F;
    pv->f = v->u.f;
    return WF_OK;
  case WF_ATTR_BOOL:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_B;
    pv->b = v->u.b != 0;
    return WF_OK;
  case WF_ATTR_STRING:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_S;
    pv->s.data = (uint8_t *)(v->u.s ? v->u.s : "");
    pv->s.len = strlen((const char *)pv->s.data);
    return WF_OK;
  case WF_ATTR_DTYPE:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_DTYPE;
    pv->dtype = (Weft__DType)v->u.dtype;
    return WF_OK;
  case WF_ATTR_SHAPE:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_SHAPE;
    if (!(pv->shape = shape_to_pb(w, &v->u.shape)))
      return writer_oom(w, st);
    return WF_OK;
  case WF_ATTR_TENSOR:
    pv->kind_case = WEFT__ATTR_VALUE__KIND_TENSOR;
    pv->tensor = tensor_to_pb(w, v->u.tensor, n, name, st);
    return pv->tensor ? WF_OK : wf_status_code(st);
  case WF_ATTR_LIST | WF_ATTR_INT: {
    Weft__IntList *l = NEW(w, Weft__IntList, WEFT__INT_LIST__INIT);
    if (!l)
      return writer_oom(w, st);
    l->n_values = count;
    l->values = (int64_t *)v->u.ints;
    pv->kind_case = WEFT__ATTR_VALUE__KIND_INTS;
    pv->ints = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_FLOAT: {
    Weft__FloatList *l = NEW(w, Weft__FloatList, WEFT__FLOAT_LIST__INIT);
    if (!l)
      return writer_oom(w, st);
    l->n_values = count;
    l->values = (double *)v->u.floats;
    pv->kind_case = WEFT__ATTR_VALUE__KIND_FLOATS;
    pv->floats = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_BOOL: {
    Weft__BoolList *l = NEW(w, Weft__BoolList, WEFT__BOOL_LIST__INIT);
    if (!l || !(l->values = new_array(w, count, sizeof *l->values)))
      return writer_oom(w, st);
    l->n_values = count;
    for (size_t i = 0; i < count; i++)
      l->values[i] = v->u.bools[i] != 0;
    pv->kind_case = WEFT__ATTR_VALUE__KIND_BOOLS;
    pv->bools = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_STRING: {
    Weft__StringList *l = NEW(w, Weft__StringList, WEFT__STRING_LIST__INIT);
    if (!l || !(l->values = new_array(w, count, sizeof *l->values)))
      return writer_oom(w, st);
    l->n_values = count;
    for (size_t i = 0; i < count; i++) {
      const char *s = v->u.strings[i] ? v->u.strings[i] : "";
      l->values[i].data = (uint8_t *)s;
      l->values[i].len = strlen(s);
    }
    pv->kind_case = WEFT__ATTR_VALUE__KIND_STRINGS;
    pv->strings = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_DTYPE: {
    Weft__DTypeList *l = NEW(w, Weft__DTypeList, WEFT__DTYPE_LIST__INIT);
    if (!l || !(l->values = new_array(w, count, sizeof *l->values)))
      return writer_oom(w, st);
    l->n_values = count;
    for (size_t i = 0; i < count; i++)
      l->values[i] = (Weft__DType)v->u.dtypes[i];
    pv->kind_case = WEFT__ATTR_VALUE__KIND_DTYPES;
    pv->dtypes = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_SHAPE: {
    Weft__ShapeList *l = NEW(w, Weft__ShapeList, WEFT__SHAPE_LIST__INIT);
    if (!l || !(l->values = new_array(w, count, sizeof *l->values)))
      return writer_oom(w, st);
    l->n_values = count;
    for (size_t i = 0; i < count; i++)
      if (!(l->values[i] = shape_to_pb(w, &v->u.shapes[i])))
        return writer_oom(w, st);
    pv->kind_case = WEFT__ATTR_VALUE__KIND_SHAPES;
    pv->shapes = l;
    return WF_OK;
  }
  case WF_ATTR_LIST | WF_ATTR_TENSOR: {
    Weft__TensorList *l = NEW(w, Weft__TensorList, WEFT__TENSOR_LIST__INIT);
    if (!l || !(l->values = new_array(w, count, sizeof *l->values)))
      return writer_oom(w, st);
    l->n_values = count;
    for (size_t i = 0; i < count; i++)
      if (!(l->values[i] = tensor_to_pb(w, v->u.tensors[i], n, name, st)))
        return wf_status_code(st);
    pv->kind_case = WEFT__ATTR_VALUE__KIND_TENSORS;
    pv->tensors = l;
    return WF_OK;
  }
  default:
    return file_error(st, WF_INTERNAL, w->what,
                      "node '%s' (op '%s'): attribute '%s' has type %d, "
                      "which graph files cannot hold",
                      n->name, n->op->def.name, name, (int)v->type);
  }
}

static Weft__Node *node_to_pb(writer *w, const wf_node *n, wf_status *st) {
  Weft__Node *pn = NEW(w, Weft__Node, WEFT__NODE__INIT);

  if (!pn)
    goto oom;
  pn->name = n->name;
  pn->op = (char *)n->op->def.name;
  if (n->device && *n->device)
    pn->device = n->device;
  pn->n_inputs = (size_t)n->num_inputs;
  pn->inputs = new_array(w, pn->n_inputs, sizeof *pn->inputs);
  if (!pn->inputs)
    goto oom;
  for (int i = 0; i < n->num_inputs; i++) {
    Weft__Input *in = NEW(w, Weft__Input, WEFT__INPUT__INIT);
    if (!in)
      goto oom;
    in->node = n->inputs[i].node->name;
    in->has_slot = 1;
    in->slot = n->inputs[i].index;
    pn->inputs[i] = in;
  }
  pn->n_control_inputs = (size_t)n->num_control_inputs;
  pn->control_inputs =
      new_array(w, pn->n_control_inputs, sizeof *pn->control_inputs);
  if (!pn->control_inputs)
    goto oom;
  for (int i = 0; i < n->num_control_inputs; i++)
    pn->control_inputs[i] = n->control_inputs[i]->name;
  pn->n_attrs = (size_t)n->num_attrs;
  pn->attrs = new_array(w, pn->n_attrs, sizeof *pn->attrs);
  if (!pn->attrs)
    goto oom;
  for (int i = 0; i < n->num_attrs; i++) {
    Weft__Attr *a = NEW(w, Weft__Attr, WEFT__ATTR__INIT);
    Weft__AttrValue *v = NEW(w, Weft__AttrValue, WEFT__ATTR_VALUE__INIT);
    if (!a || !v)
      goto oom;
    a->name = n->attrs[i].name;
    a->value = v;
    if (attr_to_pb(w, n, n->attrs[i].name, &n->attrs[i].v, v, st))
      return NULL;
    pn->attrs[i] = a;
  }
  if (note_op_source(w, n, st))
    return NULL;
  return pn;

oom:
  writer_oom(w, st);
  return NULL;
}

/* Builds the file message of g's nodes with keep[id] set (all when keep is
 * NULL) into f; the pieces live in w's arena. */
static int build_message_ordered(writer *w, const unsigned char *keep,
                                 const wf_node *const *order, int norder,
                                 Weft__GraphFile *f, wf_status *st);

static int build_message(writer *w, const unsigned char *keep,
                         Weft__GraphFile *f, wf_status *st) {
  return build_message_ordered(w, keep, NULL, 0, f, st);
}

/* As build_message; with order, writes exactly those nodes in that order
 * (keep is then ignored). */
static int build_message_ordered(writer *w, const unsigned char *keep,
                                 const wf_node *const *order, int norder,
                                 Weft__GraphFile *f, wf_status *st) {
  static char magic[] = MAGIC;
  const wf_graph *g = w->g;
  size_t kept = 0;

  snprintf(w->producer, sizeof w->producer, "weft %s", wf_version());
  f->magic = magic;
  f->has_format_version = 1;
  f->format_version = WF_GRAPH_FILE_VERSION;
  f->has_min_reader_version = 1;
  f->min_reader_version = WF_GRAPH_FILE_VERSION;
  f->producer = w->producer;
  if (order) {
    kept = (size_t)norder;
  } else {
    for (int i = 0; i < g->num_nodes; i++)
      kept += !keep || keep[i];
  }
  f->nodes = new_array(w, kept, sizeof *f->nodes);
  if (!f->nodes)
    return writer_oom(w, st);
  for (int i = 0; i < (order ? norder : g->num_nodes); i++) {
    if (!order && keep && !keep[i])
      continue;
    const wf_node *n = order ? order[i] : g->nodes[i];
    if (!(f->nodes[f->n_nodes] = node_to_pb(w, n, st)))
      return wf_status_code(st);
    f->n_nodes++;
  }
  f->has_num_nodes = 1;
  f->num_nodes = f->n_nodes;
  f->n_op_sources = w->nsources;
  f->op_sources = w->source_list;
  return WF_OK;
}

static void writer_init(writer *w, const wf_graph *g, const char *what) {
  memset(w, 0, sizeof *w);
  w->g = g;
  w->what = what;
  wf__strmap_init(&w->sources);
}

static void writer_deinit(writer *w) {
  arena_free(&w->mem);
  wf__strmap_deinit(&w->sources);
  wf__free(w->source_list);
}

int wf__graph_nodes_to_buffer(const wf_graph *g, const wf_node *const *nodes,
                              int n, void **buf, size_t *len, wf_status *st) {
  Weft__GraphFile f = WEFT__GRAPH_FILE__INIT;
  writer w;
  int rc;

  assert(g && buf && len && (n == 0 || nodes));
  *buf = NULL;
  *len = 0;
  writer_init(&w, g, "buffer");
  rc = build_message_ordered(&w, NULL, nodes, n, &f, st);
  if (rc == WF_OK) {
    size_t size = protobuf_c_message_get_packed_size(&f.base);
    /* Freed by the caller with free(), as the contract says. */
    void *out = malloc(size ? size : 1);
    if (!out) {
      rc = writer_oom(&w, st);
    } else {
      protobuf_c_message_pack(&f.base, out);
      *buf = out;
      *len = size;
    }
  }
  writer_deinit(&w);
  return rc;
}

int wf_graph_to_buffer(const wf_graph *g, void **buf, size_t *len,
                       wf_status *st) {
  assert(g && buf && len);
  return wf__graph_nodes_to_buffer(g, (const wf_node *const *)g->nodes,
                                   g->num_nodes, buf, len, st);
}

/* protobuf-c's output sink: appends are gathered into 64 KiB writes to
 * the temporary file (large ones, tensor data, go straight through). */
#define SINK_BYTES 65536

typedef struct file_sink {
  ProtobufCBuffer base;
  wf__atomic_file *file;
  wf_status *st;
  int failed;
  size_t used;
  uint8_t buf[SINK_BYTES];
} file_sink;

static void sink_flush(file_sink *s) {
  if (!s->failed && s->used &&
      wf__atomic_write(s->file, s->buf, s->used, s->st))
    s->failed = 1;
  s->used = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  file_sink *s = (file_sink *)b;
  if (s->failed)
    return;
  if (len > SINK_BYTES - s->used) {
    sink_flush(s);
    if (len >= SINK_BYTES) {
      if (wf__atomic_write(s->file, data, len, s->st))
        s->failed = 1;
      return;
    }
  }
  memcpy(s->buf + s->used, data, len);
  s->used += len;
}

/* Writes f to path through a temporary file beside it (core/io/file_io.h):
 * path holds its old contents or all of the new ones. */
static int write_atomically(const Weft__GraphFile *f, const char *path,
                            wf_status *st) {
  wf__atomic_file file;
  file_sink *sink = wf__calloc(1, sizeof *sink);

  if (!sink)
    return file_error(st, WF_RESOURCE_EXHAUSTED, path, "out of memory");
  if (wf__atomic_open(&file, path, st)) {
    wf__free(sink);
    wf_status_prefix(st, "graph file '%s'", path);
    return wf_status_code(st);
  }
  sink->base.append = sink_append;
  sink->file = &file;
  sink->st = st;
  protobuf_c_message_pack_to_buffer(&f->base, &sink->base);
  sink_flush(sink);
  if (sink->failed) {
    wf__atomic_abort(&file);
  } else if (wf__atomic_commit(&file, st) == WF_OK) {
    wf__free(sink);
    return WF_OK;
  }
  wf__free(sink);
  wf_status_prefix(st, "graph file '%s'", path);
  return wf_status_code(st);
}

static int save(const wf_graph *g, const unsigned char *keep, const char *path,
                wf_status *st) {
  Weft__GraphFile f = WEFT__GRAPH_FILE__INIT;
  writer w;
  int rc;

  writer_init(&w, g, path);
  rc = build_message(&w, keep, &f, st);
  if (rc == WF_OK)
    rc = write_atomically(&f, path, st);
  writer_deinit(&w);
  return rc;
}

int wf_graph_save(const wf_graph *g, const char *path, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  int rc;

  assert(g && path);
  rc = save(g, NULL, path, st ? st : &local);
  wf_status_reset(&local);
  return rc;
}

int wf_graph_save_pruned(const wf_graph *g, const wf_output *outputs,
                         int noutputs, wf_node *const *targets, int ntargets,
                         const char *path, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  unsigned char *keep = NULL;
  const wf_node **stack = NULL;
  int top = 0, rc;

  assert(g && path && (noutputs == 0 || outputs) && (ntargets == 0 || targets));
  if (!st)
    st = &local;
  keep = wf__calloc((size_t)g->num_nodes + 1, 1);
  stack = wf__calloc((size_t)g->num_nodes + 1, sizeof *stack);
  if (!keep || !stack) {
    rc = file_error(st, WF_RESOURCE_EXHAUSTED, path, "out of memory");
    goto done;
  }
  for (int i = 0; i < noutputs + ntargets; i++) {
    const wf_node *n = i < noutputs ? outputs[i].node : targets[i - noutputs];
    const char *kind = i < noutputs ? "output" : "target";
    int k = i < noutputs ? i : i - noutputs;
    if (!n || n->graph != g) {
      rc = file_error(st, WF_INVALID_ARGUMENT, path, "%s %d %s", kind, k,
                      n ? "belongs to another graph" : "has no node");
      goto done;
    }
    if (i < noutputs &&
        (outputs[i].index < 0 || outputs[i].index >= n->num_outputs)) {
      rc = file_error(st, WF_INVALID_ARGUMENT, path,
                      "output %d is output %d of node '%s', which has %d", k,
                      (int)outputs[i].index, n->name, n->num_outputs);
      goto done;
    }
    if (!keep[n->id]) {
      keep[n->id] = 1;
      stack[top++] = n;
    }
  }
  while (top > 0) {
    const wf_node *n = stack[--top];
    for (int i = 0; i < n->num_inputs + n->num_control_inputs; i++) {
      const wf_node *src = i < n->num_inputs
                               ? n->inputs[i].node
                               : n->control_inputs[i - n->num_inputs];
      if (!keep[src->id]) {
        keep[src->id] = 1;
        stack[top++] = src;
      }
    }
  }
  rc = save(g, keep, path, st);
done:
  wf__free(keep);
  wf__free(stack);
  wf_status_reset(&local);
  return rc;
}

/* ---- decoding
 * ---------------------------------------------------------------- */

/* protobuf-c allocates through the host allocator (so tests can make it
 * fail) and says whether it ran out of memory. */
static void *pb_alloc(void *data, size_t n) {
  void *p = wf__alloc(n ? n : 1, 16);
  if (!p)
    *(int *)data = 1;
  return p;
}

static void pb_free(void *data, void *p) {
  (void)data;
  wf__free(p);
}

/* Reads a varint at p[*at], at most max bytes; 0, or -1 when it is cut off
 * by n, -2 when it is longer than max. */
static int read_varint(const uint8_t *p, size_t n, size_t *at, int max,
                       uint64_t *v) {
  uint64_t r = 0;
  for (int i = 0; i < max; i++) {
    uint8_t b;
    if (*at >= n)
      return -1;
    b = p[(*at)++];
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -2;
}

/* The wire type protobuf uses for a field of type t. */
static int wire_type_of(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    return 1;
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_FLOAT:
    return 5;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_BYTES:
  case PROTOBUF_C_TYPE_MESSAGE:
    return 2;
  default:
    return 0;
  }
}

static const ProtobufCFieldDescriptor *
field_of(const ProtobufCMessageDescriptor *d, uint64_t number) {
  for (unsigned i = 0; i < d->n_fields; i++)
    if (d->fields[i].id == number)
      return &d->fields[i];
  return NULL;
}

/* Finds the first thing in the message of type d at p[0..n) (byte base of
 * the file, reached through `path`: "" for the file itself, then
 * "nodes[3].attrs[0].value") that decoding refuses, and describes it in
 * out. Returns 1 when found. */
static int explain(const ProtobufCMessageDescriptor *d, const uint8_t *p,
                   size_t n, size_t base, const char *path, int depth,
                   char *out, size_t outlen) {
  unsigned counts[64] = {0};
  const char *in = *path ? path : "the file";
  size_t at = 0;

  if (depth > MAX_EXPLAIN_DEPTH)
    return 0;
  while (at < n) {
    const ProtobufCFieldDescriptor *fd;
    char where[512];
    size_t start = at;
    uint64_t tag, v;
    int wire, rc;

    rc = read_varint(p, n, &at, 5, &tag);
    if (rc || tag >> 32) {
      snprintf(out, outlen, "byte %zu: a field tag in %s is %s", base + start,
               in, rc == -1 ? "cut off" : "malformed");
      return 1;
    }
    wire = (int)(tag & 7);
    if ((tag >> 3) == 0) {
      snprintf(out, outlen, "byte %zu: a field in %s has number 0",
               base + start, in);
      return 1;
    }
    fd = field_of(d, tag >> 3);
    if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t k = (size_t)(fd - d->fields);
      snprintf(where, sizeof where, "%s%s%s[%u]", path, *path ? "." : "",
               fd->name, k < 64 ? counts[k]++ : 0);
    } else if (fd) {
      snprintf(where, sizeof where, "%s%s%s", path, *path ? "." : "", fd->name);
    } else {
      snprintf(where, sizeof where, "field %llu of %s",
               (unsigned long long)(tag >> 3), in);
    }
    if (fd && wire != wire_type_of(fd->type) &&
        !(wire == 2 && fd->label == PROTOBUF_C_LABEL_REPEATED &&
          wire_type_of(fd->type) != 2)) {
      snprintf(out, outlen,
               "byte %zu: %s has wire type %d where its type needs %d",
               base + start, where, wire, wire_type_of(fd->type));
      return 1;
    }
    switch (wire) {
    case 0:
      if (read_varint(p, n, &at, 10, &v)) {
        snprintf(out, outlen, "byte %zu: the value of %s is %s", base + start,
                 where, at >= n ? "cut off" : "malformed");
        return 1;
      }
      break;
    case 1:
    case 5: {
      size_t size = wire == 1 ? 8 : 4;
      if (n - at < size) {
        snprintf(out, outlen, "byte %zu: the value of %s is cut off",
                 base + start, where);
        return 1;
      }
      at += size;
      break;
    }
    case 2: {
      size_t body;
      if (read_varint(p, n, &at, 10, &v)) {
        snprintf(out, outlen, "byte %zu: the length of %s is %s", base + start,
                 where, at >= n ? "cut off" : "malformed");
        return 1;
      }
      if (v > n - at) {
        snprintf(out, outlen,
                 "byte %zu: %s says it is %llu bytes long, but only %zu "
                 "bytes of %s remain (cut short?)",
                 base + start, where, (unsigned long long)v, n - at, in);
        return 1;
      }
      body = at;
      at += (size_t)v;
      if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE)
        if (explain(fd->descriptor, p + body, (size_t)v, base + body, where,
                    depth + 1, out, outlen))
          return 1;
      if (fd && wire_type_of(fd->type) == 5 && v % 4) {
        snprintf(out, outlen,
                 "byte %zu: packed %s holds %llu bytes, not whole 4-byte "
                 "values",
                 base + start, where, (unsigned long long)v);
        return 1;
      }
      if (fd && wire_type_of(fd->type) == 1 && v % 8) {
        snprintf(out, outlen,
                 "byte %zu: packed %s holds %llu bytes, not whole 8-byte "
                 "values",
                 base + start, where, (unsigned long long)v);
        return 1;
      }
      if (fd && wire_type_of(fd->type) == 0) {
        for (size_t q = body; q < at;) {
          if (read_varint(p, at, &q, 10, &v)) {
            snprintf(out, outlen, "byte %zu: packed %s ends inside a value",
                     base + body, where);
            return 1;
          }
        }
      }
      break;
    }
    default:
      snprintf(out, outlen, "byte %zu: %s has wire type %d%s", base + start,
               where, wire,
               wire == 3 || wire == 4
                   ? " (a group), which graph files never use"
                   : ", which does not exist");
      return 1;
    }
  }
  return 0;
}

/* Decodes and checks the frame of a graph file: the mark, the versions
 * (unless describe_only) and the node count. NULL with st set. Free the
 * result with free_file. */
static Weft__GraphFile *decode(const void *buf, size_t len, const char *what,
                               int describe_only, wf_status *st) {
  int oom = 0;
  ProtobufCAllocator alloc = {pb_alloc, pb_free, &oom};
  Weft__GraphFile *f;
  uint32_t min_reader;
  char why[768];

  if (len == 0) {
    file_error(st, WF_DATA_LOSS, what, "the file is empty");
    return NULL;
  }
  f = weft__graph_file__unpack(&alloc, len, buf);
  if (!f) {
    if (explain(&weft__graph_file__descriptor, buf, len, 0, "", 0, why,
                sizeof why))
      file_error(st, WF_DATA_LOSS, what,
                 "not a graph file, or a damaged one: %s", why);
    else if (oom)
      file_error(st, WF_RESOURCE_EXHAUSTED, what,
                 "out of memory decoding %zu bytes", len);
    else
      file_error(st, WF_DATA_LOSS, what,
                 "not a graph file, or a damaged one: protobuf decoding "
                 "failed");
    return NULL;
  }
  if (!f->magic || strcmp(f->magic, MAGIC) != 0) {
    file_error(st, WF_DATA_LOSS, what,
               "not a weft graph file: it lacks the '%s' mark (field 1)%s",
               MAGIC, f->magic ? ", it has another one" : "");
    goto fail;
  }
  if (!f->has_format_version || f->format_version == 0) {
    file_error(st, WF_DATA_LOSS, what, "the file has no format version");
    goto fail;
  }
  /* Without a minimum, the file needs a reader of its own version. */
  min_reader =
      f->has_min_reader_version ? f->min_reader_version : f->format_version;
  if (!describe_only && min_reader > WF_GRAPH_FILE_VERSION) {
    file_error(st, WF_UNIMPLEMENTED, what,
               "it needs a graph-file reader of version %u or newer (it was "
               "written in format version %u by %s); this weft %s reads "
               "versions up to %d: use a newer weft",
               (unsigned)min_reader, (unsigned)f->format_version,
               f->producer ? f->producer : "an unnamed producer", wf_version(),
               WF_GRAPH_FILE_VERSION);
    goto fail;
  }
  if (!f->has_num_nodes) {
    file_error(st, WF_DATA_LOSS, what,
               "the file does not say how many nodes it holds");
    goto fail;
  }
  if (f->num_nodes != f->n_nodes) {
    file_error(st, WF_DATA_LOSS, what,
               "the file says it holds %llu nodes but %zu are there: it is "
               "truncated or damaged",
               (unsigned long long)f->num_nodes, f->n_nodes);
    goto fail;
  }
  return f;

fail:
  weft__graph_file__free_unpacked(f, &alloc);
  return NULL;
}

static void free_file(Weft__GraphFile *f) {
  int oom = 0;
  ProtobufCAllocator alloc = {pb_alloc, pb_free, &oom};
  if (f)
    weft__graph_file__free_unpacked(f, &alloc);
}

/* ---- loading: messages -> graph --------------------------------------------
 */

/* Letters, digits, '_', '.', '-' in components joined by single '/'s. */
static int valid_full_name(const char *s) {
  int component = 0;
  if (!s || !*s)
    return 0;
  for (; *s; s++) {
    if (*s == '/') {
      if (component == 0)
        return 0;
      component = 0;
      continue;
    }
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
      return 0;
    component++;
  }
  return component > 0;
}

static int valid_dtype(int32_t d) {
  return d > WF_DTYPE_INVALID && d < WF__DTYPE_END &&
         wf_dtype_name((wf_dtype)d) != NULL;
}

/* What a loading step knows of where it is, for messages. */
typedef struct loader {
  wf_graph *g;
  const Weft__GraphFile *f;
  const char *what;
  wf__strmap index; /* name -> (void *)(node index + 1) */
} loader;

/* Sets st to "graph file 'what': node 'n' (op 'op'): <message>". */
static wf_code node_error(const loader *l, const Weft__Node *pn, wf_status *st,
                          wf_code code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static wf_code node_error(const loader *l, const Weft__Node *pn, wf_status *st,
                          wf_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__status_vset(st, code, fmt, ap);
  va_end(ap);
  if (pn->op)
    wf_status_prefix(st, "graph file '%s': node '%s' (op '%s')", l->what,
                     pn->name, pn->op);
  else
    wf_status_prefix(st, "graph file '%s': node '%s'", l->what, pn->name);
  return code;
}

static void free_strings(void *data, size_t len, void *arg) {
  (void)len;
  (void)arg;
  wf__free(data);
}

/* A string tensor: its buffer, checked by wf_tensor_wrap. */
static wf_tensor *strings_from_pb(const Weft__Tensor *pt, const int64_t *dims,
                                  int rank, wf_status *st) {
  size_t nbytes, have = pt->has_data ? pt->data.len : 0;
  wf_shape s;
  if (wf__tensor_check(WF_UINT8, dims, rank, &nbytes, st))
    return NULL;
  if (pt->has_crc32c && wf__crc32c(0, pt->data.data, have) != pt->crc32c) {
    wf_status_set(st, WF_DATA_LOSS,
                  "string tensor data fails its CRC-32C check: the file is "
                  "damaged");
    return NULL;
  }
  wf_shape_init(&s, dims, rank);
  int64_t count = wf_shape_count(&s);
  /* a copy: the tensor outlives the file's buffer */
  unsigned char *buf = wf__alloc(have ? have : 1, WF_TENSOR_ALIGN);
  if (!buf) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "out of memory reading %zu bytes of strings", have);
    return NULL;
  }
  if (have)
    memcpy(buf, pt->data.data, have);
  if (!host_is_little_endian() && count >= 0 &&
      (uint64_t)count < have / 8)
    copy_swapped(buf, pt->data.data, ((size_t)count + 1) * 8, 8);
  return wf_tensor_wrap(WF_STRING, dims, rank, buf, have, free_strings, NULL,
                        st);
}

static wf_tensor *tensor_from_pb(const Weft__Tensor *pt, wf_status *st) {
  int64_t dims[WF_MAX_RANK];
  size_t nbytes, esize, have;
  const uint8_t *data;
  wf_tensor *t;
  int rank;

  if (!pt->has_dtype || !valid_dtype(pt->dtype) ||
      pt->dtype == WEFT__DTYPE__DT_RESOURCE) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor dtype %s is not one a tensor can be stored as",
                  pt->has_dtype ? (wf_dtype_name((wf_dtype)pt->dtype)
                                       ? wf_dtype_name((wf_dtype)pt->dtype)
                                       : "(invalid)")
                                : "(absent)");
    return NULL;
  }
  if (pt->n_dims > WF_MAX_RANK) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor has %zu dims; at most %d are allowed", pt->n_dims,
                  WF_MAX_RANK);
    return NULL;
  }
  rank = (int)pt->n_dims;
  for (int i = 0; i < rank; i++)
    dims[i] = pt->dims[i];
  if (pt->dtype == WEFT__DTYPE__DT_STRING)
    return strings_from_pb(pt, dims, rank, st);
  if (wf__tensor_check((wf_dtype)pt->dtype, dims, rank, &nbytes, st))
    return NULL;
  have = pt->has_data ? pt->data.len : 0;
  data = pt->has_data ? pt->data.data : NULL;
  if (have != nbytes) {
    wf_shape s;
    char buf[160];
    wf_shape_init(&s, dims, rank);
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor %s %s needs %zu bytes of data, the file holds %zu",
                  wf_dtype_name((wf_dtype)pt->dtype),
                  wf_shape_str(&s, buf, sizeof buf), nbytes, have);
    return NULL;
  }
  if (pt->has_crc32c && wf__crc32c(0, data, have) != pt->crc32c) {
    wf_status_set(st, WF_DATA_LOSS,
                  "tensor data fails its CRC-32C check (stored %08x, "
                  "computed %08x): the file is damaged",
                  (unsigned)pt->crc32c, (unsigned)wf__crc32c(0, data, have));
    return NULL;
  }
  if (pt->dtype == WEFT__DTYPE__DT_BOOL)
    for (size_t i = 0; i < have; i++)
      if (data[i] > 1) {
        wf_status_set(st, WF_INVALID_ARGUMENT,
                      "bool tensor element %zu is %u, not 0 or 1", i,
                      (unsigned)data[i]);
        return NULL;
      }
  t = wf_tensor_new((wf_dtype)pt->dtype, dims, rank, st);
  if (!t)
    return NULL;
  esize = wf_dtype_size((wf_dtype)pt->dtype);
  if (have && (host_is_little_endian() || esize == 1))
    memcpy(wf_tensor_data(t), data, have);
  else if (have)
    copy_swapped(wf_tensor_data(t), data, have, esize);
  return t;
}

static int shape_from_pb(const Weft__Shape *ps, wf_shape *out, wf_status *st) {
  wf_shape_unknown(out);
  if (ps->has_unknown_rank && ps->unknown_rank) {
    if (ps->n_dims)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "shape of unknown rank lists %zu dims", ps->n_dims);
    return WF_OK;
  }
  if (ps->n_dims > WF_MAX_RANK)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "shape has %zu dims; at most %d are allowed",
                         ps->n_dims, WF_MAX_RANK);
  out->rank = (int32_t)ps->n_dims;
  for (size_t i = 0; i < ps->n_dims; i++) {
    if (ps->dims[i] < WF_UNKNOWN_DIM)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "shape dim %zu is %lld; dims are >= 0, or -1 for "
                           "unknown",
                           i, (long long)ps->dims[i]);
    out->dims[i] = ps->dims[i];
  }
  return WF_OK;
}

/* What an attribute value borrows while it is handed to the description
 * (which copies it). */
typedef struct attr_scratch {
  void *items; /* bools, dtypes or shapes as weft stores them */
  char **strings;
  wf_tensor **tensors;
  size_t n;          /* entries of strings / tensors */
  wf_tensor *tensor; /* a scalar tensor attribute */
} attr_scratch;

static void scratch_clear(attr_scratch *s) {
  wf__free(s->items);
  if (s->strings)
    for (size_t i = 0; i < s->n; i++)
      wf__free(s->strings[i]);
  wf__free(s->strings);
  if (s->tensors)
    for (size_t i = 0; i < s->n; i++)
      wf_tensor_release(s->tensors[i]);
  wf__free(s->tensors);
  wf_tensor_release(s->tensor);
  memset(s, 0, sizeof *s);
}

static int oom_status(wf_status *st) {
  return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
}

/* A C string from bytes; refuses NUL inside. */
static char *string_from_pb(const ProtobufCBinaryData *b, wf_status *st) {
  char *s;
  if (b->len && memchr(b->data, 0, b->len)) {
    wf_status_set(
        st, WF_INVALID_ARGUMENT, "string holds a NUL byte at offset %zu",
        (size_t)((const uint8_t *)memchr(b->data, 0, b->len) - b->data));
    return NULL;
  }
  s = wf__strndup(b->len ? (const char *)b->data : "", b->len);
  if (!s)
    oom_status(st);
  return s;
}

/* Converts pv into *v, whose arrays s holds until cleared. Messages say
 * only the problem (the caller names the node and attribute). */
static int attr_from_pb(const Weft__AttrValue *pv, wf_attr_value *v,
                        attr_scratch *s, wf_status *st) {
  memset(v, 0, sizeof *v);
  v->count = 1;
  switch (pv->kind_case) {
  case WEFT__ATTR_VALUE__KIND_I:
    v->type = WF_ATTR_INT;
    v->u.i = pv->i;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_F:
    v->type = WF_ATTR_FLOAT;
    v->u.f = pv->f;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_B:
    v->type = WF_ATTR_BOOL;
    v->u.b = pv->b != 0;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_S:
    v->type = WF_ATTR_STRING;
    s->strings = wf__calloc(1, sizeof *s->strings);
    if (!s->strings)
      return oom_status(st);
    s->n = 1;
    if (!(s->strings[0] = string_from_pb(&pv->s, st)))
      return wf_status_code(st);
    v->u.s = s->strings[0];
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_DTYPE:
    if (!valid_dtype(pv->dtype))
      return wf_status_set(st, WF_INVALID_ARGUMENT, "%d is not a dtype",
                           (int)pv->dtype);
    v->type = WF_ATTR_DTYPE;
    v->u.dtype = pv->dtype;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_SHAPE:
    v->type = WF_ATTR_SHAPE;
    return shape_from_pb(pv->shape, &v->u.shape, st);
  case WEFT__ATTR_VALUE__KIND_TENSOR:
    v->type = WF_ATTR_TENSOR;
    if (!(s->tensor = tensor_from_pb(pv->tensor, st)))
      return wf_status_code(st);
    v->u.tensor = s->tensor;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_INTS:
    v->type = WF_ATTR_LIST | WF_ATTR_INT;
    v->count = (int64_t)pv->ints->n_values;
    v->u.ints = pv->ints->values;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_FLOATS:
    v->type = WF_ATTR_LIST | WF_ATTR_FLOAT;
    v->count = (int64_t)pv->floats->n_values;
    v->u.floats = pv->floats->values;
    return WF_OK;
  case WEFT__ATTR_VALUE__KIND_BOOLS: {
    size_t n = pv->bools->n_values;
    int32_t *b = wf__calloc(n ? n : 1, sizeof *b);
    if (!b)
      return oom_status(st);
    for (size_t i = 0; i < n; i++)
      b[i] = pv->bools->values[i] != 0;
    s->items = b;
    v->type = WF_ATTR_LIST | WF_ATTR_BOOL;
    v->count = (int64_t)n;
    v->u.bools = b;
    return WF_OK;
  }
  case WEFT__ATTR_VALUE__KIND_STRINGS: {
    size_t n = pv->strings->n_values;
    s->strings = wf__calloc(n ? n : 1, sizeof *s->strings);
    if (!s->strings)
      return oom_status(st);
    s->n = n;
    for (size_t i = 0; i < n; i++)
      if (!(s->strings[i] = string_from_pb(&pv->strings->values[i], st))) {
        wf_status_prefix(st, "item %zu", i);
        return wf_status_code(st);
      }
    v->type = WF_ATTR_LIST | WF_ATTR_STRING;
    v->count = (int64_t)n;
    v->u.strings = (const char *const *)s->strings;
    return WF_OK;
  }
  case WEFT__ATTR_VALUE__KIND_DTYPES: {
    size_t n = pv->dtypes->n_values;
    int32_t *d = wf__calloc(n ? n : 1, sizeof *d);
    if (!d)
      return oom_status(st);
    s->items = d;
    for (size_t i = 0; i < n; i++) {
      if (!valid_dtype(pv->dtypes->values[i]))
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "item %zu: %d is not a dtype", i,
                             (int)pv->dtypes->values[i]);
      d[i] = pv->dtypes->values[i];
    }
    v->type = WF_ATTR_LIST | WF_ATTR_DTYPE;
    v->count = (int64_t)n;
    v->u.dtypes = d;
    return WF_OK;
  }
  case WEFT__ATTR_VALUE__KIND_SHAPES: {
    size_t n = pv->shapes->n_values;
    wf_shape *sh = wf__calloc(n ? n : 1, sizeof *sh);
    if (!sh)
      return oom_status(st);
    s->items = sh;
    for (size_t i = 0; i < n; i++)
      if (shape_from_pb(pv->shapes->values[i], &sh[i], st)) {
        wf_status_prefix(st, "item %zu", i);
        return wf_status_code(st);
      }
    v->type = WF_ATTR_LIST | WF_ATTR_SHAPE;
    v->count = (int64_t)n;
    v->u.shapes = sh;
    return WF_OK;
  }
  case WEFT__ATTR_VALUE__KIND_TENSORS: {
    size_t n = pv->tensors->n_values;
    s->tensors = wf__calloc(n ? n : 1, sizeof *s->tensors);
    if (!s->tensors)
      return oom_status(st);
    s->n = n;
    for (size_t i = 0; i < n; i++)
      if (!(s->tensors[i] = tensor_from_pb(pv->tensors->values[i], st))) {
        wf_status_prefix(st, "item %zu", i);
        return wf_status_code(st);
      }
    v->type = WF_ATTR_LIST | WF_ATTR_TENSOR;
    v->count = (int64_t)n;
    v->u.tensors = (const wf_tensor *const *)s->tensors;
    return WF_OK;
  }
  default:
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "the value is of no kind this reader knows (a "
                         "newer file?)");
  }
}

/* The message of an op no plugin registers, naming the plugin that did
 * when the file was written. */
static int unknown_op(const loader *l, const Weft__Node *pn, wf_status *st) {
  for (size_t i = 0; i < l->f->n_op_sources; i++) {
    const Weft__OpSource *s = l->f->op_sources[i];
    if (s->op && s->plugin && strcmp(s->op, pn->op) == 0)
      return node_error(
          l, pn, st, WF_NOT_FOUND,
          "the op is not registered by any loaded plugin; the file was "
          "written with it from plugin '%s'%s%s%s: is that plugin installed "
          "and allowed by the config? (`weft plugins` lists what loaded)",
          s->plugin, s->plugin_version ? " (version " : "",
          s->plugin_version ? s->plugin_version : "",
          s->plugin_version ? ")" : "");
  }
  return node_error(l, pn, st, WF_NOT_FOUND,
                    "the op is not registered by any loaded plugin, and the "
                    "file does not say which plugin it came from: load the "
                    "plugin that defines it (`weft plugins` lists what "
                    "loaded)");
}

/* Index + 1 of the node called name in the file, or 0. */
static size_t file_index(const loader *l, const char *name) {
  return (size_t)(uintptr_t)wf__strmap_get(&l->index, name);
}

/* Resolves input k of node i (data: slot >= 0 checked; control: slot -1).
 * *out is the node, or NULL for a control input that names a later node
 * (only possible for control inputs). */
static int resolve(const loader *l, const Weft__Node *pn, size_t i,
                   const char *kind, size_t k, const char *name, wf_node **out,
                   wf_status *st) {
  size_t j;
  *out = NULL;
  if (!name || !*name)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT, "%s %zu names no node",
                      kind, k);
  *out = wf_graph_find_node(l->g, name);
  if (*out)
    return WF_OK;
  j = file_index(l, name);
  if (j == i + 1)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "%s %zu names the node itself", kind, k);
  if (j == 0)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "%s %zu names node '%s', which is not in the file", kind,
                      k, name);
  if (strcmp(kind, "input") == 0)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "input %zu names node '%s', which comes later in the "
                      "file (node %zu; this is node %zu): data inputs must "
                      "come before the nodes that read them",
                      k, name, j - 1, i);
  return WF_OK; /* a control input from a later node: added at the end */
}

/* Sets the file's attributes of pn on d; refuses names the op lacks and
 * names given twice. */
static int set_attrs(const loader *l, const Weft__Node *pn, const wf__op *op,
                     wf_node_desc *d, wf_status *st) {
  unsigned char *seen = wf__calloc((size_t)op->num_attrs + 1, 1);
  int rc = WF_OK;

  if (!seen)
    return node_error(l, pn, st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t a = 0; a < pn->n_attrs && rc == WF_OK; a++) {
    const Weft__Attr *pa = pn->attrs[a];
    attr_scratch s;
    wf_attr_value v;
    int k;

    if (!pa->name || !*pa->name) {
      rc = node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "attribute %zu has no name", a);
      break;
    }
    k = wf__op_attr_index(op, pa->name);
    if (k < 0) {
      rc = node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "attribute '%s' is not one the op defines (a plugin "
                      "of another version?)",
                      pa->name);
      break;
    }
    if (seen[k]) {
      rc = node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "attribute '%s' is given twice", pa->name);
      break;
    }
    seen[k] = 1;
    if (!pa->value) {
      rc = node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "attribute '%s' has no value", pa->name);
      break;
    }
    memset(&s, 0, sizeof s);
    rc = attr_from_pb(pa->value, &v, &s, st);
    if (rc == WF_OK)
      wf_node_desc_set_attr(d, pa->name, &v);
    scratch_clear(&s);
    if (rc) {
      wf_status_prefix(st, "attribute '%s'", pa->name);
      wf_status_prefix(st, "graph file '%s': node '%s' (op '%s')", l->what,
                       pn->name, pn->op);
    }
  }
  wf__free(seen);
  return rc;
}

/* Hands the flat inputs to d argument by argument: a list argument takes
 * as many as its number attribute in the file says, or (when it is the
 * only list and the file lacks the number) what the fixed arguments leave.
 * Extra or missing inputs stay for finish to report with the op's
 * arguments named. */
static void add_inputs(const Weft__Node *pn, const wf__op *op,
                       const wf_output *in, size_t nin, wf_node_desc *d) {
  size_t at = 0, fixed = 0, lists = 0;

  for (int a = 0; a < op->num_inputs; a++) {
    if (op->inputs[a].number_attr)
      lists++;
    else
      fixed++;
  }
  for (int a = 0; a < op->num_inputs && at <= nin; a++) {
    const wf_arg_def *arg = &op->inputs[a];
    int64_t n = -1;
    if (!arg->number_attr) {
      if (at < nin)
        wf_node_desc_add_input(d, in[at]);
      at++;
      continue;
    }
    for (size_t k = 0; k < pn->n_attrs; k++) {
      const Weft__Attr *pa = pn->attrs[k];
      if (pa->name && strcmp(pa->name, arg->number_attr) == 0 && pa->value &&
          pa->value->kind_case == WEFT__ATTR_VALUE__KIND_I)
        n = pa->value->i;
    }
    if (n < 0 && lists == 1)
      n = nin > fixed ? (int64_t)(nin - fixed) : 0;
    if (n < 0 || (uint64_t)n > nin - at)
      n = (int64_t)(nin - at);
    wf_node_desc_add_input_list(d, in + at, (int)n);
    at += (size_t)n;
  }
  for (; at < nin; at++)
    wf_node_desc_add_input(d, in[at]);
}

/* Adds file node i to the graph. *later is set when some control input
 * names a later node: then all of them are added at the end, in order. */
static int add_node(loader *l, size_t i, int *later, wf_status *st) {
  const Weft__Node *pn = l->f->nodes[i];
  const wf__op *op;
  wf_output *in = NULL;
  wf_node **ctl = NULL;
  wf_node_desc *d = NULL;
  wf_node *n;
  int rc;

  *later = 0;
  if (!pn->op || !*pn->op)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT, "the node has no op");
  op = wf__registry_find_op(l->g->rt->reg, pn->op);
  if (!op)
    return unknown_op(l, pn, st);
  if (pn->n_inputs > INT32_MAX || pn->n_control_inputs > INT32_MAX)
    return node_error(l, pn, st, WF_INVALID_ARGUMENT, "too many inputs");
  in = wf__calloc(pn->n_inputs + 1, sizeof *in);
  ctl = wf__calloc(pn->n_control_inputs + 1, sizeof *ctl);
  if (!in || !ctl) {
    rc = node_error(l, pn, st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (size_t k = 0; k < pn->n_inputs; k++) {
    const Weft__Input *pin = pn->inputs[k];
    int32_t slot = pin->has_slot ? pin->slot : 0;
    if ((rc = resolve(l, pn, i, "input", k, pin->node, &in[k].node, st)))
      goto done;
    if (slot < 0 || slot >= in[k].node->num_outputs) {
      rc = node_error(l, pn, st, WF_INVALID_ARGUMENT,
                      "input %zu reads output %d of node '%s' (op '%s'), "
                      "which has %d output%s",
                      k, (int)slot, in[k].node->name, in[k].node->op->def.name,
                      in[k].node->num_outputs,
                      in[k].node->num_outputs == 1 ? "" : "s");
      goto done;
    }
    in[k].index = slot;
  }
  for (size_t k = 0; k < pn->n_control_inputs; k++) {
    if ((rc = resolve(l, pn, i, "control input", k, pn->control_inputs[k],
                      &ctl[k], st)))
      goto done;
    if (!ctl[k])
      *later = 1;
  }
  d = wf__node_desc_new_full(l->g, pn->op, pn->name);
  wf_node_desc_set_device(d, pn->device ? pn->device : "");
  if ((rc = set_attrs(l, pn, op, d, st)))
    goto done;
  add_inputs(pn, op, in, pn->n_inputs, d);
  if (!*later)
    for (size_t k = 0; k < pn->n_control_inputs; k++)
      wf_node_desc_add_control_input(d, ctl[k]);
  n = wf_node_desc_finish(d, st);
  d = NULL;
  if (!n) {
    rc = wf_status_code(st);
    wf_status_prefix(st, "graph file '%s'", l->what);
    goto done;
  }
  assert(strcmp(n->name, pn->name) == 0);
  rc = WF_OK;
done:
  wf_node_desc_free(d);
  wf__free(in);
  wf__free(ctl);
  return rc;
}

/* Adds the control edges of file node i, all of them, in the file's order
 * (some named nodes that came later). */
static int add_late_controls(loader *l, size_t i, wf_status *st) {
  const Weft__Node *pn = l->f->nodes[i];
  wf_node *to = wf_graph_find_node(l->g, pn->name);
  for (size_t k = 0; k < pn->n_control_inputs; k++) {
    wf_node *from = wf_graph_find_node(l->g, pn->control_inputs[k]);
    if (wf_graph_add_control_edge(l->g, from, to, st)) {
      wf_status_prefix(st,
                       "graph file '%s': node '%s' (op '%s'): control "
                       "input %zu",
                       l->what, pn->name, pn->op, k);
      return wf_status_code(st);
    }
  }
  return WF_OK;
}

static wf_graph *build_graph(wf_runtime *rt, const Weft__GraphFile *f,
                             const char *what, wf_status *st) {
  loader l;
  unsigned char *later = NULL;
  int any_later = 0;

  memset(&l, 0, sizeof l);
  l.f = f;
  l.what = what;
  wf__strmap_init(&l.index);
  if (f->n_nodes > INT32_MAX) {
    file_error(st, WF_INVALID_ARGUMENT, what, "too many nodes (%zu)",
               f->n_nodes);
    goto fail;
  }
  /* Names first: later nodes must be known to say "comes later". */
  for (size_t i = 0; i < f->n_nodes; i++) {
    const char *name = f->nodes[i]->name;
    size_t j;
    if (!valid_full_name(name)) {
      if (name)
        file_error(st, WF_INVALID_ARGUMENT, what,
                   "node %zu: name '%s' is invalid: use letters, digits, "
                   "'_', '.' and '-', in components joined by '/'",
                   i, name);
      else
        file_error(st, WF_INVALID_ARGUMENT, what, "node %zu has no name", i);
      goto fail;
    }
    if ((j = file_index(&l, name)) != 0) {
      file_error(st, WF_INVALID_ARGUMENT, what,
                 "node name '%s' is used twice (nodes %zu and %zu)", name,
                 j - 1, i);
      goto fail;
    }
    if (wf__strmap_put(&l.index, name, (void *)(uintptr_t)(i + 1))) {
      file_error(st, WF_RESOURCE_EXHAUSTED, what, "out of memory");
      goto fail;
    }
  }
  l.g = wf_graph_new(rt);
  later = wf__calloc(f->n_nodes + 1, 1);
  if (!l.g || !later) {
    file_error(st, WF_RESOURCE_EXHAUSTED, what, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < f->n_nodes; i++) {
    int late;
    if (add_node(&l, i, &late, st))
      goto fail;
    later[i] = (unsigned char)late;
    any_later |= late;
  }
  for (size_t i = 0; any_later && i < f->n_nodes; i++)
    if (later[i] && add_late_controls(&l, i, st))
      goto fail;
  wf__free(later);
  wf__strmap_deinit(&l.index);
  return l.g;

fail:
  wf__free(later);
  wf__strmap_deinit(&l.index);
  wf_graph_free(l.g);
  return NULL;
}

wf_graph *wf_graph_from_buffer(wf_runtime *rt, const void *buf, size_t len,
                               const char *what, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  Weft__GraphFile *f;
  wf_graph *g = NULL;

  assert(rt && (buf || len == 0));
  if (!st)
    st = &local; /* node finishing needs a real status */
  if (!what)
    what = "buffer";
  f = decode(buf, len, what, 0, st);
  if (f)
    g = build_graph(rt, f, what, st);
  if (g)
    wf_status_reset(st);
  free_file(f);
  wf_status_reset(&local);
  return g;
}

/* Reads the whole file at path into a new wf__alloc'd buffer. */
static int read_file(const char *path, uint8_t **data, size_t *len,
                     wf_status *st) {
  struct stat sb;
  uint8_t *buf = NULL;
  size_t cap, n = 0;
  int fd, e;

  *data = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    e = errno;
    return file_error(st, wf__errno_code(e), path, "cannot open: %s",
                      strerror(e));
  }
  if (fstat(fd, &sb) != 0) {
    e = errno;
    close(fd);
    return file_error(st, wf__errno_code(e), path, "cannot stat: %s",
                      strerror(e));
  }
  if (S_ISDIR(sb.st_mode)) {
    close(fd);
    return file_error(st, WF_INVALID_ARGUMENT, path,
                      "is a directory, not a graph file");
  }
  /* Regular files are read in one go; pipes and devices grow the buffer. */
  cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : 65536;
  for (;;) {
    ssize_t got;
    if (!buf || n == cap) {
      size_t ncap = buf ? 2 * cap : cap;
      uint8_t *grown = wf__alloc(ncap, 16);
      if (!grown) {
        wf__free(buf);
        close(fd);
        return file_error(st, WF_RESOURCE_EXHAUSTED, path,
                          "out of memory reading %zu bytes", ncap);
      }
      if (buf)
        memcpy(grown, buf, n);
      wf__free(buf);
      buf = grown;
      cap = ncap;
    }
    got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      e = errno;
      wf__free(buf);
      close(fd);
      return file_error(st, WF_DATA_LOSS, path, "read failed at byte %zu: %s",
                        n, strerror(e));
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  close(fd);
  *data = buf;
  *len = n;
  return WF_OK;
}

wf_graph *wf_graph_load(wf_runtime *rt, const char *path, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  uint8_t *data;
  size_t len;
  wf_graph *g = NULL;

  assert(rt && path);
  if (!st)
    st = &local;
  if (read_file(path, &data, &len, st) == WF_OK) {
    g = wf_graph_from_buffer(rt, data, len, path, st);
    wf__free(data);
  }
  wf_status_reset(&local);
  return g;
}

int wf_graph_file_read_info(const char *path, wf_graph_file_info *info,
                            wf_status *st) {
  wf_graph_file_info out;
  Weft__GraphFile *f;
  uint8_t *data;
  size_t len;

  assert(path && info && info->struct_size > 0);
  if (read_file(path, &data, &len, st))
    return wf_status_code(st);
  f = decode(data, len, path, 1, st);
  wf__free(data);
  if (!f)
    return wf_status_code(st);
  memset(&out, 0, sizeof out);
  out.struct_size =
      info->struct_size < sizeof out ? info->struct_size : (uint32_t)sizeof out;
  out.format_version = (int32_t)f->format_version;
  out.min_reader_version = f->has_min_reader_version
                               ? (int32_t)f->min_reader_version
                               : (int32_t)f->format_version;
  out.num_nodes = (int64_t)f->n_nodes;
  out.file_bytes = (int64_t)len;
  if (f->producer)
    snprintf(out.producer, sizeof out.producer, "%s", f->producer);
  free_file(f);
  /* A caller built against an older, smaller struct gets what fits. */
  memcpy(info, &out, out.struct_size);
  return WF_OK;
}
