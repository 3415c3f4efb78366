/* tests/onnx/conformance.c — ONNX's backend conformance cases through
 * weft's ONNX importer: every case directory of libonnx-testdata (node,
 * pytorch-converted, pytorch-operator, simple) holds model.onnx and
 * test_data_set_N/{input,output}_K.pb TensorProtos. Each model is imported
 * (wf_import, format "onnx"), its weights initialised, every data set run
 * through the signature and each output compared with ONNX's default
 * tolerances (|got - want| <= atol + rtol |want|, rtol 1e-3, atol 1e-7;
 * NaN matches NaN; integers and bools exactly). Prints a pass table per op
 * type and the totals, then compares the outcome with the expected-failures
 * file (one case per line, "SUITE/CASE  reason"): a case failing that is
 * not listed, or passing that is, fails the run, so the file stays true.
 *
 * The suite "weft" holds the real models of tests/onnx/models (a CNN with
 * residual blocks, a depthwise-separable CNN, a transformer encoder), made
 * with their numpy references by tests/onnx/make_models.py.
 *
 * Usage: onnx_conformance [--data DIR] [--models DIR] [--expected FILE]
 *                         [--only SUBSTR] [--verbose] [--write-expected FILE]
 * No Python: the TensorProtos are read with the importer's generated
 * protobuf-c code. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <weft/weft.h>

#include "onnx.pb-c.h"

#define RTOL 1e-3
#define ATOL 1e-7

/* ONNX's suites under --data, then "weft": the real models this tree
 * builds (tests/onnx/make_models.py) in the same layout. */
static const char *const suites[] = {"node", "pytorch-converted",
                                     "pytorch-operator", "simple", "weft"};
#define NSUITES 5

typedef struct result {
  char name[320]; /* suite/case */
  int pass;
  char why[320];
  char ops[512]; /* op types, space-separated, each once */
} result;

static int verbose;

static int read_all(const char *path, uint8_t **buf, size_t *len) {
  FILE *f = fopen(path, "rb");
  struct stat sb;
  if (!f)
    return -1;
  if (fstat(fileno(f), &sb) != 0) {
    fclose(f);
    return -1;
  }
  *len = (size_t)sb.st_size;
  *buf = malloc(*len ? *len : 1);
  if (!*buf || fread(*buf, 1, *len, f) != *len) {
    free(*buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  return 0;
}

static wf_dtype dtype_of(int32_t t) {
  switch (t) {
  case 1:
    return WF_FLOAT32;
  case 2:
    return WF_UINT8;
  case 3:
    return WF_INT8;
  case 6:
    return WF_INT32;
  case 7:
    return WF_INT64;
  case 8:
    return WF_STRING;
  case 9:
    return WF_BOOL;
  case 10:
    return WF_FLOAT16;
  case 11:
    return WF_FLOAT64;
  case 16:
  case 4: /* ONNX's test data holds bfloat16 values as uint16 bits (weft
           * has no uint16: a uint16 model input fails to import anyway) */
    return WF_BFLOAT16;
  default:
    return WF_DTYPE_INVALID;
  }
}

/* A string TensorProto's tensor (its string_data); NULL with why. */
static wf_tensor *strings_of(const Onnx__TensorProto *tp, const int64_t *dims,
                             int64_t count, const char *path, char *why,
                             size_t wlen, wf_status *st) {
  if ((int64_t)tp->n_string_data != count) {
    snprintf(why, wlen, "%s: %zu strings for %lld elements", path,
             tp->n_string_data, (long long)count);
    return NULL;
  }
  const char **strs = calloc((size_t)count + 1, sizeof *strs);
  size_t *lens = calloc((size_t)count + 1, sizeof *lens);
  wf_tensor *t = NULL;
  if (strs && lens) {
    for (int64_t k = 0; k < count; k++) {
      strs[k] = tp->string_data[k].data ? (const char *)tp->string_data[k].data
                                        : "";
      lens[k] = tp->string_data[k].len;
    }
    t = wf_tensor_new_strings(dims, (int)tp->n_dims, strs, lens, st);
    if (!t)
      snprintf(why, wlen, "%s", wf_status_message(st));
  } else {
    snprintf(why, wlen, "out of memory");
  }
  free(strs);
  free(lens);
  return t;
}

/* A TensorProto file as a weft tensor (inline data only); NULL with why. */
static wf_tensor *load_tensor(const char *path, char *name, size_t nlen,
                              char *why, size_t wlen, wf_status *st) {
  uint8_t *buf;
  size_t len;
  wf_tensor *t = NULL;
  if (read_all(path, &buf, &len)) {
    snprintf(why, wlen, "cannot read %s", path);
    return NULL;
  }
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
  free(buf);
  if (!tp) {
    snprintf(why, wlen, "%s: not a TensorProto", path);
    return NULL;
  }
  snprintf(name, nlen, "%s", tp->name ? tp->name : "");
  wf_dtype dt = dtype_of(tp->data_type);
  int64_t dims[WF_MAX_RANK], count = 1;
  if (dt == WF_DTYPE_INVALID) {
    snprintf(why, wlen, "test data of element type %d, which weft lacks",
             (int)tp->data_type);
    goto done;
  }
  if (tp->n_dims > WF_MAX_RANK) {
    snprintf(why, wlen, "test data of rank %zu", tp->n_dims);
    goto done;
  }
  for (size_t i = 0; i < tp->n_dims; i++)
    count *= (dims[i] = tp->dims[i]);
  if (dt == WF_STRING) {
    t = strings_of(tp, dims, count, path, why, wlen, st);
    goto done;
  }
  t = wf_tensor_new(dt, dims, (int)tp->n_dims, st);
  if (!t) {
    snprintf(why, wlen, "%s", wf_status_message(st));
    goto done;
  }
  void *d = wf_tensor_data(t);
  size_t nbytes = wf_tensor_nbytes(t);
  if (tp->has_raw_data) {
    if (tp->raw_data.len != nbytes) {
      snprintf(why, wlen, "%s: raw_data size", path);
      wf_tensor_release(t);
      t = NULL;
      goto done;
    }
    if (nbytes)
      memcpy(d, tp->raw_data.data, nbytes);
  } else {
    for (int64_t k = 0; k < count; k++)
      switch (dt) {
      case WF_FLOAT32:
        ((float *)d)[k] = tp->float_data[k];
        break;
      case WF_FLOAT64:
        ((double *)d)[k] = tp->double_data[k];
        break;
      case WF_INT64:
        ((int64_t *)d)[k] = tp->int64_data[k];
        break;
      case WF_INT32:
        ((int32_t *)d)[k] = tp->int32_data[k];
        break;
      case WF_INT8:
        ((int8_t *)d)[k] = (int8_t)tp->int32_data[k];
        break;
      case WF_UINT8:
      case WF_BOOL:
        ((uint8_t *)d)[k] = (uint8_t)tp->int32_data[k];
        break;
      default:
        ((uint16_t *)d)[k] = (uint16_t)tp->int32_data[k];
      }
  }
done:
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return t;
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

static double element(const wf_tensor *t, int64_t i) {
  if (wf_tensor_dtype(t) == WF_FLOAT16)
    return half_to_double(((const uint16_t *)wf_tensor_data(t))[i]);
  return wf_tensor_element(t, i);
}

/* 0 when got matches want; else why. */
static int compare(const wf_tensor *got, const wf_tensor *want, int k,
                   char *why, size_t wlen) {
  wf_shape gs, ws;
  wf_tensor_shape(got, &gs);
  wf_tensor_shape(want, &ws);
  if (wf_tensor_dtype(got) != wf_tensor_dtype(want)) {
    snprintf(why, wlen, "output %d: dtype %d, want %d", k,
             (int)wf_tensor_dtype(got), (int)wf_tensor_dtype(want));
    return 1;
  }
  int same = gs.rank == ws.rank;
  for (int i = 0; same && i < gs.rank; i++)
    same = gs.dims[i] == ws.dims[i];
  if (!same) {
    char a[128], b[128];
    int p = 0, q = 0;
    for (int i = 0; i < gs.rank && p < 100; i++)
      p += snprintf(a + p, sizeof a - p, "%s%lld", i ? "," : "",
                    (long long)gs.dims[i]);
    for (int i = 0; i < ws.rank && q < 100; i++)
      q += snprintf(b + q, sizeof b - q, "%s%lld", i ? "," : "",
                    (long long)ws.dims[i]);
    a[p] = b[q] = 0;
    snprintf(why, wlen, "output %d: shape (%s), want (%s)", k, a, b);
    return 1;
  }
  if (wf_tensor_dtype(got) == WF_STRING) {
    for (int64_t i = 0; i < wf_tensor_count(got); i++) {
      size_t gl, wl;
      const char *g = wf_tensor_string(got, i, &gl);
      const char *w = wf_tensor_string(want, i, &wl);
      if (gl != wl || memcmp(g, w, gl) != 0) {
        snprintf(why, wlen, "output %d: element %lld is \"%.40s\", want "
                 "\"%.40s\"", k, (long long)i, g, w);
        return 1;
      }
    }
    return 0;
  }
  int exact = wf_tensor_dtype(got) != WF_FLOAT32 &&
              wf_tensor_dtype(got) != WF_FLOAT64 &&
              wf_tensor_dtype(got) != WF_FLOAT16 &&
              wf_tensor_dtype(got) != WF_BFLOAT16;
  int64_t n = wf_tensor_count(got);
  for (int64_t i = 0; i < n; i++) {
    double g = element(got, i), w = element(want, i);
    if (isnan(w) && isnan(g))
      continue;
    if (exact ? g != w
              : !(fabs(g - w) <= ATOL + RTOL * fabs(w)) &&
                    !(isinf(w) && g == w)) {
      snprintf(why, wlen, "output %d: element %lld is %.9g, want %.9g", k,
               (long long)i, g, w);
      return 1;
    }
  }
  return 0;
}

/* The op types of the model (each once), for the table. */
static void model_ops(const char *path, char *ops, size_t len) {
  uint8_t *buf;
  size_t n;
  ops[0] = 0;
  if (read_all(path, &buf, &n))
    return;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, buf);
  free(buf);
  if (!m)
    return;
  size_t at = 0;
  for (size_t i = 0; m->graph && i < m->graph->n_node; i++) {
    const char *op = m->graph->node[i]->op_type;
    char key[80];
    snprintf(key, sizeof key, " %s ", op);
    char padded[600];
    snprintf(padded, sizeof padded, " %s ", ops);
    if (strstr(padded, key))
      continue;
    if (at + strlen(op) + 2 < len)
      at += (size_t)snprintf(ops + at, len - at, "%s%s", at ? " " : "", op);
  }
  onnx__model_proto__free_unpacked(m, NULL);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted entries of dir starting with prefix (NULL: all but dot files). */
static int list_dir(const char *dir, const char *prefix, char ***out) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **v = NULL;
  int n = 0, cap = 0;
  *out = NULL;
  if (!d)
    return -1;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' ||
        (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0))
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv)
        break;
      v = nv;
    }
    v[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n)
    qsort(v, (size_t)n, sizeof *v, cmp_str);
  *out = v;
  return n;
}

static void free_list(char **v, int n) {
  for (int i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Runs one data set; 0 when every output matches. */
static int run_set(wf_session *s, const wf_signature_def *sig,
                   const char *setdir, char *why, size_t wlen,
                   wf_status *st) {
  char **files;
  int nf = list_dir(setdir, NULL, &files), rc = 1;
  wf_tensor *in[64] = {0}, *want[64] = {0}, *got[64] = {0};
  int nin = 0, nout = 0;
  for (int i = 0; i < nf; i++) {
    char path[1800], name[256];
    int k;
    snprintf(path, sizeof path, "%s/%s", setdir, files[i]);
    if (sscanf(files[i], "input_%d.pb", &k) == 1 && k >= 0 && k < 64) {
      if (!(in[k] = load_tensor(path, name, sizeof name, why, wlen, st)))
        goto done;
      if (k + 1 > nin)
        nin = k + 1;
    } else if (sscanf(files[i], "output_%d.pb", &k) == 1 && k >= 0 &&
               k < 64) {
      if (!(want[k] = load_tensor(path, name, sizeof name, why, wlen, st)))
        goto done;
      if (k + 1 > nout)
        nout = k + 1;
    }
  }
  if (nin != sig->ninputs || nout != sig->noutputs) {
    snprintf(why, wlen,
             "the data set has %d inputs and %d outputs; the signature %d "
             "and %d",
             nin, nout, sig->ninputs, sig->noutputs);
    goto done;
  }
  if (wf_session_run(s, NULL, sig->inputs, in, nin, sig->outputs, got, nout,
                     NULL, 0, NULL, st)) {
    snprintf(why, wlen, "run: %s", wf_status_message(st));
    goto done;
  }
  rc = 0;
  for (int k = 0; k < nout && !rc; k++)
    rc = compare(got[k], want[k], k, why, wlen);
done:
  for (int k = 0; k < 64; k++) {
    wf_tensor_release(in[k]);
    wf_tensor_release(want[k]);
    wf_tensor_release(got[k]);
  }
  free_list(files, nf);
  return rc;
}

static void run_case(wf_runtime *rt, const char *dir, result *r,
                     wf_status *st) {
  char path[1500];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  model_ops(path, r->ops, sizeof r->ops);
  wf_imported *m = wf_import(rt, path, "onnx", st);
  wf_session *s = NULL;
  r->pass = 0;
  if (!m) {
    /* the message names the file twice (core, importer): keep what the
     * importer says after it */
    const char *msg = wf_status_message(st), *p = strstr(msg, "model.onnx: ");
    while (p && strstr(p + 1, "model.onnx: "))
      p = strstr(p + 1, "model.onnx: ");
    snprintf(r->why, sizeof r->why, "import: %s",
             p ? p + strlen("model.onnx: ") : msg);
    return;
  }
  const wf_signature_def *sig = wf_imported_signature(m, 0);
  int ninit;
  wf_node *const *init = wf_imported_init(m, &ninit);
  if (!(s = wf_session_new(wf_imported_graph(m), st)) ||
      (ninit && wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init,
                               ninit, NULL, st))) {
    snprintf(r->why, sizeof r->why, "session: %s", wf_status_message(st));
    goto done;
  }
  char **sets;
  int ns = list_dir(dir, "test_data_set_", &sets);
  if (ns <= 0) {
    snprintf(r->why, sizeof r->why, "no test data sets");
    goto done;
  }
  int ok = 1;
  for (int i = 0; i < ns && ok; i++) {
    char setdir[1600];
    snprintf(setdir, sizeof setdir, "%s/%s", dir, sets[i]);
    ok = run_set(s, sig, setdir, r->why, sizeof r->why, st) == 0;
  }
  free_list(sets, ns);
  r->pass = ok;
done:
  wf_session_free(s);
  wf_imported_free(m);
}

/* ---- expected failures --------------------------------------------------- */

typedef struct expected {
  char **names;
  int n;
} expected;

static int load_expected(const char *path, expected *e) {
  FILE *f = fopen(path, "r");
  char line[1024];
  e->names = NULL;
  e->n = 0;
  if (!f)
    return -1;
  int cap = 0;
  while (fgets(line, sizeof line, f)) {
    char name[300];
    if (line[0] == '#' || sscanf(line, "%299s", name) != 1)
      continue;
    if (e->n == cap) {
      cap = cap ? 2 * cap : 256;
      e->names = realloc(e->names, (size_t)cap * sizeof *e->names);
    }
    e->names[e->n++] = strdup(name);
  }
  fclose(f);
  return 0;
}

static int is_expected(const expected *e, const char *name) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->names[i], name) == 0)
      return 1;
  return 0;
}

/* ---- the table ------------------------------------------------------------ */

typedef struct opstat {
  char op[64];
  int pass, total;
} opstat;

static void op_table(const result *r, int n) {
  opstat *t = calloc(512, sizeof *t);
  int nt = 0;
  for (int i = 0; i < n; i++) {
    char ops[512], *save = NULL;
    snprintf(ops, sizeof ops, "%s", r[i].ops);
    for (char *op = strtok_r(ops, " ", &save); op;
         op = strtok_r(NULL, " ", &save)) {
      int k = 0;
      while (k < nt && strcmp(t[k].op, op) != 0)
        k++;
      if (k == nt) {
        if (nt == 512)
          continue;
        snprintf(t[nt++].op, sizeof t[0].op, "%s", op);
      }
      t[k].total++;
      t[k].pass += r[i].pass;
    }
  }
  for (int i = 1; i < nt; i++) /* by name */
    for (int j = i; j > 0 && strcmp(t[j - 1].op, t[j].op) > 0; j--) {
      opstat x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  printf("%-28s %6s %6s\n", "op (cases using it)", "pass", "total");
  for (int i = 0; i < nt; i++)
    printf("%-28s %6d %6d%s\n", t[i].op, t[i].pass, t[i].total,
           t[i].pass < t[i].total ? "  *" : "");
  free(t);
}

int main(int argc, char **argv) {
  const char *data = ONNX_TESTDATA, *models = ONNX_MODELS, *exp_path = NULL,
             *only = NULL, *write_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
      data = argv[++i];
    else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
      models = argv[++i];
    else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc)
      exp_path = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--write-expected") == 0 && i + 1 < argc)
      write_path = argv[++i];
    else if (strcmp(argv[i], "--verbose") == 0)
      verbose = 1;
    else {
      fprintf(stderr,
              "usage: %s [--data DIR] [--models DIR] [--expected FILE] "
              "[--only SUBSTR] "
              "[--verbose] [--write-expected FILE]\n",
              argv[0]);
      return 2;
    }
  }
  if (!exp_path && !only && !write_path)
    exp_path = ONNX_EXPECTED;
  struct stat sb;
  if (stat(data, &sb) != 0) {
    /* libonnx-testdata is installed by .ci/setup; without it, skip */
    printf("SKIP: no ONNX test data at %s (Debian package "
           "libonnx-testdata)\n",
           data);
    return 77;
  }

  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  /* small graphs: one thread each way spends least on scheduling */
  wf_config_set(cfg, "threads", "inter_op", "1", st);
  wf_config_set(cfg, "threads", "intra_op", "1", st);
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt) {
    fprintf(stderr, "runtime: %s\n", wf_status_message(st));
    return 1;
  }
  result *res = NULL;
  int nres = 0, cap = 0;
  int spass[NSUITES] = {0}, stotal[NSUITES] = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int s = 0; s < NSUITES; s++) {
    char sdir[1024];
    char **cases;
    if (strcmp(suites[s], "weft") == 0)
      snprintf(sdir, sizeof sdir, "%s", models);
    else
      snprintf(sdir, sizeof sdir, "%s/%s", data, suites[s]);
    int nc = list_dir(sdir, NULL, &cases);
    for (int c = 0; c < nc; c++) {
      char name[300], dir[1400];
      snprintf(name, sizeof name, "%s/%s", suites[s], cases[c]);
      if (only && !strstr(name, only))
        continue;
      if (nres == cap) {
        cap = cap ? 2 * cap : 1024;
        res = realloc(res, (size_t)cap * sizeof *res);
      }
      result *r = &res[nres++];
      memset(r, 0, sizeof *r);
      snprintf(r->name, sizeof r->name, "%s", name);
      snprintf(dir, sizeof dir, "%s/%s", sdir, cases[c]);
      if (verbose) {
        printf("%s ...\n", name);
        fflush(stdout);
      }
      run_case(rt, dir, r, st);
      for (char *p = r->why; *p; p++)
        if (*p == '\n' || *p == '\t')
          *p = ' ';
      stotal[s]++;
      spass[s] += r->pass;
      if (verbose || only)
        printf("%s %s%s%s\n", r->pass ? "PASS" : "FAIL", name,
               r->pass ? "" : ": ", r->why);
    }
    free_list(cases, nc);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);

  op_table(res, nres);
  int tp = 0, tt = 0;
  for (int s = 0; s < NSUITES; s++) {
    printf("%-18s %4d / %4d pass (%.1f%%)\n", suites[s], spass[s], stotal[s],
           stotal[s] ? 100.0 * spass[s] / stotal[s] : 0.0);
    tp += spass[s];
    tt += stotal[s];
  }
  printf("%-18s %4d / %4d pass (%.1f%%) in %.1f s\n", "all", tp, tt,
         tt ? 100.0 * tp / tt : 0.0,
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);

  int bad = 0;
  if (write_path) {
    FILE *f = fopen(write_path, "w");
    if (!f) {
      fprintf(stderr, "%s: %s\n", write_path, strerror(errno));
      return 1;
    }
    fputs("# tests/onnx/expected_failures.txt — the ONNX backend cases "
          "(libonnx-testdata)\n# that weft's ONNX importer does not pass, "
          "each with its reason (what the\n# importer or the run said). "
          "onnx_conformance fails on any case that fails\n# without being "
          "listed here or passes while listed. Regenerate with\n#   "
          "tests/onnx/onnx_conformance --write-expected FILE\n# and review "
          "the diff.\n",
          f);
    for (int i = 0; i < nres; i++)
      if (!res[i].pass)
        fprintf(f, "%s\t%s\n", res[i].name, res[i].why);
    fclose(f);
  }
  if (exp_path) {
    expected e;
    if (load_expected(exp_path, &e)) {
      fprintf(stderr, "cannot read the expected failures %s\n", exp_path);
      return 1;
    }
    for (int i = 0; i < nres; i++) {
      int x = is_expected(&e, res[i].name);
      if (!res[i].pass && !x) {
        printf("UNEXPECTED FAILURE %s: %s\n", res[i].name, res[i].why);
        bad++;
      } else if (res[i].pass && x) {
        printf("UNEXPECTED PASS %s (remove it from %s)\n", res[i].name,
               exp_path);
        bad++;
      }
    }
    for (int i = 0; i < e.n; i++)
      free(e.names[i]);
    free(e.names);
  }
  free(res);
  wf_runtime_free(rt);
  wf_status_free(st);
  if (bad)
    printf("%d cases differ from %s\n", bad, exp_path);
  return bad ? 1 : 0;
}
