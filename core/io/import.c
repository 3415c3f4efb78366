/* core/io/import.c — models of other frameworks through importer plugins
 * (weft/import.h): choosing the importer (by name, extension or the file's
 * first bytes), the host table's import_* entries it builds with, and
 * writing the result as a saved model. What a format means is the
 * importer's business; nothing here reads a model format. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <weft/import.h>
#include <weft/session.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "compile/gradients.h"
#include "graph/graph_internal.h"
#include "io/import_internal.h"
#include "plugin/runtime_internal.h"

typedef struct sig_rec {
  wf_signature_def def;
  char *name;
  char **in_keys, **out_keys;
  wf_output *inputs, *outputs;
} sig_rec;

struct wf_imported {
  wf_graph *g;
  wf_node **init;
  int num_init, cap_init;
  sig_rec *sigs;
  int num_sigs;
  const char *format;
};

struct wf_import_ctx {
  wf_imported *m;
};

/* ---- the result ------------------------------------------------------------ */

static void sig_clear(sig_rec *r) {
  for (int j = 0; j < r->def.ninputs && r->in_keys; j++)
    wf__free(r->in_keys[j]);
  for (int j = 0; j < r->def.noutputs && r->out_keys; j++)
    wf__free(r->out_keys[j]);
  wf__free(r->in_keys);
  wf__free(r->out_keys);
  wf__free(r->inputs);
  wf__free(r->outputs);
  wf__free(r->name);
}

void wf_imported_free(wf_imported *m) {
  if (!m)
    return;
  for (int i = 0; i < m->num_sigs; i++)
    sig_clear(&m->sigs[i]);
  wf__free(m->sigs);
  wf__free(m->init);
  wf_graph_free(m->g);
  wf__free(m);
}

wf_graph *wf_imported_graph(const wf_imported *m) { return m->g; }

wf_node *const *wf_imported_init(const wf_imported *m, int *n) {
  *n = m->num_init;
  return m->init;
}

int wf_imported_num_signatures(const wf_imported *m) { return m->num_sigs; }

const wf_signature_def *wf_imported_signature(const wf_imported *m, int i) {
  return i >= 0 && i < m->num_sigs ? &m->sigs[i].def : NULL;
}

const char *wf_imported_format(const wf_imported *m) { return m->format; }

/* ---- the host table's import_* entries ----------------------------------- */

/* o is an output of a node of g. */
static int import_output_ok(wf_graph *g, wf_output o) {
  return o.node && o.node->graph == g && o.index >= 0 &&
         o.index < o.node->num_outputs;
}

wf_node *wf__import_add_node(wf_import_ctx *ctx, const char *op,
                             const char *name, const wf_output *inputs,
                             int32_t ninputs, const wf_attr_item *attrs,
                             int32_t nattrs, wf_status *st) {
  wf_graph *g = ctx->m->g;
  for (int32_t i = 0; i < ninputs; i++)
    if (!import_output_ok(g, inputs[i])) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "importing node '%s' (op '%s'): input %d is not an output "
                    "of a node of the model",
                    name ? name : "?", op, (int)i);
      return NULL;
    }
  if (name && wf_graph_find_node(g, name)) {
    wf_status_set(st, WF_ALREADY_EXISTS,
                  "importing node '%s' (op '%s'): the name is taken", name,
                  op);
    return NULL;
  }
  return wf__node_add_flat(g, op, name, inputs, ninputs, attrs, nattrs, st);
}

int wf__import_add_gradients(wf_import_ctx *ctx, wf_output y,
                             const wf_output *xs, int32_t nxs, wf_output *dxs,
                             wf_status *st) {
  wf_graph *g = ctx->m->g;
  wf_gradient *gr;
  int rc;

  if (!import_output_ok(g, y))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "importing gradients: y is not an output of a node "
                         "of the model");
  for (int32_t i = 0; i < nxs; i++)
    if (!import_output_ok(g, xs[i]))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "importing gradients: x %d is not an output of a "
                           "node of the model",
                           (int)i);
  if (nxs <= 0)
    return 0;
  gr = wf__calloc((size_t)nxs, sizeof *gr);
  if (!gr)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "importing gradients: out of memory");
  rc = wf_graph_add_gradients(g, &y, 1, NULL, xs, nxs, gr, st);
  for (int32_t i = 0; rc == 0 && i < nxs; i++)
    rc = wf__gradient_dense(g, &gr[i], &dxs[i], st);
  wf__free(gr);
  return rc;
}

wf_node *wf__import_find_node(wf_import_ctx *ctx, const char *name) {
  return wf_graph_find_node(ctx->m->g, name);
}

int wf__import_add_init(wf_import_ctx *ctx, wf_node *n, wf_status *st) {
  wf_imported *m = ctx->m;
  if (!n || n->graph != m->g)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "importing: an initialiser that is not a node of the "
                         "model");
  if (m->num_init == m->cap_init) {
    int cap = m->cap_init ? 2 * m->cap_init : 16;
    wf_node **grown = wf__realloc(m->init, (size_t)cap * sizeof *grown);
    if (!grown)
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "importing: out of memory");
    m->init = grown;
    m->cap_init = cap;
  }
  m->init[m->num_init++] = n;
  return 0;
}

static char **copy_keys(const char *const *keys, int n) {
  char **out = wf__calloc((size_t)n + 1, sizeof *out);
  for (int j = 0; out && j < n; j++)
    if (!(out[j] = wf__strdup(keys[j] ? keys[j] : ""))) {
      for (int k = 0; k < j; k++)
        wf__free(out[k]);
      wf__free(out);
      return NULL;
    }
  return out;
}

int wf__import_add_signature(wf_import_ctx *ctx, const char *name,
                             const char *const *input_keys,
                             const wf_output *inputs, int32_t ninputs,
                             const char *const *output_keys,
                             const wf_output *outputs, int32_t noutputs,
                             wf_status *st) {
  wf_imported *m = ctx->m;
  if (!name || !*name)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "importing: a signature without a name");
  for (int i = 0; i < m->num_sigs; i++)
    if (strcmp(m->sigs[i].name, name) == 0)
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "importing: signature '%s' is added twice", name);
  for (int32_t j = 0; j < ninputs; j++)
    if (!inputs[j].node || inputs[j].node->graph != m->g ||
        !(inputs[j].node->op->def.flags & WF_OP_SOURCE_FED))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "importing signature '%s': input '%s' is not a "
                           "Placeholder of the model",
                           name, input_keys[j] ? input_keys[j] : "?");
  for (int32_t j = 0; j < noutputs; j++)
    if (!outputs[j].node || outputs[j].node->graph != m->g ||
        outputs[j].index < 0 ||
        outputs[j].index >= outputs[j].node->num_outputs)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "importing signature '%s': output '%s' is not an "
                           "output of a node of the model",
                           name, output_keys[j] ? output_keys[j] : "?");
  sig_rec *grown =
      wf__realloc(m->sigs, (size_t)(m->num_sigs + 1) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "importing: out of memory");
  m->sigs = grown;
  sig_rec *r = &m->sigs[m->num_sigs];
  memset(r, 0, sizeof *r);
  r->def.ninputs = ninputs;
  r->def.noutputs = noutputs;
  r->name = wf__strdup(name);
  r->in_keys = copy_keys(input_keys, ninputs);
  r->out_keys = copy_keys(output_keys, noutputs);
  r->inputs = wf__calloc((size_t)ninputs + 1, sizeof *r->inputs);
  r->outputs = wf__calloc((size_t)noutputs + 1, sizeof *r->outputs);
  if (!r->name || !r->in_keys || !r->out_keys || !r->inputs || !r->outputs) {
    sig_clear(r);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "importing: out of memory");
  }
  if (ninputs)
    memcpy(r->inputs, inputs, (size_t)ninputs * sizeof *inputs);
  if (noutputs)
    memcpy(r->outputs, outputs, (size_t)noutputs * sizeof *outputs);
  r->def.name = r->name;
  r->def.input_keys = (const char *const *)r->in_keys;
  r->def.output_keys = (const char *const *)r->out_keys;
  r->def.inputs = r->inputs;
  r->def.outputs = r->outputs;
  m->num_sigs++;
  return 0;
}

/* ---- choosing the importer ------------------------------------------------- */

/* Whether name ends in one of the comma-separated extensions. */
static int has_extension(const char *name, const char *exts) {
  size_t len = strlen(name);
  for (const char *p = exts; p && *p;) {
    while (*p == ' ' || *p == ',')
      p++;
    const char *end = p;
    while (*end && *end != ',')
      end++;
    size_t n = (size_t)(end - p);
    while (n > 0 && p[n - 1] == ' ')
      n--;
    if (n > 0 && n <= len && strncasecmp(name + len - n, p, n) == 0)
      return 1;
    p = end;
  }
  return 0;
}

static const wf__importer *choose(wf_runtime *rt, const char *path,
                                  const char *format, wf_status *st) {
  char have[512] = "";
  size_t used = 0;
  for (int i = 0; i < rt->num_importers && used < sizeof have; i++)
    used += (size_t)snprintf(have + used, sizeof have - used, "%s%s",
                             i ? ", " : "", rt->importers[i].def.name);
  if (format) {
    for (int i = 0; i < rt->num_importers; i++)
      if (strcmp(rt->importers[i].def.name, format) == 0)
        return &rt->importers[i];
    wf_status_set(st, WF_NOT_FOUND,
                  "importing %s: no importer called '%s' (loaded: %s)", path,
                  format, rt->num_importers ? have : "none");
    return NULL;
  }
  for (int i = 0; i < rt->num_importers; i++)
    if (has_extension(path, rt->importers[i].def.extensions))
      return &rt->importers[i];
  unsigned char head[64];
  size_t n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    wf_status_set(st, errno == ENOENT ? WF_NOT_FOUND : WF_PERMISSION_DENIED,
                  "importing %s: %s", path, strerror(errno));
    return NULL;
  }
  n = fread(head, 1, sizeof head, f);
  fclose(f);
  for (int i = 0; i < rt->num_importers; i++)
    if (rt->importers[i].def.sniff && rt->importers[i].def.sniff(head, n))
      return &rt->importers[i];
  wf_status_set(st, WF_NOT_FOUND,
                "importing %s: no importer takes this file by its name or "
                "its first bytes (loaded: %s); name one with a format",
                path, rt->num_importers ? have : "none");
  return NULL;
}

wf_imported *wf_import(wf_runtime *rt, const char *path, const char *format,
                       wf_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    wf_status_set(st, errno == ENOENT ? WF_NOT_FOUND : WF_PERMISSION_DENIED,
                  "importing %s: %s", path, strerror(errno));
    return NULL;
  }
  fclose(f);
  const wf__importer *im = choose(rt, path, format, st);
  if (!im)
    return NULL;
  wf_imported *m = wf__calloc(1, sizeof *m);
  if (!m || !(m->g = wf_graph_new(rt))) {
    wf__free(m);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "importing %s: out of memory",
                  path);
    return NULL;
  }
  m->format = im->def.name;
  wf_import_ctx ctx = {m};
  wf_status is = {WF_OK, NULL};
  int rc = im->def.import(&ctx, path, &is);
  if (!rc && is.code != WF_OK)
    rc = is.code;
  if (!rc && m->num_sigs == 0) {
    rc = WF_INVALID_ARGUMENT;
    wf_status_set(&is, rc, "the importer made no signature");
  }
  if (rc) {
    wf_status_set(st, rc, "importing %s (importer '%s', plugin '%s'): %s",
                  path, im->def.name, im->plugin,
                  is.message ? is.message : "failed without a message");
    wf_status_reset(&is);
    wf_imported_free(m);
    return NULL;
  }
  wf_status_reset(&is);
  return m;
}

int wf_import_saved_model(wf_runtime *rt, const char *path, const char *format,
                          const char *dir, wf_status *st) {
  wf_imported *m = wf_import(rt, path, format, st);
  if (!m)
    return wf_status_code(st);
  int rc = 0;
  wf_session *s = wf_session_new(m->g, st);
  if (!s)
    rc = wf_status_code(st);
  if (!rc && m->num_init > 0 &&
      wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, m->init,
                     m->num_init, NULL, st)) {
    wf_status_prefix(st, "importing %s: giving the weights their values",
                     path);
    rc = wf_status_code(st);
  }
  if (!rc) {
    wf_signature_def *defs =
        wf__calloc((size_t)m->num_sigs + 1, sizeof *defs);
    if (!defs) {
      rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "importing %s: out of memory", path);
    } else {
      for (int i = 0; i < m->num_sigs; i++)
        defs[i] = m->sigs[i].def;
      rc = wf_saved_model_export(s, dir, defs, m->num_sigs, st);
      wf__free(defs);
    }
  }
  wf_session_free(s);
  wf_imported_free(m);
  return rc;
}
