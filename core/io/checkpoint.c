/* core/io/checkpoint.c — checkpoints of sessions (weft/checkpoint.h): saving
 * variables, the step counter and iterator positions; restoring them
 * after every check has passed; directories of numbered checkpoints; the
 * wf_checkpoint reading API.
 *
 * The file format (parsing, checksums, atomic writes) is
 * core/io/safetensors.c's; the Save and Restore graph ops are
 * core/io/checkpoint_ops.c's. */
#include <config.h>

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/checkpoint_internal.h"
#include "data/dataset.h"
#include "exec/executor.h"
#include "io/file_io.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "exec/session_internal.h"
#include "base/status_internal.h"
#include "base/strmap.h"
#include "graph/tensor_internal.h"
#include "plugin/device_memory.h"

/* Options members are read only when the caller's struct holds them. */
#define OPT_HAS(o, T, m)                                                       \
  ((o) && (o)->struct_size >= offsetof(T, m) + sizeof((o)->m))

#define CKPT_PREFIX "ckpt-"
#define CKPT_SUFFIX ".safetensors"

/* ---- problem lists ------------------------------------------------------- */

void wf__problems_add(wf__problems *p, wf_code code, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;

  p->n++;
  if (p->code == WF_OK || code == WF_DATA_LOSS)
    p->code = code;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if (!msg) {
    p->lost = 1;
    return;
  }
  size_t add = strlen(msg) + 2;
  if (p->len + add + 1 > p->cap) {
    size_t cap = (p->cap ? p->cap * 2 : 256) + add;
    char *grown = realloc(p->text, cap);
    if (!grown) {
      p->lost = 1;
      free(msg);
      return;
    }
    p->text = grown;
    p->cap = cap;
  }
  p->len += (size_t)sprintf(p->text + p->len, "%s%s", p->len ? "; " : "", msg);
  free(msg);
}

int wf__problems_report(wf__problems *p, const char *what, wf_status *st) {
  int code = p->code;
  if (p->n == 0)
    return WF_OK;
  if (p->lost)
    wf_status_set(st, code,
                  "%s: %d problem%s (some lost for lack of memory): "
                  "%s",
                  what, p->n, p->n == 1 ? "" : "s", p->text ? p->text : "");
  else if (p->n == 1)
    wf_status_set(st, code, "%s: %s", what, p->text);
  else
    wf_status_set(st, code, "%s: %d problems: %s", what, p->n, p->text);
  wf__problems_deinit(p);
  return code;
}

void wf__problems_deinit(wf__problems *p) {
  free(p->text);
  *p = (wf__problems)WF__PROBLEMS_INIT;
}

/* wf__problems_report with "doing PATH" in front. */
static int report_on(wf__problems *p, const char *doing, const char *path,
                     wf_status *st) {
  char *what = wf__asprintf("%s %s", doing, path);
  int code = wf__problems_report(p, what ? what : path, st);
  wf__free(what);
  return code;
}

static int report_saving(wf__problems *p, const char *path, wf_status *st) {
  return report_on(p, "saving", path, st);
}

/* ---- saving -------------------------------------------------------------- */

int wf__checkpoint_save_vars(const char *path, wf__variable *const *vars, int n,
                             const wf__st_entry *extra, int nextra,
                             const char *const *keys, const char *const *values,
                             int nmeta, wf_status *st) {
  wf__problems p = WF__PROBLEMS_INIT;
  wf_tensor **snap = wf__calloc((size_t)n + 1, sizeof *snap);
  wf__st_entry *e = wf__calloc((size_t)(n + nextra) + 1, sizeof *e);
  size_t plen = strlen(WF_CHECKPOINT_ITERATOR_PREFIX);
  int code;

  if (!snap || !e) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "saving %s: out of memory",
                         path);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    wf__variable *v = vars[i];
    pthread_mutex_lock(&v->mu);
    snap[i] = v->value ? wf_tensor_retain(v->value) : NULL;
    pthread_mutex_unlock(&v->mu);
    if (snap[i] && snap[i]->mem) {
      /* A value in a device's memory is written from a host copy. */
      wf_status cs = {WF_OK, NULL};
      wf_tensor *h = wf__tensor_to(NULL, snap[i], &cs);
      wf_tensor_release(snap[i]);
      snap[i] = h;
      if (!h) {
        wf__problems_add(&p, wf_status_code(&cs), "variable '%s': %s",
                         v->name, wf_status_message(&cs));
        wf_status_reset(&cs);
        continue;
      }
    }
    if (strncmp(v->name, WF_CHECKPOINT_ITERATOR_PREFIX, plen) == 0)
      wf__problems_add(&p, WF_INVALID_ARGUMENT,
                       "variable '%s': names starting with '%s' are kept "
                       "for iterator positions",
                       v->name, WF_CHECKPOINT_ITERATOR_PREFIX);
    else if (!snap[i])
      wf__problems_add(&p, WF_FAILED_PRECONDITION,
                       "variable '%s' has no value yet (run its initializer "
                       "first)",
                       v->name);
    else
      e[i] = (wf__st_entry){v->name, v->dtype, v->shape, snap[i]->data};
  }
  if (p.n) {
    code = report_saving(&p, path, st);
    goto out;
  }
  for (int i = 0; i < nextra; i++)
    e[n + i] = extra[i];
  code = wf__st_write(path, e, n + nextra, keys, values, nmeta, st);
out:
  if (snap)
    for (int i = 0; i < n; i++)
      wf_tensor_release(snap[i]);
  wf__free(snap);
  wf__free(e);
  wf__problems_deinit(&p);
  return code;
}

/* Every variable of vs with a value, or those called names (problems for
 * the others). *out is wf__calloc'd. */
static int pick_vars(wf__varstore *vs, const char *path,
                     const char *const *names, int nnames, wf__variable ***out,
                     int *nout, wf_status *st) {
  int total = wf__varstore_count(vs), n = 0, code = WF_OK;
  wf__variable **vars =
      wf__calloc((size_t)(nnames > total ? nnames : total) + 1, sizeof *vars);
  wf__strmap byname;
  wf__problems p = WF__PROBLEMS_INIT;

  wf__strmap_init(&byname);
  if (!vars)
    goto oom;
  for (int i = 0; i < total; i++) {
    wf__variable *v = wf__varstore_at(vs, i);
    if (nnames > 0) {
      if (wf__strmap_put(&byname, v->name, v))
        goto oom;
      continue;
    }
    pthread_mutex_lock(&v->mu);
    int has_value = v->value != NULL;
    pthread_mutex_unlock(&v->mu);
    if (has_value)
      vars[n++] = v;
  }
  for (int i = 0; i < nnames; i++) {
    wf__variable *v = names[i] ? wf__strmap_get(&byname, names[i]) : NULL;
    int repeated = 0;
    for (int k = 0; v && k < n; k++)
      repeated |= vars[k] == v;
    if (!v)
      wf__problems_add(&p, WF_NOT_FOUND,
                       "'%s' is not a variable of the session",
                       names[i] ? names[i] : "(NULL)");
    else if (!repeated)
      vars[n++] = v;
  }
  if (p.n) {
    code = report_saving(&p, path, st);
    goto fail;
  }
  wf__strmap_deinit(&byname);
  *out = vars;
  *nout = n;
  return WF_OK;

oom:
  code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "saving %s: out of memory",
                       path);
fail:
  wf__problems_deinit(&p);
  wf__strmap_deinit(&byname);
  wf__free(vars);
  return code;
}

int wf_session_save(wf_session *s, const char *path, const wf_save_options *opt,
                    wf_status *st) {
  wf__session_state *state = wf__session_state_of(s);
  const char *const *names =
      OPT_HAS(opt, wf_save_options, names) ? opt->names : NULL;
  int nnames = names && OPT_HAS(opt, wf_save_options, nnames) ? opt->nnames : 0;
  int variables_only =
      OPT_HAS(opt, wf_save_options, variables_only) && opt->variables_only;
  int64_t global_step =
      OPT_HAS(opt, wf_save_options, global_step) ? opt->global_step : -1;
  int nits = variables_only ? 0 : wf__iterators_count(state->iterators);
  wf_tensor **pos = wf__calloc((size_t)nits + 1, sizeof *pos);
  char **posnames = wf__calloc((size_t)nits + 1, sizeof *posnames);
  wf__st_entry *extra = wf__calloc((size_t)nits + 1, sizeof *extra);
  wf__variable **vars = NULL;
  const char *keys[2], *values[2];
  char step_text[32], global_text[32];
  int nvars = 0, nextra = 0, nmeta = 0, code;

  assert(s && path);
  if (!pos || !posnames || !extra) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "saving %s: out of memory",
                         path);
    goto out;
  }
  if ((code = pick_vars(state->vars, path, names, nnames, &vars, &nvars, st)))
    goto out;
  for (int i = 0; i < nits; i++) {
    const char *name = NULL;
    wf_iterator *it = wf__iterators_at(state->iterators, i, &name);
    if (!it)
      continue;
    posnames[i] = wf__asprintf(WF_CHECKPOINT_ITERATOR_PREFIX "%s", name);
    if (!posnames[i]) {
      code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "saving %s: out of memory", path);
      goto out;
    }
    pos[i] = wf_iterator_save(it, st);
    if (!pos[i]) {
      wf_status_prefix(st, "saving %s: iterator '%s'", path, name);
      code = wf_status_code(st);
      goto out;
    }
    extra[nextra++] =
        (wf__st_entry){posnames[i], pos[i]->dtype, pos[i]->shape, pos[i]->data};
  }
  if (!variables_only) {
    snprintf(step_text, sizeof step_text, "%lld",
             (long long)atomic_load(&state->step));
    keys[nmeta] = WF_CHECKPOINT_STEP_KEY;
    values[nmeta++] = step_text;
  }
  if (global_step >= 0) {
    snprintf(global_text, sizeof global_text, "%" PRId64, global_step);
    keys[nmeta] = WF_CHECKPOINT_GLOBAL_STEP_KEY;
    values[nmeta++] = global_text;
  }
  code = wf__checkpoint_save_vars(path, vars, nvars, extra, nextra, keys,
                                  values, nmeta, st);
out:
  for (int i = 0; pos && i < nits; i++)
    wf_tensor_release(pos[i]);
  for (int i = 0; posnames && i < nits; i++)
    wf__free(posnames[i]);
  wf__free(pos);
  wf__free(posnames);
  wf__free(extra);
  wf__free(vars);
  return code;
}

/* ---- restoring ----------------------------------------------------------- */

/* msg without its "PATH: tensor 'NAME': " start, which the caller's
 * message says already. */
static const char *after_tensor_prefix(const char *msg, const char *path,
                                       const char *name) {
  size_t pl = strlen(path), nl = strlen(name);
  if (strncmp(msg, path, pl) == 0 && strncmp(msg + pl, ": tensor '", 10) == 0 &&
      strncmp(msg + pl + 10, name, nl) == 0 &&
      strncmp(msg + pl + 10 + nl, "': ", 3) == 0)
    return msg + pl + 10 + nl + 3;
  return msg;
}

void wf__restore_check(const wf_checkpoint *c, wf__restore_item *items, int n,
                       int partial, wf__problems *p) {
  wf_status rst = {WF_OK, NULL};
  char a[128], b[128];

  for (int i = 0; i < n; i++) {
    wf__restore_item *it = &items[i];
    int k = wf__st_find(c, it->name);
    if (k < 0) {
      if (!partial)
        wf__problems_add(p, WF_INVALID_ARGUMENT,
                         "variable '%s' is not in the file", it->name);
      continue;
    }
    const wf__st_tensor *t = &c->tensors[k];
    if (t->dtype != it->dtype) {
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "variable '%s' is %s, the file has %s", it->name,
                       wf_dtype_name(it->dtype), wf_dtype_name(t->dtype));
      continue;
    }
    if (!wf_shape_equal(&t->shape, &it->shape)) {
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "variable '%s' has shape %s, the file has %s", it->name,
                       wf_shape_str(&it->shape, a, sizeof a),
                       wf_shape_str(&t->shape, b, sizeof b));
      continue;
    }
    wf_tensor *v = wf__tensor_new_shape(it->dtype, &it->shape, &rst);
    if (!v || wf__st_read(c, k, v->data, &rst)) {
      wf__problems_add(
          p, wf_status_code(&rst), "variable '%s': %s", it->name,
          after_tensor_prefix(wf_status_message(&rst), c->path, it->name));
      wf_tensor_release(v);
      continue;
    }
    wf_tensor_release(it->value);
    it->value = v;
  }
  wf_status_reset(&rst);
}

int wf__restore_create(wf__varstore *vs, wf__restore_item *items, int n,
                       wf_status *st) {
  for (int i = 0; i < n; i++) {
    if (!items[i].value || items[i].var)
      continue;
    items[i].var = wf__varstore_get(vs, items[i].name, items[i].dtype,
                                    &items[i].shape, st);
    if (!items[i].var)
      return wf_status_code(st);
  }
  return WF_OK;
}

void wf__restore_assign(wf__restore_item *items, int n) {
  for (int i = 0; i < n; i++) {
    if (!items[i].value)
      continue;
    /* dtype and shape were checked against the variable's, and the value
     * is not a wrapped buffer: the assignment cannot fail. */
    int rc = wf__var_assign(items[i].var->handle, items[i].value, NULL);
    assert(rc == WF_OK);
    (void)rc;
  }
}

void wf__restore_items_clear(wf__restore_item *items, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(items[i].value);
    items[i].value = NULL;
  }
}

/* The variables a restore of s covers: the graph's variable declarations
 * (nodes of an op with WF_OP_VARIABLE, VarHandle)
 * and the session's variables (whose dtype and shape win), or only those
 * called names (unknown names are problems). */
static int collect_items(wf_session *s, const char *const *names, int nnames,
                         wf__restore_item **out, int *nout, wf__problems *p,
                         wf_status *st) {
  wf__session_state *state = wf__session_state_of(s);
  const wf_graph *g = wf__session_graph(s);
  int nnodes = wf_graph_num_nodes(g), nvars = wf__varstore_count(state->vars);
  wf__restore_item *all = wf__calloc((size_t)(nnodes + nvars) + 1, sizeof *all);
  wf__restore_item *picked = NULL;
  wf__strmap index; /* name -> position in all, plus one */
  int n = 0, m = 0;

  wf__strmap_init(&index);
  if (!all)
    goto oom;
  for (int i = 0; i < nnodes; i++) {
    const wf_node *node = wf_graph_node(g, i);
    if (!(node->op->def.flags & WF_OP_VARIABLE))
      continue;
    const wf_attr_value *dt = wf__node_attr(node, "dtype");
    const wf_attr_value *sh = wf__node_attr(node, "shape");
    const wf_attr_value *sn = wf__node_attr(node, "shared_name");
    if (!dt || dt->type != WF_ATTR_DTYPE || !sh || sh->type != WF_ATTR_SHAPE)
      continue;
    const char *name = sn && sn->type == WF_ATTR_STRING && sn->u.s && *sn->u.s
                           ? sn->u.s
                           : wf_node_name(node);
    if (wf__strmap_get(&index, name))
      continue;
    all[n] = (wf__restore_item){name, (wf_dtype)dt->u.dtype, sh->u.shape, NULL,
                                NULL};
    if (wf__strmap_put(&index, name, (void *)(intptr_t)(n + 1)))
      goto oom;
    n++;
  }
  for (int i = 0; i < nvars; i++) {
    wf__variable *v = wf__varstore_at(state->vars, i);
    intptr_t at = (intptr_t)wf__strmap_get(&index, v->name);
    if (!at) {
      if (wf__strmap_put(&index, v->name, (void *)(intptr_t)(n + 1)))
        goto oom;
      at = ++n;
    }
    all[at - 1] = (wf__restore_item){v->name, v->dtype, v->shape, v, NULL};
  }
  if (nnames <= 0) {
    wf__strmap_deinit(&index);
    *out = all;
    *nout = n;
    return WF_OK;
  }
  picked = wf__calloc((size_t)nnames + 1, sizeof *picked);
  if (!picked)
    goto oom;
  for (int i = 0; i < nnames; i++) {
    intptr_t at = names[i] ? (intptr_t)wf__strmap_get(&index, names[i]) : 0;
    if (!at) {
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "'%s' is not a variable of the session or its graph",
                       names[i] ? names[i] : "(NULL)");
      continue;
    }
    if (all[at - 1].name == NULL)
      continue; /* named twice */
    picked[m++] = all[at - 1];
    all[at - 1].name = NULL;
  }
  wf__free(all);
  wf__strmap_deinit(&index);
  *out = picked;
  *nout = m;
  return WF_OK;

oom:
  wf__free(all);
  wf__free(picked);
  wf__strmap_deinit(&index);
  return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
}

/* A position to restore into an attached iterator. */
typedef struct iter_item {
  wf_iterator *it;
  const char *name;
  wf_tensor *pos;    /* from the file */
  wf_tensor *backup; /* its position before, to roll back */
} iter_item;

/* The positions the file has for s's attached iterators (read and
 * checksummed; problems added). */
/* The positions in c of the attached iterators: all of them (want NULL),
 * or only those named in want[0..nwant) (attachment names; each must be
 * attached, and in the file unless partial). */
static int check_iterators(wf_session *s, const wf_checkpoint *c,
                           const char *const *want, int nwant, int partial,
                           iter_item **out, int *nout, wf__problems *p,
                           wf_status *st) {
  wf__iterators *its = wf__session_state_of(s)->iterators;
  int nits = wf__iterators_count(its), n = 0;

  for (int w = 0; want && w < nwant; w++)
    if (!wf__iterators_find(its, want[w]))
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "'%s%s' names no iterator attached to the session",
                       WF_CHECKPOINT_ITERATOR_PREFIX, want[w]);
  iter_item *items = wf__calloc((size_t)nits + 1, sizeof *items);
  wf_status rst = {WF_OK, NULL};
  char shape[128];

  if (!items)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < nits; i++) {
    const char *name = NULL;
    wf_iterator *it = wf__iterators_at(its, i, &name);
    int wanted = !want;
    for (int w = 0; want && w < nwant && !wanted; w++)
      wanted = strcmp(want[w], name) == 0;
    if (!wanted)
      continue;
    char *tname =
        it ? wf__asprintf(WF_CHECKPOINT_ITERATOR_PREFIX "%s", name) : NULL;
    int k = tname ? wf__st_find(c, tname) : -1;
    if (it && !tname) {
      for (int j = 0; j < n; j++)
        wf_tensor_release(items[j].pos);
      wf__free(items);
      wf_status_reset(&rst);
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    }
    wf__free(tname);
    if (k < 0 && want && !partial)
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "iterator '%s': the file holds no position for it",
                       name);
    if (k < 0)
      continue;
    const wf__st_tensor *t = &c->tensors[k];
    if (t->dtype != WF_UINT8 || t->shape.rank != 1) {
      wf__problems_add(p, WF_INVALID_ARGUMENT,
                       "iterator '%s': the file's position is %s %s, not a "
                       "vector of uint8",
                       name, wf_dtype_name(t->dtype),
                       wf_shape_str(&t->shape, shape, sizeof shape));
      continue;
    }
    wf_tensor *pos = wf__tensor_new_shape(WF_UINT8, &t->shape, &rst);
    if (!pos || wf__st_read(c, k, pos->data, &rst)) {
      wf__problems_add(
          p, wf_status_code(&rst), "iterator '%s': %s", name,
          after_tensor_prefix(wf_status_message(&rst), c->path, t->name));
      wf_tensor_release(pos);
      continue;
    }
    items[n++] = (iter_item){it, name, pos, NULL};
  }
  wf_status_reset(&rst);
  *out = items;
  *nout = n;
  return WF_OK;
}

/* Restores every position, or none: on a failure the ones already
 * restored go back to where they were. */
static int restore_iterators(iter_item *items, int n, wf_status *st) {
  int done;
  for (int i = 0; i < n; i++) {
    items[i].backup = wf_iterator_save(items[i].it, st);
    if (!items[i].backup) {
      wf_status_prefix(st, "iterator '%s': saving its position first",
                       items[i].name);
      return wf_status_code(st);
    }
  }
  for (done = 0; done < n; done++)
    if (wf_iterator_restore(items[done].it, items[done].pos, st))
      break;
  if (done == n)
    return WF_OK;
  wf_status_prefix(st, "iterator '%s'", items[done].name);
  for (int i = 0; i < done; i++)
    (void)wf_iterator_restore(items[i].it, items[i].backup, NULL);
  return wf_status_code(st);
}

static int parse_step(const char *text, int64_t *out) {
  char *end;
  long long v;
  if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
    return 0;
  errno = 0;
  v = strtoll(text, &end, 10);
  if (errno || *end || v < 0)
    return 0;
  *out = (int64_t)v;
  return 1;
}

int wf_session_restore(wf_session *s, const char *path,
                       const wf_restore_options *opt, wf_status *st) {
  wf__session_state *state = wf__session_state_of(s);
  int partial = OPT_HAS(opt, wf_restore_options, partial) && opt->partial;
  const char *const *names =
      OPT_HAS(opt, wf_restore_options, names) ? opt->names : NULL;
  int nnames =
      names && OPT_HAS(opt, wf_restore_options, nnames) ? opt->nnames : 0;
  wf__problems p = WF__PROBLEMS_INIT;
  wf__restore_item *items = NULL;
  iter_item *its = NULL;
  int n = 0, nits = 0, code, has_step = 0;
  int64_t step = 0;
  wf_checkpoint *c;
  /* A name list picks variables, and the step counter and iterators by
   * the names the file gives them. */
  const char **vnames = NULL, **inames = NULL;
  int nv = 0, ni = 0, want_step = nnames <= 0;
  size_t plen = strlen(WF_CHECKPOINT_ITERATOR_PREFIX);

  assert(s && path);
  if (nnames > 0) {
    vnames = wf__calloc((size_t)nnames, sizeof *vnames);
    inames = wf__calloc((size_t)nnames, sizeof *inames);
    if (!vnames || !inames) {
      wf__free(vnames);
      wf__free(inames);
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "restoring %s: out of memory", path);
    }
    for (int i = 0; i < nnames; i++) {
      if (names[i] && strcmp(names[i], WF_CHECKPOINT_STEP_KEY) == 0)
        want_step = 1;
      else if (names[i] &&
               strncmp(names[i], WF_CHECKPOINT_ITERATOR_PREFIX, plen) == 0)
        inames[ni++] = names[i] + plen;
      else
        vnames[nv++] = names[i];
    }
  }
  c = wf__st_open(path, st);
  if (!c) {
    wf__free(vnames);
    wf__free(inames);
    return wf_status_code(st);
  }
  if (nnames <= 0 || nv > 0) {
    if ((code = collect_items(s, vnames, nv, &items, &n, &p, st)))
      goto out;
  } else if (!(items = wf__calloc(1, sizeof *items))) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "restoring %s: out of memory", path);
    goto out;
  }
  wf__restore_check(c, items, n, partial, &p);
  if (want_step) {
    const char *text = wf__st_meta(c, WF_CHECKPOINT_STEP_KEY);
    if (text && !(has_step = parse_step(text, &step)))
      wf__problems_add(&p, WF_DATA_LOSS,
                       "metadata %s is '%s', not a step count",
                       WF_CHECKPOINT_STEP_KEY, text);
    if (!text && nnames > 0 && !partial)
      wf__problems_add(&p, WF_INVALID_ARGUMENT,
                       "'%s': the file holds no step counter",
                       WF_CHECKPOINT_STEP_KEY);
  }
  if (nnames <= 0 || ni > 0) {
    if ((code = check_iterators(s, c, nnames > 0 ? inames : NULL, ni,
                                partial, &its, &nits, &p, st)))
      goto out;
  }
  if ((code = report_on(&p, "restoring", path, st)))
    goto out;

  /* Everything checked: create, move the iterators (all or none), then
   * assign, which cannot fail. */
  if ((code = wf__restore_create(state->vars, items, n, st)) ||
      (code = restore_iterators(its, nits, st))) {
    wf_status_prefix(st, "restoring %s", path);
    goto out;
  }
  wf__restore_assign(items, n);
  if (has_step)
    atomic_store(&state->step, (long long)step);
  code = WF_OK;
out:
  for (int i = 0; its && i < nits; i++) {
    wf_tensor_release(its[i].pos);
    wf_tensor_release(its[i].backup);
  }
  wf__free(its);
  if (items)
    wf__restore_items_clear(items, n);
  wf__free(items);
  wf__problems_deinit(&p);
  wf__st_close(c);
  wf__free(vnames);
  wf__free(inames);
  return code;
}

/* ---- directories --------------------------------------------------------- */

int wf_checkpoint_path(const char *dir, int64_t step, char *path, size_t len,
                       wf_status *st) {
  int k;
  if (step < 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "checkpoint step %" PRId64 " is negative", step);
  k = snprintf(path, len, "%s/" CKPT_PREFIX "%010" PRId64 CKPT_SUFFIX, dir,
               step);
  if (k < 0 || (size_t)k >= len)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the checkpoint path of step %" PRId64
                         " does not fit in %zu bytes",
                         dir, step, len);
  return WF_OK;
}

/* 1 with *step set when name is exactly what wf_checkpoint_path makes. */
static int parse_ckpt_name(const char *name, int64_t *step) {
  size_t pl = strlen(CKPT_PREFIX), sl = strlen(CKPT_SUFFIX), n = strlen(name);
  char canon[64];
  int64_t v = 0;

  if (n <= pl + sl || n - pl - sl > 19 || strncmp(name, CKPT_PREFIX, pl) != 0 ||
      strcmp(name + n - sl, CKPT_SUFFIX) != 0)
    return 0;
  for (size_t i = pl; i < n - sl; i++) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
      return 0;
    v = v * 10 + (name[i] - '0');
  }
  snprintf(canon, sizeof canon, CKPT_PREFIX "%010" PRId64 CKPT_SUFFIX, v);
  if (strcmp(canon, name) != 0)
    return 0;
  *step = v;
  return 1;
}

static int by_step(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int wf_checkpoint_list(const char *dir, int64_t **steps, int *n,
                       wf_status *st) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int64_t *list = NULL, step;
  int count = 0, cap = 0;

  *steps = NULL;
  *n = 0;
  if (!d)
    return wf__io_error(st, errno, dir, "listing checkpoints");
  while ((e = readdir(d)) != NULL) {
    if (!parse_ckpt_name(e->d_name, &step))
      continue;
    if (count == cap) {
      int grown_cap = cap ? cap * 2 : 16;
      int64_t *grown = realloc(list, (size_t)grown_cap * sizeof *grown);
      if (!grown) {
        free(list);
        closedir(d);
        return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                             "%s: out of memory listing checkpoints", dir);
      }
      list = grown;
      cap = grown_cap;
    }
    list[count++] = step;
  }
  closedir(d);
  if (count)
    qsort(list, (size_t)count, sizeof *list, by_step);
  *steps = list;
  *n = count;
  return WF_OK;
}

/* mkdir -p. */
static int make_dirs(const char *dir, wf_status *st) {
  char *p = wf__strdup(dir);
  struct stat sb;
  int code = WF_OK;

  if (!p)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", dir);
  for (char *q = p + 1;; q++) {
    if (*q != '/' && *q != '\0')
      continue;
    char c = *q;
    *q = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      code = wf__io_error(st, errno, p, "creating the directory");
      break;
    }
    *q = c;
    if (!c)
      break;
  }
  if (!code && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
    code = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: exists and is not a directory", dir);
  wf__free(p);
  return code;
}

/* Deletes the temporary files in dir whose writing process is gone. */
static void remove_stale_temps(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  long pid;

  if (!d)
    return;
  while ((e = readdir(d)) != NULL) {
    if (!wf__atomic_is_temp(e->d_name, NULL, &pid) || pid == (long)getpid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    char *path = wf__asprintf("%s/%s", dir, e->d_name);
    if (path && unlink(path) != 0 && errno != ENOENT)
      wf__log(WF_LOG_WARNING, "checkpoint", "cannot remove %s: %s", path,
              strerror(errno));
    wf__free(path);
  }
  closedir(d);
}

int wf_checkpoint_save_dir(wf_session *s, const char *dir, int64_t step,
                           int keep, wf_status *st) {
  wf_save_options opt = WF_SAVE_OPTIONS_INIT;
  size_t len = strlen(dir) + 64;
  char *path = wf__alloc(len, 0), *old = wf__alloc(len, 0);
  int64_t *steps = NULL;
  int n = 0, code;

  if (!path || !old) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", dir);
    goto out;
  }
  opt.global_step = step;
  if (!*dir) {
    code = wf_status_set(st, WF_INVALID_ARGUMENT,
                         "saving a checkpoint: the directory name is empty");
    goto out;
  }
  if ((code = wf_checkpoint_path(dir, step, path, len, st)) ||
      (code = make_dirs(dir, st)) ||
      (code = wf_session_save(s, path, &opt, st)))
    goto out;
  /* The oldest go first, never the one just written (a step below the
   * others' would otherwise delete itself). */
  if (keep > 0 && wf_checkpoint_list(dir, &steps, &n, NULL) == WF_OK)
    for (int i = 0, excess = n - keep; i < n && excess > 0; i++) {
      if (steps[i] == step)
        continue;
      excess--;
      wf_checkpoint_path(dir, steps[i], old, len, NULL);
      if (unlink(old) != 0 && errno != ENOENT)
        wf__log(WF_LOG_WARNING, "checkpoint", "cannot remove %s: %s", old,
                strerror(errno));
    }
  remove_stale_temps(dir);
out:
  free(steps);
  wf__free(old);
  wf__free(path);
  return code;
}

int wf_checkpoint_latest(const char *dir, char *path, size_t len,
                         wf_status *st) {
  wf_status vst = {WF_OK, NULL};
  size_t cap = strlen(dir) + 64;
  char *p = wf__alloc(cap, 0), *newest_error = NULL;
  int64_t *steps = NULL;
  int n = 0, bad = 0, code;

  if (!p)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", dir);
  if ((code = wf_checkpoint_list(dir, &steps, &n, st)))
    goto out;
  for (int i = n - 1; i >= 0; i--) {
    wf_checkpoint_path(dir, steps[i], p, cap, NULL);
    if (wf_checkpoint_verify(p, &vst) == WF_OK) {
      if (strlen(p) >= len) {
        code = wf_status_set(st, WF_INVALID_ARGUMENT,
                             "%s: the path does not fit in %zu bytes", p, len);
        goto out;
      }
      strcpy(path, p);
      code = WF_OK;
      goto out;
    }
    wf__log(WF_LOG_WARNING, "checkpoint",
            "skipping a checkpoint that does not verify: %s",
            wf_status_message(&vst));
    if (!bad++)
      newest_error = wf__strdup(wf_status_message(&vst));
  }
  if (bad)
    code = wf_status_set(st, WF_NOT_FOUND,
                         "%s: none of its %d checkpoint%s verifies; the "
                         "newest: %s",
                         dir, bad, bad == 1 ? "" : "s",
                         newest_error ? newest_error : "(out of memory)");
  else
    code = wf_status_set(st, WF_NOT_FOUND, "%s: no checkpoint (%s files)", dir,
                         CKPT_PREFIX "<step>" CKPT_SUFFIX);
out:
  wf_status_reset(&vst);
  wf__free(newest_error);
  free(steps);
  wf__free(p);
  return code;
}

/* ---- checkpoint files ---------------------------------------------------- */

wf_checkpoint *wf_checkpoint_open(const char *path, wf_status *st) {
  return wf__st_open(path, st);
}

void wf_checkpoint_close(wf_checkpoint *c) { wf__st_close(c); }

const char *wf_checkpoint_file(const wf_checkpoint *c) { return c->path; }

uint64_t wf_checkpoint_size(const wf_checkpoint *c) { return c->size; }

int wf_checkpoint_num_tensors(const wf_checkpoint *c) { return c->ntensors; }

const char *wf_checkpoint_tensor_name(const wf_checkpoint *c, int i) {
  assert(i >= 0 && i < c->ntensors);
  return c->tensors[i].name;
}

wf_dtype wf_checkpoint_tensor_dtype(const wf_checkpoint *c, int i) {
  assert(i >= 0 && i < c->ntensors);
  return c->tensors[i].dtype;
}

void wf_checkpoint_tensor_shape(const wf_checkpoint *c, int i, wf_shape *out) {
  assert(i >= 0 && i < c->ntensors);
  *out = c->tensors[i].shape;
}

int wf_checkpoint_find(const wf_checkpoint *c, const char *name) {
  return wf__st_find(c, name);
}

wf_tensor *wf_checkpoint_read(const wf_checkpoint *c, int i, wf_status *st) {
  assert(i >= 0 && i < c->ntensors);
  wf_tensor *t =
      wf__tensor_new_shape(c->tensors[i].dtype, &c->tensors[i].shape, st);
  if (!t) {
    wf_status_prefix(st, "%s: tensor '%s'", c->path, c->tensors[i].name);
    return NULL;
  }
  if (wf__st_read(c, i, t->data, st)) {
    wf_tensor_release(t);
    return NULL;
  }
  return t;
}

int wf_checkpoint_num_metadata(const wf_checkpoint *c) { return c->nmeta; }

const char *wf_checkpoint_metadata_key(const wf_checkpoint *c, int i) {
  assert(i >= 0 && i < c->nmeta);
  return c->meta_keys[i];
}

const char *wf_checkpoint_metadata_value(const wf_checkpoint *c, int i) {
  assert(i >= 0 && i < c->nmeta);
  return c->meta_values[i];
}

const char *wf_checkpoint_metadata(const wf_checkpoint *c, const char *key) {
  return wf__st_meta(c, key);
}

int wf_checkpoint_verify(const char *path, wf_status *st) {
  wf_checkpoint *c = wf__st_open(path, st);
  wf__problems p = WF__PROBLEMS_INIT;
  wf_status rst = {WF_OK, NULL};
  size_t pl = strlen(path);
  int code;

  if (!c)
    return wf_status_code(st);
  for (int i = 0; i < c->ntensors; i++)
    if (wf__st_check(c, i, &rst)) {
      const char *msg = wf_status_message(&rst);
      if (strncmp(msg, path, pl) == 0 && strncmp(msg + pl, ": ", 2) == 0)
        msg += pl + 2;
      wf__problems_add(&p, wf_status_code(&rst), "%s", msg);
    }
  code = wf__problems_report(&p, path, st);
  wf_status_reset(&rst);
  wf__st_close(c);
  return code;
}

int wf_checkpoint_write(const char *path, const char *const *names,
                        wf_tensor *const *tensors, int n,
                        const char *const *meta_keys,
                        const char *const *meta_values, int nmeta,
                        wf_status *st) {
  wf__st_entry *e = wf__calloc((size_t)n + 1, sizeof *e);
  int code;

  if (!e)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  for (int i = 0; i < n; i++) {
    if (!tensors[i]) {
      wf__free(e);
      return wf_status_set(st, WF_INVALID_ARGUMENT, "%s: tensor %d is NULL",
                           path, i);
    }
    e[i] = (wf__st_entry){names[i], tensors[i]->dtype, tensors[i]->shape,
                          tensors[i]->data};
  }
  code = wf__st_write(path, e, n, meta_keys, meta_values, nmeta, st);
  wf__free(e);
  return code;
}
