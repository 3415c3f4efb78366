/* tests/plugins/importer.c — a tiny importer, for
 * tests/core/test_import.c and as the worked example of sdk/README.md.
 * Its format (".wtxt", first line "wtxt 1") is a line per statement:
 *
 *   input NAME DTYPE D0,D1,...          a model input (-1: any size)
 *   weight NAME DTYPE D0,... = V V ...  a weight and its values
 *   op NAME OP IN IN ...                a node of OP reading earlier names
 *   output NAME                         the signature's outputs, in order
 *
 * Weights become variables given their values once (import_add_init);
 * the inputs and outputs make the signature "serving_default". Errors name
 * the file and line. Only float32 and int32 are read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const wf_host *host;

#define MAX_ITEMS 32

typedef struct reader {
  wf_import_ctx *ctx;
  const char *path;
  int line;
  wf_output inputs[MAX_ITEMS], outputs[MAX_ITEMS];
  const char *in_keys[MAX_ITEMS], *out_keys[MAX_ITEMS];
  char names[2 * MAX_ITEMS][64];
  int ninputs, noutputs;
} reader;

static int bad(reader *r, wf_status *st, const char *what) {
  host->status_set(st, WF_INVALID_ARGUMENT, "%s:%d: %s", r->path, r->line,
                   what);
  return WF_INVALID_ARGUMENT;
}

static int parse_dtype(const char *s) {
  if (strcmp(s, "float32") == 0)
    return WF_FLOAT32;
  if (strcmp(s, "int32") == 0)
    return WF_INT32;
  return -1;
}

/* "D0,D1,..." (no strtok: the caller is in the middle of one). */
static int parse_shape(const char *s, wf_shape *shape) {
  shape->rank = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || (*end && *end != ',') || v < -1 ||
        shape->rank == WF_MAX_RANK)
      return -1;
    shape->dims[shape->rank++] = v;
    s = *end ? end + 1 : end;
  }
  return 0;
}

static wf_node *add(reader *r, const char *op, const char *name,
                    const wf_output *in, int n, const wf_attr_item *a, int na,
                    wf_status *st) {
  wf_node *node = host->import_add_node(r->ctx, op, name, in, n, a, na, st);
  if (!node)
    bad(r, st, host->status_message(st));
  return node;
}

/* weight NAME DTYPE SHAPE = values: VarHandle, its assignment from a
 * Const (run once), and the ReadVariable the model computes with. */
static int weight(reader *r, char *name, int dtype, wf_shape *shape,
                  char *values, wf_status *st) {
  wf_tensor *t = host->tensor_new(dtype, shape, st);
  if (!t)
    return bad(r, st, "cannot make the weight's tensor");
  int64_t n = host->tensor_count(t), got = 0;
  for (char *tok = strtok(values, " \t\n"); tok && got < n;
       tok = strtok(NULL, " \t\n"), got++) {
    char *end;
    double v = strtod(tok, &end);
    if (*end) {
      host->tensor_release(t);
      return bad(r, st, "a weight value is not a number");
    }
    if (dtype == WF_FLOAT32)
      ((float *)host->tensor_data(t))[got] = (float)v;
    else
      ((int32_t *)host->tensor_data(t))[got] = (int32_t)v;
  }
  if (got != n) {
    host->tensor_release(t);
    return bad(r, st, "the weight has fewer values than its shape holds");
  }
  char hname[96], cname[96], aname[96];
  snprintf(hname, sizeof hname, "%s.handle", name);
  snprintf(cname, sizeof cname, "%s.value", name);
  snprintf(aname, sizeof aname, "%s.assign", name);
  wf_attr_item ha[3] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dtype}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = *shape}},
      {"shared_name", {.type = WF_ATTR_STRING, .count = 1, .u.s = name}}};
  wf_attr_item ca[2] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dtype}},
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}}};
  wf_node *h = add(r, "VarHandle", hname, NULL, 0, ha, 3, st);
  wf_node *c = h ? add(r, "Const", cname, NULL, 0, ca, 2, st) : NULL;
  host->tensor_release(t);
  if (!c)
    return WF_INVALID_ARGUMENT;
  wf_output in[2] = {{h, 0}, {c, 0}};
  wf_node *as = add(r, "AssignVariable", aname, in, 2, NULL, 0, st);
  if (!as || host->import_add_init(r->ctx, as, st))
    return WF_INVALID_ARGUMENT;
  return add(r, "ReadVariable", name, in, 1, ha, 2, st) ? 0
                                                        : WF_INVALID_ARGUMENT;
}

static int statement(reader *r, char *line, wf_status *st) {
  char *kw = strtok(line, " \t\n");
  if (!kw || kw[0] == '#')
    return 0;
  char *name = strtok(NULL, " \t\n");
  if (!name)
    return bad(r, st, "a statement without a name");
  if (strcmp(kw, "input") == 0 || strcmp(kw, "weight") == 0) {
    char *dt = strtok(NULL, " \t\n"), *sh = strtok(NULL, " \t\n");
    int dtype = dt ? parse_dtype(dt) : -1;
    wf_shape shape;
    if (dtype < 0)
      return bad(r, st, "unknown dtype (float32 or int32)");
    if (!sh || parse_shape(sh, &shape))
      return bad(r, st, "bad shape (D0,D1,... with -1 for any size)");
    if (kw[0] == 'w') {
      char *eq = strtok(NULL, " \t\n");
      if (!eq || strcmp(eq, "=") != 0)
        return bad(r, st, "a weight needs '= values'");
      return weight(r, name, dtype, &shape, strtok(NULL, ""), st);
    }
    if (r->ninputs == MAX_ITEMS)
      return bad(r, st, "too many inputs");
    wf_attr_item a[2] = {
        {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = dtype}},
        {"shape", {.type = WF_ATTR_SHAPE, .count = 1, .u.shape = shape}}};
    wf_node *p = add(r, "Placeholder", name, NULL, 0, a, 2, st);
    if (!p)
      return WF_INVALID_ARGUMENT;
    snprintf(r->names[r->ninputs], sizeof r->names[0], "%s", name);
    r->in_keys[r->ninputs] = r->names[r->ninputs];
    r->inputs[r->ninputs++] = (wf_output){p, 0};
    return 0;
  }
  if (strcmp(kw, "op") == 0) {
    char *op = strtok(NULL, " \t\n");
    wf_output in[8];
    int n = 0;
    if (!op)
      return bad(r, st, "op NAME OP IN...: the op is missing");
    for (char *tok = strtok(NULL, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
      wf_node *src = host->import_find_node(r->ctx, tok);
      if (!src || n == 8)
        return bad(r, st, "an input names nothing defined above");
      in[n++] = (wf_output){src, 0};
    }
    return add(r, op, name, in, n, NULL, 0, st) ? 0 : WF_INVALID_ARGUMENT;
  }
  if (strcmp(kw, "output") == 0) {
    wf_node *src = host->import_find_node(r->ctx, name);
    if (!src)
      return bad(r, st, "the output names nothing defined above");
    if (r->noutputs == MAX_ITEMS)
      return bad(r, st, "too many outputs");
    char *key = r->names[MAX_ITEMS + r->noutputs];
    snprintf(key, sizeof r->names[0], "%s", name);
    r->out_keys[r->noutputs] = key;
    r->outputs[r->noutputs++] = (wf_output){src, 0};
    return 0;
  }
  return bad(r, st, "unknown statement (input, weight, op or output)");
}

static int import(wf_import_ctx *ctx, const char *path, wf_status *st) {
  reader r = {.ctx = ctx, .path = path};
  char line[4096];
  FILE *f = fopen(path, "r");
  if (!f) {
    host->status_set(st, WF_NOT_FOUND, "%s: cannot open", path);
    return WF_NOT_FOUND;
  }
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    r.line++;
    if (r.line == 1)
      rc = strncmp(line, "wtxt 1", 6) ? bad(&r, st, "not a wtxt 1 file") : 0;
    else
      rc = statement(&r, line, st);
  }
  fclose(f);
  if (!rc && r.noutputs == 0)
    rc = bad(&r, st, "the model has no output");
  if (!rc)
    rc = host->import_add_signature(ctx, "serving_default", r.in_keys,
                                    r.inputs, r.ninputs, r.out_keys,
                                    r.outputs, r.noutputs, st);
  return rc;
}

static int sniff(const void *head, size_t n) {
  return n >= 6 && memcmp(head, "wtxt 1", 6) == 0;
}

static const wf_importer_def wtxt = {
    WF_STRUCT_INIT(wf_importer_def), .name = "wtxt",
    .doc = "a line-per-statement test format", .extensions = ".wtxt",
    .sniff = sniff, .import = import};
static const wf_importer_def *const importers[] = {&wtxt, NULL};

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  if (!WF_STRUCT_HAS(h, wf_host, import_add_signature)) {
    h->status_set(st, WF_FAILED_PRECONDITION,
                  "needs a host of plugin ABI 1.3 or later");
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc), .name = "test-importer",
    .version = "1.0", .importers = importers, .init = init};

WF_PLUGIN(importer, desc)
