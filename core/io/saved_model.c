/* core/io/saved_model.c — saved models (weft/saved_model.h): exporting the part
 * of a session's graph that named signatures need, with its variables, into
 * a directory swapped in atomically; loading one back into a new session
 * and running its signatures. The graph and the variables go through the
 * graph-file and checkpoint code; this file owns only the index
 * (model.json), the checks between the three, and the directory swap. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <weft/weft.h>

#include "base/alloc.h"
#include "io/file_io.h"
#include "exec/session_internal.h"
#include "graph/graph_internal.h"

#define INDEX_FILE "model.json"
#define GRAPH_FILE "graph.wfg"
#define VARIABLES_FILE "variables.safetensors"

typedef struct sig_arg {
  char *key;
  char *tensor; /* "node:slot" */
  wf_output out;
  wf_dtype dtype;
  wf_shape shape;
} sig_arg;

typedef struct signature {
  char *name;
  int ninputs, noutputs;
  sig_arg *inputs, *outputs;
  wf_callable *call; /* feeds: inputs in order; fetches: outputs */
} signature;

struct wf_saved_model {
  wf_graph *graph;
  wf_session *session;
  int nsigs;
  signature *sigs;
};

/* ---- names --------------------------------------------------------------- */

/* A value fed at run time (an op with WF_OP_SOURCE_FED: Placeholder), the
 * only thing a signature's input may name. */
static int is_fed_input(const wf_node *n) {
  return (n->op->def.flags & WF_OP_SOURCE_FED) != 0;
}

static int valid_key(const char *k) {
  if (!k || !*k)
    return 0;
  for (const char *p = k; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
      return 0;
  return 1;
}

static int join(char *buf, size_t len, const char *dir, const char *file,
                wf_status *st) {
  int n = snprintf(buf, len, "%s/%s", dir, file);
  if (n < 0 || (size_t)n >= len)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "saved model '%s': path too long", dir);
  return 0;
}

/* ---- directories ------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_tree(const char *path) {
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Moves the finished directory tmp to dir: an atomic exchange when dir
 * exists (the old contents end up in tmp, removed afterwards), a rename when
 * it does not. */
static int swap_in(const char *tmp, const char *dir, wf_status *st) {
  struct stat sb;
  if (stat(dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode))
      return wf_status_set(st, WF_ALREADY_EXISTS,
                           "saved model: '%s' exists and is not a directory",
                           dir);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0)
      return wf_status_set(st, WF_UNAVAILABLE,
                           "saved model: replacing '%s': %s", dir,
                           strerror(errno));
    remove_tree(tmp);
  } else if (rename(tmp, dir) != 0) {
    return wf_status_set(st, WF_UNAVAILABLE, "saved model: creating '%s': %s",
                         dir, strerror(errno));
  }
  return wf__sync_parent(dir, st);
}

/* ---- export -------------------------------------------------------------------- */

static int node_in_graph(const wf_graph *g, const wf_node *n) {
  int id = n ? wf_node_id(n) : -1;
  return id >= 0 && id < wf_graph_num_nodes(g) && wf_graph_node(g, id) == n;
}

static int check_output(const wf_graph *g, const char *sig, const char *what,
                        const char *key, wf_output o, wf_status *st) {
  if (!node_in_graph(g, o.node) || o.index < 0 ||
      o.index >= wf_node_num_outputs(o.node))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "signature '%s': %s '%s' is not an output of the "
                         "session's graph",
                         sig, what, key ? key : "(null)");
  return 0;
}

static int check_keys(const char *sig, const char *what,
                      const char *const *keys, int n, wf_status *st) {
  for (int j = 0; j < n; j++) {
    if (!valid_key(keys[j]))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s': %s key '%s' is not made of "
                           "letters, digits, '_', '-' and '.'",
                           sig, what, keys[j] ? keys[j] : "(null)");
    for (int k = 0; k < j; k++)
      if (strcmp(keys[j], keys[k]) == 0)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "signature '%s': %s key '%s' is used twice", sig,
                             what, keys[j]);
  }
  return 0;
}

static int check_signatures(const wf_graph *g, const wf_signature_def *sigs,
                            int nsigs, wf_status *st) {
  if (nsigs < 1)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "saved model: give at least one signature");
  for (int i = 0; i < nsigs; i++) {
    const wf_signature_def *d = &sigs[i];
    if (!valid_key(d->name))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "saved model: signature name '%s' is not made of "
                           "letters, digits, '_', '-' and '.'",
                           d->name ? d->name : "(null)");
    for (int k = 0; k < i; k++)
      if (strcmp(d->name, sigs[k].name) == 0)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "saved model: signature '%s' is given twice",
                             d->name);
    if (d->ninputs < 0 || d->noutputs < 1 ||
        (d->ninputs && (!d->inputs || !d->input_keys)) || !d->outputs ||
        !d->output_keys)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s': needs at least one output, and "
                           "keys for every input and output",
                           d->name);
    if (check_keys(d->name, "input", d->input_keys, d->ninputs, st) ||
        check_keys(d->name, "output", d->output_keys, d->noutputs, st))
      return wf_status_code(st);
    for (int j = 0; j < d->ninputs; j++) {
      if (check_output(g, d->name, "input", d->input_keys[j], d->inputs[j],
                       st))
        return wf_status_code(st);
      if (!is_fed_input(d->inputs[j].node))
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "signature '%s': input '%s' is node '%s' (op "
                             "%s); inputs must be Placeholder outputs",
                             d->name, d->input_keys[j],
                             wf_node_name(d->inputs[j].node),
                             wf_node_op(d->inputs[j].node));
    }
    for (int j = 0; j < d->noutputs; j++)
      if (check_output(g, d->name, "output", d->output_keys[j], d->outputs[j],
                       st))
        return wf_status_code(st);
  }
  return 0;
}

static int is_signature_input(const wf_signature_def *sigs, int nsigs,
                              const wf_node *n) {
  for (int i = 0; i < nsigs; i++)
    for (int j = 0; j < sigs[i].ninputs; j++)
      if (sigs[i].inputs[j].node == n)
        return 1;
  return 0;
}

static const char *variable_name(const wf_node *n) {
  wf_attr_value v;
  if (wf_node_get_attr(n, "shared_name", &v, NULL) == WF_OK &&
      v.type == WF_ATTR_STRING && v.u.s && v.u.s[0])
    return v.u.s;
  return wf_node_name(n);
}

/* Checks the pruned graph as written (loaded back): nothing in it may need
 * what a saved model cannot carry — a Placeholder that is no signature input,
 * an input iterator. Collects the names of the variables it reads. */
static int check_exported_graph(const wf_graph *saved,
                                 const wf_signature_def *sigs, int nsigs,
                                 const wf_graph *orig, const char ***names,
                                 int *nnames, wf_status *st) {
  int n = wf_graph_num_nodes(saved);
  const char **v = wf__calloc((size_t)n + 1, sizeof *v);
  int count = 0;
  if (!v)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saved model: out of memory");
  for (int i = 0; i < n; i++) {
    const wf_node *node = wf_graph_node(saved, i);
    const char *op = wf_node_op(node);
    if (is_fed_input(node) &&
        !is_signature_input(sigs, nsigs,
                            wf_graph_find_node(orig, wf_node_name(node)))) {
      wf__free(v);
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "saved model: the signatures' outputs need "
                           "placeholder '%s', which no signature has as an "
                           "input",
                           wf_node_name(node));
    }
    if (strcmp(op, "IteratorGetNext") == 0) {
      wf__free(v);
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "saved model: the signatures' outputs read input "
                           "iterator node '%s'; feed a Placeholder instead",
                           wf_node_name(node));
    }
    if (node->op->def.flags & WF_OP_VARIABLE)
      v[count++] = variable_name(node);
  }
  *names = v;
  *nnames = count;
  return 0;
}

static json_t *shape_json(const wf_shape *s) {
  json_t *a = json_array();
  for (int d = 0; a && d < s->rank; d++)
    json_array_append_new(a, json_integer(s->dims[d]));
  return a;
}

static json_t *args_json(const wf_signature_def *d, int inputs) {
  json_t *a = json_array();
  int n = inputs ? d->ninputs : d->noutputs;
  for (int j = 0; a && j < n; j++) {
    wf_output o = inputs ? d->inputs[j] : d->outputs[j];
    char tensor[1024];
    snprintf(tensor, sizeof tensor, "%s:%d", wf_node_name(o.node), o.index);
    wf_shape s;
    wf_node_output_shape(o.node, o.index, &s);
    json_t *e = json_pack(
        "{s:s, s:s, s:s, s:o}", "key",
        inputs ? d->input_keys[j] : d->output_keys[j], "tensor", tensor,
        "dtype", wf_dtype_name(wf_node_output_dtype(o.node, o.index)),
        "shape", s.rank >= 0 ? shape_json(&s) : json_null());
    if (!e || json_array_append_new(a, e)) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

static int write_index(const char *path, const wf_signature_def *sigs,
                       int nsigs, wf_status *st) {
  json_t *list = json_array();
  for (int i = 0; list && i < nsigs; i++) {
    json_t *in = args_json(&sigs[i], 1), *out = args_json(&sigs[i], 0);
    json_t *e = in && out ? json_pack("{s:s, s:o, s:o}", "name", sigs[i].name,
                                      "inputs", in, "outputs", out)
                          : NULL;
    if (!e) {
      json_decref(in);
      json_decref(out);
      json_decref(list);
      list = NULL;
      break;
    }
    json_array_append_new(list, e);
  }
  char producer[64];
  snprintf(producer, sizeof producer, "weft %s", wf_version());
  json_t *root = list ? json_pack("{s:i, s:s, s:s, s:s, s:o}", "format",
                                  WF_SAVED_MODEL_FORMAT, "producer", producer,
                                  "graph", GRAPH_FILE, "variables",
                                  VARIABLES_FILE, "signatures", list)
                      : NULL;
  if (!root)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saved model: out of memory writing the index");
  char *text = json_dumps(root, JSON_INDENT(2));
  json_decref(root);
  if (!text)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saved model: out of memory writing the index");
  int rc = wf__atomic_write_file(path, text, strlen(text), st);
  free(text);
  return rc;
}

int wf_saved_model_export(wf_session *s, const char *dir,
                          const wf_signature_def *sigs, int nsigs,
                          wf_status *st) {
  wf_graph *g = wf__session_graph(s);
  char *tmp = NULL, path[PATH_MAX];
  wf_output *outs = NULL;
  wf_node **ins = NULL;
  wf_graph *saved = NULL;
  const char **vars = NULL;
  int nvars = 0;
  if (check_signatures(g, sigs, nsigs, st))
    return wf_status_code(st);
  if (!(tmp = wf__atomic_temp_dir(dir, st))) {
    wf_status_prefix(st, "saved model");
    return wf_status_code(st);
  }

  int nout = 0, nin = 0;
  for (int i = 0; i < nsigs; i++) {
    nout += sigs[i].noutputs;
    nin += sigs[i].ninputs;
  }
  outs = wf__calloc((size_t)nout, sizeof *outs);
  ins = wf__calloc((size_t)nin + 1, sizeof *ins);
  if (!outs || !ins) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "saved model: out of memory");
    goto fail;
  }
  nout = nin = 0;
  for (int i = 0; i < nsigs; i++) {
    for (int j = 0; j < sigs[i].noutputs; j++)
      outs[nout++] = sigs[i].outputs[j];
    for (int j = 0; j < sigs[i].ninputs; j++)
      ins[nin++] = sigs[i].inputs[j].node;
  }

  /* The graph: what the outputs need, and the inputs even if unused. */
  if (join(path, sizeof path, tmp, GRAPH_FILE, st) ||
      wf_graph_save_pruned(g, outs, nout, ins, nin, path, st))
    goto fail;
  /* Read back what was written: it must load on its own, and tells which
   * variables the model reads. */
  saved = wf_graph_load(wf_graph_runtime(g), path, st);
  if (!saved) {
    wf_status_prefix(st, "saved model: reading back the exported graph");
    goto fail;
  }
  if (check_exported_graph(saved, sigs, nsigs, g, &vars, &nvars, st))
    goto fail;

  wf_save_options so = WF_SAVE_OPTIONS_INIT;
  so.names = vars;
  so.nnames = nvars;
  so.variables_only = 1;
  if (nvars == 0) {
    /* A model without variables still carries an (empty) checkpoint, so
     * that every saved model has the same files. */
    if (join(path, sizeof path, tmp, VARIABLES_FILE, st) ||
        wf_checkpoint_write(path, NULL, NULL, 0, NULL, NULL, 0, st))
      goto fail;
  } else if (join(path, sizeof path, tmp, VARIABLES_FILE, st) ||
             wf_session_save(s, path, &so, st)) {
    goto fail;
  }
  if (join(path, sizeof path, tmp, INDEX_FILE, st) ||
      write_index(path, sigs, nsigs, st))
    goto fail;
  if (swap_in(tmp, dir, st))
    goto fail;
  wf__free(vars);
  wf_graph_free(saved);
  wf__free(outs);
  wf__free(ins);
  wf__free(tmp);
  return 0;

fail:
  wf__free(vars);
  wf_graph_free(saved);
  wf__free(outs);
  wf__free(ins);
  remove_tree(tmp);
  wf__free(tmp);
  return wf_status_code(st);
}

/* ---- load ------------------------------------------------------------------ */

static void free_args(sig_arg *a, int n) {
  for (int j = 0; a && j < n; j++) {
    wf__free(a[j].key);
    wf__free(a[j].tensor);
  }
  wf__free(a);
}

void wf_saved_model_free(wf_saved_model *m) {
  if (!m)
    return;
  for (int i = 0; i < m->nsigs; i++) {
    wf_callable_free(m->sigs[i].call);
    wf__free(m->sigs[i].name);
    free_args(m->sigs[i].inputs, m->sigs[i].ninputs);
    free_args(m->sigs[i].outputs, m->sigs[i].noutputs);
  }
  wf__free(m->sigs);
  wf_session_free(m->session);
  wf_graph_free(m->graph);
  wf__free(m);
}

/* A file name from the index: a plain name inside the model directory. */
static const char *index_file(json_t *root, const char *field,
                              const char *index, wf_status *st) {
  const char *f = json_string_value(json_object_get(root, field));
  if (!f || !*f || strchr(f, '/') || strcmp(f, ".") == 0 ||
      strcmp(f, "..") == 0) {
    wf_status_set(st, WF_DATA_LOSS,
                  "saved model index '%s': \"%s\" must name a file in the "
                  "model directory",
                  index, field);
    return NULL;
  }
  return f;
}

static int parse_args(wf_saved_model *m, const char *index, const char *sig,
                      const char *what, json_t *list, sig_arg **out, int *n,
                      wf_status *st) {
  if (!json_is_array(list))
    return wf_status_set(st, WF_DATA_LOSS,
                         "saved model index '%s': signature '%s' has no "
                         "\"%s\" list",
                         index, sig, what);
  *n = (int)json_array_size(list);
  *out = wf__calloc((size_t)*n + 1, sizeof **out);
  if (!*out)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saved model: out of memory");
  for (int j = 0; j < *n; j++) {
    json_t *e = json_array_get(list, (size_t)j);
    sig_arg *a = &(*out)[j];
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *tensor = json_string_value(json_object_get(e, "tensor"));
    const char *dtype = json_string_value(json_object_get(e, "dtype"));
    json_t *shape = json_object_get(e, "shape");
    if (!valid_key(key) || !tensor || !dtype ||
        !(json_is_array(shape) || json_is_null(shape)))
      return wf_status_set(st, WF_DATA_LOSS,
                           "saved model index '%s': signature '%s': %s %d "
                           "needs \"key\", \"tensor\", \"dtype\" and "
                           "\"shape\"",
                           index, sig, what, j);
    for (int k = 0; k < j; k++)
      if (strcmp((*out)[k].key, key) == 0)
        return wf_status_set(st, WF_DATA_LOSS,
                             "saved model index '%s': signature '%s': %s key "
                             "'%s' appears twice",
                             index, sig, what, key);
    a->key = wf__strdup(key);
    a->tensor = wf__strdup(tensor);
    if (!a->key || !a->tensor)
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "saved model: out of memory");
    if (wf_graph_parse_output(m->graph, tensor, &a->out, st)) {
      wf_status_prefix(st, "saved model index '%s': signature '%s': %s '%s'",
                       index, sig, what, key);
      return wf_status_code(st);
    }
    a->dtype = wf_node_output_dtype(a->out.node, a->out.index);
    if (wf_dtype_from_name(dtype) != a->dtype)
      return wf_status_set(st, WF_DATA_LOSS,
                           "saved model index '%s': signature '%s': %s '%s' "
                           "says dtype %s but '%s' is %s in the graph",
                           index, sig, what, key, dtype, tensor,
                           wf_dtype_name(a->dtype));
    wf_node_output_shape(a->out.node, a->out.index, &a->shape);
    if (strcmp(what, "input") == 0 &&
        !is_fed_input(a->out.node))
      return wf_status_set(st, WF_DATA_LOSS,
                           "saved model index '%s': signature '%s': input "
                           "'%s' names '%s', which is not a Placeholder",
                           index, sig, key, tensor);
  }
  return 0;
}

static int parse_signatures(wf_saved_model *m, const char *index,
                            json_t *list, wf_status *st) {
  if (!json_is_array(list) || json_array_size(list) == 0)
    return wf_status_set(st, WF_DATA_LOSS,
                         "saved model index '%s': \"signatures\" must be a "
                         "non-empty list",
                         index);
  m->sigs = wf__calloc(json_array_size(list), sizeof *m->sigs);
  if (!m->sigs)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saved model: out of memory");
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *e = json_array_get(list, i);
    signature *sg = &m->sigs[m->nsigs++];
    const char *name = json_string_value(json_object_get(e, "name"));
    if (!valid_key(name))
      return wf_status_set(st, WF_DATA_LOSS,
                           "saved model index '%s': signature %zu has no "
                           "valid \"name\"",
                           index, i);
    for (int k = 0; k + 1 < m->nsigs; k++)
      if (strcmp(m->sigs[k].name, name) == 0)
        return wf_status_set(st, WF_DATA_LOSS,
                             "saved model index '%s': signature '%s' appears "
                             "twice",
                             index, name);
    if (!(sg->name = wf__strdup(name)))
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "saved model: out of memory");
    if (parse_args(m, index, name, "input", json_object_get(e, "inputs"),
                   &sg->inputs, &sg->ninputs, st) ||
        parse_args(m, index, name, "output", json_object_get(e, "outputs"),
                   &sg->outputs, &sg->noutputs, st))
      return wf_status_code(st);
    if (sg->noutputs == 0)
      return wf_status_set(st, WF_DATA_LOSS,
                           "saved model index '%s': signature '%s' has no "
                           "outputs",
                           index, name);
    wf_output feeds[sg->ninputs + 1], fetches[sg->noutputs];
    for (int j = 0; j < sg->ninputs; j++)
      feeds[j] = sg->inputs[j].out;
    for (int j = 0; j < sg->noutputs; j++)
      fetches[j] = sg->outputs[j].out;
    sg->call = wf_session_prepare(m->session, feeds, sg->ninputs, fetches,
                                  sg->noutputs, NULL, 0, st);
    if (!sg->call) {
      wf_status_prefix(st, "saved model '%s': signature '%s'", index, name);
      return wf_status_code(st);
    }
  }
  return 0;
}

wf_saved_model *wf_saved_model_load(wf_runtime *rt, const char *dir,
                                    wf_status *st) {
  char index[PATH_MAX], path[PATH_MAX];
  json_t *root = NULL;
  json_error_t jerr;
  wf_saved_model *m = wf__calloc(1, sizeof *m);
  if (!m) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "saved model: out of memory");
    return NULL;
  }
  if (join(index, sizeof index, dir, INDEX_FILE, st))
    goto fail;
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    wf_status_set(st, WF_NOT_FOUND, "saved model '%s': %s", dir,
                  strerror(errno));
    goto fail;
  }
  if (!S_ISDIR(sb.st_mode)) {
    wf_status_set(st, WF_NOT_FOUND, "saved model '%s': not a directory", dir);
    goto fail;
  }
  root = json_load_file(index, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    wf_status_set(st, access(index, F_OK) == 0 ? WF_DATA_LOSS : WF_NOT_FOUND,
                  "saved model index '%s': line %d: %s", index, jerr.line,
                  jerr.text);
    goto fail;
  }
  json_t *format = json_object_get(root, "format");
  if (!json_is_integer(format) || json_integer_value(format) < 1) {
    wf_status_set(st, WF_DATA_LOSS,
                  "saved model index '%s': no valid \"format\" number", index);
    goto fail;
  }
  if (json_integer_value(format) > WF_SAVED_MODEL_FORMAT) {
    wf_status_set(st, WF_UNIMPLEMENTED,
                  "saved model index '%s': format %lld needs a newer weft "
                  "(this one reads format %d)",
                  index, (long long)json_integer_value(format),
                  WF_SAVED_MODEL_FORMAT);
    goto fail;
  }
  const char *gfile = index_file(root, "graph", index, st);
  const char *vfile = gfile ? index_file(root, "variables", index, st) : NULL;
  if (!vfile)
    goto fail;
  if (join(path, sizeof path, dir, gfile, st) ||
      !(m->graph = wf_graph_load(rt, path, st)))
    goto fail;
  if (!(m->session = wf_session_new(m->graph, st)))
    goto fail;
  if (join(path, sizeof path, dir, vfile, st) ||
      wf_session_restore(m->session, path, NULL, st))
    goto fail;
  if (parse_signatures(m, index, json_object_get(root, "signatures"), st))
    goto fail;
  json_decref(root);
  return m;

fail:
  json_decref(root);
  wf_saved_model_free(m);
  return NULL;
}

/* ---- signatures ------------------------------------------------------------------ */

wf_graph *wf_saved_model_graph(const wf_saved_model *m) { return m->graph; }
wf_session *wf_saved_model_session(const wf_saved_model *m) {
  return m->session;
}
int wf_saved_model_num_signatures(const wf_saved_model *m) { return m->nsigs; }

const char *wf_saved_model_signature_name(const wf_saved_model *m, int i) {
  return i >= 0 && i < m->nsigs ? m->sigs[i].name : NULL;
}

int wf_saved_model_find_signature(const wf_saved_model *m, const char *name) {
  if (!name)
    return m->nsigs == 1 ? 0 : -1;
  for (int i = 0; i < m->nsigs; i++)
    if (strcmp(m->sigs[i].name, name) == 0)
      return i;
  return -1;
}

int wf_saved_model_num_inputs(const wf_saved_model *m, int sig) {
  return sig >= 0 && sig < m->nsigs ? m->sigs[sig].ninputs : 0;
}

int wf_saved_model_num_outputs(const wf_saved_model *m, int sig) {
  return sig >= 0 && sig < m->nsigs ? m->sigs[sig].noutputs : 0;
}

static void arg_info(const sig_arg *a, wf_signature_arg *out) {
  out->key = a->key;
  out->tensor = a->tensor;
  out->dtype = a->dtype;
  out->shape = a->shape;
}

void wf_saved_model_input(const wf_saved_model *m, int sig, int j,
                          wf_signature_arg *out) {
  if (sig < 0 || sig >= m->nsigs || j < 0 || j >= m->sigs[sig].ninputs) {
    memset(out, 0, sizeof *out);
    return;
  }
  arg_info(&m->sigs[sig].inputs[j], out);
}

void wf_saved_model_output(const wf_saved_model *m, int sig, int j,
                           wf_signature_arg *out) {
  if (sig < 0 || sig >= m->nsigs || j < 0 || j >= m->sigs[sig].noutputs) {
    memset(out, 0, sizeof *out);
    return;
  }
  arg_info(&m->sigs[sig].outputs[j], out);
}

int wf_saved_model_run(wf_saved_model *m, int sig,
                       const char *const *input_keys,
                       wf_tensor *const *inputs, int ninputs,
                       wf_tensor **outputs, wf_status *st) {
  if (sig < 0 || sig >= m->nsigs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "saved model: no signature %d (it has %d)", sig,
                         m->nsigs);
  signature *sg = &m->sigs[sig];
  wf_tensor *feeds[sg->ninputs + 1];
  memset(feeds, 0, sizeof feeds);
  for (int j = 0; j < ninputs; j++) {
    int k = 0;
    while (k < sg->ninputs && strcmp(sg->inputs[k].key, input_keys[j]) != 0)
      k++;
    if (k == sg->ninputs)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s' has no input '%s'", sg->name,
                           input_keys[j]);
    if (feeds[k])
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s': input '%s' is given twice",
                           sg->name, input_keys[j]);
    const sig_arg *a = &sg->inputs[k];
    wf_shape s;
    wf_tensor_shape(inputs[j], &s);
    if (wf_tensor_dtype(inputs[j]) != a->dtype ||
        !wf_shape_compatible(&s, &a->shape)) {
      char have[128], want[128];
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s': input '%s' wants %s %s, got %s %s",
                           sg->name, a->key, wf_dtype_name(a->dtype),
                           wf_shape_str(&a->shape, want, sizeof want),
                           wf_dtype_name(wf_tensor_dtype(inputs[j])),
                           wf_shape_str(&s, have, sizeof have));
    }
    feeds[k] = inputs[j];
  }
  for (int k = 0; k < sg->ninputs; k++)
    if (!feeds[k])
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "signature '%s': input '%s' is not given", sg->name,
                           sg->inputs[k].key);
  return wf_callable_run(sg->call, NULL, feeds, outputs, NULL, st);
}
