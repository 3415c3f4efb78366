/* test_labeled.c — tests the example-labeled reader plugin (labeled.so)
 * through an installed weft's input pipeline: the plugin is found on
 * $WEFT_PLUGIN_PATH; files written to a temporary directory are read with
 * wf_dataset_from_files and walked with iterators. Checked: the record
 * schema, values and labels, bad lines reported as DATA_LOSS naming file,
 * line and column while reading goes on, a glob of files batched with bad
 * records skipped and counted, option dim and refused options, and a saved
 * iterator position restored into a new iterator (the reader's tell and
 * seek). Values are small binary fractions: compared exactly.
 * Every failed check is printed; the exit status is 0 when all pass. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft/weft.h>

#define PLUGIN_NAME "example-labeled"

static wf_runtime *rt;
static wf_status *st;
static int failures;
static char dir[4096]; /* the temporary directory of the test files */

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      fprintf(stderr, "FAIL (%s:%d): ", __FILE__, __LINE__);                   \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* Objects that calls must have made; on failure counts it, prints st's
 * message and evaluates to 0. */
#define GOT(cond) got_((cond) != 0, #cond, __LINE__)
static int got_(int good, const char *what, int line) {
  if (!good) {
    failures++;
    fprintf(stderr, "FAIL (line %d): %s: %s\n", line, what,
            wf_status_message(st));
  }
  return good;
}

/* a.lbl: the expected stream is below (records and bad lines). */
static const char a_text[] = "# label: values\n"   /* 1 */
                             "3: 1 2 3\n"          /* 2 */
                             "\n"                  /* 3 */
                             "-1: 0.5 -0.25 1e3\n" /* 4 */
                             "7 1 2 3\n"           /* 5: no ':' */
                             "2: 1 2\n"            /* 6: two values */
                             "  4:4\t5 6\r\n"      /* 7: CRLF, tabs */
                             "x: 1 2 3\n"          /* 8: no label */
                             "5: 1 2 three\n"      /* 9: not a number */
                             "6: 7 8 9";           /* 10: no final '\n' */
static const char b_text[] = "10: 0 0 1\n11: 0 1 0\n12: 1 0 0\n";
static const char c_text[] = "# no records in this one\n";

typedef struct expected {
  int bad_line;      /* 0: a record; else the line a DATA_LOSS names */
  const char *where; /* for bad lines: "a.lbl:LINE:COL: " */
  long long label;
  float values[3];
} expected;

static const expected a_stream[] = {
    {0, NULL, 3, {1, 2, 3}},
    {0, NULL, -1, {0.5f, -0.25f, 1000}},
    {5, "a.lbl:5:3: no ':'", 0, {0}},
    {6, "a.lbl:6: 2 values", 0, {0}},
    {0, NULL, 4, {4, 5, 6}},
    {8, "a.lbl:8:1: the line does not start with an integer label", 0, {0}},
    {9, "a.lbl:9:8: a value is not a number", 0, {0}},
    {0, NULL, 6, {7, 8, 9}},
};
#define A_STREAM ((int)(sizeof a_stream / sizeof a_stream[0]))

static int write_file(const char *name, const char *text) {
  char path[4200];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f)) {
    perror(path);
    return -1;
  }
  return 0;
}

static void remove_files(void) {
  static const char *const names[] = {"a.lbl", "b.lbl", "c.lbl"};
  char path[4200];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* A dataset of the files `pattern` names in the test directory, read with
 * option dim when dim > 0. */
static wf_dataset *dataset(const char *pattern, int64_t dim) {
  char path[4200];
  wf_attr_item opt = {.name = "dim",
                      .value = {.type = WF_ATTR_INT, .count = 1, .u.i = dim}};
  snprintf(path, sizeof path, "%s/%s", dir, pattern);
  return wf_dataset_from_files(rt, path, NULL, &opt, dim > 0 ? 1 : 0, st);
}

static int plugin_loaded(void) {
  int n = wf_runtime_plugin_count(rt);
  for (int i = 0; i < n; i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    if (strcmp(p.name, PLUGIN_NAME) != 0)
      continue;
    if (p.state != WF_PLUGIN_LOADED)
      fprintf(stderr, "FAIL: %s from %s was not loaded: %s\n", PLUGIN_NAME,
              p.path, p.reason ? p.reason : "(no reason)");
    else
      printf("%s %s loaded from %s\n", p.name, p.version, p.path);
    return p.state == WF_PLUGIN_LOADED && p.num_readers == 1;
  }
  fprintf(stderr,
          "FAIL: no plugin %s: is the directory of labeled.so on "
          "WEFT_PLUGIN_PATH? (`weft plugins` lists what was found)\n",
          PLUGIN_NAME);
  return 0;
}

/* ---- the checks ---------------------------------------------------------- */

static void check_schema(void) {
  wf_dataset *ds = dataset("a.lbl", 0);
  wf_data_field f;
  const char *reader = NULL;

  if (!GOT(ds))
    return;
  CHECK(wf_dataset_num_fields(ds) == 2, "%d fields", wf_dataset_num_fields(ds));
  wf_dataset_field(ds, 0, &f);
  CHECK(strcmp(f.name, "label") == 0 && f.dtype == WF_INT64 &&
            f.shape.rank == 0,
        "field 0 is %s %s of rank %d", f.name, wf_dtype_name(f.dtype),
        f.shape.rank);
  wf_dataset_field(ds, 1, &f);
  CHECK(strcmp(f.name, "values") == 0 && f.dtype == WF_FLOAT32 &&
            f.shape.rank == 1 && f.shape.dims[0] == 3,
        "field 1 is %s %s of rank %d", f.name, wf_dtype_name(f.dtype),
        f.shape.rank);
  CHECK(wf_dataset_num_files(ds) == 1 && wf_dataset_file(ds, 0, &reader) &&
            reader && strcmp(reader, "labeled") == 0,
        "a.lbl is not read by the labeled reader (%s)",
        reader ? reader : "none");
  wf_dataset_release(ds);
}

/* Takes the next element of it and compares it with *e. */
static void expect_next(wf_iterator *it, const expected *e, int k) {
  wf_tensor *f[2] = {NULL, NULL};
  int code = wf_iterator_next(it, f, st);

  if (e->bad_line) {
    CHECK(code == WF_DATA_LOSS && strstr(wf_status_message(st), e->where),
          "element %d: want DATA_LOSS \"%s\", got %s \"%s\"", k, e->where,
          wf_code_name(code), wf_status_message(st));
  } else if (code != WF_OK) {
    CHECK(0, "element %d: want label %lld, got %s \"%s\"", k, e->label,
          wf_code_name(code), wf_status_message(st));
  } else {
    const float *v = wf_tensor_data(f[1]);
    CHECK(*(const int64_t *)wf_tensor_data(f[0]) == e->label &&
              wf_tensor_count(f[1]) == 3 && v[0] == e->values[0] &&
              v[1] == e->values[1] && v[2] == e->values[2],
          "element %d: label %lld values (%g %g %g), want %lld (%g %g %g)", k,
          (long long)*(const int64_t *)wf_tensor_data(f[0]), v[0], v[1], v[2],
          e->label, e->values[0], e->values[1], e->values[2]);
  }
  wf_tensor_release(f[0]);
  wf_tensor_release(f[1]);
  wf_status_reset(st);
}

static void expect_end(wf_iterator *it) {
  wf_tensor *f[2] = {NULL, NULL};
  int code = wf_iterator_next(it, f, st);
  CHECK(code == WF_OUT_OF_RANGE, "want the end of the data, got %s \"%s\"",
        wf_code_name(code), wf_status_message(st));
  wf_status_reset(st);
}

static void check_records_and_bad_lines(void) {
  wf_dataset *ds = dataset("a.lbl", 0);
  wf_iterator *it = ds ? wf_iterator_new(ds, NULL, st) : NULL;

  if (GOT(it)) {
    for (int k = 0; k < A_STREAM; k++)
      expect_next(it, &a_stream[k], k);
    expect_end(it);
  }
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_status_reset(st);
}

/* a.lbl, b.lbl and c.lbl (no records, values of unknown length) in name
 * order, in batches of two, bad records skipped. */
static void check_glob_batched(void) {
  static const long long labels[] = {3, -1, 4, 6, 10, 11, 12};
  wf_iterator_options opts = WF_ITERATOR_OPTIONS_INIT;
  wf_dataset *ds = wf_dataset_batch(dataset("*.lbl", 0), 2, 0, st);
  wf_iterator *it;
  int seen = 0, code;

  opts.skip_bad_records = 1;
  it = ds ? wf_iterator_new(ds, &opts, st) : NULL;
  if (!GOT(it))
    goto done;
  for (;;) {
    wf_tensor *f[2] = {NULL, NULL};
    code = wf_iterator_next(it, f, st);
    if (code != WF_OK)
      break;
    int64_t n = wf_tensor_dim(f[0], 0);
    CHECK(wf_tensor_rank(f[1]) == 2 && wf_tensor_dim(f[1], 0) == n &&
              wf_tensor_dim(f[1], 1) == 3,
          "a batch of %lld labels has values of rank %d", (long long)n,
          wf_tensor_rank(f[1]));
    for (int64_t i = 0; i < n && seen < 7; i++, seen++)
      CHECK(((const int64_t *)wf_tensor_data(f[0]))[i] == labels[seen],
            "label %d is %lld, want %lld", seen,
            (long long)((const int64_t *)wf_tensor_data(f[0]))[i],
            labels[seen]);
    wf_tensor_release(f[0]);
    wf_tensor_release(f[1]);
  }
  CHECK(code == WF_OUT_OF_RANGE && seen == 7,
        "stopped with %s \"%s\" after %d records (want 7)", wf_code_name(code),
        wf_status_message(st), seen);
  CHECK(wf_iterator_bad_records(it) == 4, "%lld bad records skipped, want 4",
        (long long)wf_iterator_bad_records(it));
done:
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_status_reset(st);
}

static void check_options(void) {
  wf_attr_item opt = {.name = "dimension",
                      .value = {.type = WF_ATTR_INT, .count = 1, .u.i = 3}};
  char path[4200];
  wf_dataset *ds;
  wf_iterator *it;
  static const expected three_not_two = {2, "a.lbl:2: 3 values", 0, {0}};

  snprintf(path, sizeof path, "%s/a.lbl", dir);
  ds = wf_dataset_from_files(rt, path, NULL, &opt, 1, st);
  CHECK(!ds && wf_status_code(st) == WF_INVALID_ARGUMENT &&
            strstr(wf_status_message(st), "'dimension'"),
        "option 'dimension': %s \"%s\"", wf_code_name(wf_status_code(st)),
        wf_status_message(st));
  wf_dataset_release(ds);
  wf_status_reset(st);

  opt.name = "dim";
  opt.value.u.i = 0;
  ds = wf_dataset_from_files(rt, path, NULL, &opt, 1, st);
  CHECK(!ds && wf_status_code(st) == WF_INVALID_ARGUMENT,
        "option dim = 0 was not refused");
  wf_dataset_release(ds);
  wf_status_reset(st);

  /* dim = 2: the first record, of three values, is a bad one */
  ds = dataset("a.lbl", 2);
  it = ds ? wf_iterator_new(ds, NULL, st) : NULL;
  if (GOT(it))
    expect_next(it, &three_not_two, 0);
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_status_reset(st);
}

/* Two records read, the position saved; a new iterator restored from it
 * goes on with the line after the second record, and names the lines
 * that follow by their numbers in the file. */
static void check_save_restore(void) {
  wf_dataset *ds = dataset("a.lbl", 0);
  wf_iterator *it = NULL, *again = NULL;
  wf_tensor *pos = NULL;

  it = ds ? wf_iterator_new(ds, NULL, st) : NULL;
  again = ds ? wf_iterator_new(ds, NULL, st) : NULL;
  if (!GOT(it && again))
    goto done;
  expect_next(it, &a_stream[0], 0);
  expect_next(it, &a_stream[1], 1);
  pos = wf_iterator_save(it, st);
  if (!GOT(pos))
    goto done;
  expect_next(it, &a_stream[2], 2);
  if (!GOT(wf_iterator_restore(again, pos, st) == WF_OK))
    goto done;
  for (int k = 2; k < A_STREAM; k++)
    expect_next(again, &a_stream[k], k);
  expect_end(again);
done:
  wf_tensor_release(pos);
  wf_iterator_free(it);
  wf_iterator_free(again);
  wf_dataset_release(ds);
  wf_status_reset(st);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");

  snprintf(dir, sizeof dir, "%s/weft-labeled-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror(dir);
    return 1;
  }
  st = wf_status_new();
  if (!st || write_file("a.lbl", a_text) || write_file("b.lbl", b_text) ||
      write_file("c.lbl", c_text)) {
    wf_status_free(st);
    remove_files();
    return 1;
  }
  rt = wf_runtime_new(NULL, st);
  if (!rt)
    fprintf(stderr, "FAIL: cannot create a runtime: %s\n",
            wf_status_message(st));
  if (rt && plugin_loaded()) {
    check_schema();
    check_records_and_bad_lines();
    check_glob_batched();
    check_options();
    check_save_restore();
  } else {
    failures++;
  }
  wf_runtime_free(rt);
  wf_status_free(st);
  remove_files();
  if (failures)
    fprintf(stderr, "%d check%s failed\n", failures, failures == 1 ? "" : "s");
  else
    printf("all labeled-reader checks passed\n");
  return failures ? 1 : 0;
}
