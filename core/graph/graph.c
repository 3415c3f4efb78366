/* core/graph/graph.c — graphs: node descriptions validated as a whole against the
 * op's definition (arity, dtypes, attributes, shape inference), unique and
 * scoped names, control edges without cycles, and the shape contexts that
 * ops' shape functions read through the host table.
 *
 * Execution, passes and serialisation live elsewhere; nothing here is
 * thread-safe for writing. */
#include <config.h>

#include "graph/graph_internal.h"
#include "graph/tensor_internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <weft/status.h>
#include <weft/tensor.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "base/status_internal.h"

/* Most tensors one list output may expand to: a bound that keeps a wild
 * number attribute from asking for absurd amounts of memory. */
#define MAX_LIST_OUTPUTS 65536

/* Value stored in the name map for names reserved by scopes. */
static char scope_marker;

/* One group of inputs as the caller added it: a single tensor or a list. */
typedef struct input_group {
  int start, n; /* range in wf_node_desc.inputs */
  int is_list;
} input_group;

struct wf_node_desc {
  wf_graph *g;
  char *op;
  char *name;  /* as requested (without scope), or NULL */
  char *scope; /* scope prefix when described ("" for none) */
  char *device;
  wf_output *inputs;
  int num_inputs, cap_inputs;
  input_group *groups;
  int num_groups, cap_groups;
  wf_node **controls;
  int num_controls, cap_controls;
  wf__attr *attrs; /* owned deep copies, one per name */
  int num_attrs, cap_attrs;
  int oom; /* a setter ran out of memory: finish reports it */
};

struct wf_shape_ctx {
  const wf_node *node;
  const wf_shape *input_shapes; /* overrides the producers' shapes, or NULL */
  /* With input_shapes: the inputs' values where the caller has them in
   * host memory (entries may be NULL), or NULL. */
  const wf_tensor *const *input_values;
  wf_shape *outputs;            /* node->num_outputs entries */
  int32_t bad_output;           /* first bad index given to set_output, or -1 */
  int bad_shape;                /* set_output got a malformed shape */
};

/* ---- growing arrays ------------------------------------------------------ */

/* Makes room for need elements of size elem in *arr with capacity *cap. */
static int grow(void **arr, int *cap, int need, size_t elem) {
  void *p;
  int ncap;
  if (need <= *cap)
    return 0;
  ncap = *cap ? *cap : 4;
  while (ncap < need)
    ncap *= 2;
  p = wf__realloc(*arr, (size_t)ncap * elem);
  if (!p)
    return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

/* Arrays without a capacity field (node edges, scopes) have as capacity
 * their count rounded up to a power of two (at least 4), so growth stays
 * amortised. */
static int pow2_cap(int n) {
  int c = 4;
  if (n == 0)
    return 0;
  while (c < n)
    c *= 2;
  return c;
}

/* Makes room for `extra` more elements of size elem after the n in *arr. */
static int reserve_pow2(void *arr, int n, int extra, size_t elem) {
  void **parr = arr;
  void *p;
  if (n + extra <= pow2_cap(n))
    return 0;
  p = wf__realloc(*parr, (size_t)pow2_cap(n + extra) * elem);
  if (!p)
    return -1;
  *parr = p;
  return 0;
}

static int edge_reserve(wf_node ***arr, int n, int extra) {
  return reserve_pow2(arr, n, extra, sizeof **arr);
}

int wf__op_attr_index(const wf__op *op, const char *name) {
  for (int i = 0; i < op->num_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0)
      return i;
  return -1;
}

/* ---- graph --------------------------------------------------------------- */

wf_graph *wf__graph_new(wf_runtime *rt, wf__op_lookup_fn *find_op,
                        const void *ops) {
  wf_graph *g;
  assert(rt && find_op);
  g = wf__calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->rt = rt;
  g->find_op = find_op;
  g->ops = ops;
  wf__strmap_init(&g->names);
  wf__strmap_init(&g->name_hints);
  return g;
}

/* The tensor of attribute v when it is one tensor in a buffer of the
 * core's own (OWNED), else NULL. */
static wf_tensor *owned_attr_tensor(const wf_attr_value *v) {
  wf_tensor *t;

  if (v->type != WF_ATTR_TENSOR || !v->u.tensor)
    return NULL;
  t = (wf_tensor *)v->u.tensor;
  return t->wrapped == WF__TENSOR_OWNED ? t : NULL;
}

static void node_free(wf_node *n) {
  if (!n)
    return;
  for (int i = 0; i < n->num_attrs; i++) {
    /* its holder may write it once no node holds it (node_new) */
    wf_tensor *t = owned_attr_tensor(&n->attrs[i].v);
    if (t)
      wf__tensor_attr_drop(t);
    wf__free(n->attrs[i].name);
    wf__attr_clear(&n->attrs[i].v);
  }
  wf__free(n->attrs);
  wf__free(n->name);
  wf__free(n->device);
  wf__free(n->inputs);
  wf__free(n->control_inputs);
  wf__free(n->output_dtypes);
  wf__free(n->output_shapes);
  wf__free(n->data_consumers);
  wf__free(n->control_consumers);
  wf__free(n);
}

void wf_graph_free(wf_graph *g) {
  if (!g)
    return;
  for (int i = 0; i < g->num_nodes; i++)
    node_free(g->nodes[i]);
  wf__free(g->nodes);
  wf__strmap_deinit(&g->names);
  for (int i = 0; i < g->num_scopes; i++)
    wf__free(g->scopes[i]);
  for (int i = 0; i < g->num_devices; i++)
    wf__free(g->devices[i]);
  wf__free(g->devices);
  wf__free(g->scopes);
  for (int i = 0; i < g->num_reserved; i++)
    wf__free(g->reserved[i]);
  wf__free(g->reserved);
  for (int i = 0; i < g->num_hints; i++) {
    wf__free(g->hints[i]->base);
    wf__free(g->hints[i]);
  }
  wf__free(g->hints);
  wf__strmap_deinit(&g->name_hints);
  wf__free(g);
}

wf_runtime *wf_graph_runtime(const wf_graph *g) { return g->rt; }

static const char *current_scope(const wf_graph *g) {
  return g->num_scopes ? g->scopes[g->num_scopes - 1] : "";
}

static int name_taken(const wf_graph *g, const char *name) {
  return wf__strmap_get(&g->names, name) != NULL;
}

/* Writes scope/base (or base without a scope) into buf; returns how many
 * characters the full name needs. */
static size_t scoped(const char *scope, const char *base, const char *suffix,
                     char *buf, size_t len) {
  int n =
      snprintf(buf, len, "%s%s%s%s", scope, *scope ? "/" : "", base, suffix);
  return n < 0 ? 0 : (size_t)n;
}

/* Remembers that suffixes below next of the scoped base are taken. Out of
 * memory only loses the hint. */
static void hint_set(wf_graph *g, const char *base, long next) {
  name_hint *h = wf__strmap_get(&g->name_hints, base);
  if (h) {
    h->next = next;
    return;
  }
  if (reserve_pow2(&g->hints, g->num_hints, 1, sizeof *g->hints))
    return;
  h = wf__alloc(sizeof *h, 16);
  if (!h)
    return;
  h->base = wf__strdup(base);
  h->next = next;
  if (!h->base || wf__strmap_put(&g->name_hints, h->base, h)) {
    wf__free(h->base);
    wf__free(h);
    return;
  }
  g->hints[g->num_hints++] = h;
}

/* Writes the first free name among scope/base, scope/base_1, scope/base_2,
 * ... into a new string. NULL when out of memory. */
static char *make_unique(wf_graph *g, const char *scope, const char *base) {
  char suffix[24] = "";
  size_t need = scoped(scope, base, "", NULL, 0) + sizeof suffix;
  char *buf = wf__alloc(need, 16);
  if (!buf)
    return NULL;
  scoped(scope, base, "", buf, need);
  if (!name_taken(g, buf))
    return buf;
  const name_hint *h = wf__strmap_get(&g->name_hints, buf);
  long first = h ? h->next : 1;
  char *key = wf__strdup(buf); /* buf is rewritten below */
  for (long i = first;; i++) {
    snprintf(suffix, sizeof suffix, "_%ld", i);
    scoped(scope, base, suffix, buf, need);
    if (!name_taken(g, buf)) {
      /* Not i + 1: wf_graph_unique_name returns a name without taking
       * it. */
      if (key)
        hint_set(g, key, i);
      wf__free(key);
      return buf;
    }
  }
}

char *wf_graph_unique_name(wf_graph *g, const char *base, char *buf,
                           size_t len) {
  char *name;
  if (len == 0)
    return buf;
  name = make_unique(g, current_scope(g), base);
  if (!name) {
    /* Out of memory: the scoped base is the best guess we can give. */
    scoped(current_scope(g), base, "", buf, len);
    return buf;
  }
  snprintf(buf, len, "%s", name);
  wf__free(name);
  return buf;
}

/* Letters, digits, '_', '.' and '-'; not empty. '/' comes only from scopes. */
static int valid_name(const char *s) {
  if (!s || !*s)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

int wf_graph_push_scope(wf_graph *g, const char *name, wf_status *st) {
  char *full = NULL, *copy = NULL;

  if (!valid_name(name))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "scope name '%s' is invalid: use letters, digits, "
                         "'_', '.' and '-' (nest scopes by pushing each)",
                         name ? name : "(null)");
  full = make_unique(g, current_scope(g), name);
  if (!full)
    goto oom;
  copy = wf__strdup(full);
  if (!copy)
    goto oom;
  if (reserve_pow2(&g->scopes, g->num_scopes, 1, sizeof *g->scopes) ||
      reserve_pow2(&g->reserved, g->num_reserved, 1, sizeof *g->reserved) ||
      wf__strmap_put(&g->names, full, &scope_marker))
    goto oom;
  g->reserved[g->num_reserved++] = full;
  g->scopes[g->num_scopes++] = copy;
  return WF_OK;

oom:
  wf__free(copy);
  wf__free(full);
  return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "out of memory pushing scope '%s'", name);
}

void wf_graph_pop_scope(wf_graph *g) {
  assert(g->num_scopes > 0 && "pop without push");
  if (g->num_scopes == 0)
    return;
  wf__free(g->scopes[--g->num_scopes]);
}

int wf_graph_push_device(wf_graph *g, const char *device, wf_status *st) {
  char *copy = wf__strdup(device ? device : "");
  if (!copy ||
      reserve_pow2(&g->devices, g->num_devices, 1, sizeof *g->devices)) {
    wf__free(copy);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory pushing device scope '%s'", device);
  }
  g->devices[g->num_devices++] = copy;
  return WF_OK;
}

void wf_graph_pop_device(wf_graph *g) {
  assert(g->num_devices > 0 && "pop without push");
  if (g->num_devices == 0)
    return;
  wf__free(g->devices[--g->num_devices]);
}

/* ---- reading ------------------------------------------------------------- */

int wf_graph_num_nodes(const wf_graph *g) { return g->num_nodes; }

wf_node *wf_graph_node(const wf_graph *g, int i) {
  assert(i >= 0 && i < g->num_nodes);
  return g->nodes[i];
}

wf_node *wf_graph_find_node(const wf_graph *g, const char *name) {
  void *v = wf__strmap_get(&g->names, name);
  return v == &scope_marker ? NULL : v;
}

const char *wf_node_name(const wf_node *n) { return n->name; }
const char *wf_node_op(const wf_node *n) { return n->op->def.name; }
const char *wf_node_device(const wf_node *n) { return n->device; }
int wf_node_id(const wf_node *n) { return n->id; }
int wf_node_num_inputs(const wf_node *n) { return n->num_inputs; }

wf_output wf_node_input(const wf_node *n, int i) {
  assert(i >= 0 && i < n->num_inputs);
  return n->inputs[i];
}

int wf_node_num_control_inputs(const wf_node *n) {
  return n->num_control_inputs;
}

wf_node *wf_node_control_input(const wf_node *n, int i) {
  assert(i >= 0 && i < n->num_control_inputs);
  return n->control_inputs[i];
}

int wf_node_num_outputs(const wf_node *n) { return n->num_outputs; }

wf_dtype wf_node_output_dtype(const wf_node *n, int i) {
  assert(i >= 0 && i < n->num_outputs);
  return n->output_dtypes[i];
}

void wf_node_output_shape(const wf_node *n, int i, wf_shape *out) {
  assert(i >= 0 && i < n->num_outputs);
  *out = n->output_shapes[i];
}

uint32_t wf_node_op_flags(const wf_node *n) { return n->op->def.flags; }
int wf_node_num_attrs(const wf_node *n) { return n->num_attrs; }

const char *wf_node_attr_name(const wf_node *n, int i, wf_attr_value *out) {
  assert(i >= 0 && i < n->num_attrs);
  if (out)
    *out = n->attrs[i].v;
  return n->attrs[i].name;
}

const wf_attr_value *wf__node_attr(const wf_node *n, const char *name) {
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i].v;
  return NULL;
}

int wf_node_get_attr(const wf_node *n, const char *name, wf_attr_value *out,
                     wf_status *st) {
  const wf_attr_value *v = wf__node_attr(n, name);
  if (!v)
    return wf_status_set(st, WF_NOT_FOUND,
                         "node '%s' (op '%s') has no attribute '%s'", n->name,
                         n->op->def.name, name);
  *out = *v;
  return WF_OK;
}

/* ---- control edges ------------------------------------------------------- */

/* 1 when target can be reached from start along data and control edges. */
static int reaches(const wf_graph *g, const wf_node *start,
                   const wf_node *target, int *oom) {
  unsigned char *seen = wf__calloc((size_t)g->num_nodes, 1);
  const wf_node **stack = wf__calloc((size_t)g->num_nodes, sizeof *stack);
  int top = 0, found = 0;

  *oom = !seen || !stack;
  if (*oom)
    goto done;
  stack[top++] = start;
  seen[start->id] = 1;
  while (top > 0 && !found) {
    const wf_node *n = stack[--top];
    if (n == target) {
      found = 1;
      break;
    }
    for (int pass = 0; pass < 2; pass++) {
      wf_node *const *next = pass ? n->control_consumers : n->data_consumers;
      int count = pass ? n->num_control_consumers : n->num_data_consumers;
      for (int i = 0; i < count; i++)
        if (!seen[next[i]->id]) {
          seen[next[i]->id] = 1;
          stack[top++] = next[i];
        }
    }
  }
done:
  wf__free(seen);
  wf__free(stack);
  return found;
}

int wf_graph_add_control_edge(wf_graph *g, wf_node *from, wf_node *to,
                              wf_status *st) {
  int oom;
  assert(g && from && to);
  if (from->graph != g || to->graph != g)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "control edge '%s' -> '%s': node '%s' belongs to "
                         "another graph",
                         from->name, to->name,
                         from->graph != g ? from->name : to->name);
  if (from == to)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "control edge '%s' -> '%s': a node cannot wait for "
                         "itself",
                         from->name, to->name);
  for (int i = 0; i < to->num_control_inputs; i++)
    if (to->control_inputs[i] == from)
      return WF_OK;
  if (reaches(g, to, from, &oom))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "control edge '%s' -> '%s' would create a cycle: "
                         "'%s' already depends on '%s'",
                         from->name, to->name, from->name, to->name);
  if (oom || edge_reserve(&to->control_inputs, to->num_control_inputs, 1) ||
      edge_reserve(&from->control_consumers, from->num_control_consumers, 1))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory adding control edge '%s' -> '%s'",
                         from->name, to->name);
  to->control_inputs[to->num_control_inputs++] = from;
  from->control_consumers[from->num_control_consumers++] = to;
  return WF_OK;
}

/* ---- node descriptions --------------------------------------------------- */

wf_node_desc *wf_node_desc_new(wf_graph *g, const char *op, const char *name) {
  wf_node_desc *d;
  assert(g && op);
  d = wf__calloc(1, sizeof *d);
  if (!d)
    return NULL; /* finish(NULL) reports it */
  d->g = g;
  d->op = wf__strdup(op);
  d->name = name ? wf__strdup(name) : NULL;
  d->scope = wf__strdup(current_scope(g));
  d->device = wf__strdup(g->num_devices ? g->devices[g->num_devices - 1] : "");
  if (!d->op || (name && !d->name) || !d->scope || !d->device)
    d->oom = 1;
  return d;
}

void wf_node_desc_free(wf_node_desc *d) {
  if (!d)
    return;
  for (int i = 0; i < d->num_attrs; i++) {
    wf__free(d->attrs[i].name);
    wf__attr_clear(&d->attrs[i].v);
  }
  wf__free(d->attrs);
  wf__free(d->op);
  wf__free(d->name);
  wf__free(d->scope);
  wf__free(d->device);
  wf__free(d->inputs);
  wf__free(d->groups);
  wf__free(d->controls);
  wf__free(d);
}

static void add_group(wf_node_desc *d, const wf_output *in, int n,
                      int is_list) {
  if (!d)
    return;
  assert(n >= 0 && (n == 0 || in));
  if (grow((void **)&d->inputs, &d->cap_inputs, d->num_inputs + n,
           sizeof *d->inputs) ||
      grow((void **)&d->groups, &d->cap_groups, d->num_groups + 1,
           sizeof *d->groups)) {
    d->oom = 1;
    return;
  }
  d->groups[d->num_groups].start = d->num_inputs;
  d->groups[d->num_groups].n = n;
  d->groups[d->num_groups].is_list = is_list;
  d->num_groups++;
  if (n > 0)
    memcpy(d->inputs + d->num_inputs, in, (size_t)n * sizeof *in);
  d->num_inputs += n;
}

void wf_node_desc_add_input(wf_node_desc *d, wf_output in) {
  add_group(d, &in, 1, 0);
}

void wf_node_desc_add_input_list(wf_node_desc *d, const wf_output *in, int n) {
  add_group(d, in, n, 1);
}

void wf_node_desc_add_control_input(wf_node_desc *d, wf_node *n) {
  if (!d)
    return;
  if (grow((void **)&d->controls, &d->cap_controls, d->num_controls + 1,
           sizeof *d->controls)) {
    d->oom = 1;
    return;
  }
  d->controls[d->num_controls++] = n;
}

void wf_node_desc_set_device(wf_node_desc *d, const char *device) {
  char *copy;
  if (!d)
    return;
  copy = wf__strdup(device ? device : "");
  if (!copy) {
    d->oom = 1;
    return;
  }
  wf__free(d->device);
  d->device = copy;
}

void wf_node_desc_set_attr(wf_node_desc *d, const char *name,
                           const wf_attr_value *v) {
  wf_attr_value copy;
  char *key;
  if (!d)
    return;
  assert(name && v);
  if (wf__attr_copy(&copy, v)) {
    d->oom = 1;
    return;
  }
  for (int i = 0; i < d->num_attrs; i++)
    if (strcmp(d->attrs[i].name, name) == 0) {
      wf__attr_clear(&d->attrs[i].v);
      d->attrs[i].v = copy;
      return;
    }
  key = wf__strdup(name);
  if (!key || grow((void **)&d->attrs, &d->cap_attrs, d->num_attrs + 1,
                   sizeof *d->attrs)) {
    wf__free(key);
    wf__attr_clear(&copy);
    d->oom = 1;
    return;
  }
  d->attrs[d->num_attrs].name = key;
  d->attrs[d->num_attrs].v = copy;
  d->num_attrs++;
}

void wf_node_desc_set_attr_int(wf_node_desc *d, const char *name, int64_t v) {
  wf_attr_value a = {.type = WF_ATTR_INT, .count = 1, .u.i = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_float(wf_node_desc *d, const char *name, double v) {
  wf_attr_value a = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_bool(wf_node_desc *d, const char *name, int v) {
  wf_attr_value a = {.type = WF_ATTR_BOOL, .count = 1, .u.b = v != 0};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_string(wf_node_desc *d, const char *name,
                                  const char *v) {
  wf_attr_value a = {.type = WF_ATTR_STRING, .count = 1, .u.s = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_dtype(wf_node_desc *d, const char *name,
                                 wf_dtype v) {
  wf_attr_value a = {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_shape(wf_node_desc *d, const char *name,
                                 const int64_t *dims, int rank) {
  wf_attr_value a = {.type = WF_ATTR_SHAPE, .count = 1};
  if (rank > WF_MAX_RANK || rank < WF_UNKNOWN_RANK) {
    /* Keep the bad rank so that finish can name it. */
    memset(&a.u.shape, 0, sizeof a.u.shape);
    a.u.shape.rank = rank;
  } else {
    wf_shape_init(&a.u.shape, dims, rank);
  }
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_tensor(wf_node_desc *d, const char *name,
                                  wf_tensor *t) {
  wf_attr_value a = {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_int_list(wf_node_desc *d, const char *name,
                                    const int64_t *v, int n) {
  wf_attr_value a = {
      .type = WF_ATTR_LIST | WF_ATTR_INT, .count = n, .u.ints = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_float_list(wf_node_desc *d, const char *name,
                                      const double *v, int n) {
  wf_attr_value a = {
      .type = WF_ATTR_LIST | WF_ATTR_FLOAT, .count = n, .u.floats = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_string_list(wf_node_desc *d, const char *name,
                                       const char *const *v, int n) {
  wf_attr_value a = {
      .type = WF_ATTR_LIST | WF_ATTR_STRING, .count = n, .u.strings = v};
  wf_node_desc_set_attr(d, name, &a);
}

void wf_node_desc_set_attr_dtype_list(wf_node_desc *d, const char *name,
                                      const wf_dtype *v, int n) {
  /* wf_dtype and the int32_t items of a list(dtype) may differ in size. */
  int32_t small[16], *items;
  wf_attr_value a = {.type = WF_ATTR_LIST | WF_ATTR_DTYPE, .count = n};
  if (!d)
    return;
  items = n <= 16 ? small : wf__alloc((size_t)n * sizeof *items, 16);
  if (!items) {
    d->oom = 1;
    return;
  }
  for (int i = 0; i < n; i++)
    items[i] = (int32_t)v[i];
  a.u.dtypes = items;
  wf_node_desc_set_attr(d, name, &a);
  if (items != small)
    wf__free(items);
}

/* ---- finishing a node: checking it against its op ------------------------ */

/* What finish knows about one attribute of the op while checking. */
typedef struct attr_slot {
  wf_attr_value v; /* borrowed from the description or the op, or inferred */
  int set;         /* 0: not yet known */
  int explicit_;   /* set by the caller, not inferred or defaulted */
  const char *from_arg; /* inferred from this input argument... */
  int from_item;        /* ...and this item of it (-1: not a list) */
  double *converted;    /* owned: an int list converted to floats */
} attr_slot;

/* Everything finish builds before the node exists. */
typedef struct pending {
  wf_node_desc *d;
  wf_graph *g;
  const wf__op *op;
  const char *name; /* full name: for messages, then the node's */
  char *name_owned;
  attr_slot *slots; /* op->num_attrs entries */
} pending;

static wf_code node_error(const pending *p, wf_status *st, wf_code code,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets st to "node 'n' (op 'X'): <message>". */
static wf_code node_error(const pending *p, wf_status *st, wf_code code,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__status_vset(st, code, fmt, ap);
  va_end(ap);
  wf_status_prefix(st, "node '%s' (op '%s')", p->name, p->op->def.name);
  return code;
}

static const char *dtype_str(int32_t d) {
  const char *s = wf_dtype_name((wf_dtype)d);
  return s ? s : "an invalid dtype";
}

/* "x, y" for the op's input argument names. */
static void arg_names(const wf__op *op, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < op->num_inputs && used < len; i++) {
    int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                     op->inputs[i].name);
    if (n < 0)
      break;
    used += (size_t)n;
  }
}

/* Checks the input groups against the op's input arguments and every input
 * and control input against the graph. */
static int check_inputs(const pending *p, wf_status *st) {
  const wf_node_desc *d = p->d;
  const wf__op *op = p->op;
  char names[256];

  if (d->num_groups != op->num_inputs) {
    arg_names(op, names, sizeof names);
    return node_error(p, st, WF_INVALID_ARGUMENT,
                      "expects %d input%s%s%s%s, got %d", op->num_inputs,
                      op->num_inputs == 1 ? "" : "s",
                      op->num_inputs ? " (" : "", names,
                      op->num_inputs ? ")" : "", d->num_groups);
  }
  for (int a = 0; a < op->num_inputs; a++) {
    const wf_arg_def *arg = &op->inputs[a];
    const input_group *grp = &d->groups[a];
    if (arg->number_attr && !grp->is_list)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "input '%s' is a list of tensors: add it with "
                        "wf_node_desc_add_input_list",
                        arg->name);
    if (!arg->number_attr && grp->is_list)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "input '%s' is one tensor, got a list of %d", arg->name,
                        grp->n);
    for (int k = 0; k < grp->n; k++) {
      wf_output in = d->inputs[grp->start + k];
      char item[32] = "";
      if (grp->is_list)
        snprintf(item, sizeof item, " item %d", k);
      if (!in.node)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "input '%s'%s has no node", arg->name, item);
      if (in.node->graph != p->g)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "input '%s'%s comes from node '%s' of another graph",
                          arg->name, item, in.node->name);
      if (in.index < 0 || in.index >= in.node->num_outputs)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "input '%s'%s is output %d of node '%s', which has "
                          "%d output%s",
                          arg->name, item, (int)in.index, in.node->name,
                          in.node->num_outputs,
                          in.node->num_outputs == 1 ? "" : "s");
    }
  }
  for (int i = 0; i < d->num_controls; i++) {
    const wf_node *c = d->controls[i];
    if (!c)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "control input %d has no node", i);
    if (c->graph != p->g)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "control input '%s' belongs to another graph", c->name);
  }
  return WF_OK;
}

/* Takes the caller's attributes: refuses unknown ones and type mismatches.
 * An int given for a float attribute (or an int list for a float list) is
 * converted: callers naturally write 1 for 1.0 and nothing is lost; the
 * reverse would drop a fraction and is refused. */
static int take_set_attrs(pending *p, wf_status *st) {
  const wf__op *op = p->op;
  for (int i = 0; i < p->d->num_attrs; i++) {
    const wf__attr *a = &p->d->attrs[i];
    int k = wf__op_attr_index(op, a->name);
    attr_slot *s;
    int want;

    if (k < 0) {
      char known[256];
      size_t used = 0;
      known[0] = '\0';
      for (int j = 0; j < op->num_attrs && used < sizeof known; j++) {
        int n = snprintf(known + used, sizeof known - used, "%s%s",
                         j ? ", " : "", op->attrs[j].name);
        if (n < 0)
          break;
        used += (size_t)n;
      }
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "unknown attribute '%s' (the op has %s%s)", a->name,
                        op->num_attrs ? "" : "none", known);
    }
    s = &p->slots[k];
    want = op->attrs[k].type;
    s->v = a->v;
    s->set = s->explicit_ = 1;
    if (a->v.type == want)
      continue;
    if (want == WF_ATTR_FLOAT && a->v.type == WF_ATTR_INT) {
      s->v.type = WF_ATTR_FLOAT;
      s->v.u.f = (double)a->v.u.i;
      continue;
    }
    if (want == (WF_ATTR_LIST | WF_ATTR_FLOAT) &&
        a->v.type == (WF_ATTR_LIST | WF_ATTR_INT)) {
      if (a->v.count > 0) {
        s->converted = wf__alloc((size_t)a->v.count * sizeof(double), 16);
        if (!s->converted)
          return node_error(p, st, WF_RESOURCE_EXHAUSTED,
                            "out of memory converting attribute '%s'", a->name);
        for (int64_t j = 0; j < a->v.count; j++)
          s->converted[j] = (double)a->v.u.ints[j];
      }
      s->v.type = want;
      s->v.u.floats = s->converted;
      continue;
    }
    return node_error(p, st, WF_INVALID_ARGUMENT,
                      "attribute '%s' is %s but the op defines it as %s",
                      a->name, wf__attr_type_name(a->v.type),
                      wf__attr_type_name(want));
  }
  return WF_OK;
}

/* Describes where an inferred or set attribute value came from. */
static void slot_source(const attr_slot *s, char *buf, size_t len) {
  if (s->explicit_)
    snprintf(buf, len, "set on the node");
  else if (s->from_item >= 0)
    snprintf(buf, len, "from input '%s' item %d", s->from_arg, s->from_item);
  else
    snprintf(buf, len, "from input '%s'", s->from_arg);
}

/* Infers type and number attributes from the inputs and checks the inputs'
 * dtypes against fixed types and against attributes already known. */
static int infer_from_inputs(pending *p, wf_status *st) {
  const wf__op *op = p->op;
  const wf_node_desc *d = p->d;
  char src[160];

  for (int a = 0; a < op->num_inputs; a++) {
    const wf_arg_def *arg = &op->inputs[a];
    const input_group *grp = &d->groups[a];

    if (arg->number_attr) {
      attr_slot *s = &p->slots[wf__op_attr_index(op, arg->number_attr)];
      if (s->set && s->v.u.i != grp->n) {
        slot_source(s, src, sizeof src);
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "input '%s' has %d tensor%s but '%s' is %lld %s",
                          arg->name, grp->n, grp->n == 1 ? "" : "s",
                          arg->number_attr, (long long)s->v.u.i, src);
      }
      if (!s->set) {
        s->v.type = WF_ATTR_INT;
        s->v.count = 1;
        s->v.u.i = grp->n;
        s->set = 1;
        s->from_arg = arg->name;
        s->from_item = -1;
      }
    }
    for (int k = 0; k < grp->n; k++) {
      wf_output in = d->inputs[grp->start + k];
      int32_t dt = in.node->output_dtypes[in.index];
      char item[32] = "";
      if (grp->is_list)
        snprintf(item, sizeof item, " item %d", k);
      if (!arg->type_attr) {
        if (dt != arg->dtype)
          return node_error(p, st, WF_INVALID_ARGUMENT,
                            "input '%s'%s is %s but must be %s", arg->name,
                            item, dtype_str(dt), dtype_str(arg->dtype));
        continue;
      }
      {
        attr_slot *s = &p->slots[wf__op_attr_index(op, arg->type_attr)];
        if (!s->set) {
          s->v.type = WF_ATTR_DTYPE;
          s->v.count = 1;
          s->v.u.dtype = dt;
          s->set = 1;
          s->from_arg = arg->name;
          s->from_item = grp->is_list ? k : -1;
        } else if (s->v.u.dtype != dt) {
          slot_source(s, src, sizeof src);
          return node_error(p, st, WF_INVALID_ARGUMENT,
                            "input '%s'%s is %s but '%s' is %s %s", arg->name,
                            item, dtype_str(dt), arg->type_attr,
                            dtype_str(s->v.u.dtype), src);
        }
      }
    }
  }
  return WF_OK;
}

/* Applies defaults, refuses missing attributes and checks dtype sets and
 * minimums. */
static int complete_attrs(pending *p, wf_status *st) {
  const wf__op *op = p->op;
  char buf[128];

  for (int k = 0; k < op->num_attrs; k++) {
    const wf_attr_def *def = &op->attrs[k];
    attr_slot *s = &p->slots[k];
    int base = WF_ATTR_BASE(def->type);

    if (!s->set) {
      if (!def->has_default)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "attribute '%s' (%s) is not set and has no default",
                          def->name, wf__attr_type_name(def->type));
      s->v = def->default_value;
      s->set = 1;
    }
    if (WF_ATTR_IS_LIST(def->type)) {
      if (s->v.count < 0)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "attribute '%s' is a list of %lld items", def->name,
                          (long long)s->v.count);
      if (def->has_minimum && s->v.count < def->minimum)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "attribute '%s' has %lld item%s, fewer than its "
                          "minimum %lld",
                          def->name, (long long)s->v.count,
                          s->v.count == 1 ? "" : "s", (long long)def->minimum);
    } else if (base == WF_ATTR_INT && def->has_minimum &&
               s->v.u.i < def->minimum) {
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "attribute '%s' is %lld, below its minimum %lld",
                        def->name, (long long)s->v.u.i,
                        (long long)def->minimum);
    }
    if (base == WF_ATTR_DTYPE) {
      int64_t n = WF_ATTR_IS_LIST(def->type) ? s->v.count : 1;
      for (int64_t j = 0; j < n; j++) {
        int32_t dt =
            WF_ATTR_IS_LIST(def->type) ? s->v.u.dtypes[j] : s->v.u.dtype;
        if (!wf_dtype_name((wf_dtype)dt) || dt == WF_DTYPE_INVALID)
          return node_error(p, st, WF_INVALID_ARGUMENT,
                            "attribute '%s' holds %d, which is not a dtype",
                            def->name, (int)dt);
        if (def->allowed_dtypes && !(def->allowed_dtypes & WF_DTYPE_BIT(dt))) {
          char src[160] = "by default";
          size_t used = 0;
          buf[0] = '\0';
          for (int t = 1; t < WF__DTYPE_END && used < sizeof buf; t++)
            if (def->allowed_dtypes & WF_DTYPE_BIT(t)) {
              int m = snprintf(buf + used, sizeof buf - used, "%s%s",
                               used ? ", " : "", wf_dtype_name((wf_dtype)t));
              if (m < 0)
                break;
              used += (size_t)m;
            }
          if (s->explicit_ || s->from_arg)
            slot_source(s, src, sizeof src);
          return node_error(p, st, WF_INVALID_ARGUMENT,
                            "attribute '%s' is %s (%s), not one of the "
                            "allowed dtypes (%s)",
                            def->name, wf_dtype_name((wf_dtype)dt), src, buf);
        }
      }
    }
    if (base == WF_ATTR_SHAPE) {
      int64_t n = WF_ATTR_IS_LIST(def->type) ? s->v.count : 1;
      for (int64_t j = 0; j < n; j++) {
        const wf_shape *sh =
            WF_ATTR_IS_LIST(def->type) ? &s->v.u.shapes[j] : &s->v.u.shape;
        if (sh->rank < WF_UNKNOWN_RANK || sh->rank > WF_MAX_RANK)
          return node_error(p, st, WF_INVALID_ARGUMENT,
                            "attribute '%s' has rank %d; ranks go up to %d",
                            def->name, (int)sh->rank, WF_MAX_RANK);
      }
    }
    if (base == WF_ATTR_TENSOR && !WF_ATTR_IS_LIST(def->type) && !s->v.u.tensor)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "attribute '%s' is a NULL tensor", def->name);
  }
  return WF_OK;
}

/* The list(dtype) attribute that types output arg item by item (the
 * registry allows one only for outputs without number_attr), or NULL. */
static const wf_attr_value *output_type_list(const pending *p,
                                             const wf_arg_def *arg) {
  const wf_attr_value *v;
  if (!arg->type_attr)
    return NULL;
  v = &p->slots[wf__op_attr_index(p->op, arg->type_attr)].v;
  return v->type == (WF_ATTR_LIST | WF_ATTR_DTYPE) ? v : NULL;
}

/* Number of outputs and their dtypes, from the output arguments. */
static int make_outputs(const pending *p, wf_node *n, wf_status *st) {
  const wf__op *op = p->op;
  int count = 0;

  for (int a = 0; a < op->num_outputs; a++) {
    const wf_arg_def *arg = &op->outputs[a];
    const wf_attr_value *tl = output_type_list(p, arg);
    int64_t times = tl ? tl->count : 1;
    if (tl && times > MAX_LIST_OUTPUTS)
      return node_error(p, st, WF_INVALID_ARGUMENT,
                        "output '%s' would have %lld tensors (attribute "
                        "'%s')",
                        arg->name, (long long)times, arg->type_attr);
    if (arg->number_attr) {
      times = p->slots[wf__op_attr_index(op, arg->number_attr)].v.u.i;
      if (times < 0 || times > MAX_LIST_OUTPUTS)
        return node_error(p, st, WF_INVALID_ARGUMENT,
                          "output '%s' would have %lld tensors (attribute "
                          "'%s')",
                          arg->name, (long long)times, arg->number_attr);
    }
    count += (int)times;
  }
  n->num_outputs = count;
  if (count > 0) {
    n->output_dtypes = wf__calloc((size_t)count, sizeof *n->output_dtypes);
    n->output_shapes = wf__calloc((size_t)count, sizeof *n->output_shapes);
    if (!n->output_dtypes || !n->output_shapes)
      return node_error(p, st, WF_RESOURCE_EXHAUSTED,
                        "out of memory creating the node");
  }
  count = 0;
  for (int a = 0; a < op->num_outputs; a++) {
    const wf_arg_def *arg = &op->outputs[a];
    const wf_attr_value *tl = output_type_list(p, arg);
    int64_t times =
        tl ? tl->count
        : arg->number_attr
            ? p->slots[wf__op_attr_index(op, arg->number_attr)].v.u.i
            : 1;
    wf_dtype dt =
        tl ? WF_DTYPE_INVALID
        : arg->type_attr
            ? (wf_dtype)p->slots[wf__op_attr_index(op, arg->type_attr)]
                  .v.u.dtype
            : (wf_dtype)arg->dtype;
    for (int64_t j = 0; j < times; j++) {
      n->output_dtypes[count] = tl ? (wf_dtype)tl->u.dtypes[j] : dt;
      wf_shape_unknown(&n->output_shapes[count]);
      count++;
    }
  }
  return WF_OK;
}

/* Runs n's shape function (if any) with ctx's inputs into out. Its errors
 * name the node and op when named is set. */
static int run_shape_fn(const wf_node *n, const wf_shape *input_shapes,
                        const wf_tensor *const *input_values, wf_shape *out,
                        int named, wf_status *st) {
  wf_shape_ctx ctx;
  int rc;

  for (int i = 0; i < n->num_outputs; i++)
    wf_shape_unknown(&out[i]);
  if (!n->op->def.shape_fn)
    return WF_OK;
  ctx.node = n;
  ctx.input_shapes = input_shapes;
  ctx.input_values = input_values;
  ctx.outputs = out;
  ctx.bad_output = -1;
  ctx.bad_shape = 0;
  wf_status_reset(st);
  rc = n->op->def.shape_fn(&ctx, st);
  if (rc != 0) {
    if (wf_status_code(st) == WF_OK)
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "shape inference failed (code %d) without a message", rc);
    if (named)
      wf_status_prefix(st, "node '%s' (op '%s')", n->name, n->op->def.name);
    return wf_status_code(st);
  }
  wf_status_reset(st);
  if (ctx.bad_output >= 0)
    return wf_status_set(st, WF_INTERNAL,
                         "node '%s' (op '%s'): the op's shape function set "
                         "output %d, but the node has %d output%s",
                         n->name, n->op->def.name, (int)ctx.bad_output,
                         n->num_outputs, n->num_outputs == 1 ? "" : "s");
  if (ctx.bad_shape)
    return wf_status_set(st, WF_INTERNAL,
                         "node '%s' (op '%s'): the op's shape function set a "
                         "malformed shape",
                         n->name, n->op->def.name);
  return WF_OK;
}

/* Makes the node from the checked description (not yet in the graph). */
static wf_node *build_node(pending *p, wf_status *st) {
  wf_node_desc *d = p->d;
  const wf__op *op = p->op;
  wf_node *n = wf__calloc(1, sizeof *n);

  if (!n)
    goto oom;
  n->graph = p->g;
  n->id = p->g->num_nodes;
  n->op = op;
  n->name = p->name_owned;
  p->name_owned = NULL;
  n->device = d->device;
  d->device = NULL;
  n->inputs = d->inputs; /* the groups are already flat in argument order */
  n->num_inputs = d->num_inputs;
  d->inputs = NULL;
  d->num_inputs = 0;
  /* Control inputs without duplicates, in the order given. */
  if (d->num_controls > 0) {
    n->control_inputs =
        wf__calloc((size_t)pow2_cap(d->num_controls), sizeof(wf_node *));
    if (!n->control_inputs)
      goto oom;
    for (int i = 0; i < d->num_controls; i++) {
      int dup = 0;
      for (int j = 0; j < n->num_control_inputs && !dup; j++)
        dup = n->control_inputs[j] == d->controls[i];
      if (!dup)
        n->control_inputs[n->num_control_inputs++] = d->controls[i];
    }
  }
  if (op->num_attrs > 0) {
    n->attrs = wf__calloc((size_t)op->num_attrs, sizeof *n->attrs);
    if (!n->attrs)
      goto oom;
  }
  for (int k = 0; k < op->num_attrs; k++) {
    wf__attr *a = &n->attrs[k];
    a->name = wf__strdup(op->attrs[k].name);
    if (!a->name || wf__attr_copy(&a->v, &p->slots[k].v)) {
      wf__free(a->name);
      a->name = NULL;
      goto oom;
    }
    n->num_attrs++;
  }
  /* A tensor attribute (a Const's value) is never written while the node
   * holds it: with the node's reference nobody holds the only one
   * (weft/tensor.h), and the core writes no attribute. So its bytes get a
   * version (the host table's tensor_version), which kernels that keep
   * something made from them (oneDNN's reordered weights, the Winograd
   * loops' transformed filters) check instead of comparing the bytes on
   * every call, the same while any node holds it (a compiled copy of the
   * graph too); node_free takes it back after the last. Buffers that are
   * not the core's (wrapped: the caller's, or shared with a parent) stay
   * unversioned. */
  for (int k = 0; k < n->num_attrs; k++) {
    wf_tensor *t = owned_attr_tensor(&n->attrs[k].v);
    if (t)
      wf__tensor_attr_hold(t);
  }
  if (make_outputs(p, n, st) ||
      run_shape_fn(n, NULL, NULL, n->output_shapes, 1, st))
    goto fail;
  return n;

oom:
  node_error(p, st, WF_RESOURCE_EXHAUSTED, "out of memory creating the node");
fail:
  node_free(n);
  return NULL;
}

/* Adds n to the graph and its edges to the producers; nothing is changed
 * when this fails. */
static int commit_node(wf_graph *g, wf_node *n, const pending *p,
                       wf_status *st) {
  /* Room first: reserving only grows capacity, so a failure here leaves
   * the graph as it was. */
  for (int i = 0; i < n->num_inputs; i++) {
    wf_node *src = n->inputs[i].node;
    int extra = 0;
    for (int j = 0; j <= i; j++)
      extra += n->inputs[j].node == src;
    if (edge_reserve(&src->data_consumers, src->num_data_consumers, extra))
      goto oom;
  }
  for (int i = 0; i < n->num_control_inputs; i++) {
    wf_node *c = n->control_inputs[i];
    if (edge_reserve(&c->control_consumers, c->num_control_consumers, 1))
      goto oom;
  }
  if (grow((void **)&g->nodes, &g->cap_nodes, g->num_nodes + 1,
           sizeof *g->nodes) ||
      wf__strmap_put(&g->names, n->name, n))
    goto oom;

  g->nodes[g->num_nodes++] = n;
  for (int i = 0; i < n->num_inputs; i++) {
    wf_node *src = n->inputs[i].node;
    src->data_consumers[src->num_data_consumers++] = n;
  }
  for (int i = 0; i < n->num_control_inputs; i++) {
    wf_node *c = n->control_inputs[i];
    c->control_consumers[c->num_control_consumers++] = n;
  }
  return WF_OK;

oom:
  return node_error(p, st, WF_RESOURCE_EXHAUSTED,
                    "out of memory adding the node to the graph");
}

/* Chooses and checks the node's full name. */
static int choose_name(pending *p, wf_status *st) {
  const wf_node_desc *d = p->d;
  if (!d->name) {
    p->name_owned = make_unique(p->g, d->scope, d->op);
    if (!p->name_owned)
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "out of memory naming a node of op '%s'", d->op);
    p->name = p->name_owned;
    return WF_OK;
  }
  p->name_owned =
      wf__asprintf("%s%s%s", d->scope, *d->scope ? "/" : "", d->name);
  if (!p->name_owned)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory naming node '%s'", d->name);
  p->name = p->name_owned;
  return WF_OK;
}

wf_node *wf_node_desc_finish(wf_node_desc *d, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  pending p;
  wf_node *n = NULL;

  if (!st)
    st = &local; /* shape functions and prefixes need a real status */
  memset(&p, 0, sizeof p);
  if (!d) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory describing a node");
    goto done;
  }
  p.d = d;
  p.g = d->g;
  if (d->oom) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "node '%s' (op '%s'): out of memory while describing it",
                  d->name ? d->name : "(unnamed)", d->op ? d->op : "?");
    goto done;
  }
  if (choose_name(&p, st))
    goto done;
  p.op = p.g->find_op(p.g->ops, d->op);
  if (!p.op) {
    wf_status_set(st, WF_NOT_FOUND,
                  "node '%s': op '%s' is not registered by any loaded plugin",
                  p.name, d->op);
    goto done;
  }
  if (d->name && !valid_name(d->name)) {
    node_error(&p, st, WF_INVALID_ARGUMENT,
               "invalid name: use letters, digits, '_', '.' and '-' ('/' "
               "comes only from scopes)");
    goto done;
  }
  if (name_taken(p.g, p.name)) {
    node_error(&p, st, WF_ALREADY_EXISTS, "the name is already used by %s",
               wf_graph_find_node(p.g, p.name) ? "another node" : "a scope");
    goto done;
  }
  if (check_inputs(&p, st))
    goto done;
  if (p.op->num_attrs > 0) {
    p.slots = wf__calloc((size_t)p.op->num_attrs, sizeof *p.slots);
    if (!p.slots) {
      node_error(&p, st, WF_RESOURCE_EXHAUSTED,
                 "out of memory checking the node");
      goto done;
    }
  }
  if (take_set_attrs(&p, st) || infer_from_inputs(&p, st) ||
      complete_attrs(&p, st))
    goto done;
  n = build_node(&p, st);
  if (!n)
    goto done;
  if (commit_node(p.g, n, &p, st)) {
    node_free(n);
    n = NULL;
    goto done;
  }
  wf_status_reset(st);

done:
  if (p.slots)
    for (int k = 0; k < p.op->num_attrs; k++)
      wf__free(p.slots[k].converted);
  wf__free(p.slots);
  wf__free(p.name_owned);
  wf_node_desc_free(d);
  wf_status_reset(&local);
  return n;
}

/* ---- shape contexts ------------------------------------------------------ */

int wf__node_infer_shapes(const wf_node *n, const wf_shape *input_shapes,
                          wf_shape *out, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  int rc = run_shape_fn(n, input_shapes, NULL, out, 1, st ? st : &local);
  if (!st && rc)
    wf_status_reset(&local);
  return rc;
}

int wf__node_infer_shapes_values(const wf_node *n,
                                 const wf_shape *input_shapes,
                                 const wf_tensor *const *input_values,
                                 wf_shape *out, wf_status *st) {
  wf_status local = {WF_OK, NULL};
  int rc =
      run_shape_fn(n, input_shapes, input_values, out, 0, st ? st : &local);
  if (!st && rc)
    wf_status_reset(&local);
  return rc;
}

int32_t wf__shape_num_inputs(const wf_shape_ctx *ctx) {
  return ctx->node->num_inputs;
}

int32_t wf__shape_num_outputs(const wf_shape_ctx *ctx) {
  return ctx->node->num_outputs;
}

int wf__shape_input(const wf_shape_ctx *ctx, int32_t i, int32_t *dtype,
                    wf_shape *shape) {
  const wf_node *n = ctx->node;
  wf_output in;
  if (i < 0 || i >= n->num_inputs)
    return -1;
  in = n->inputs[i];
  if (dtype)
    *dtype = in.node->output_dtypes[in.index];
  if (shape)
    *shape = ctx->input_shapes ? ctx->input_shapes[i]
                               : in.node->output_shapes[in.index];
  return 0;
}

const wf_tensor *wf__shape_input_value(const wf_shape_ctx *ctx, int32_t i) {
  const wf_node *src;
  const wf_attr_value *v;
  if (i < 0 || i >= ctx->node->num_inputs)
    return NULL;
  if (ctx->input_values && ctx->input_values[i])
    return ctx->input_values[i];
  src = ctx->node->inputs[i].node;
  if (!(src->op->def.flags & WF_OP_CONSTANT))
    return NULL;
  v = wf__node_attr(src, "value");
  return v && v->type == WF_ATTR_TENSOR ? v->u.tensor : NULL;
}

int wf__shape_attr(const wf_shape_ctx *ctx, const char *name,
                   wf_attr_value *out) {
  const wf_attr_value *v = wf__node_attr(ctx->node, name);
  if (!v)
    return -1;
  if (out)
    *out = *v;
  return 0;
}

void wf__shape_set_output(wf_shape_ctx *ctx, int32_t i, const wf_shape *s) {
  wf_shape *o;
  if (i < 0 || i >= ctx->node->num_outputs) {
    if (ctx->bad_output < 0)
      ctx->bad_output = i;
    return;
  }
  if (!s || s->rank < WF_UNKNOWN_RANK || s->rank > WF_MAX_RANK) {
    ctx->bad_shape = 1;
    return;
  }
  o = &ctx->outputs[i];
  wf_shape_unknown(o);
  o->rank = s->rank;
  for (int k = 0; k < s->rank; k++)
    o->dims[k] = s->dims[k] < 0 ? WF_UNKNOWN_DIM : s->dims[k];
}

const char *wf__shape_node_name(const wf_shape_ctx *ctx) {
  return ctx->node->name;
}

/* ---- for the core's graph rewriting (core/compile/optimize.c and the passes) ---- */

wf_node_desc *wf__node_desc_new_full(wf_graph *g, const char *op,
                                     const char *full_name) {
  const char *slash = strrchr(full_name, '/');
  wf_node_desc *d = wf_node_desc_new(g, op, slash ? slash + 1 : full_name);
  if (!d || !slash)
    return d;
  wf__free(d->scope);
  d->scope = wf__strndup(full_name, (size_t)(slash - full_name));
  if (!d->scope)
    d->oom = 1;
  return d;
}

/* Removes one occurrence of c from n's data consumers. */
static void drop_consumer(wf_node *n, const wf_node *c) {
  for (int k = 0; k < n->num_data_consumers; k++) {
    if (n->data_consumers[k] == c) {
      n->data_consumers[k] = n->data_consumers[--n->num_data_consumers];
      return;
    }
  }
}

int wf__node_set_input(wf_node *n, int i, wf_output src, wf_status *st) {
  wf_output old = n->inputs[i];
  if (old.node == src.node && old.index == src.index)
    return 0;
  assert(src.node && src.node->graph == n->graph);
  assert(src.node->output_dtypes[src.index] == old.node->output_dtypes[old.index]);
  if (edge_reserve(&src.node->data_consumers, src.node->num_data_consumers, 1))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "rewriting node '%s': out of memory", n->name);
  drop_consumer(old.node, n);
  src.node->data_consumers[src.node->num_data_consumers++] = n;
  n->inputs[i] = src;
  return 0;
}

int wf__graph_redirect(wf_graph *g, wf_output from, wf_output to,
                       wf_status *st) {
  (void)g;
  /* Copy the consumer list first: rewiring changes it. */
  int n = from.node->num_data_consumers;
  wf_node **cons = wf__calloc((size_t)(n > 0 ? n : 1), sizeof *cons);
  if (!cons)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "rewriting the graph: out of memory");
  if (n > 0)
    memcpy(cons, from.node->data_consumers, (size_t)n * sizeof *cons);
  int rc = 0;
  for (int k = 0; k < n && !rc; k++) {
    wf_node *c = cons[k];
    /* A consumer appears once per consuming slot: only rewire a slot that
     * still reads `from`. */
    for (int i = 0; i < c->num_inputs; i++) {
      if (c->inputs[i].node == from.node && c->inputs[i].index == from.index) {
        rc = wf__node_set_input(c, i, to, st);
        break;
      }
    }
  }
  wf__free(cons);
  return rc;
}

void wf__graph_remove_control_edge(wf_node *from, wf_node *to) {
  for (int i = 0; i < to->num_control_inputs; i++) {
    if (to->control_inputs[i] == from) {
      memmove(&to->control_inputs[i], &to->control_inputs[i + 1],
              (size_t)(to->num_control_inputs - i - 1) *
                  sizeof *to->control_inputs);
      to->num_control_inputs--;
      break;
    }
  }
  for (int i = 0; i < from->num_control_consumers; i++) {
    if (from->control_consumers[i] == to) {
      from->control_consumers[i] =
          from->control_consumers[--from->num_control_consumers];
      break;
    }
  }
}

wf_node_desc *wf__node_desc_flat(wf_graph *g, const char *op,
                                 const char *name, const wf_output *inputs,
                                 int ninputs, const wf_attr_item *attrs,
                                 int nattrs) {
  const wf__op *def = g->find_op(g->ops, op);
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  for (int i = 0; i < nattrs; i++)
    wf_node_desc_set_attr(d, attrs[i].name, &attrs[i].value);
  if (!def) /* finish reports the unknown op */
    return d;
  int fixed = 0, lists = 0;
  for (int a = 0; a < def->num_inputs; a++) {
    if (def->inputs[a].number_attr)
      lists++;
    else
      fixed++;
  }
  int at = 0;
  for (int a = 0; a < def->num_inputs && at <= ninputs; a++) {
    const wf_arg_def *arg = &def->inputs[a];
    if (!arg->number_attr) {
      if (at < ninputs)
        wf_node_desc_add_input(d, inputs[at]);
      at++;
      continue;
    }
    /* A list takes its number attribute's count when given; a lone list
     * takes whatever the fixed arguments leave. */
    int n = -1;
    for (int k = 0; k < nattrs; k++)
      if (strcmp(attrs[k].name, arg->number_attr) == 0 &&
          attrs[k].value.type == WF_ATTR_INT)
        n = (int)attrs[k].value.u.i;
    if (n < 0)
      n = lists == 1 ? ninputs - fixed : 0;
    if (n < 0 || at + n > ninputs)
      n = ninputs - at > 0 ? ninputs - at : 0;
    wf_node_desc_add_input_list(d, inputs + at, n);
    at += n;
  }
  /* Extra inputs make finish report the arity mismatch. */
  for (; at < ninputs; at++)
    wf_node_desc_add_input(d, inputs[at]);
  return d;
}

wf_node *wf__node_add_flat(wf_graph *g, const char *op, const char *name,
                           const wf_output *inputs, int ninputs,
                           const wf_attr_item *attrs, int nattrs,
                           wf_status *st) {
  return wf_node_desc_finish(
      wf__node_desc_flat(g, op, name, inputs, ninputs, attrs, nattrs), st);
}

wf_node *wf_graph_add_op(wf_graph *g, const char *op, const char *name,
                         const wf_output *inputs, int ninputs,
                         const wf_attr_item *attrs, int nattrs,
                         wf_status *st) {
  assert(g && op && (inputs || ninputs == 0) && (attrs || nattrs == 0));
  return wf__node_add_flat(g, op, name, inputs, ninputs, attrs, nattrs, st);
}
