/* core/graph/tensor.c — reference-counted host tensors: allocated ones (struct and
 * 64-byte-aligned data in one block), wrapped caller buffers, and views of
 * a step's arena (core/compile/memplan.h: struct and buffer belong to the arena,
 * the last release hands them back), with a small cache of freed large
 * blocks so that a training or inference loop, which frees and allocates
 * the same sizes every step, reuses memory that is already mapped instead
 * of faulting fresh pages in each time. Allocated tensors made for a step
 * may be counted by its meter until their last release.
 *
 * Device memory, layouts and copies between devices are not handled here. */
#include <config.h>

#include "graph/tensor_internal.h"

#include <weft/plugin.h>

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"

/* ---- the block cache ----------------------------------------------------
 *
 * Freed blocks of at least CACHE_MIN bytes wait here, keyed by exact size,
 * for an allocation of the same size; the oldest go first when the cache
 * would exceed its budget ($WEFT_TENSOR_CACHE_MB, default 256; 0 turns it
 * off) or its slots. Smaller blocks go straight back to malloc, which keeps
 * them cheap already. */
#define CACHE_MIN ((size_t)64 << 10)
#define CACHE_SLOTS 64

static struct {
  pthread_mutex_t mu;
  void *block[CACHE_SLOTS];
  size_t size[CACHE_SLOTS];
  int n;        /* used slots, oldest first */
  size_t bytes; /* held */
  size_t budget;
  int ready;
} cache = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0, 0, 0, 0};

/* Reads the budget once; caller holds the lock. */
static void cache_init(void) {
  if (cache.ready)
    return;
  const char *env = getenv("WEFT_TENSOR_CACHE_MB");
  long mb = env && *env ? strtol(env, NULL, 10) : 256;
  cache.budget = mb > 0 ? (size_t)mb << 20 : 0;
  cache.ready = 1;
}

static void *cache_take(size_t size) {
  void *b = NULL;
  if (size < CACHE_MIN)
    return NULL;
  pthread_mutex_lock(&cache.mu);
  cache_init();
  for (int i = cache.n - 1; i >= 0; i--) {
    if (cache.size[i] == size) {
      b = cache.block[i];
      cache.bytes -= size;
      memmove(&cache.block[i], &cache.block[i + 1],
              (size_t)(cache.n - i - 1) * sizeof cache.block[0]);
      memmove(&cache.size[i], &cache.size[i + 1],
              (size_t)(cache.n - i - 1) * sizeof cache.size[0]);
      cache.n--;
      break;
    }
  }
  pthread_mutex_unlock(&cache.mu);
  return b;
}

/* Keeps block for reuse, or frees it (and whatever it pushes out). */
static void cache_put(void *block, size_t size) {
  void *out[CACHE_SLOTS + 1];
  int nout = 0;
  if (size < CACHE_MIN) {
    wf__free(block);
    return;
  }
  pthread_mutex_lock(&cache.mu);
  cache_init();
  if (size > cache.budget) {
    out[nout++] = block;
  } else {
    while (cache.n > 0 &&
           (cache.n == CACHE_SLOTS || cache.bytes + size > cache.budget)) {
      out[nout++] = cache.block[0];
      cache.bytes -= cache.size[0];
      memmove(&cache.block[0], &cache.block[1],
              (size_t)(cache.n - 1) * sizeof cache.block[0]);
      memmove(&cache.size[0], &cache.size[1],
              (size_t)(cache.n - 1) * sizeof cache.size[0]);
      cache.n--;
    }
    cache.block[cache.n] = block;
    cache.size[cache.n++] = size;
    cache.bytes += size;
  }
  pthread_mutex_unlock(&cache.mu);
  for (int i = 0; i < nout; i++)
    wf__free(out[i]);
}

void wf__tensor_cache_clear(void) {
  pthread_mutex_lock(&cache.mu);
  int n = cache.n;
  void *blocks[CACHE_SLOTS];
  memcpy(blocks, cache.block, (size_t)n * sizeof blocks[0]);
  cache.n = 0;
  cache.bytes = 0;
  cache.ready = 0; /* read the budget again: tests change it */
  pthread_mutex_unlock(&cache.mu);
  for (int i = 0; i < n; i++)
    wf__free(blocks[i]);
}

size_t wf__tensor_cache_bytes(void) {
  pthread_mutex_lock(&cache.mu);
  size_t b = cache.bytes;
  pthread_mutex_unlock(&cache.mu);
  return b;
}

/* Offset of the data in a block that holds struct and data together. */
#define DATA_OFFSET                                                            \
  ((sizeof(wf_tensor) + WF_TENSOR_ALIGN - 1) / WF_TENSOR_ALIGN *               \
   WF_TENSOR_ALIGN)

int wf__tensor_check(wf_dtype dtype, const int64_t *dims, int rank,
                     size_t *nbytes, wf_status *st) {
  size_t esize = wf_dtype_size(dtype);
  size_t n;

  if (dtype == WF_STRING)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: string tensors are made from their strings "
                         "(wf_tensor_new_strings)");
  if (esize == 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: %d is not a valid dtype", (int)dtype);
  if (rank < 0 || rank > WF_MAX_RANK)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: rank %d is outside 0..%d", rank, WF_MAX_RANK);
  if (rank > 0 && !dims)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: rank %d but no dims given", rank);
  n = esize;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "tensor: dim %d is %lld; dims must be >= 0", i,
                           (long long)dims[i]);
    if (dims[i] != 0 && n > (SIZE_MAX - DATA_OFFSET) / (uint64_t)dims[i])
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "tensor: %s tensor of %d dims is too large",
                           wf_dtype_name(dtype), rank);
    n *= (size_t)dims[i];
  }
  *nbytes = n;
  return WF_OK;
}

void wf__tensor_fill(wf_tensor *t, wf_dtype dtype, const int64_t *dims,
                        int rank, void *data, size_t nbytes) {
  t->dtype = dtype;
  wf_shape_init(&t->shape, dims, rank);
  atomic_init(&t->refs, 1);
  t->data = data;
  t->nbytes = nbytes;
  t->dealloc = NULL;
  t->dealloc_arg = NULL;
  t->wrapped = WF__TENSOR_OWNED;
  t->epoch = 0;
  t->mem = NULL;
  atomic_init(&t->version, 0);
  atomic_init(&t->attr_holds, 0);
}

/* ---- content versions ---------------------------------------------------- */

/* The next version to hand out; 0 is never one. */
static atomic_uint_fast64_t next_version = 1;

uint64_t wf__tensor_stamp(wf_tensor *t) {
  uint64_t v = atomic_fetch_add_explicit(&next_version, 1,
                                         memory_order_relaxed);
  atomic_store_explicit(&t->version, v, memory_order_release);
  return v;
}

void wf__tensor_unstamp(wf_tensor *t) {
  atomic_store_explicit(&t->version, 0, memory_order_release);
}

void wf__tensor_attr_hold(wf_tensor *t) {
  if (atomic_fetch_add_explicit(&t->attr_holds, 1, memory_order_acq_rel) == 0)
    wf__tensor_stamp(t);
}

void wf__tensor_attr_drop(wf_tensor *t) {
  if (atomic_fetch_sub_explicit(&t->attr_holds, 1, memory_order_acq_rel) == 1)
    wf__tensor_unstamp(t);
}

uint64_t wf__tensor_version(const wf_tensor *t) {
  return t ? atomic_load_explicit(&((wf_tensor *)t)->version,
                                  memory_order_acquire)
           : 0;
}

wf_tensor *wf_tensor_new(wf_dtype dtype, const int64_t *dims, int rank,
                         wf_status *st) {
  size_t nbytes;
  unsigned char *block;

  if (wf__tensor_check(dtype, dims, rank, &nbytes, st))
    return NULL;
  block = cache_take(DATA_OFFSET + nbytes);
  if (!block)
    block = wf__alloc(DATA_OFFSET + nbytes, WF_TENSOR_ALIGN);
  if (!block) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory allocating %zu bytes of %s", nbytes,
                  wf_dtype_name(dtype));
    return NULL;
  }
  wf__tensor_fill((wf_tensor *)block, dtype, dims, rank, block + DATA_OFFSET,
              nbytes);
  return (wf_tensor *)block;
}

wf_tensor *wf__tensor_new_shape(wf_dtype dtype, const wf_shape *shape,
                                wf_status *st) {
  char buf[128];
  if (!wf_shape_is_known(shape)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: shape %s is not fully known",
                  wf_shape_str(shape, buf, sizeof buf));
    return NULL;
  }
  return wf_tensor_new(dtype, shape->dims, shape->rank, st);
}

wf_tensor *wf__tensor_new_metered(wf_dtype dtype, const wf_shape *shape,
                                  wf__meter *m, uint32_t epoch,
                                  wf_status *st) {
  wf_tensor *t = wf__tensor_new_shape(dtype, shape, st);
  if (t && m) {
    t->dealloc_arg = m;
    t->epoch = epoch;
    wf__meter_add(m, t->nbytes);
  }
  return t;
}

void wf__tensor_init_view(wf_tensor *t, wf_dtype dtype, const wf_shape *shape,
                          void *data, size_t nbytes, wf_dealloc_fn *done,
                          void *arg) {
  wf__tensor_fill(t, dtype, shape->dims, shape->rank, data, nbytes);
  t->dealloc = done;
  t->dealloc_arg = arg;
  t->wrapped = WF__TENSOR_VIEW;
}

/* ---- string tensors ----------------------------------------------------- */

/* The offsets ahead of count strings, in bytes; 0 when too many. */
static size_t strings_head(int64_t count) {
  if (count < 0 || (uint64_t)count >= (SIZE_MAX - DATA_OFFSET) / 8 - 1)
    return 0;
  return ((size_t)count + 1) * 8;
}

int wf__strings_check(const void *data, size_t nbytes, int64_t count,
                      wf_status *st) {
  const unsigned char *b = data;
  size_t head = strings_head(count);
  uint64_t at, next;
  if (!head)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "string tensor: %lld elements are too many",
                         (long long)count);
  if (nbytes < head || !data)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "string tensor: %zu bytes cannot hold the %zu bytes "
                         "of offsets of %lld strings",
                         nbytes, head, (long long)count);
  memcpy(&at, b, 8);
  if (at != head)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "string tensor: the first string starts at byte "
                         "%llu, not at %zu after the offsets",
                         (unsigned long long)at, head);
  for (int64_t i = 0; i < count; i++, at = next) {
    memcpy(&next, b + (size_t)(i + 1) * 8, 8);
    if (next <= at || next > nbytes)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "string tensor: string %lld ends at byte %llu, "
                           "outside %llu..%zu",
                           (long long)i, (unsigned long long)next,
                           (unsigned long long)at + 1, nbytes);
    if (b[next - 1] != '\0')
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "string tensor: string %lld is not followed by "
                           "a NUL byte",
                           (long long)i);
  }
  if (at != nbytes)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "string tensor: the strings end at byte %llu of a "
                         "buffer of %zu",
                         (unsigned long long)at, nbytes);
  return WF_OK;
}

wf_tensor *wf_tensor_new_strings(const int64_t *dims, int rank,
                                 const char *const *strings,
                                 const size_t *lengths, wf_status *st) {
  size_t nbytes, head;
  int64_t count;
  wf_shape shape;
  unsigned char *block;

  /* The shape's checks, as for a one-byte type. */
  if (wf__tensor_check(WF_UINT8, dims, rank, &nbytes, st))
    return NULL;
  wf_shape_init(&shape, dims, rank);
  count = wf_shape_count(&shape);
  head = strings_head(count);
  if (!head) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "string tensor: %lld elements are too many",
                  (long long)count);
    return NULL;
  }
  if (count > 0 && !strings) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "string tensor: no strings given for %lld elements",
                  (long long)count);
    return NULL;
  }
  nbytes = head;
  for (int64_t i = 0; i < count; i++) {
    size_t n;
    if (!strings[i]) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "string tensor: string %lld is NULL", (long long)i);
      return NULL;
    }
    n = lengths ? lengths[i] : strlen(strings[i]);
    if (n >= SIZE_MAX - DATA_OFFSET - nbytes - 1) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "string tensor: the strings are too long");
      return NULL;
    }
    nbytes += n + 1;
  }
  block = wf__alloc(DATA_OFFSET + nbytes, WF_TENSOR_ALIGN);
  if (!block) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory allocating %zu bytes of strings",
                  nbytes);
    return NULL;
  }
  unsigned char *data = block + DATA_OFFSET;
  uint64_t at = head;
  for (int64_t i = 0; i < count; i++) {
    size_t n = lengths ? lengths[i] : strlen(strings[i]);
    memcpy(data + (size_t)i * 8, &at, 8);
    if (n)
      memcpy(data + at, strings[i], n);
    data[at + n] = '\0';
    at += n + 1;
  }
  memcpy(data + (size_t)count * 8, &at, 8);
  wf__tensor_fill((wf_tensor *)block, WF_STRING, dims, rank, data, nbytes);
  return (wf_tensor *)block;
}

const char *wf_tensor_string(const wf_tensor *t, int64_t i, size_t *len) {
  uint64_t at, next;
  if (!t || t->dtype != WF_STRING || t->mem || i < 0 ||
      i >= wf_tensor_count(t))
    return NULL;
  memcpy(&at, (const char *)t->data + (size_t)i * 8, 8);
  memcpy(&next, (const char *)t->data + (size_t)(i + 1) * 8, 8);
  if (len)
    *len = (size_t)(next - at - 1);
  return (const char *)t->data + at;
}

wf_tensor *wf_tensor_wrap(wf_dtype dtype, const int64_t *dims, int rank,
                          void *data, size_t len, wf_dealloc_fn *dealloc,
                          void *arg, wf_status *st) {
  size_t nbytes;
  wf_tensor *t;

  if (dtype == WF_STRING) {
    wf_shape shape;
    if (wf__tensor_check(WF_UINT8, dims, rank, &nbytes, st))
      goto fail;
    wf_shape_init(&shape, dims, rank);
    if (wf__strings_check(data, len, wf_shape_count(&shape), st))
      goto fail;
    nbytes = len;
  } else if (wf__tensor_check(dtype, dims, rank, &nbytes, st)) {
    goto fail;
  }
  if (len != nbytes) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: wrapped buffer has %zu bytes, its %s shape needs "
                  "%zu",
                  len, wf_dtype_name(dtype), nbytes);
    goto fail;
  }
  if (!data && nbytes > 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: wrapped buffer is NULL for %zu bytes", nbytes);
    goto fail;
  }
  t = wf__alloc(sizeof *t, 0);
  if (!t) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory wrapping a buffer");
    goto fail;
  }
  wf__tensor_fill(t, dtype, dims, rank, data, nbytes);
  t->dealloc = dealloc;
  t->dealloc_arg = arg;
  t->wrapped = WF__TENSOR_WRAPPED;
  return t;

fail:
  if (dealloc)
    dealloc(data, len, arg);
  return NULL;
}

wf_tensor *wf_tensor_retain(wf_tensor *t) {
  assert(t);
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

void wf_tensor_release(wf_tensor *t) {
  if (!t)
    return;
  /* Acquire-release ordering on the decrement: every access made through
   * other references happens before the free. (Not release plus an
   * acquire fence on the last one: ThreadSanitizer does not model fences
   * and would see the free race with those accesses; on x86 both compile
   * to the same locked instruction.) */
  long before = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel);
  assert(before > 0);
  if (before != 1)
    return;
  switch (t->wrapped) {
  case WF__TENSOR_VIEW:
    /* The arena owns the struct: it is handed out again from there. */
    t->dealloc(t->data, t->nbytes, t->dealloc_arg);
    return;
  case WF__TENSOR_WRAPPED:
    if (t->dealloc)
      t->dealloc(t->data, t->nbytes, t->dealloc_arg);
    wf__free(t);
    return;
  default:
    if (t->dealloc_arg)
      wf__meter_drop(t->dealloc_arg, t->nbytes, t->epoch);
    cache_put(t, DATA_OFFSET + t->nbytes);
  }
}

wf_dtype wf_tensor_dtype(const wf_tensor *t) { return t->dtype; }
int wf_tensor_rank(const wf_tensor *t) { return t->shape.rank; }

int64_t wf_tensor_dim(const wf_tensor *t, int i) {
  assert(i >= 0 && i < t->shape.rank);
  return t->shape.dims[i];
}

void wf_tensor_shape(const wf_tensor *t, wf_shape *out) { *out = t->shape; }
int64_t wf_tensor_count(const wf_tensor *t) {
  return wf_shape_count(&t->shape);
}
size_t wf_tensor_nbytes(const wf_tensor *t) { return t->nbytes; }
void *wf_tensor_data(const wf_tensor *t) { return t->data; }

double wf_tensor_element(const wf_tensor *t, int64_t i) {
  const void *p = t->data;
  if (i < 0 || i >= wf_tensor_count(t))
    return NAN;
  switch (t->dtype) {
  case WF_FLOAT32: return ((const float *)p)[i];
  case WF_FLOAT64: return ((const double *)p)[i];
  case WF_FLOAT16: return wf__half_to_float(((const uint16_t *)p)[i]);
  case WF_BFLOAT16: return wf__bf16_to_float(((const uint16_t *)p)[i]);
  case WF_INT8: return ((const int8_t *)p)[i];
  case WF_UINT8: return ((const uint8_t *)p)[i];
  case WF_INT32: return ((const int32_t *)p)[i];
  case WF_INT64: return (double)((const int64_t *)p)[i];
  case WF_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return NAN;
  }
}

int64_t wf__tensor_count_nonfinite(const wf_tensor *t, int64_t *nan,
                                   int64_t *inf, int64_t *first) {
  int64_t n = wf_tensor_count(t), bad = 0;
  *first = -1;
  /* By the bits: an all-ones exponent is NaN (mantissa set) or Inf. */
  for (int64_t i = 0; i < n; i++) {
    int is_nan, is_inf;
    switch (t->dtype) {
    case WF_FLOAT32: {
      uint32_t b;
      memcpy(&b, (const char *)t->data + i * 4, 4);
      is_nan = (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu);
      is_inf = (b & 0x7FFFFFFFu) == 0x7F800000u;
      break;
    }
    case WF_FLOAT64: {
      uint64_t b;
      memcpy(&b, (const char *)t->data + i * 8, 8);
      is_nan = (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull &&
               (b & 0x000FFFFFFFFFFFFFull);
      is_inf = (b & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull;
      break;
    }
    case WF_FLOAT16: {
      uint16_t b = ((const uint16_t *)t->data)[i];
      is_nan = (b & 0x7C00) == 0x7C00 && (b & 0x03FF);
      is_inf = (b & 0x7FFF) == 0x7C00;
      break;
    }
    case WF_BFLOAT16: {
      uint16_t b = ((const uint16_t *)t->data)[i];
      is_nan = (b & 0x7F80) == 0x7F80 && (b & 0x007F);
      is_inf = (b & 0x7FFF) == 0x7F80;
      break;
    }
    default:
      return 0;
    }
    if (is_nan || is_inf) {
      if (bad++ == 0)
        *first = i;
      *nan += is_nan;
      *inf += is_inf;
    }
  }
  return bad;
}

char *wf_tensor_str(const wf_tensor *t, int max_values, char *buf,
                    size_t len) {
  char shape[160];
  size_t used = 0;
  int64_t n = wf_tensor_count(t);
  int is_int = (WF_DTYPE_BIT(t->dtype) & WF_DTYPES_FLOAT) == 0;
  if (!len)
    return buf;
  buf[0] = '\0';
#define PUT(...)                                                               \
  do {                                                                         \
    int w_ = snprintf(buf + used, len - used, __VA_ARGS__);                    \
    if (w_ < 0 || (size_t)w_ >= len - used)                                    \
      return buf;                                                              \
    used += (size_t)w_;                                                        \
  } while (0)
  PUT("%s %s", wf_dtype_name(t->dtype) ? wf_dtype_name(t->dtype) : "?",
      wf_shape_str(&t->shape, shape, sizeof shape));
  if (t->dtype == WF_RESOURCE)
    return buf;
  if (t->mem) {
    PUT(" on %s", wf__tensor_memory_name(t));
    return buf;
  }
  PUT(" [");
  for (int64_t i = 0; t->dtype == WF_STRING && i < n && i < max_values; i++) {
    size_t sl;
    const char *s = wf_tensor_string(t, i, &sl);
    PUT("%s\"", i ? ", " : "");
    for (size_t j = 0; j < sl; j++) {
      unsigned char c = (unsigned char)s[j];
      if (c == '"' || c == '\\')
        PUT("\\%c", c);
      else if (c < 0x20 || c == 0x7f)
        PUT("\\x%02x", c);
      else
        PUT("%c", c);
    }
    PUT("\"");
  }
  for (int64_t i = 0; t->dtype != WF_STRING && i < n && i < max_values; i++) {
    double v = wf_tensor_element(t, i);
    if (t->dtype == WF_BOOL)
      PUT("%s%s", i ? ", " : "", v != 0 ? "true" : "false");
    else if (is_int && t->dtype == WF_INT64)
      PUT("%s%lld", i ? ", " : "", (long long)((const int64_t *)t->data)[i]);
    else if (is_int)
      PUT("%s%.0f", i ? ", " : "", v);
    else
      PUT("%s%.6g", i ? ", " : "", v);
  }
  if (n > max_values)
    PUT(", ... %lld values", (long long)n);
  PUT("]");
#undef PUT
  return buf;
}

/* Views keep their parent alive through the wrapped buffer's deallocator. */
static void release_parent(void *data, size_t len, void *arg) {
  (void)data;
  (void)len;
  wf_tensor_release(arg);
}

wf_tensor *wf__tensor_reshape(wf_tensor *t, const wf_shape *shape,
                              wf_status *st) {
  char a[128], b[128];
  if (!wf_shape_is_known(shape) || wf_shape_count(shape) != wf_tensor_count(t)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "cannot view a tensor of shape %s as %s",
                  wf_shape_str(&t->shape, a, sizeof a),
                  wf_shape_str(shape, b, sizeof b));
    return NULL;
  }
  wf_tensor_retain(t);
  wf_tensor *v = wf_tensor_wrap(t->dtype, shape->dims, shape->rank, t->data,
                                t->nbytes, release_parent, t, st);
  if (v)
    v->mem = t->mem;
  return v;
}

/* ---- device memory ------------------------------------------------------ */

const char *wf__tensor_memory_name(const wf_tensor *t) {
  /* A device starts with its description (core/plugin/runtime_internal.h). */
  return t->mem ? ((const wf_device_desc *)(const void *)t->mem)->name
                : "host memory";
}

/* ---- meters --------------------------------------------------------------- */

void wf__meter_unref(wf__meter *m) {
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
    wf__free(m);
}

void wf__meter_add(wf__meter *m, size_t nbytes) {
  atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
  long long now = atomic_fetch_add_explicit(&m->live, (long long)nbytes,
                                            memory_order_relaxed) +
                  (long long)nbytes;
  long long peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
  while (now > peak &&
         !atomic_compare_exchange_weak_explicit(&m->peak, &peak, now,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
    ;
}

void wf__meter_drop(wf__meter *m, size_t nbytes, uint32_t epoch) {
  if (atomic_load_explicit(&m->epoch, memory_order_relaxed) == epoch)
    atomic_fetch_sub_explicit(&m->live, (long long)nbytes,
                              memory_order_relaxed);
  wf__meter_unref(m);
}
