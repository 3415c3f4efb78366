/* core/data/data_map.c — the map stage: the built-in transforms (scale, cast,
 * one-hot, element-wise conversions between every dtype, float16 and
 * bfloat16 included) and graph functions run through a session of the
 * iterator's own.
 *
 * The checks of dtypes and field names happen when the dataset is
 * described (core/data/dataset.c); here only values are computed. */
#include <config.h>

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* ---- element conversions ------------------------------------------------------ */

static int is_float(wf_dtype t) {
  return (WF_DTYPE_BIT(t) & WF_DTYPES_FLOAT) != 0;
}

static double load_f(const void *p, wf_dtype t, int64_t i) {
  switch (t) {
  case WF_FLOAT32:
    return ((const float *)p)[i];
  case WF_FLOAT64:
    return ((const double *)p)[i];
  case WF_FLOAT16:
    return wf__half_to_float(((const uint16_t *)p)[i]);
  case WF_BFLOAT16:
    return wf__bf16_to_float(((const uint16_t *)p)[i]);
  default:
    return 0;
  }
}

static int64_t load_i(const void *p, wf_dtype t, int64_t i) {
  switch (t) {
  case WF_INT8:
    return ((const int8_t *)p)[i];
  case WF_UINT8:
    return ((const uint8_t *)p)[i];
  case WF_INT32:
    return ((const int32_t *)p)[i];
  case WF_INT64:
    return ((const int64_t *)p)[i];
  case WF_BOOL:
    return ((const uint8_t *)p)[i] != 0;
  default:
    return 0;
  }
}

/* A float as an integer of [lo, hi]: truncated toward zero, saturated, NaN
 * to 0 (C's conversion of an out-of-range float is undefined). */
static int64_t sat(double v, double lo, double hi) {
  if (v != v)
    return 0;
  if (v <= lo)
    return (int64_t)lo;
  if (v >= hi)
    return v >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

static void store_f(void *p, wf_dtype t, int64_t i, double v) {
  switch (t) {
  case WF_FLOAT32:
    ((float *)p)[i] = (float)v;
    break;
  case WF_FLOAT64:
    ((double *)p)[i] = v;
    break;
  case WF_FLOAT16:
    ((uint16_t *)p)[i] = wf__float_to_half((float)v);
    break;
  case WF_BFLOAT16:
    ((uint16_t *)p)[i] = wf__float_to_bf16((float)v);
    break;
  case WF_INT8:
    ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX);
    break;
  case WF_UINT8:
    ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX);
    break;
  case WF_INT32:
    ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX);
    break;
  case WF_INT64:
    ((int64_t *)p)[i] = sat(v, -9.2233720368547758e18, 9.2233720368547758e18);
    break;
  case WF_BOOL:
    ((uint8_t *)p)[i] = v != 0;
    break;
  default:
    break;
  }
}

/* Integers wrap into narrower integers (two's complement, as the unsigned
 * conversion defines it). */
static void store_i(void *p, wf_dtype t, int64_t i, int64_t v) {
  switch (t) {
  case WF_INT8:
    ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v;
    break;
  case WF_UINT8:
    ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v;
    break;
  case WF_INT32:
    ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v;
    break;
  case WF_INT64:
    ((int64_t *)p)[i] = v;
    break;
  case WF_BOOL:
    ((uint8_t *)p)[i] = v != 0;
    break;
  default:
    store_f(p, t, i, (double)v);
    break;
  }
}

static void convert(const wf_tensor *in, wf_tensor *out) {
  int64_t n = wf_tensor_count(in);
  if (in->dtype == out->dtype) {
    memcpy(out->data, in->data, in->nbytes);
    return;
  }
  if (is_float(in->dtype))
    for (int64_t i = 0; i < n; i++)
      store_f(out->data, out->dtype, i, load_f(in->data, in->dtype, i));
  else
    for (int64_t i = 0; i < n; i++)
      store_i(out->data, out->dtype, i, load_i(in->data, in->dtype, i));
}

/* o[i] = p[i] * a + b over n elements, in blocks of 16 whose fixed trip
 * count the compiler vectorizes at -O2 (a loop of unknown length it does
 * not: 3.5x slower on a batch of 64 images, which the step then waits
 * for). */
#define SCALE_BLOCKED(T, p, o, n, a, b)                                        \
  do {                                                                         \
    int64_t i_ = 0;                                                            \
    for (; i_ + 16 <= (n); i_ += 16)                                           \
      for (int j_ = 0; j_ < 16; j_++)                                          \
        (o)[i_ + j_] = (float)(p)[i_ + j_] * (a) + (b);                        \
    for (; i_ < (n); i_++)                                                     \
      (o)[i_] = (float)(p)[i_] * (a) + (b);                                    \
  } while (0)

/* The two common inputs on x86-64 CPUs with AVX-512: the same loop sixteen
 * lanes to a vector, chosen once by what the CPU supports (GCC
 * vectorizes the blocked loop above in 128-bit vectors only, at -O2 and
 * whatever the target; bench/pipeline --mode cached, whose batch of 64
 * images this scales, took 31.0 us a batch with it and 26.3 with these
 * on an AVX-512 Xeon). A multiply and an add, never contracted: the same
 * bits as the loop above. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void
scale_u8_avx512(const uint8_t *p, float *o, int64_t n, float a, float b) {
  __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(p + i)));
    __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(x), va);
    _mm512_storeu_ps(o + i, _mm512_add_ps(y, vb));
  }
  for (; i < n; i++)
    o[i] = (float)p[i] * a + b;
}

__attribute__((target("avx512f"))) static void
scale_f32_avx512(const float *p, float *o, int64_t n, float a, float b) {
  __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 y = _mm512_mul_ps(_mm512_loadu_ps(p + i), va);
    _mm512_storeu_ps(o + i, _mm512_add_ps(y, vb));
  }
  for (; i < n; i++)
    o[i] = p[i] * a + b;
}

/* 1 on a CPU with AVX-512 (asked once). */
static int scale_avx512(void) {
  static atomic_int has = -1;
  int v = atomic_load_explicit(&has, memory_order_relaxed);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512f") != 0;
    atomic_store_explicit(&has, v, memory_order_relaxed);
  }
  return v;
}
#else
#define scale_avx512() 0
#define scale_u8_avx512(p, o, n, a, b) ((void)0)
#define scale_f32_avx512(p, o, n, a, b) ((void)0)
#endif

static void scale(const wf_tensor *in, float *restrict o, float a, float b) {
  int64_t n = wf_tensor_count(in);
  switch (in->dtype) {
  case WF_UINT8: {
    const uint8_t *restrict p = in->data;
    if (scale_avx512())
      scale_u8_avx512(p, o, n, a, b);
    else
      SCALE_BLOCKED(uint8_t, p, o, n, a, b);
    break;
  }
  case WF_FLOAT32: {
    const float *restrict p = in->data;
    if (scale_avx512())
      scale_f32_avx512(p, o, n, a, b);
    else
      SCALE_BLOCKED(float, p, o, n, a, b);
    break;
  }
  default:
    if (is_float(in->dtype))
      for (int64_t i = 0; i < n; i++)
        o[i] = (float)load_f(in->data, in->dtype, i) * a + b;
    else
      for (int64_t i = 0; i < n; i++)
        o[i] = (float)load_i(in->data, in->dtype, i) * a + b;
    break;
  }
}

/* ---- the stage ------------------------------------------------------------------ */

typedef struct map_stage {
  wf__stage base;
  wf__stage *in;
  wf_tensor **tmp;      /* the input element */
  wf_session *session;  /* graph maps */
  wf_callable *fn;
  wf_tensor **feeds, **fetches;
} map_stage;

static int builtin(map_stage *m, wf_tensor **out, wf_status *st) {
  const wf_dataset *ds = m->base.ds;
  int f = ds->u.map.field;
  const wf_tensor *x = out[f];
  wf_shape shape = x->shape;
  wf_dtype dt = ds->fields[f].dtype;
  if (ds->u.map.kind == WF__MAP_ONE_HOT) {
    if (shape.rank >= WF_MAX_RANK)
      return -wf_status_set(st, WF_INVALID_ARGUMENT,
                            "map one_hot: field '%s' has rank %d; one more "
                            "dimension would exceed %d",
                            ds->fields[f].name, (int)shape.rank,
                            WF_MAX_RANK);
    shape.dims[shape.rank++] = ds->u.map.depth;
  }
  wf_tensor *y = wf__tensor_new_shape(dt, &shape, st);
  if (!y)
    return -wf_status_code(st);
  switch (ds->u.map.kind) {
  case WF__MAP_SCALE:
    scale(x, y->data, (float)ds->u.map.a, (float)ds->u.map.b);
    break;
  case WF__MAP_CAST:
    convert(x, y);
    break;
  case WF__MAP_ONE_HOT: {
    int64_t n = wf_tensor_count(x), depth = ds->u.map.depth;
    float *o = y->data;
    memset(o, 0, y->nbytes);
    for (int64_t i = 0; i < n; i++) {
      int64_t v = load_i(x->data, x->dtype, i);
      if (v >= 0 && v < depth)
        o[i * depth + v] = 1.0f;
    }
    break;
  }
  case WF__MAP_GRAPH:
    break;
  }
  wf_tensor_release(out[f]);
  out[f] = y;
  return WF__ELEMENT;
}

static int graph(map_stage *m, wf_tensor **out, wf_status *st) {
  const wf_dataset *ds = m->base.ds;
  int nin_fields = ds->input->nfields;
  for (int i = 0; i < ds->u.map.nin; i++)
    m->feeds[i] = m->tmp[ds->u.map.in_fields[i]];
  int rc = wf_callable_run(m->fn, NULL, m->feeds, m->fetches, NULL, st);
  if (rc) {
    wf_status_prefix(st, "map graph");
    wf__element_clear(m->tmp, nin_fields);
    return -rc;
  }
  for (int k = 0; k < m->base.nfields; k++) {
    out[k] = k < nin_fields ? m->tmp[k] : NULL;
    if (k < nin_fields)
      m->tmp[k] = NULL;
  }
  for (int j = 0; j < ds->u.map.nout; j++) {
    int slot = ds->u.map.out_slot[j];
    wf_tensor *y = m->fetches[j];
    m->fetches[j] = NULL;
    if (y->dtype != ds->fields[slot].dtype ||
        !wf_shape_compatible(&y->shape, &ds->fields[slot].shape)) {
      char a[96], b[96];
      wf_tensor_release(y);
      for (int k = j + 1; k < ds->u.map.nout; k++) {
        wf_tensor_release(m->fetches[k]);
        m->fetches[k] = NULL;
      }
      wf__element_clear(out, m->base.nfields);
      return -wf_status_set(st, WF_INVALID_ARGUMENT,
                            "map graph: output for field '%s' is %s %s, "
                            "declared %s %s",
                            ds->fields[slot].name, wf_dtype_name(y->dtype),
                            wf_shape_str(&y->shape, a, sizeof a),
                            wf_dtype_name(ds->fields[slot].dtype),
                            wf_shape_str(&ds->fields[slot].shape, b,
                                         sizeof b));
    }
    wf_tensor_release(out[slot]);
    out[slot] = y;
  }
  return WF__ELEMENT;
}

static int map_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  map_stage *m = (map_stage *)s;
  if (s->ds->u.map.kind != WF__MAP_GRAPH) {
    int rc = m->in->ops->next(m->in, out, st);
    if (rc != WF__ELEMENT)
      return rc;
    rc = builtin(m, out, st);
    if (rc != WF__ELEMENT)
      wf__element_clear(out, s->nfields);
    return rc;
  }
  int rc = m->in->ops->next(m->in, m->tmp, st);
  if (rc != WF__ELEMENT)
    return rc;
  return graph(m, out, st);
}

static int map_reset(wf__stage *s, wf_status *st) {
  map_stage *m = (map_stage *)s;
  return m->in->ops->reset(m->in, st);
}

static int map_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  map_stage *m = (map_stage *)s;
  wf__wbuf_u8(w, WF__DS_MAP);
  return m->in->ops->save(m->in, w, st);
}

static int map_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  map_stage *m = (map_stage *)s;
  if (wf__rbuf_expect(r, WF__DS_MAP, st))
    return WF_INVALID_ARGUMENT;
  return m->in->ops->restore(m->in, r, st);
}

static void map_free(wf__stage *s) {
  map_stage *m = (map_stage *)s;
  if (m->tmp)
    wf__element_clear(m->tmp, s->ds->input->nfields);
  wf__free(m->tmp);
  wf__free(m->feeds);
  wf__free(m->fetches);
  wf_callable_free(m->fn);
  wf_session_free(m->session);
  wf__stage_free(m->in);
  wf__free(m);
}

static const wf__stage_ops map_ops = {map_next, map_reset, map_save,
                                      map_restore, map_free};

wf__stage *wf__map_stage_new(const wf_dataset *ds, wf__stage *input,
                             wf_status *st) {
  map_stage *m = wf__calloc(1, sizeof *m);
  if (!m) {
    wf__stage_free(input);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "iterator: out of memory");
    return NULL;
  }
  m->base.ops = &map_ops;
  m->base.ds = ds;
  m->base.nfields = ds->nfields;
  /* A graph may hold stateful ops (random numbers by step): its outputs
   * are not assumed to come out the same when re-read. */
  m->base.compact = input->compact && ds->u.map.kind != WF__MAP_GRAPH;
  m->in = input;
  if (ds->u.map.kind != WF__MAP_GRAPH)
    return &m->base;
  int nin = ds->u.map.nin, nout = ds->u.map.nout;
  m->tmp = wf__calloc((size_t)ds->input->nfields, sizeof *m->tmp);
  m->feeds = wf__calloc((size_t)(nin + 1), sizeof *m->feeds);
  m->fetches = wf__calloc((size_t)nout, sizeof *m->fetches);
  if (!m->tmp || !m->feeds || !m->fetches) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "iterator: out of memory");
    goto fail;
  }
  m->session = wf_session_new(ds->u.map.g, st);
  if (!m->session)
    goto fail;
  m->fn = wf_session_prepare(m->session, ds->u.map.inputs, nin,
                             ds->u.map.outputs, nout, NULL, 0, st);
  if (!m->fn) {
    wf_status_prefix(st, "map graph");
    goto fail;
  }
  return &m->base;

fail:
  map_free(&m->base);
  return NULL;
}
