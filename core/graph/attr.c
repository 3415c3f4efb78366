/* core/graph/attr.c — deep copies, equality, hashing and text of attribute values
 * (weft/types.h's wf_attr_value).
 *
 * Validation against an op's attribute definitions lives in the graph and
 * the registry, not here. */
#include <config.h>

#include "graph/attr.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <weft/tensor.h>

#include "base/alloc.h"

/* Element size of list items stored as plain arrays; 0 for strings and
 * tensors, which need per-item work. */
static size_t item_size(int base) {
  switch (base) {
  case WF_ATTR_INT:
    return sizeof(int64_t);
  case WF_ATTR_FLOAT:
    return sizeof(double);
  case WF_ATTR_BOOL:
  case WF_ATTR_DTYPE:
    return sizeof(int32_t);
  case WF_ATTR_SHAPE:
    return sizeof(wf_shape);
  default:
    return 0;
  }
}

static int known_type(int type) {
  int base = WF_ATTR_BASE(type);
  if (type & ~(WF_ATTR_LIST | 0xff))
    return 0;
  return base >= WF_ATTR_INT && base <= WF_ATTR_TENSOR;
}

int wf__attr_copy(wf_attr_value *dst, const wf_attr_value *src) {
  int base = WF_ATTR_BASE(src->type);
  wf_attr_value v;

  memset(&v, 0, sizeof v);
  v.type = src->type;
  if (!known_type(src->type)) { /* WF_ATTR_NONE and garbage alike */
    memset(dst, 0, sizeof *dst);
    return 0;
  }
  if (!WF_ATTR_IS_LIST(src->type)) {
    v.count = 1;
    v.u = src->u;
    if (base == WF_ATTR_STRING) {
      v.u.s = wf__strdup(src->u.s ? src->u.s : "");
      if (!v.u.s)
        return -1;
    } else if (base == WF_ATTR_TENSOR && src->u.tensor) {
      v.u.tensor = wf_tensor_retain((wf_tensor *)src->u.tensor);
    }
    *dst = v;
    return 0;
  }

  v.count = src->count > 0 ? src->count : 0;
  if (v.count == 0) {
    *dst = v;
    return 0;
  }
  if (item_size(base)) {
    void *items = wf__alloc((size_t)v.count * item_size(base), 16);
    if (!items)
      return -1;
    memcpy(items, src->u.ints, (size_t)v.count * item_size(base));
    v.u.ints = items; /* any member: they share the pointer */
  } else if (base == WF_ATTR_STRING) {
    char **items = wf__calloc((size_t)v.count, sizeof *items);
    if (!items)
      return -1;
    for (int64_t i = 0; i < v.count; i++) {
      const char *s = src->u.strings[i];
      items[i] = wf__strdup(s ? s : "");
      if (!items[i]) {
        for (int64_t j = 0; j < i; j++)
          wf__free(items[j]);
        wf__free(items);
        return -1;
      }
    }
    v.u.strings = (const char *const *)items;
  } else { /* tensors */
    wf_tensor **items = wf__calloc((size_t)v.count, sizeof *items);
    if (!items)
      return -1;
    for (int64_t i = 0; i < v.count; i++)
      if (src->u.tensors[i])
        items[i] = wf_tensor_retain((wf_tensor *)src->u.tensors[i]);
    v.u.tensors = (const wf_tensor *const *)items;
  }
  *dst = v;
  return 0;
}

void wf__attr_clear(wf_attr_value *v) {
  int base = WF_ATTR_BASE(v->type);
  if (!WF_ATTR_IS_LIST(v->type)) {
    if (base == WF_ATTR_STRING)
      wf__free((char *)v->u.s);
    else if (base == WF_ATTR_TENSOR)
      wf_tensor_release((wf_tensor *)v->u.tensor);
  } else if (v->count > 0) {
    if (base == WF_ATTR_STRING) {
      for (int64_t i = 0; i < v->count; i++)
        wf__free((char *)v->u.strings[i]);
    } else if (base == WF_ATTR_TENSOR) {
      for (int64_t i = 0; i < v->count; i++)
        wf_tensor_release((wf_tensor *)v->u.tensors[i]);
    }
    wf__free((void *)v->u.ints);
  }
  memset(v, 0, sizeof *v);
}

static int float_equal(double a, double b) {
  return a == b || (isnan(a) && isnan(b));
}

static int shape_same(const wf_shape *a, const wf_shape *b) {
  return wf_shape_equal(a, b);
}

static int tensor_equal(const wf_tensor *a, const wf_tensor *b) {
  wf_shape sa, sb;
  if (a == b)
    return 1;
  if (!a || !b || wf_tensor_dtype(a) != wf_tensor_dtype(b))
    return 0;
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  if (!wf_shape_equal(&sa, &sb))
    return 0;
  return memcmp(wf_tensor_data(a), wf_tensor_data(b), wf_tensor_nbytes(a)) == 0;
}

static int item_equal(int base, const wf_attr_value *a, const wf_attr_value *b,
                      int64_t i) {
  switch (base) {
  case WF_ATTR_INT:
    return a->u.ints[i] == b->u.ints[i];
  case WF_ATTR_FLOAT:
    return float_equal(a->u.floats[i], b->u.floats[i]);
  case WF_ATTR_BOOL:
    return !a->u.bools[i] == !b->u.bools[i];
  case WF_ATTR_STRING:
    return strcmp(a->u.strings[i] ? a->u.strings[i] : "",
                  b->u.strings[i] ? b->u.strings[i] : "") == 0;
  case WF_ATTR_DTYPE:
    return a->u.dtypes[i] == b->u.dtypes[i];
  case WF_ATTR_SHAPE:
    return shape_same(&a->u.shapes[i], &b->u.shapes[i]);
  case WF_ATTR_TENSOR:
    return tensor_equal(a->u.tensors[i], b->u.tensors[i]);
  default:
    return 0;
  }
}

int wf__attr_equal(const wf_attr_value *a, const wf_attr_value *b) {
  int base = WF_ATTR_BASE(a->type);
  if (a->type != b->type)
    return 0;
  if (WF_ATTR_IS_LIST(a->type)) {
    int64_t na = a->count > 0 ? a->count : 0, nb = b->count > 0 ? b->count : 0;
    if (na != nb)
      return 0;
    for (int64_t i = 0; i < na; i++)
      if (!item_equal(base, a, b, i))
        return 0;
    return 1;
  }
  switch (base) {
  case WF_ATTR_NONE:
    return 1;
  case WF_ATTR_INT:
    return a->u.i == b->u.i;
  case WF_ATTR_FLOAT:
    return float_equal(a->u.f, b->u.f);
  case WF_ATTR_BOOL:
    return !a->u.b == !b->u.b;
  case WF_ATTR_STRING:
    return strcmp(a->u.s ? a->u.s : "", b->u.s ? b->u.s : "") == 0;
  case WF_ATTR_DTYPE:
    return a->u.dtype == b->u.dtype;
  case WF_ATTR_SHAPE:
    return shape_same(&a->u.shape, &b->u.shape);
  case WF_ATTR_TENSOR:
    return tensor_equal(a->u.tensor, b->u.tensor);
  default:
    return 0;
  }
}

const char *wf__attr_type_name(int type) {
  static const char *const scalar[] = {"none",   "int",   "float", "bool",
                                       "string", "dtype", "shape", "tensor"};
  static const char *const list[] = {
      "list(none)",   "list(int)",   "list(float)", "list(bool)",
      "list(string)", "list(dtype)", "list(shape)", "list(tensor)"};
  int base = WF_ATTR_BASE(type);
  if (type < 0 || base < 0 || base > WF_ATTR_TENSOR ||
      (type & ~(WF_ATTR_LIST | 0xff)))
    return "unknown";
  return WF_ATTR_IS_LIST(type) ? list[base] : scalar[base];
}

/* ---- hashing ------------------------------------------------------------- */

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= UINT64_C(1099511628211);
  }
  return h;
}

static uint64_t mix_u64(uint64_t h, uint64_t v) { return mix(h, &v, sizeof v); }

static uint64_t mix_float(uint64_t h, double f) {
  uint64_t bits;
  if (isnan(f))
    f = NAN; /* every NaN equals every other in wf__attr_equal */
  if (f == 0)
    f = 0; /* -0.0 == 0.0 */
  memcpy(&bits, &f, sizeof bits);
  return mix_u64(h, bits);
}

static uint64_t mix_str(uint64_t h, const char *s) {
  s = s ? s : "";
  return mix(h, s, strlen(s) + 1);
}

static uint64_t mix_shape(uint64_t h, const wf_shape *s) {
  h = mix_u64(h, (uint64_t)(int64_t)s->rank);
  for (int i = 0; i < s->rank && i < WF_MAX_RANK; i++)
    h = mix_u64(h, (uint64_t)s->dims[i]);
  return h;
}

static uint64_t mix_tensor(uint64_t h, const wf_tensor *t) {
  wf_shape s;
  if (!t)
    return mix_u64(h, 0);
  wf_tensor_shape(t, &s);
  h = mix_u64(h, (uint64_t)wf_tensor_dtype(t));
  h = mix_shape(h, &s);
  return mix(h, wf_tensor_data(t), wf_tensor_nbytes(t));
}

static uint64_t mix_item(uint64_t h, int base, const wf_attr_value *v,
                         int64_t i) {
  switch (base) {
  case WF_ATTR_INT:
    return mix_u64(h, (uint64_t)v->u.ints[i]);
  case WF_ATTR_FLOAT:
    return mix_float(h, v->u.floats[i]);
  case WF_ATTR_BOOL:
    return mix_u64(h, v->u.bools[i] != 0);
  case WF_ATTR_STRING:
    return mix_str(h, v->u.strings[i]);
  case WF_ATTR_DTYPE:
    return mix_u64(h, (uint64_t)v->u.dtypes[i]);
  case WF_ATTR_SHAPE:
    return mix_shape(h, &v->u.shapes[i]);
  case WF_ATTR_TENSOR:
    return mix_tensor(h, v->u.tensors[i]);
  default:
    return h;
  }
}

uint64_t wf__attr_hash(const wf_attr_value *v, uint64_t seed) {
  int base = WF_ATTR_BASE(v->type);
  uint64_t h = mix_u64(UINT64_C(14695981039346656037) ^ seed,
                       (uint64_t)(uint32_t)v->type);
  if (WF_ATTR_IS_LIST(v->type)) {
    int64_t n = v->count > 0 ? v->count : 0;
    h = mix_u64(h, (uint64_t)n);
    for (int64_t i = 0; i < n; i++)
      h = mix_item(h, base, v, i);
    return h;
  }
  switch (base) {
  case WF_ATTR_INT:
    return mix_u64(h, (uint64_t)v->u.i);
  case WF_ATTR_FLOAT:
    return mix_float(h, v->u.f);
  case WF_ATTR_BOOL:
    return mix_u64(h, v->u.b != 0);
  case WF_ATTR_STRING:
    return mix_str(h, v->u.s);
  case WF_ATTR_DTYPE:
    return mix_u64(h, (uint64_t)v->u.dtype);
  case WF_ATTR_SHAPE:
    return mix_shape(h, &v->u.shape);
  case WF_ATTR_TENSOR:
    return mix_tensor(h, v->u.tensor);
  default:
    return h;
  }
}

/* ---- text ---------------------------------------------------------------- */

/* Appends to a fixed buffer; once full, the text ends in "...". */
typedef struct text {
  char *buf;
  size_t len, used;
  int full;
} text;

static void put(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  int n;
  if (t->full)
    return;
  va_start(ap, fmt);
  n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= t->len - t->used) {
    t->full = 1;
    t->used = t->len - 1;
    if (t->len >= 4)
      memcpy(t->buf + t->len - 4, "...", 4);
    return;
  }
  t->used += (size_t)n;
}

static void put_dtype(text *t, int32_t d) {
  const char *name = wf_dtype_name((wf_dtype)d);
  if (name)
    put(t, "%s", name);
  else
    put(t, "<dtype %d>", (int)d);
}

static void put_tensor(text *t, const wf_tensor *x) {
  char sbuf[128];
  wf_shape s;
  if (!x) {
    put(t, "<null tensor>");
    return;
  }
  wf_tensor_shape(x, &s);
  put(t, "<tensor ");
  put_dtype(t, wf_tensor_dtype(x));
  put(t, " %s>", wf_shape_str(&s, sbuf, sizeof sbuf));
}

static void put_item(text *t, int base, const wf_attr_value *v, int64_t i) {
  char sbuf[128];
  switch (base) {
  case WF_ATTR_INT:
    put(t, "%lld", (long long)v->u.ints[i]);
    break;
  case WF_ATTR_FLOAT:
    put(t, "%g", v->u.floats[i]);
    break;
  case WF_ATTR_BOOL:
    put(t, "%s", v->u.bools[i] ? "true" : "false");
    break;
  case WF_ATTR_STRING:
    put(t, "\"%s\"", v->u.strings[i] ? v->u.strings[i] : "");
    break;
  case WF_ATTR_DTYPE:
    put_dtype(t, v->u.dtypes[i]);
    break;
  case WF_ATTR_SHAPE:
    put(t, "%s", wf_shape_str(&v->u.shapes[i], sbuf, sizeof sbuf));
    break;
  case WF_ATTR_TENSOR:
    put_tensor(t, v->u.tensors[i]);
    break;
  default:
    put(t, "?");
  }
}

char *wf__attr_str(const wf_attr_value *v, char *buf, size_t len) {
  text t = {buf, len, 0, 0};
  int base = WF_ATTR_BASE(v->type);
  char sbuf[128];

  if (len == 0)
    return buf;
  buf[0] = '\0';
  if (WF_ATTR_IS_LIST(v->type)) {
    put(&t, "[");
    for (int64_t i = 0; i < v->count; i++) {
      if (i)
        put(&t, ", ");
      put_item(&t, base, v, i);
    }
    put(&t, "]");
    return buf;
  }
  switch (base) {
  case WF_ATTR_NONE:
    put(&t, "<none>");
    break;
  case WF_ATTR_INT:
    put(&t, "%lld", (long long)v->u.i);
    break;
  case WF_ATTR_FLOAT:
    put(&t, "%g", v->u.f);
    break;
  case WF_ATTR_BOOL:
    put(&t, "%s", v->u.b ? "true" : "false");
    break;
  case WF_ATTR_STRING:
    put(&t, "\"%s\"", v->u.s ? v->u.s : "");
    break;
  case WF_ATTR_DTYPE:
    put_dtype(&t, v->u.dtype);
    break;
  case WF_ATTR_SHAPE:
    put(&t, "%s", wf_shape_str(&v->u.shape, sbuf, sizeof sbuf));
    break;
  case WF_ATTR_TENSOR:
    put_tensor(&t, v->u.tensor);
    break;
  default:
    put(&t, "<attr type %d>", (int)v->type);
  }
  return buf;
}
