/* tools/cmd_ckpt.c — `weft ckpt`: looks into checkpoints (weft/checkpoint.h)
 * without a runtime: ls lists a directory of numbered checkpoints, verify
 * checks one file's structure and every checksum, diff compares two files
 * tensor by tensor.
 *
 * It only reads; it never repairs, converts or deletes a checkpoint. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"

const char weft_ckpt_summary[] =
    "look into checkpoints: list a directory, verify, compare two";
const char weft_ckpt_help[] =
    "usage: weft ckpt ls DIR [--json]\n"
    "       weft ckpt verify FILE [--json]\n"
    "       weft ckpt diff A B [--json]\n\n"
    "Checkpoints are safetensors files with a CRC-32C per tensor\n"
    "(weft/checkpoint.h); numbered ones are DIR/ckpt-<step>.safetensors.\n\n"
    "  ls      lists the checkpoints of DIR, oldest first: file, step, size,\n"
    "          number of tensors, and OK or why it does not verify\n"
    "  verify  checks FILE's header and every tensor's checksum and prints\n"
    "          every problem; exits 1 if there is one (files of other\n"
    "          programs have no checksums: only their structure is checked)\n"
    "  diff    compares A and B: tensors only in one of them, dtype and\n"
    "          shape differences, tensors whose values differ (for float\n"
    "          tensors the largest absolute difference, otherwise how many\n"
    "          elements differ), and metadata other than checksums; exits 0\n"
    "          when they are identical, 1 when they differ or on an error\n\n"
    "Options:\n"
    "  --json  machine-readable output\n";

/* ---- shared -------------------------------------------------------------- */

static int emit_json(json_t *j) {
  int rc;
  if (!j) {
    fprintf(stderr, "weft ckpt: out of memory\n");
    return 1;
  }
  rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
  json_decref(j);
  putchar('\n');
  return rc == 0 ? 0 : 1;
}

/* msg without a leading "PATH: " (the output names the file already). */
static const char *without_path(const char *msg, const char *path) {
  size_t n = strlen(path);
  if (strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
    return msg + n + 2;
  return msg;
}

static void describe(const wf_checkpoint *c, int i, char *buf, size_t len) {
  wf_shape s;
  char shape[128];
  wf_checkpoint_tensor_shape(c, i, &s);
  snprintf(buf, len, "%s %s", wf_dtype_name(wf_checkpoint_tensor_dtype(c, i)),
           wf_shape_str(&s, shape, sizeof shape));
}

/* ---- ls ------------------------------------------------------------------ */

static int ckpt_ls(const char *dir, int json) {
  wf_status *st = wf_status_new(), *vst = wf_status_new();
  json_t *arr = json ? json_array() : NULL;
  int64_t *steps = NULL;
  size_t cap = strlen(dir) + 64;
  char *path = malloc(cap);
  int n = 0, rc = 1;

  if (!st || !vst || !path || (json && !arr)) {
    fprintf(stderr, "weft ckpt: out of memory\n");
    goto out;
  }
  if (wf_checkpoint_list(dir, &steps, &n, st)) {
    fprintf(stderr, "weft ckpt ls: %s\n", wf_status_message(st));
    goto out;
  }
  if (!json && n == 0)
    printf("no checkpoints in %s\n", dir);
  else if (!json)
    printf("%-30s %12s %12s %8s  %s\n", "FILE", "STEP", "SIZE", "TENSORS",
           "STATUS");
  for (int i = 0; i < n; i++) {
    struct stat sb;
    wf_checkpoint *c;
    const char *name;
    int ntensors = -1, ok;
    long long size;

    wf_checkpoint_path(dir, steps[i], path, cap, NULL);
    name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
    c = wf_checkpoint_open(path, vst);
    if (c) {
      ntensors = wf_checkpoint_num_tensors(c);
      wf_checkpoint_close(c);
    }
    ok = c && wf_checkpoint_verify(path, vst) == WF_OK;
    const char *problem =
        ok ? NULL : without_path(wf_status_message(vst), path);
    if (json) {
      json_t *e = json_pack(
          "{s:s, s:I, s:I, s:o, s:b, s:o}", "file", path, "step",
          (json_int_t)steps[i], "size", (json_int_t)size, "tensors",
          ntensors < 0 ? json_null() : json_integer(ntensors), "ok", ok,
          "problem", problem ? json_string(problem) : json_null());
      if (!e || json_array_append_new(arr, e)) {
        fprintf(stderr, "weft ckpt: out of memory\n");
        goto out;
      }
      continue;
    }
    char tensors[16] = "-";
    if (ntensors >= 0)
      snprintf(tensors, sizeof tensors, "%d", ntensors);
    printf("%-30s %12" PRId64 " %12lld %8s  %s%s\n", name, steps[i], size,
           tensors, ok ? "OK" : "corrupt: ", ok ? "" : problem);
  }
  rc = 0;
  if (json) {
    rc = emit_json(arr);
    arr = NULL;
  }
out:
  json_decref(arr);
  free(steps);
  free(path);
  wf_status_free(vst);
  wf_status_free(st);
  return rc;
}

/* ---- verify -------------------------------------------------------------- */

static int ckpt_verify(const char *file, int json) {
  wf_status *st = wf_status_new();
  json_t *problems = json_array();
  wf_checkpoint *c;
  int ntensors = 0, checksums = 0, rc = 1;

  if (!st || !problems) {
    fprintf(stderr, "weft ckpt: out of memory\n");
    goto out;
  }
  c = wf_checkpoint_open(file, st);
  if (!c) {
    json_array_append_new(
        problems, json_string(without_path(wf_status_message(st), file)));
  } else {
    ntensors = wf_checkpoint_num_tensors(c);
    checksums = wf_checkpoint_metadata(c, "weft.format") != NULL;
    /* One tensor at a time, each read in full and checked. */
    for (int i = 0; i < ntensors; i++) {
      wf_tensor *t = wf_checkpoint_read(c, i, st);
      if (t)
        wf_tensor_release(t);
      else
        json_array_append_new(
            problems, json_string(without_path(wf_status_message(st), file)));
    }
    wf_checkpoint_close(c);
  }
  int nproblems = (int)json_array_size(problems);
  if (json) {
    rc = emit_json(json_pack("{s:s, s:b, s:i, s:b, s:O}", "file", file, "ok",
                             nproblems == 0, "tensors", ntensors, "checksums",
                             checksums, "problems", problems));
    rc = rc ? rc : nproblems > 0;
    goto out;
  }
  if (nproblems == 0) {
    printf("%s: OK (%d tensor%s%s)\n", file, ntensors, ntensors == 1 ? "" : "s",
           checksums ? ", every checksum matches"
                     : "; no checksums: not written by weft, only its "
                       "structure was checked");
    rc = 0;
    goto out;
  }
  for (int i = 0; i < nproblems; i++)
    printf("%s: %s\n", file, json_string_value(json_array_get(problems, i)));
  printf("%s: %d problem%s\n", file, nproblems, nproblems == 1 ? "" : "s");
out:
  json_decref(problems);
  wf_status_free(st);
  return rc;
}

/* ---- diff ---------------------------------------------------------------- */

static int is_float(wf_dtype dt) {
  return dt == WF_FLOAT32 || dt == WF_FLOAT64 || dt == WF_FLOAT16 ||
         dt == WF_BFLOAT16;
}

typedef struct diff_out {
  int json;
  int differences;
  json_t *only_a, *only_b, *dtype, *shape, *values, *metadata;
} diff_out;

static void diff_line(diff_out *d, json_t *list, json_t *item, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

/* One difference: a line of text, or item appended to list. */
static void diff_line(diff_out *d, json_t *list, json_t *item, const char *fmt,
                      ...) {
  va_list ap;
  d->differences++;
  if (d->json) {
    json_array_append_new(list, item);
    return;
  }
  json_decref(item);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

/* Compares the values of tensor ia of a and ib of b (same dtype and
 * shape). Returns 0, or 1 after printing why a tensor could not be read. */
static int diff_values(diff_out *d, const wf_checkpoint *a, int ia,
                       const wf_checkpoint *b, int ib, wf_status *st) {
  const char *name = wf_checkpoint_tensor_name(a, ia);
  wf_tensor *ta = wf_checkpoint_read(a, ia, st), *tb = NULL;
  int rc = 1;

  if (!ta || !(tb = wf_checkpoint_read(b, ib, st))) {
    fprintf(stderr, "weft ckpt diff: %s\n", wf_status_message(st));
    goto out;
  }
  rc = 0;
  if (memcmp(wf_tensor_data(ta), wf_tensor_data(tb), wf_tensor_nbytes(ta)) == 0)
    goto out;
  int64_t n = wf_tensor_count(ta);
  if (is_float(wf_tensor_dtype(ta))) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
      double x = wf_tensor_element(ta, i), y = wf_tensor_element(tb, i);
      double delta = isnan(x) && isnan(y) ? 0 : fabs(x - y);
      if (isnan(delta) || delta > worst)
        worst = delta;
      if (isnan(worst))
        break;
    }
    diff_line(d, d->values,
              json_pack("{s:s, s:f}", "tensor", name, "max_abs_diff", worst),
              "values differ: %s: max abs difference %g", name, worst);
  } else {
    size_t es = wf_tensor_nbytes(ta) / (size_t)(n ? n : 1);
    const unsigned char *pa = wf_tensor_data(ta), *pb = wf_tensor_data(tb);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
      differ += memcmp(pa + (size_t)i * es, pb + (size_t)i * es, es) != 0;
    diff_line(d, d->values,
              json_pack("{s:s, s:I, s:I}", "tensor", name, "elements_differ",
                        (json_int_t)differ, "elements", (json_int_t)n),
              "values differ: %s: %" PRId64 " of %" PRId64 " elements differ",
              name, differ, n);
  }
out:
  if (ta)
    wf_tensor_release(ta);
  if (tb)
    wf_tensor_release(tb);
  return rc;
}

static int is_checksum_key(const char *key) {
  return strncmp(key, "weft.crc32c/", 12) == 0;
}

static void diff_metadata(diff_out *d, const wf_checkpoint *a,
                          const wf_checkpoint *b) {
  int na = wf_checkpoint_num_metadata(a), nb = wf_checkpoint_num_metadata(b);
  int i = 0, k = 0;
  /* Both are sorted by key: merge. */
  while (i < na || k < nb) {
    const char *ka = i < na ? wf_checkpoint_metadata_key(a, i) : NULL;
    const char *kb = k < nb ? wf_checkpoint_metadata_key(b, k) : NULL;
    int cmp = !ka ? 1 : !kb ? -1 : strcmp(ka, kb);
    const char *key = cmp <= 0 ? ka : kb;
    const char *va = cmp <= 0 ? wf_checkpoint_metadata_value(a, i) : NULL;
    const char *vb = cmp >= 0 ? wf_checkpoint_metadata_value(b, k) : NULL;
    if (cmp <= 0)
      i++;
    if (cmp >= 0)
      k++;
    if (is_checksum_key(key) || (va && vb && strcmp(va, vb) == 0))
      continue;
    diff_line(d, d->metadata,
              json_pack("{s:s, s:o, s:o}", "key", key, "a",
                        va ? json_string(va) : json_null(), "b",
                        vb ? json_string(vb) : json_null()),
              "metadata differs: %s: %s%s%s in A, %s%s%s in B", key,
              va ? "'" : "", va ? va : "absent", va ? "'" : "", vb ? "'" : "",
              vb ? vb : "absent", vb ? "'" : "");
  }
}

static int ckpt_diff(const char *fa, const char *fb, int json) {
  wf_status *st = wf_status_new();
  wf_checkpoint *a = NULL, *b = NULL;
  diff_out d = {json,         0,
                json_array(), json_array(),
                json_array(), json_array(),
                json_array(), json_array()};
  char da[160], db[160];
  int rc = 1;

  if (!st || !d.only_a || !d.only_b || !d.dtype || !d.shape || !d.values ||
      !d.metadata) {
    fprintf(stderr, "weft ckpt: out of memory\n");
    goto out;
  }
  if (!(a = wf_checkpoint_open(fa, st)) || !(b = wf_checkpoint_open(fb, st))) {
    fprintf(stderr, "weft ckpt diff: %s\n", wf_status_message(st));
    goto out;
  }
  int na = wf_checkpoint_num_tensors(a), nb = wf_checkpoint_num_tensors(b);
  int i = 0, k = 0;
  while (i < na || k < nb) {
    int cmp = i >= na   ? 1
              : k >= nb ? -1
                        : strcmp(wf_checkpoint_tensor_name(a, i),
                                 wf_checkpoint_tensor_name(b, k));
    if (cmp < 0) {
      describe(a, i, da, sizeof da);
      diff_line(&d, d.only_a, json_string(wf_checkpoint_tensor_name(a, i)),
                "only in A: %s (%s)", wf_checkpoint_tensor_name(a, i), da);
      i++;
      continue;
    }
    if (cmp > 0) {
      describe(b, k, db, sizeof db);
      diff_line(&d, d.only_b, json_string(wf_checkpoint_tensor_name(b, k)),
                "only in B: %s (%s)", wf_checkpoint_tensor_name(b, k), db);
      k++;
      continue;
    }
    const char *name = wf_checkpoint_tensor_name(a, i);
    wf_dtype ta = wf_checkpoint_tensor_dtype(a, i);
    wf_dtype tb = wf_checkpoint_tensor_dtype(b, k);
    wf_shape sa, sb;
    wf_checkpoint_tensor_shape(a, i, &sa);
    wf_checkpoint_tensor_shape(b, k, &sb);
    if (ta != tb) {
      diff_line(&d, d.dtype,
                json_pack("{s:s, s:s, s:s}", "tensor", name, "a",
                          wf_dtype_name(ta), "b", wf_dtype_name(tb)),
                "dtype differs: %s: %s in A, %s in B", name, wf_dtype_name(ta),
                wf_dtype_name(tb));
    } else if (!wf_shape_equal(&sa, &sb)) {
      wf_shape_str(&sa, da, sizeof da);
      wf_shape_str(&sb, db, sizeof db);
      diff_line(&d, d.shape,
                json_pack("{s:s, s:s, s:s}", "tensor", name, "a", da, "b", db),
                "shape differs: %s: %s in A, %s in B", name, da, db);
    } else if (diff_values(&d, a, i, b, k, st)) {
      goto out;
    }
    i++;
    k++;
  }
  diff_metadata(&d, a, b);
  if (json) {
    if (emit_json(json_pack("{s:s, s:s, s:b, s:O, s:O, s:O, s:O, s:O, s:O}",
                            "a", fa, "b", fb, "identical", d.differences == 0,
                            "only_in_a", d.only_a, "only_in_b", d.only_b,
                            "dtype", d.dtype, "shape", d.shape, "values",
                            d.values, "metadata", d.metadata)))
      goto out;
  } else if (d.differences == 0) {
    printf("identical\n");
  }
  rc = d.differences > 0;
out:
  json_decref(d.only_a);
  json_decref(d.only_b);
  json_decref(d.dtype);
  json_decref(d.shape);
  json_decref(d.values);
  json_decref(d.metadata);
  wf_checkpoint_close(b);
  wf_checkpoint_close(a);
  wf_status_free(st);
  return rc;
}

/* ---- dispatch ------------------------------------------------------------ */

int weft_cmd_ckpt(int argc, char **argv, const char *config) {
  const char *args[3];
  int nargs = 0, json = 0, dashdash = 0;
  (void)config; /* checkpoints need no runtime */

  for (int i = 1; i < argc; i++) {
    if (!dashdash && strcmp(argv[i], "--") == 0) {
      dashdash = 1;
    } else if (!dashdash && strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (!dashdash && argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "weft ckpt: unknown option '%s' (see weft ckpt --help)\n",
              argv[i]);
      return 2;
    } else if (nargs < 3) {
      args[nargs++] = argv[i];
    } else {
      fprintf(stderr, "weft ckpt: too many arguments (see weft ckpt --help)\n");
      return 2;
    }
  }
  if (nargs == 2 && strcmp(args[0], "ls") == 0)
    return ckpt_ls(args[1], json);
  if (nargs == 2 && strcmp(args[0], "verify") == 0)
    return ckpt_verify(args[1], json);
  if (nargs == 3 && strcmp(args[0], "diff") == 0)
    return ckpt_diff(args[1], args[2], json);
  fputs(weft_ckpt_help, stderr);
  return 2;
}
