/* plugins/devices/cpu/cpu_dnnl.c — the oneDNN plumbing the fast kernels
 * share: memory descriptors, primitive descriptors with user-mode
 * scratchpads, plans (primitives bound to memories, with reorders at the
 * borders of oneDNN's blocked layouts and cached reordered weights), and
 * the bounded per-node cache of plans keyed by shape.
 *
 * It knows no op: the kernel files say which primitives a shape needs. */
#include <config.h>

#include "cpu_kernels.h"

#include <assert.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <string.h>

/* ---- descriptors ----------------------------------------------------------- */

int cpu_dnnl_fail(dnnl_status_t s, const char *what, wf_status *st) {
  /* A oneDNN that cannot be opened is an error of its own. */
  if (cpu_dnnl_ready(st))
    return wfx_code(st);
  int code = s == dnnl_unimplemented ? WF_UNIMPLEMENTED
             : s == dnnl_out_of_memory ? WF_RESOURCE_EXHAUSTED
                                       : WF_INTERNAL;

  return wfx_fail(st, code, "oneDNN %s failed: %s", what, dnnl_status2str(s));
}

int cpu_dnnl_refuse(dnnl_status_t s, const char *what, wf_status *st) {
  /* Not a refusal to fall back from: the library is missing. */
  if (cpu_dnnl_ready(st))
    return wfx_code(st);
  if (s == dnnl_out_of_memory)
    return cpu_dnnl_fail(s, what, st);
  return wfx_fail(st, WF_UNIMPLEMENTED, "oneDNN refused the %s: %s", what,
                  dnnl_status2str(s));
}

int cpu_dnnl_unsupported(const char *what, const wf_shape *s, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  return wfx_fail(st, WF_UNIMPLEMENTED,
                  "oneDNN has no %s for float32 input %s; the op's reference "
                  "kernel computes it when this kernel is denied "
                  "([kernels] deny = onednn)",
                  what, wfx_shape_str(s, buf, sizeof buf));
}

int cpu_dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                const int *perm, wf_status *st) {
  dnnl_dims_t d, strides;
  int64_t stride = 1;
  dnnl_status_t s;

  assert(ndims >= 1 && ndims <= DNNL_MAX_NDIMS);
  for (int i = 0; i < ndims; i++)
    d[i] = dims[i];
  /* perm lists the dims from the outermost to the innermost in memory. */
  for (int i = ndims - 1; i >= 0; i--) {
    int a = perm ? perm[i] : i;
    strides[a] = stride;
    stride *= dims[a] > 0 ? dims[a] : 1;
  }
  s = dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, strides);
  return s == dnnl_success ? 0
                           : cpu_dnnl_fail(s, "memory descriptor setup", st);
}

int cpu_dnnl_md_tag(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                    dnnl_format_tag_t tag, wf_status *st) {
  dnnl_dims_t d;
  dnnl_status_t s;

  assert(ndims >= 1 && ndims <= DNNL_MAX_NDIMS);
  for (int i = 0; i < ndims; i++)
    d[i] = dims[i];
  s = dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, tag);
  return s == dnnl_success ? 0
                           : cpu_dnnl_fail(s, "memory descriptor setup", st);
}

int cpu_dnnl_attr(dnnl_primitive_attr_t *attr, wf_status *st) {
  dnnl_status_t s = dnnl_primitive_attr_create(attr);

  if (s != dnnl_success)
    return cpu_dnnl_fail(s, "attribute setup", st);
  s = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
  if (s != dnnl_success) {
    dnnl_primitive_attr_destroy(*attr);
    return cpu_dnnl_fail(s, "scratchpad mode setup", st);
  }
  return 0;
}

int cpu_dnnl_pd(dnnl_primitive_desc_t *pd, const void *op_desc,
                const_dnnl_primitive_desc_t hint, const char *what,
                wf_status *st) {
  dnnl_primitive_attr_t attr;
  dnnl_status_t s;

  *pd = NULL;
  if (cpu_dnnl_attr(&attr, st))
    return wfx_code(st);
  s = dnnl_primitive_desc_create(pd, op_desc, attr, cpu_dnnl_engine(), hint);
  dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) {
    *pd = NULL;
    return cpu_dnnl_refuse(s, what, st);
  }
  return 0;
}

/* oneDNN's eltwise algorithm and alpha for a fused activation. */
static int fused_alg(const opc_fused *f, dnnl_alg_kind_t *alg, float *alpha) {
  *alpha = 0.0f;
  switch (f->act) {
  case OPC_ACT_RELU:
    *alg = dnnl_eltwise_relu;
    return 1;
  case OPC_ACT_LEAKY_RELU:
    *alg = dnnl_eltwise_relu;
    *alpha = (float)f->alpha;
    return 1;
  case OPC_ACT_SIGMOID:
    *alg = dnnl_eltwise_logistic;
    return 1;
  case OPC_ACT_TANH:
    *alg = dnnl_eltwise_tanh;
    return 1;
  case OPC_ACT_ELU:
    *alg = dnnl_eltwise_elu;
    *alpha = 1.0f;
    return 1;
  case OPC_ACT_GELU:
    *alg = dnnl_eltwise_gelu_erf;
    return 1;
  default:
    return 0;
  }
}

int cpu_dnnl_pd_fused(dnnl_primitive_desc_t *pd, const void *op_desc,
                      const opc_fused *f, const char *what, wf_status *st) {
  dnnl_primitive_attr_t attr;
  dnnl_post_ops_t po = NULL;
  dnnl_alg_kind_t alg;
  float alpha;
  dnnl_status_t s = dnnl_success;

  *pd = NULL;
  if (cpu_dnnl_attr(&attr, st))
    return wfx_code(st);
  if (fused_alg(f, &alg, &alpha)) {
    s = dnnl_post_ops_create(&po);
    if (s == dnnl_success)
      s = dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, 0.0f);
    if (s == dnnl_success)
      s = dnnl_primitive_attr_set_post_ops(attr, po);
    if (po)
      dnnl_post_ops_destroy(po);
    if (s != dnnl_success) {
      dnnl_primitive_attr_destroy(attr);
      return cpu_dnnl_fail(s, "post-op setup", st);
    }
  }
  s = dnnl_primitive_desc_create(pd, op_desc, attr, cpu_dnnl_engine(), NULL);
  dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) {
    *pd = NULL;
    return cpu_dnnl_refuse(s, what, st);
  }
  return 0;
}

int cpu_dnnl_pd_is_ref(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;

  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl)
    return 0;
  return strncmp(impl, "ref", 3) == 0 || strstr(impl, ":ref") != NULL;
}

int cpu_dnnl_pd_is_direct(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;

  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl)
    return 0;
  return !cpu_dnnl_pd_is_ref(pd) && !strstr(impl, "gemm:");
}

/* ---- plans ------------------------------------------------------------------ */

int cpu_dnnl_plan_new(cpu_dnnl_plan **out, wf_status *st) {
  cpu_dnnl_plan *p = wfx_host->alloc(sizeof *p, 0);
  dnnl_status_t s;

  *out = NULL;
  if (!p)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a oneDNN plan");
  memset(p, 0, sizeof *p);
  s = dnnl_stream_create(&p->stream, cpu_dnnl_engine(),
                         dnnl_stream_default_flags);
  if (s != dnnl_success) {
    wfx_host->free(p);
    return cpu_dnnl_fail(s, "stream creation", st);
  }
  *out = p;
  return 0;
}

void cpu_dnnl_plan_free(cpu_dnnl_plan *p) {

  if (!p)
    return;
  for (int i = 0; i < p->nsteps; i++) {
    dnnl_primitive_destroy(p->steps[i].prim);
    if (p->steps[i].scratch)
      dnnl_memory_destroy(p->steps[i].scratch);
  }
  for (int i = 0; i < WF_DNNL_MAX_MEMS; i++) {
    cpu_dnnl_mem *m = &p->mems[i];
    if (m->reorder)
      dnnl_primitive_destroy(m->reorder);
    if (m->inner && m->inner != m->user)
      dnnl_memory_destroy(m->inner);
    if (m->user)
      dnnl_memory_destroy(m->user);
    wfx_host->free(m->buf);
    wfx_host->free(m->copy);
  }
  wfx_host->free(p->scratch);
  if (p->stream)
    dnnl_stream_destroy(p->stream);
  wfx_host->free(p);
}

/* A memory of md on the plan's own storage (host allocator). */
static int own_memory(const dnnl_memory_desc_t *md, dnnl_memory_t *mem,
                      void **buf, wf_status *st) {
  size_t bytes = dnnl_memory_desc_get_size(md);
  dnnl_status_t s;

  *buf = wfx_host->alloc(bytes ? bytes : 1, 0);
  if (!*buf)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %zu bytes of oneDNN working memory",
                    bytes);
  s = dnnl_memory_create(mem, md, cpu_dnnl_engine(), *buf);
  return s == dnnl_success ? 0 : cpu_dnnl_fail(s, "memory creation", st);
}

/* A reorder primitive from src to dst. */
static int make_reorder(dnnl_primitive_t *prim, const dnnl_memory_desc_t *src,
                        const dnnl_memory_desc_t *dst, wf_status *st) {
  dnnl_primitive_desc_t pd;
  dnnl_status_t s;

  s = dnnl_reorder_primitive_desc_create(&pd, src, cpu_dnnl_engine(), dst,
                                         cpu_dnnl_engine(), NULL);
  if (s != dnnl_success)
    return cpu_dnnl_fail(s, "reorder setup", st);
  s = dnnl_primitive_create(prim, pd);
  dnnl_primitive_desc_destroy(pd);
  return s == dnnl_success ? 0 : cpu_dnnl_fail(s, "reorder creation", st);
}

int cpu_dnnl_plan_mem(cpu_dnnl_plan *p, int i,
                      const dnnl_memory_desc_t *user_md,
                      const dnnl_memory_desc_t *want_md, int flags,
                      wf_status *st) {
  cpu_dnnl_mem *m;
  dnnl_status_t s;

  assert(i >= 0 && i < WF_DNNL_MAX_MEMS);
  m = &p->mems[i];
  assert(!m->user && !m->inner && "memory declared twice");
  if (i >= p->nmems)
    p->nmems = i + 1;
  m->flags = flags;
  if (flags & WF_DNNL_WEIGHTS)
    m->flags |= WF_DNNL_IN;
  if (flags & WF_DNNL_ZERO)
    m->flags |= WF_DNNL_OUT;
  m->size = dnnl_memory_desc_get_size(want_md ? want_md : user_md);
  if (!user_md) {
    assert(want_md && flags == 0);
    return own_memory(want_md, &m->inner, &m->buf, st);
  }
  /* The user memory's handle is set at each run. */
  s = dnnl_memory_create(&m->user, user_md, cpu_dnnl_engine(),
                         DNNL_MEMORY_NONE);
  if (s != dnnl_success)
    return cpu_dnnl_fail(s, "memory creation", st);
  if (!want_md || dnnl_memory_desc_equal(user_md, want_md)) {
    m->inner = m->user;
    return 0;
  }
  if (own_memory(want_md, &m->inner, &m->buf, st))
    return wfx_code(st);
  if (m->flags & WF_DNNL_OUT)
    return make_reorder(&m->reorder, want_md, user_md, st);
  return make_reorder(&m->reorder, user_md, want_md, st);
}

int cpu_dnnl_plan_step(cpu_dnnl_plan *p, const_dnnl_primitive_desc_t pd,
                       const int *arg_ids, const int *mem_of, int nargs,
                       wf_status *st) {
  cpu_dnnl_step *step;
  const dnnl_memory_desc_t *smd;
  size_t bytes;
  dnnl_status_t s;

  assert(p->nsteps < WF_DNNL_MAX_STEPS && nargs <= WF_DNNL_MAX_ARGS);
  step = &p->steps[p->nsteps];
  memset(step, 0, sizeof *step);
  s = dnnl_primitive_create(&step->prim, pd);
  if (s != dnnl_success)
    return cpu_dnnl_fail(s, "primitive creation", st);
  p->nsteps++;
  for (int j = 0; j < nargs; j++) {
    assert(mem_of[j] >= 0 && mem_of[j] < p->nmems && p->mems[mem_of[j]].inner);
    step->mem_of[j] = mem_of[j];
    step->args[j].arg = arg_ids[j];
    step->args[j].memory = p->mems[mem_of[j]].inner;
  }
  step->nargs = nargs;
  smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
  if (bytes > 0) {
    /* Bound to the shared buffer by cpu_dnnl_plan_finish. */
    s = dnnl_memory_create(&step->scratch, smd, cpu_dnnl_engine(),
                           DNNL_MEMORY_NONE);
    if (s != dnnl_success)
      return cpu_dnnl_fail(s, "scratchpad memory creation", st);
    step->args[step->nargs].arg = DNNL_ARG_SCRATCHPAD;
    step->args[step->nargs].memory = step->scratch;
    step->nargs++;
    if (bytes > p->scratch_bytes)
      p->scratch_bytes = bytes;
  }
  return 0;
}

void cpu_dnnl_plan_threads(cpu_dnnl_plan *p, int64_t work) {
  if (work < WF_DNNL_SMALL_WORK)
    p->threads = 1;
  cpu_omp_threads_n(p->threads);
}

int cpu_dnnl_plan_finish(cpu_dnnl_plan *p, wf_status *st) {
  if (p->scratch_bytes == 0)
    return 0;
  p->scratch = wfx_host->alloc(p->scratch_bytes, 0);
  if (!p->scratch)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a %zu-byte oneDNN scratchpad",
                    p->scratch_bytes);
  for (int i = 0; i < p->nsteps; i++)
    if (p->steps[i].scratch) {
      dnnl_status_t s =
          dnnl_memory_set_data_handle(p->steps[i].scratch, p->scratch);
      if (s != dnnl_success)
        return cpu_dnnl_fail(s, "scratchpad binding", st);
    }
  return 0;
}

/* 1 when the weights in m were reordered from these very bytes at data
 * (of this version: 0 when the core has none); otherwise remembers them
 * (when it can) for the next run. */
static int weights_current(cpu_dnnl_mem *m, const void *data,
                           uint64_t version) {
  const dnnl_memory_desc_t *md;
  size_t bytes;

  if (dnnl_memory_get_memory_desc(m->user, &md) != dnnl_success)
    return 0;
  bytes = dnnl_memory_desc_get_size(md);
  if (m->src == data && m->bytes == bytes) {
    if (version && m->version == version)
      return 1;
    if (!version && m->copy && memcmp(m->copy, data, bytes) == 0)
      return 1;
  }
  m->src = NULL;
  m->version = 0;
  if (version) { /* the version stands for the bytes: no copy needed */
    wfx_host->free(m->copy);
    m->copy = NULL;
    m->version = version;
  } else {
    if (!m->copy || m->bytes != bytes) {
      wfx_host->free(m->copy);
      m->copy = wfx_host->alloc(bytes ? bytes : 1, 0);
      if (!m->copy)
        return 0; /* no copy: reorder every run */
    }
    memcpy(m->copy, data, bytes);
  }
  m->bytes = bytes;
  m->src = data;
  return 0;
}

static int run_prim(dnnl_primitive_t prim, dnnl_stream_t stream, int nargs,
                    const dnnl_exec_arg_t *args, const char *what,
                    wf_status *st) {
  dnnl_status_t s = dnnl_primitive_execute(prim, stream, nargs, args);

  if (s == dnnl_success)
    s = dnnl_stream_wait(stream);
  return s == dnnl_success ? 0 : cpu_dnnl_fail(s, what, st);
}

int cpu_dnnl_plan_run(cpu_dnnl_plan *p, void *const *data,
                      const uint64_t *version, const char *what,
                      wf_status *st) {
  cpu_omp_threads_n(p->threads);
  for (int i = 0; i < p->nmems; i++) {
    cpu_dnnl_mem *m = &p->mems[i];
    dnnl_status_t s;

    if (!m->user)
      continue;
    assert(data[i]);
    s = dnnl_memory_set_data_handle(m->user, data[i]);
    if (s != dnnl_success)
      return cpu_dnnl_fail(s, "memory binding", st);
    if (!m->reorder || (m->flags & WF_DNNL_OUT))
      continue;
    if ((m->flags & WF_DNNL_WEIGHTS) &&
        weights_current(m, data[i], version ? version[i] : 0))
      continue;
    {
      dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m->user},
                                 {DNNL_ARG_TO, m->inner}};
      if (run_prim(m->reorder, p->stream, 2, args, "input reorder", st))
        return wfx_code(st);
    }
  }
  for (int i = 0; i < p->nmems; i++) {
    cpu_dnnl_mem *m = &p->mems[i];
    if (m->flags & WF_DNNL_ZERO)
      memset(m->buf ? m->buf : data[i], 0, m->size);
  }
  for (int i = 0; i < p->nsteps; i++) {
    cpu_dnnl_step *s = &p->steps[i];
    if (run_prim(s->prim, p->stream, s->nargs, s->args, what, st))
      return wfx_code(st);
  }
  for (int i = 0; i < p->nmems; i++) {
    cpu_dnnl_mem *m = &p->mems[i];
    if (m->reorder && (m->flags & WF_DNNL_OUT)) {
      dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m->inner},
                                 {DNNL_ARG_TO, m->user}};
      if (run_prim(m->reorder, p->stream, 2, args, "output reorder", st))
        return wfx_code(st);
    }
  }
  return 0;
}

dnnl_status_t cpu_dnnl_plan_exec(cpu_dnnl_plan *p, void *const *data) {
  for (int i = 0; i < p->nmems; i++) {
    cpu_dnnl_mem *m = &p->mems[i];
    dnnl_status_t s;

    assert(!m->reorder && !(m->flags & WF_DNNL_ZERO));
    if (!m->user)
      continue;
    s = dnnl_memory_set_data_handle(m->user, data[i]);
    if (s != dnnl_success)
      return s;
  }
  for (int i = 0; i < p->nsteps; i++) {
    cpu_dnnl_step *s = &p->steps[i];
    dnnl_status_t r = dnnl_primitive_execute(s->prim, p->stream, s->nargs,
                                             s->args);
    if (r == dnnl_success)
      r = dnnl_stream_wait(p->stream);
    if (r != dnnl_success)
      return r;
  }
  return dnnl_success;
}

/* ---- the per-node cache ------------------------------------------------------ */

void cpu_key_word(cpu_key *k, int64_t v) {
  assert(k->n < WF_CPU_KEY_MAX);
  k->w[k->n++] = v;
}

void cpu_key_shape(cpu_key *k, const wf_shape *s) {
  cpu_key_word(k, s->rank);
  for (int i = 0; i < s->rank; i++)
    cpu_key_word(k, s->dims[i]);
}

void cpu_dnnl_cache_init(cpu_dnnl_cache *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
}

void cpu_dnnl_cache_deinit(cpu_dnnl_cache *c) {
  for (int i = 0; i < c->n; i++) {
    assert(!c->e[i].busy && "a plan is still in use");
    cpu_dnnl_plan_free(c->e[i].plan);
  }
  c->n = 0;
  pthread_mutex_destroy(&c->lock);
}

static int key_equal(const cpu_key *a, const cpu_key *b) {
  return a->n == b->n && memcmp(a->w, b->w, (size_t)a->n * sizeof a->w[0]) == 0;
}

cpu_dnnl_plan *cpu_dnnl_cache_get(cpu_dnnl_cache *c, const cpu_key *key,
                                  cpu_dnnl_build_fn *build, void *arg,
                                  wf_status *st) {
  cpu_dnnl_plan *p;
  int victim = -1;

  /* The team its primitives are made for: a plan made for another width
   * (before or after other work crowded the cores) is not this one. */
  int width = cpu_team_width();

  pthread_mutex_lock(&c->lock);
  c->tick++;
  for (int i = 0; i < c->n; i++) {
    cpu_dnnl_cache_entry *e = &c->e[i];
    if (!e->busy && e->width == width && key_equal(&e->key, key)) {
      e->busy = 1;
      e->used = c->tick;
      pthread_mutex_unlock(&c->lock);
      return e->plan;
    }
  }
  pthread_mutex_unlock(&c->lock);

  /* Built outside the lock: creating primitives takes a while, and other
   * shapes of this node need not wait for it. */
  if (cpu_dnnl_plan_new(&p, st))
    return NULL;
  /* The team the primitives are made for, unless build makes it one
   * thread (cpu_dnnl_plan_threads). */
  p->threads = width;
  cpu_omp_threads_n(p->threads);
  if (build(arg, p, st) || cpu_dnnl_plan_finish(p, st)) {
    cpu_dnnl_plan_free(p);
    if (wfx_code(st) != WF_UNIMPLEMENTED)
      return NULL;
    /* oneDNN cannot do this shape: remember that, and let the kernel take
     * its other way every time. */
    wfx_host->log(
        WF_LOG_DEBUG, "device-cpu",
        "a shape oneDNN refuses is reported as unimplemented: %s",
        wfx_host->status_message(st));
    wfx_host->status_set(st, WF_OK, "%s", "");
    if (cpu_dnnl_plan_new(&p, st))
      return NULL;
    p->fallback = 1;
  }

  pthread_mutex_lock(&c->lock);
  if (c->n < WF_DNNL_CACHE_MAX) {
    victim = c->n++;
  } else {
    for (int i = 0; i < c->n; i++)
      if (!c->e[i].busy && (victim < 0 || c->e[i].used < c->e[victim].used))
        victim = i;
    if (victim >= 0)
      cpu_dnnl_plan_free(c->e[victim].plan);
  }
  if (victim >= 0) {
    c->e[victim].key = *key;
    c->e[victim].width = width;
    c->e[victim].plan = p;
    c->e[victim].busy = 1;
    c->e[victim].used = c->tick;
  }
  /* else every plan is in use: this one is freed when put back. */
  pthread_mutex_unlock(&c->lock);
  return p;
}

void cpu_dnnl_cache_put(cpu_dnnl_cache *c, cpu_dnnl_plan *p) {
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->n; i++)
    if (c->e[i].plan == p) {
      assert(c->e[i].busy);
      c->e[i].busy = 0;
      pthread_mutex_unlock(&c->lock);
      return;
    }
  pthread_mutex_unlock(&c->lock);
  cpu_dnnl_plan_free(p); /* a plan the full cache could not keep */
}

int cpu_dnnl_state_new(cpu_dnnl_state **out, wf_status *st) {
  cpu_dnnl_state *s = wfx_host->alloc(sizeof *s, 0);

  *out = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  cpu_dnnl_cache_init(&s->cache);
  *out = s;
  return 0;
}

void cpu_dnnl_state_free(void *state) {
  cpu_dnnl_state *s = state;

  if (!s)
    return;
  cpu_dnnl_cache_deinit(&s->cache);
  wfx_host->free(s);
}
