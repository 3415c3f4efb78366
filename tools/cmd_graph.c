/* tools/cmd_graph.c — `weft graph`: what a graph file holds (info), every
 * node in readable text (dump), and Graphviz views of it, as it is (--dot)
 * and before and after each optimisation pass of one signature
 * (--dot-passes). It reads graph files; it never changes or runs them. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#define MAX_SIGNATURE 256 /* --fetch, --feed, --target each */
#define TENSOR_SHOWN 6    /* values a tensor summary prints */

const char weft_graph_summary[] =
    "look into graph files: info, dump, Graphviz views";
const char weft_graph_help[] =
    "usage: weft graph info FILE [--json]\n"
    "       weft graph dump FILE\n"
    "       weft graph --dot FILE [-o OUT.dot]\n"
    "       weft graph --dot-passes DIR FILE --fetch NODE[:SLOT]...\n"
    "                  [--feed NODE[:SLOT]]... [--target NODE]...\n\n"
    "FILE is a graph file (written by wf_graph_save). It is loaded with the\n"
    "runtime's plugins, which must register every op it uses.\n\n"
    "  info        the format version, producer and node count, how often\n"
    "              each op is used (and its plugin), the devices the nodes\n"
    "              request, and the variables with their dtypes and shapes\n"
    "  dump        every node in order: its op, inputs (NODE:SLOT), control\n"
    "              inputs, requested device, attributes (tensors summarised)\n"
    "              and the output dtypes and shapes inferred on loading\n"
    "  --dot       the graph as Graphviz (on stdout, or into OUT.dot)\n"
    "  --dot-passes DIR\n"
    "              writes into DIR (created if needed) the graph, then what\n"
    "              a session would run for the signature given by --fetch,\n"
    "              --feed and --target: the pruned graph, the graph after\n"
    "              each optimisation pass the config switches on, and the\n"
    "              partitioned graph (nodes coloured by device, each device's\n"
    "              nodes in a cluster, transfers between them)\n\n"
    "Options:\n"
    "  --fetch NODE[:SLOT]  an output to compute (repeatable)\n"
    "  --feed NODE[:SLOT]   an output given by the caller (repeatable)\n"
    "  --target NODE        a node to run for its effects (repeatable)\n"
    "  -o, --output FILE    where --dot writes\n"
    "  --json               info as JSON\n"
    "  --config FILE        the runtime's config (plugins, devices, passes)\n";

typedef struct graph_opts {
  const char *config;
  const char *action; /* "info", "dump", "dot", "dot-passes" */
  const char *file;
  const char *out; /* -o */
  const char *dir; /* --dot-passes DIR */
  int json;
  const char *fetch[MAX_SIGNATURE], *feed[MAX_SIGNATURE],
      *target[MAX_SIGNATURE];
  int nfetch, nfeed, ntarget;
} graph_opts;

/* ---- printing values ------------------------------------------------------
 */

/* "float32 (2, 3) [1, 2, 3, 4, 5, 6]", the values cut after a few. */
static void print_tensor(FILE *f, const wf_tensor *t) {
  char buf[512];
  fputs(wf_tensor_str(t, TENSOR_SHOWN, buf, sizeof buf), f);
}

static void print_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      fprintf(f, "\\x%02x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void print_attr(FILE *f, const wf_attr_value *v) {
  char buf[160];
  int base = WF_ATTR_BASE(v->type);
  int64_t n = WF_ATTR_IS_LIST(v->type) ? v->count : 1;

  if (WF_ATTR_IS_LIST(v->type))
    fputc('[', f);
  for (int64_t i = 0; i < n; i++) {
    int list = WF_ATTR_IS_LIST(v->type);
    if (i)
      fputs(", ", f);
    switch (base) {
    case WF_ATTR_INT:
      fprintf(f, "%" PRId64, list ? v->u.ints[i] : v->u.i);
      break;
    case WF_ATTR_FLOAT:
      fprintf(f, "%.9g", list ? v->u.floats[i] : v->u.f);
      break;
    case WF_ATTR_BOOL:
      fputs((list ? v->u.bools[i] : v->u.b) ? "true" : "false", f);
      break;
    case WF_ATTR_STRING:
      print_string(f, list ? v->u.strings[i] : v->u.s);
      break;
    case WF_ATTR_DTYPE: {
      const char *name =
          wf_dtype_name((wf_dtype)(list ? v->u.dtypes[i] : v->u.dtype));
      fputs(name ? name : "?", f);
      break;
    }
    case WF_ATTR_SHAPE:
      fputs(wf_shape_str(list ? &v->u.shapes[i] : &v->u.shape, buf, sizeof buf),
            f);
      break;
    case WF_ATTR_TENSOR:
      print_tensor(f, list ? v->u.tensors[i] : v->u.tensor);
      break;
    default:
      fputc('?', f);
    }
  }
  if (WF_ATTR_IS_LIST(v->type))
    fputc(']', f);
}

/* ---- loading ------------------------------------------------------------- */

/* Loads the file; on failure says what the file is (when it can be read at
 * all) and why it does not load. */
static wf_graph *load(wf_runtime *rt, const char *path) {
  wf_status *st = wf_status_new();
  wf_graph *g;
  if (!st) {
    fprintf(stderr, "weft graph: out of memory\n");
    return NULL;
  }
  g = wf_graph_load(rt, path, st);
  if (!g)
    fprintf(stderr, "weft graph: %s\n", wf_status_message(st));
  wf_status_free(st);
  return g;
}

/* ---- info ---------------------------------------------------------------- */

typedef struct counted {
  const char *key;
  int n;
} counted;

/* Adds one to key's count in list (n entries, room for one more). */
static int bump(counted *list, int n, const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i].key, key) == 0) {
      list[i].n++;
      return n;
    }
  list[n].key = key;
  list[n].n = 1;
  return n + 1;
}

static int by_count(const void *a, const void *b) {
  const counted *x = a, *y = b;
  if (x->n != y->n)
    return x->n < y->n ? 1 : -1;
  return strcmp(x->key, y->key);
}

static const char *op_plugin(const wf_runtime *rt, const char *op) {
  int n = wf_runtime_op_count(rt);
  for (int i = 0; i < n; i++)
    if (strcmp(wf_runtime_op_get(rt, i)->name, op) == 0)
      return wf_runtime_op_plugin(rt, i);
  return "?";
}

/* A variable node: its variable's name (shared_name, else the node's). */
static const char *variable_name(const wf_node *n) {
  wf_attr_value v;
  if (strcmp(wf_node_op(n), "VarHandle") != 0)
    return NULL;
  if (wf_node_get_attr(n, "shared_name", &v, NULL) == WF_OK &&
      v.type == WF_ATTR_STRING && v.u.s && *v.u.s)
    return v.u.s;
  return wf_node_name(n);
}

static int64_t shape_elements(const wf_attr_value *shape) {
  int64_t n = 1;
  if (shape->type != WF_ATTR_SHAPE || shape->u.shape.rank < 0)
    return -1;
  for (int i = 0; i < shape->u.shape.rank; i++) {
    if (shape->u.shape.dims[i] < 0)
      return -1;
    n *= shape->u.shape.dims[i];
  }
  return n;
}

static int info(wf_runtime *rt, const graph_opts *o) {
  wf_status *st = wf_status_new();
  wf_graph_file_info fi = {.struct_size = sizeof fi};
  wf_graph *g = NULL;
  counted *ops = NULL, *devs = NULL, *vars = NULL;
  int nops = 0, ndevs = 0, rc = 1, nn, nvars = 0;
  int64_t params = 0;
  char buf[160];

  if (!st || wf_graph_file_read_info(o->file, &fi, st)) {
    fprintf(stderr, "weft graph: %s\n",
            st ? wf_status_message(st) : "out of memory");
    goto done;
  }
  g = load(rt, o->file);
  if (!g) {
    fprintf(stderr,
            "weft graph: %s: format version %d (readers from version %d), "
            "%" PRId64 " nodes, written by %s\n",
            o->file, fi.format_version, fi.min_reader_version, fi.num_nodes,
            fi.producer[0] ? fi.producer : "(unnamed)");
    goto done;
  }
  nn = wf_graph_num_nodes(g);
  ops = calloc((size_t)nn + 1, sizeof *ops);
  devs = calloc((size_t)nn + 1, sizeof *devs);
  vars = calloc((size_t)nn + 1, sizeof *vars);
  if (!ops || !devs || !vars) {
    fprintf(stderr, "weft graph: out of memory\n");
    goto done;
  }
  for (int i = 0; i < nn; i++) {
    const wf_node *n = wf_graph_node(g, i);
    nops = bump(ops, nops, wf_node_op(n));
    ndevs = bump(devs, ndevs, *wf_node_device(n) ? wf_node_device(n) : "");
  }
  qsort(ops, (size_t)nops, sizeof *ops, by_count);
  qsort(devs, (size_t)ndevs, sizeof *devs, by_count);

  if (o->json) {
    json_t *j = json_object(), *jo = json_object(), *jd = json_object(),
           *jv = json_array();
    json_object_set_new(j, "file", json_string(o->file));
    json_object_set_new(j, "bytes", json_integer(fi.file_bytes));
    json_object_set_new(j, "format_version", json_integer(fi.format_version));
    json_object_set_new(j, "min_reader_version",
                        json_integer(fi.min_reader_version));
    json_object_set_new(j, "producer", json_string(fi.producer));
    json_object_set_new(j, "nodes", json_integer(nn));
    for (int i = 0; i < nops; i++)
      json_object_set_new(jo, ops[i].key, json_integer(ops[i].n));
    for (int i = 0; i < ndevs; i++)
      json_object_set_new(jd, devs[i].key, json_integer(devs[i].n));
    for (int i = 0; i < nn; i++) {
      const wf_node *n = wf_graph_node(g, i);
      const char *name = variable_name(n);
      wf_attr_value dt, sh;
      if (!name || wf_node_get_attr(n, "dtype", &dt, NULL) ||
          wf_node_get_attr(n, "shape", &sh, NULL))
        continue;
      json_t *v = json_object(), *dims = json_array();
      json_object_set_new(v, "name", json_string(name));
      json_object_set_new(v, "node", json_string(wf_node_name(n)));
      json_object_set_new(v, "dtype",
                          json_string(wf_dtype_name((wf_dtype)dt.u.dtype)));
      for (int k = 0; k < sh.u.shape.rank; k++)
        json_array_append_new(dims, json_integer(sh.u.shape.dims[k]));
      json_object_set_new(v, "shape", sh.u.shape.rank < 0 ? json_null() : dims);
      if (sh.u.shape.rank < 0)
        json_decref(dims);
      json_array_append_new(jv, v);
    }
    json_object_set_new(j, "ops", jo);
    json_object_set_new(j, "devices", jd);
    json_object_set_new(j, "variables", jv);
    rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) ? 1 : 0;
    fputc('\n', stdout);
    json_decref(j);
    goto done;
  }

  printf("file:            %s (%" PRId64 " bytes)\n", o->file, fi.file_bytes);
  printf("format version:  %d (readable from reader version %d)\n",
         fi.format_version, fi.min_reader_version);
  printf("producer:        %s\n", fi.producer[0] ? fi.producer : "(unnamed)");
  printf("nodes:           %d\n", nn);
  printf("ops:             %d distinct\n", nops);
  for (int i = 0; i < nops; i++)
    printf("  %6d  %-32s %s\n", ops[i].n, ops[i].key,
           op_plugin(rt, ops[i].key));
  printf("devices requested:\n");
  for (int i = 0; i < ndevs; i++)
    printf("  %6d  %s\n", devs[i].n,
           *devs[i].key ? devs[i].key : "(none: placement chooses)");
  printf("variables:\n");
  /* Nodes naming one variable (the same shared_name) show it once. */
  for (int i = 0; i < nn; i++) {
    const wf_node *n = wf_graph_node(g, i);
    const char *name = variable_name(n);
    wf_attr_value dt, sh;
    int64_t count;
    if (!name || wf_node_get_attr(n, "dtype", &dt, NULL) ||
        wf_node_get_attr(n, "shape", &sh, NULL) ||
        bump(vars, nvars, name) == nvars)
      continue;
    count = shape_elements(&sh);
    printf("  %-40s %-8s %s", name, wf_dtype_name((wf_dtype)dt.u.dtype),
           wf_shape_str(&sh.u.shape, buf, sizeof buf));
    if (strcmp(name, wf_node_name(n)) != 0)
      printf("  (node %s)", wf_node_name(n));
    putchar('\n');
    nvars++;
    if (count > 0)
      params += count;
  }
  if (nvars == 0)
    printf("  (none)\n");
  else
    printf("  %d variable%s, %" PRId64 " values\n", nvars,
           nvars == 1 ? "" : "s", params);
  rc = 0;
done:
  free(ops);
  free(devs);
  free(vars);
  wf_graph_free(g);
  wf_status_free(st);
  return rc;
}

/* ---- dump ---------------------------------------------------------------- */

static int dump(wf_runtime *rt, const graph_opts *o) {
  wf_graph *g = load(rt, o->file);
  char buf[160];
  int nn;

  if (!g)
    return 1;
  nn = wf_graph_num_nodes(g);
  printf("# %s: %d node%s\n", o->file, nn, nn == 1 ? "" : "s");
  for (int i = 0; i < nn; i++) {
    const wf_node *n = wf_graph_node(g, i);
    printf("\n%s = %s\n", wf_node_name(n), wf_node_op(n));
    if (wf_node_num_inputs(n) > 0) {
      printf("  inputs: ");
      for (int k = 0; k < wf_node_num_inputs(n); k++) {
        wf_output in = wf_node_input(n, k);
        printf("%s%s:%d", k ? ", " : "", wf_node_name(in.node), (int)in.index);
      }
      putchar('\n');
    }
    if (wf_node_num_control_inputs(n) > 0) {
      printf("  control inputs: ");
      for (int k = 0; k < wf_node_num_control_inputs(n); k++)
        printf("%s%s", k ? ", " : "",
               wf_node_name(wf_node_control_input(n, k)));
      putchar('\n');
    }
    if (*wf_node_device(n))
      printf("  device: %s\n", wf_node_device(n));
    for (int k = 0; k < wf_node_num_attrs(n); k++) {
      wf_attr_value v;
      const char *name = wf_node_attr_name(n, k, &v);
      printf("  attr %s = ", name);
      print_attr(stdout, &v);
      putchar('\n');
    }
    if (wf_node_num_outputs(n) > 0) {
      printf("  outputs: ");
      for (int k = 0; k < wf_node_num_outputs(n); k++) {
        wf_shape s;
        wf_node_output_shape(n, k, &s);
        printf("%s%s %s", k ? ", " : "",
               wf_dtype_name(wf_node_output_dtype(n, k)),
               wf_shape_str(&s, buf, sizeof buf));
      }
      putchar('\n');
    }
  }
  wf_graph_free(g);
  return 0;
}

/* ---- Graphviz -------------------------------------------------------------
 */

/* Copies the file at path to stdout. */
static int copy_to_stdout(const char *path) {
  FILE *f = fopen(path, "rb");
  char buf[65536];
  size_t n;
  if (!f) {
    fprintf(stderr, "weft graph: %s: %s\n", path, strerror(errno));
    return 1;
  }
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    if (fwrite(buf, 1, n, stdout) != n)
      break;
  int bad = ferror(f) || ferror(stdout);
  fclose(f);
  if (bad)
    fprintf(stderr, "weft graph: copying the dot output failed\n");
  return bad;
}

static int dot(wf_runtime *rt, const graph_opts *o) {
  wf_status *st = wf_status_new();
  wf_graph *g = load(rt, o->file);
  char tmp[4096] = "";
  int rc = 1;

  if (!g || !st)
    goto done;
  if (!o->out) {
    /* wf_graph_write_dot writes a file: a private one, then stdout. */
    const char *dir = getenv("TMPDIR");
    int fd;
    snprintf(tmp, sizeof tmp, "%s/weft-graph-XXXXXX.dot",
             dir && *dir ? dir : "/tmp");
    fd = mkstemps(tmp, 4);
    if (fd < 0) {
      fprintf(stderr, "weft graph: cannot create a temporary file %s: %s\n",
              tmp, strerror(errno));
      tmp[0] = '\0';
      goto done;
    }
    close(fd);
  }
  if (wf_graph_write_dot(g, o->out ? o->out : tmp, st)) {
    fprintf(stderr, "weft graph: %s\n", wf_status_message(st));
    goto done;
  }
  rc = o->out ? 0 : copy_to_stdout(tmp);
done:
  if (tmp[0])
    unlink(tmp);
  wf_graph_free(g);
  wf_status_free(st);
  return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int only_dot(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".dot") == 0;
}

static int dot_passes(wf_runtime *rt, const graph_opts *o) {
  wf_status *st = wf_status_new();
  wf_graph *g = load(rt, o->file);
  wf_output fetches[MAX_SIGNATURE], feeds[MAX_SIGNATURE];
  wf_node *targets[MAX_SIGNATURE];
  struct dirent **names = NULL;
  int rc = 1, n;

  if (!g || !st)
    goto done;
  for (int i = 0; i < o->nfetch + o->nfeed; i++) {
    int fetch = i < o->nfetch;
    const char *s = fetch ? o->fetch[i] : o->feed[i - o->nfetch];
    wf_output *out = fetch ? &fetches[i] : &feeds[i - o->nfetch];
    if (wf_graph_parse_output(g, s, out, st)) {
      fprintf(stderr, "weft graph: --%s %s: %s (in %s)\n",
              fetch ? "fetch" : "feed", s, wf_status_message(st), o->file);
      goto done;
    }
  }
  for (int i = 0; i < o->ntarget; i++) {
    targets[i] = wf_graph_find_node(g, o->target[i]);
    if (!targets[i]) {
      fprintf(stderr, "weft graph: --target %s: no node of that name in %s\n",
              o->target[i], o->file);
      goto done;
    }
  }
  if (wf_graph_write_dot_passes(g, feeds, o->nfeed, fetches, o->nfetch, targets,
                                o->ntarget, o->dir, st)) {
    fprintf(stderr, "weft graph: %s\n", wf_status_message(st));
    goto done;
  }
  n = scandir(o->dir, &names, only_dot, by_name);
  for (int i = 0; i < n; i++) {
    printf("%s/%s\n", o->dir, names[i]->d_name);
    free(names[i]);
  }
  free(names);
  rc = 0;
done:
  wf_graph_free(g);
  wf_status_free(st);
  return rc;
}

/* ---- arguments ----------------------------------------------------------- */

static int add_arg(const char **list, int *n, const char *opt, const char *v) {
  if (*n == MAX_SIGNATURE) {
    fprintf(stderr, "weft graph: at most %d %s\n", MAX_SIGNATURE, opt);
    return 2;
  }
  list[(*n)++] = v;
  return 0;
}

/* Fills o from argv (argv[0] is "graph"); 0, or the exit status 2. */
static int parse(int argc, char **argv, graph_opts *o) {
  static const struct option longopts[] = {
      {"dot", no_argument, NULL, 'd'},
      {"dot-passes", required_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"fetch", required_argument, NULL, 'f'},
      {"feed", required_argument, NULL, 'F'},
      {"target", required_argument, NULL, 't'},
      {"json", no_argument, NULL, 'j'},
      {"config", required_argument, NULL, 'c'},
      {NULL, 0, NULL, 0}};
  int c, rc = 0, pos;

  optind = 1;
  opterr = 0;
  while (rc == 0 &&
         (c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
    switch (c) {
    case 'd':
      o->action = "dot";
      break;
    case 'p':
      o->action = "dot-passes";
      o->dir = optarg;
      break;
    case 'o':
      o->out = optarg;
      break;
    case 'f':
      rc = add_arg(o->fetch, &o->nfetch, "--fetch", optarg);
      break;
    case 'F':
      rc = add_arg(o->feed, &o->nfeed, "--feed", optarg);
      break;
    case 't':
      rc = add_arg(o->target, &o->ntarget, "--target", optarg);
      break;
    case 'j':
      o->json = 1;
      break;
    case 'c':
      o->config = optarg;
      break;
    case ':':
      fprintf(stderr, "weft graph: %s needs a value\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr,
              "weft graph: unknown option '%s' (see weft graph "
              "--help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (rc)
    return rc;
  pos = optind;
  if (!o->action) {
    if (pos >= argc) {
      fprintf(stderr, "weft graph: give an action (info, dump, --dot, "
                      "--dot-passes DIR) and a FILE (see weft graph "
                      "--help)\n");
      return 2;
    }
    o->action = argv[pos++];
    if (strcmp(o->action, "info") != 0 && strcmp(o->action, "dump") != 0) {
      fprintf(stderr,
              "weft graph: unknown action '%s' (info, dump, --dot "
              "or --dot-passes DIR)\n",
              o->action);
      return 2;
    }
  }
  if (pos >= argc) {
    fprintf(stderr, "weft graph %s: give the graph FILE\n", o->action);
    return 2;
  }
  o->file = argv[pos++];
  if (pos < argc) {
    fprintf(stderr, "weft graph: unexpected argument '%s'\n", argv[pos]);
    return 2;
  }
  if (o->out && strcmp(o->action, "dot") != 0) {
    fprintf(stderr, "weft graph: -o applies to --dot only\n");
    return 2;
  }
  if (o->json && strcmp(o->action, "info") != 0) {
    fprintf(stderr, "weft graph: --json applies to info only\n");
    return 2;
  }
  if ((o->nfetch || o->nfeed || o->ntarget) &&
      strcmp(o->action, "dot-passes") != 0) {
    fprintf(stderr,
            "weft graph: --fetch, --feed and --target apply to --dot-passes "
            "only\n");
    return 2;
  }
  if (strcmp(o->action, "dot-passes") == 0 && o->nfetch + o->ntarget == 0) {
    fprintf(stderr, "weft graph --dot-passes: give the signature: at least "
                    "one --fetch or --target\n");
    return 2;
  }
  return 0;
}

int weft_cmd_graph(int argc, char **argv, const char *config) {
  graph_opts o;
  wf_runtime *rt;
  int rc;

  memset(&o, 0, sizeof o);
  o.config = config;
  if ((rc = parse(argc, argv, &o)) != 0)
    return rc;
  rt = weft_open_runtime(o.config);
  if (!rt)
    return 1;
  if (strcmp(o.action, "info") == 0)
    rc = info(rt, &o);
  else if (strcmp(o.action, "dump") == 0)
    rc = dump(rt, &o);
  else if (strcmp(o.action, "dot") == 0)
    rc = dot(rt, &o);
  else
    rc = dot_passes(rt, &o);
  wf_runtime_free(rt);
  return rc;
}
