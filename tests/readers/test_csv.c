/* tests/readers/test_csv.c — the csv reader plugin through the real loader:
 * typed columns with and without a header, RFC 4180 quoting, the missing
 * value and bad row policies, strict number parsing, delimiters, tell and
 * seek by byte offset, and refused options. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reader_harness.h"

typedef struct fixture {
  wf_runtime *rt;
  const wf_reader_def *csv;
  char *dir;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);

  f->rt = rh_runtime_new();
  f->csv = rh_reader(f->rt, "csv", NULL);
  f->dir = rh_tmpdir_new();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;

  rh_tmpdir_free(f->dir);
  wf_runtime_free(f->rt);
  free(f);
  return 0;
}

/* Writes text as dir/name; returns the path (slot 0). */
static const char *put(const fixture *f, const char *name, const char *text) {
  const char *path = rh_path(f->dir, name, 0);

  rh_write(path, text, strlen(text));
  return path;
}

static double num(const wf_tensor *t) {
  const void *p = wf_tensor_data(t);

  assert_int_equal(wf_tensor_rank(t), 0);
  switch (wf_tensor_dtype(t)) {
  case WF_FLOAT32:
    return *(const float *)p;
  case WF_FLOAT64:
    return *(const double *)p;
  case WF_INT8:
    return *(const int8_t *)p;
  case WF_UINT8:
  case WF_BOOL:
    return *(const uint8_t *)p;
  case WF_INT32:
    return *(const int32_t *)p;
  case WF_INT64:
    return (double)*(const int64_t *)p;
  default:
    fail_msg("unexpected dtype %d", (int)wf_tensor_dtype(t));
  }
  return 0;
}

/* Reads one record of n fields and checks their values. */
static void expect_row(const fixture *f, void *rd, int n,
                       const double *want) {
  wf_tensor *rec[16];

  rh_next(f->csv, rd, rec);
  for (int i = 0; i < n; i++)
    if (num(rec[i]) != want[i])
      fail_msg("field %d is %g, expected %g", i, num(rec[i]), want[i]);
  rh_release_all(rec, n);
}
#define ROW(...) ((const double[]){__VA_ARGS__})

static void test_csv_is_registered_by_its_plugin(void **state) {
  fixture *f = *state;
  const char *plugin = NULL;
  const wf_reader_def *d = rh_reader(f->rt, "csv", &plugin);

  assert_string_equal(plugin, "reader-csv");
  assert_string_equal(d->formats, "csv,tsv");
  assert_non_null(strstr(d->doc, "bad_rows"));
  assert_null(d->count);
}

static void test_csv_reads_typed_columns_without_header(void **state) {
  fixture *f = *state;
  const char *p = put(f, "plain.csv",
                      "1,2.5,true,-3,200,-7\n"
                      "4,5e-1,0,9007199254740993,0,127\n"
                      "-2147483648,-0.25,FALSE,-9223372036854775808,255,"
                      "-128");
  void *rd = rh_open(
      f->csv, p,
      RH_OPTS(RH_STRS("columns", "a:int32", "b:float32", "c:bool", "d:int64",
                      "e:uint8", "g:int8")),
      1);
  wf_tensor *rec[6];

  assert_int_equal(f->csv->num_fields(rd), 6);
  rh_expect_field(f->csv, rd, 0, "a", WF_INT32, 0, NULL);
  rh_expect_field(f->csv, rd, 1, "b", WF_FLOAT32, 0, NULL);
  rh_expect_field(f->csv, rd, 2, "c", WF_BOOL, 0, NULL);
  rh_expect_field(f->csv, rd, 3, "d", WF_INT64, 0, NULL);
  rh_expect_field(f->csv, rd, 4, "e", WF_UINT8, 0, NULL);
  rh_expect_field(f->csv, rd, 5, "g", WF_INT8, 0, NULL);
  expect_row(f, rd, 6, ROW(1, 2.5, 1, -3, 200, -7));
  /* int64 keeps every bit (2^53 + 1 is not a double). */
  rh_next(f->csv, rd, rec);
  assert_true(*(const int64_t *)wf_tensor_data(rec[3]) ==
              INT64_C(9007199254740993));
  assert_int_equal(num(rec[2]), 0);
  rh_release_all(rec, 6);
  rh_next(f->csv, rd, rec);
  assert_int_equal(*(const int32_t *)wf_tensor_data(rec[0]), INT32_MIN);
  assert_true(*(const int64_t *)wf_tensor_data(rec[3]) == INT64_MIN);
  assert_true(num(rec[1]) == -0.25);
  assert_int_equal(num(rec[2]), 0);
  rh_release_all(rec, 6);
  rh_end(f->csv, rd);
  f->csv->close(rd);

  /* Columns as one comma-separated string. */
  rd = rh_open(f->csv, p,
               RH_OPTS(RH_STR("columns",
                              "a:int32,b:float64,c:skip,d:skip,e:skip,g:skip")),
               1);
  assert_int_equal(f->csv->num_fields(rd), 2);
  rh_expect_field(f->csv, rd, 1, "b", WF_FLOAT64, 0, NULL);
  expect_row(f, rd, 2, ROW(1, 2.5));
  f->csv->close(rd);
}

static void test_csv_follows_rfc4180_quoting(void **state) {
  fixture *f = *state;
  /* Quoted delimiters, doubled quotes, a line break inside a field, CRLF
   * row ends, a quoted number, an empty last line and blank lines. */
  const char *p = put(f, "quoted.csv",
                      "1,\"a, b\",2\r\n"
                      "\r\n"
                      "3,\"say \"\"hi\"\"\",4\r\n"
                      "5,\"two\nlines\",\"6\"\r\n"
                      "\n"
                      "7,,8\r\n");
  void *rd =
      rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "x:int32,skip,y:int64")), 1);

  assert_int_equal(f->csv->num_fields(rd), 2);
  expect_row(f, rd, 2, ROW(1, 2));
  expect_row(f, rd, 2, ROW(3, 4));
  expect_row(f, rd, 2, ROW(5, 6));
  expect_row(f, rd, 2, ROW(7, 8));
  rh_end(f->csv, rd);
  f->csv->close(rd);

  /* Line numbers count the line break inside the quoted field. */
  p = put(f, "quoted.csv", "1,\"x\ny\",2\n3,z,four\n");
  rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32,skip,b:int32")),
               1);
  expect_row(f, rd, 2, ROW(1, 2));
  rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, "quoted.csv:3:",
                "column 'b' (field 3)", "\"four\" is not an integer", NULL);
  f->csv->close(rd);
}

static void test_csv_header_names_and_selects_columns(void **state) {
  fixture *f = *state;
  const char *p = put(f, "head.csv",
                      "x,label,\"long name\"\n"
                      "1.5,3,10\n"
                      "2.5,4,20\n");
  void *rd;

  /* By name, in the order given. */
  rd = rh_open(f->csv, p,
               RH_OPTS(RH_BOOL("header", 1),
                       RH_STRS("columns", "long name:float64", "label:uint8")),
               2);
  rh_expect_field(f->csv, rd, 0, "long name", WF_FLOAT64, 0, NULL);
  rh_expect_field(f->csv, rd, 1, "label", WF_UINT8, 0, NULL);
  expect_row(f, rd, 2, ROW(10, 3));
  expect_row(f, rd, 2, ROW(20, 4));
  rh_end(f->csv, rd);
  f->csv->close(rd);

  /* Bare dtypes are positional, named from the header. */
  rd = rh_open(f->csv, p,
               RH_OPTS(RH_STR("header", "true"),
                       RH_STRS("columns", "float64", "int32")),
               2);
  rh_expect_field(f->csv, rd, 0, "x", WF_FLOAT64, 0, NULL);
  rh_expect_field(f->csv, rd, 1, "label", WF_INT32, 0, NULL);
  expect_row(f, rd, 2, ROW(1.5, 3));
  f->csv->close(rd);

  /* No columns: every header column as float32. */
  rd = rh_open(f->csv, p, RH_OPTS(RH_INT("header", 1)), 1);
  assert_int_equal(f->csv->num_fields(rd), 3);
  rh_expect_field(f->csv, rd, 2, "long name", WF_FLOAT32, 0, NULL);
  expect_row(f, rd, 3, ROW(1.5, 3, 10));
  f->csv->close(rd);

  /* Without a header, bare dtypes are named by position. */
  p = put(f, "nohead.csv", "1,2\n");
  rd = rh_open(f->csv, p, RH_OPTS(RH_STRS("columns", "int32", "int32")), 1);
  rh_expect_field(f->csv, rd, 1, "column1", WF_INT32, 0, NULL);
  f->csv->close(rd);

  p = put(f, "head.csv", "a,b\n1,2\n");
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_BOOL("header", 1), RH_STRS("columns", "c:int32")),
                2, WF_INVALID_ARGUMENT, "head.csv", "no column \"c\"", NULL);
  p = put(f, "head.csv", "a,a\n1,2\n");
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_BOOL("header", 1), RH_STRS("columns", "a:int32")),
                2, WF_INVALID_ARGUMENT, "names column \"a\" twice", NULL);
  p = put(f, "head.csv", "a,\n1,2\n");
  rh_open_fails(f->csv, p, RH_OPTS(RH_BOOL("header", 1)), 1,
                WF_INVALID_ARGUMENT, "head.csv", "field 2",
                "name of 1 to 63 bytes", NULL);
  p = put(f, "head.csv", "a,\"b\nc\"d\n1,2\n");
  rh_open_fails(f->csv, p, RH_OPTS(RH_BOOL("header", 1)), 1,
                WF_INVALID_ARGUMENT, "head.csv:1: header",
                "closing quote is followed", NULL);
  p = put(f, "empty.csv", "");
  rh_open_fails(f->csv, p, RH_OPTS(RH_BOOL("header", 1)), 1,
                WF_INVALID_ARGUMENT, "empty.csv", "no header row", NULL);
}

static void test_csv_missing_values_follow_the_policy(void **state) {
  fixture *f = *state;
  const char *p = put(f, "gaps.csv",
                      "1,2\n"
                      ",4\n"
                      "5,\"\"\n"
                      "7,8\n");
  const wf_attr_item cols = RH_STRS("columns", "a:int32", "b:float32");
  wf_status *st = wf_status_new();
  void *rd;

  /* error (the default): names file, line and column. */
  rd = rh_open(f->csv, p, &cols, 1);
  expect_row(f, rd, 2, ROW(1, 2));
  rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, "gaps.csv:2:",
                "column 'a' (field 1) is empty", NULL);
  /* The error stays: the row is not passed over. */
  rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, "gaps.csv:2:", NULL);
  f->csv->close(rd);

  /* default: one value per column; `defaults` alone implies the policy. */
  rd = rh_open(f->csv, p, RH_OPTS(cols, RH_STRS("defaults", "-1", "0.5")), 2);
  expect_row(f, rd, 2, ROW(1, 2));
  expect_row(f, rd, 2, ROW(-1, 4));
  expect_row(f, rd, 2, ROW(5, 0.5));
  expect_row(f, rd, 2, ROW(7, 8));
  rh_end(f->csv, rd);
  f->csv->close(rd);

  /* default: one number for every column, or zero without defaults. */
  rd = rh_open(f->csv, p,
               RH_OPTS(cols, RH_STR("missing", "default"),
                       (wf_attr_item){.name = "defaults",
                                      .value = {.type = WF_ATTR_FLOAT,
                                                .count = 1,
                                                .u.f = 9}}),
               3);
  expect_row(f, rd, 2, ROW(1, 2));
  expect_row(f, rd, 2, ROW(9, 4));
  expect_row(f, rd, 2, ROW(5, 9));
  f->csv->close(rd);
  rd = rh_open(f->csv, p, RH_OPTS(cols, RH_STR("missing", "default")), 2);
  expect_row(f, rd, 2, ROW(1, 2));
  expect_row(f, rd, 2, ROW(0, 4));
  f->csv->close(rd);

  /* skip: rows with a gap are dropped silently. */
  rd = rh_open(f->csv, p, RH_OPTS(cols, RH_STR("missing", "skip")), 2);
  expect_row(f, rd, 2, ROW(1, 2));
  expect_row(f, rd, 2, ROW(7, 8));
  rh_end(f->csv, rd);
  f->csv->close(rd);

  rh_open_fails(f->csv, p, RH_OPTS(cols, RH_STRS("defaults", "1", "2", "3")),
                2, WF_INVALID_ARGUMENT, "'defaults' has 3 values for 2",
                NULL);
  rh_open_fails(f->csv, p, RH_OPTS(cols, RH_STRS("defaults", "x", "2")), 2,
                WF_INVALID_ARGUMENT, "default for column 'a'",
                "\"x\" is not an integer", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(cols, RH_STR("missing", "ignore")), 2,
                WF_INVALID_ARGUMENT, "'missing'", "\"skip\"", NULL);
  wf_status_free(st);
}

/* Expects the row after `good` good ones in text to be refused with the
 * parts. */
static void expect_bad_row(const fixture *f, const char *text, int good,
                           const char *cols, const char *part1,
                           const char *part2) {
  const char *p = put(f, "bad.csv", text);
  void *rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", cols)), 1);
  wf_tensor *rec[4];

  for (int i = 0; i < good; i++) {
    rh_next(f->csv, rd, rec);
    rh_release_all(rec, f->csv->num_fields(rd));
  }
  rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, part1, part2, NULL);
  f->csv->close(rd);
}

static void test_csv_bad_rows_name_file_and_line(void **state) {
  fixture *f = *state;

  expect_bad_row(f, "1,2\n3\n", 1, "a:int32,b:int32", "bad.csv:2:",
                 "1 fields, expected 2");
  expect_bad_row(f, "1,2,3\n", 0, "a:int32,b:int32", "bad.csv:1:",
                 "3 fields, expected 2");
  expect_bad_row(f, "\n\n12abc\n", 0, "a:int32", "bad.csv:3:",
                 "\"12abc\" is not an integer");
  expect_bad_row(f, "1.5x\n", 0, "a:float32", "bad.csv:1:",
                 "\"1.5x\" is not a number");
  expect_bad_row(f, "1.5.2\n", 0, "a:float64", "bad.csv:1:",
                 "not a number");
  expect_bad_row(f, "200\n", 0, "a:int8", "bad.csv:1:",
                 "200 is out of range for int8");
  expect_bad_row(f, "-1\n", 0, "a:uint8", "bad.csv:1:",
                 "-1 is out of range for uint8");
  expect_bad_row(f, "2147483648\n", 0, "a:int32", "bad.csv:1:",
                 "out of range for int32");
  expect_bad_row(f, "9223372036854775808\n", 0, "a:int64", "bad.csv:1:",
                 "out of range for int64");
  expect_bad_row(f, "1e39\n", 0, "a:float32", "bad.csv:1:",
                 "1e39 is out of range for float32");
  expect_bad_row(f, "1e400\n", 0, "a:float64", "bad.csv:1:",
                 "out of range for float64");
  expect_bad_row(f, "0x10\n", 0, "a:int32", "bad.csv:1:", "not an integer");
  expect_bad_row(f, "yes\n", 0, "a:bool", "bad.csv:1:", "is not a bool");
  expect_bad_row(f, "1,ab\"c\n", 0, "a:int32,skip", "bad.csv:1:",
                 "a quote inside an unquoted field");
  expect_bad_row(f, "1,\"ab\"c\n", 0, "a:int32,skip", "bad.csv:1:",
                 "closing quote is followed");
  expect_bad_row(f, "1,2\n3,\"open\n\n", 1, "a:int32,skip", "bad.csv:2:",
                 "still open at the end of the file");
}

/* A NUL byte inside a field would end the C parsers' view of it ("3\0" read
 * as 3): each such field is refused with its file and line, quoted or not,
 * for every numeric type and bool. */
static void test_csv_nul_byte_in_a_number_is_refused(void **state) {
  fixture *f = *state;
  static const struct {
    const char *cols;
    const char *text;
    size_t n;
    int good;
  } cases[] = {
#define BYTES(s) s, sizeof s - 1
      {"a:int32,b:int32", BYTES("1,2\n3\0,4\n"), 1},
      {"a:float32", BYTES("1.5\n\"2\0\"\n"), 1},
      {"a:float64", BYTES("\0\n"), 0},
      {"a:int64,b:bool", BYTES("7,1\0\n"), 0},
      {"a:uint8", BYTES("\n\n 3\0 \n"), 0},
#undef BYTES
  };
  static const char *lines[] = {"bad.csv:2:", "bad.csv:2:", "bad.csv:1:",
                                "bad.csv:1:", "bad.csv:3:"};

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *p = rh_path(f->dir, "bad.csv", 0);
    void *rd;
    wf_tensor *rec[4];

    rh_write(p, cases[c].text, cases[c].n);
    rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", cases[c].cols)), 1);
    for (int i = 0; i < cases[c].good; i++) {
      rh_next(f->csv, rd, rec);
      rh_release_all(rec, f->csv->num_fields(rd));
    }
    rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, lines[c], "a NUL byte",
                  NULL);
    f->csv->close(rd);
  }
}

static void test_csv_numbers_allow_spaces_and_special_values(void **state) {
  fixture *f = *state;
  const char *p = put(f, "num.csv", " 1.5 ,\t-2\t, nan ,+3,inf\n");
  void *rd = rh_open(f->csv, p,
                     RH_OPTS(RH_STR("columns",
                                    "a:float64,b:int32,c:float32,d:int64,e:"
                                    "float64")),
                     1);
  wf_tensor *rec[5];

  rh_next(f->csv, rd, rec);
  assert_true(num(rec[0]) == 1.5);
  assert_true(num(rec[1]) == -2);
  assert_true(num(rec[2]) != num(rec[2])); /* NaN */
  assert_true(num(rec[3]) == 3);
  assert_true(num(rec[4]) > 1e308);
  rh_release_all(rec, 5);
  f->csv->close(rd);
}

static void test_csv_bad_rows_skip_returns_data_loss(void **state) {
  fixture *f = *state;
  const char *p = put(f, "mixed.csv",
                      "1,2\n"
                      "x,3\n"
                      "4,5\n"
                      "6\n"
                      "7,8\n");
  void *rd = rh_open(f->csv, p,
                     RH_OPTS(RH_STR("columns", "a:int32,b:int32"),
                             RH_STR("bad_rows", "skip")),
                     2);

  expect_row(f, rd, 2, ROW(1, 2));
  rh_next_fails(f->csv, rd, WF_DATA_LOSS, "mixed.csv:2:", "skipped a bad row",
                "\"x\" is not an integer", "1 skipped so far", NULL);
  expect_row(f, rd, 2, ROW(4, 5));
  rh_next_fails(f->csv, rd, WF_DATA_LOSS, "mixed.csv:4:", "1 fields",
                "2 skipped so far", NULL);
  expect_row(f, rd, 2, ROW(7, 8));
  rh_end(f->csv, rd);
  f->csv->close(rd);

  rh_open_fails(f->csv, p,
                RH_OPTS(RH_STR("columns", "a:int32"),
                        RH_STR("bad_rows", "drop")),
                2, WF_INVALID_ARGUMENT, "'bad_rows'", NULL);
}

static void test_csv_seek_and_tell_round_trip(void **state) {
  fixture *f = *state;
  const char *p = put(f, "seek.csv",
                      "a,b\n"
                      "1,\"x\ny\"\n"
                      "2,z\n"
                      "\n"
                      "3,w\n"
                      "bad,v\n");
  void *rd = rh_open(f->csv, p,
                     RH_OPTS(RH_BOOL("header", 1),
                             RH_STRS("columns", "a:int32")),
                     2);
  uint64_t pos[4];
  wf_status *st = wf_status_new();

  pos[0] = f->csv->tell(rd);
  assert_int_equal(pos[0], 0);
  for (int i = 1; i <= 3; i++) {
    expect_row(f, rd, 1, ROW(i));
    pos[i] = f->csv->tell(rd);
  }
  assert_int_equal(pos[1], 12); /* after "a,b\n1,\"x\ny\"\n" */
  assert_int_equal(pos[2], 16);
  /* Back to each position; the line numbers come back with it. */
  for (int i = 2; i >= 0; i--) {
    rh_seek(f->csv, rd, pos[i]);
    assert_int_equal(f->csv->tell(rd), pos[i]);
    for (int k = i + 1; k <= 3; k++)
      expect_row(f, rd, 1, ROW(k));
    rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, "seek.csv:7:", NULL);
  }
  rh_seek(f->csv, rd, 21);
  rh_next_fails(f->csv, rd, WF_INVALID_ARGUMENT, "seek.csv:7:", NULL);
  rh_seek(f->csv, rd, 27); /* the end */
  rh_end(f->csv, rd);

  assert_int_not_equal(f->csv->seek(rd, 13, st), 0);
  rh_expect_message(st, "seek.csv", "offset 13", "not the start of a row",
                    NULL);
  assert_int_not_equal(f->csv->seek(rd, 2, st), 0);
  assert_int_not_equal(f->csv->seek(rd, 1000, st), 0);
  f->csv->close(rd);
  wf_status_free(st);
}

static void test_csv_delimiters(void **state) {
  fixture *f = *state;
  const char *p;
  void *rd;

  p = put(f, "data.tsv", "1\t2,5\n");
  rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32,skip")), 1);
  expect_row(f, rd, 1, ROW(1));
  f->csv->close(rd);
  p = put(f, "semi.csv", "1;\"2;3\";4\n");
  rd = rh_open(f->csv, p,
               RH_OPTS(RH_STR("columns", "a:int32,skip,b:int32"),
                       RH_STR("delimiter", ";")),
               2);
  expect_row(f, rd, 2, ROW(1, 4));
  f->csv->close(rd);
  p = put(f, "tab.txt", "5\t6\n");
  rd = rh_open(f->csv, p,
               RH_OPTS(RH_STR("columns", "a:int32,b:int32"),
                       RH_STR("delimiter", "\\t")),
               2);
  expect_row(f, rd, 2, ROW(5, 6));
  f->csv->close(rd);
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_STR("columns", "a:int32"),
                        RH_STR("delimiter", "\"")),
                2, WF_INVALID_ARGUMENT, "'delimiter'", NULL);
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_STR("columns", "a:int32"),
                        RH_STR("delimiter", "::")),
                2, WF_INVALID_ARGUMENT, "'delimiter'", NULL);
}

static void test_csv_refuses_bad_options(void **state) {
  fixture *f = *state;
  const char *p = put(f, "opts.csv", "1,2\n");
  char longname[100];

  rh_open_fails(f->csv, p, NULL, 0, WF_INVALID_ARGUMENT, "opts.csv",
                "needs option 'columns'", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("colums", "a:int32")), 1,
                WF_INVALID_ARGUMENT, "unknown option 'colums'", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("columns", "a:int16,b:int32")), 1,
                WF_INVALID_ARGUMENT, "unknown dtype \"int16\"", "float32",
                NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32,a:int32")), 1,
                WF_INVALID_ARGUMENT, "two columns are named 'a'", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("columns", "skip,skip")), 1,
                WF_INVALID_ARGUMENT, "every column is skipped", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("columns", ":int32,b:int32")), 1,
                WF_INVALID_ARGUMENT, "a name has 1 to 63 bytes", NULL);
  memset(longname, 'n', 64);
  strcpy(longname + 64, ":int32");
  rh_open_fails(f->csv, p, RH_OPTS(RH_STR("columns", longname)), 1,
                WF_INVALID_ARGUMENT, "a name has 1 to 63 bytes", NULL);
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_STR("columns", "a:int32"), RH_INT("header", 2)), 2,
                WF_INVALID_ARGUMENT, "'header'", "bool", NULL);
  rh_open_fails(f->csv, p, RH_OPTS(RH_BOOL("columns", 1)), 1,
                WF_INVALID_ARGUMENT, "'columns'", NULL);
  rh_open_fails(f->csv, p,
                RH_OPTS(RH_BOOL("header", 1), RH_STR("columns", "int32,int32,"
                                                                "int32")),
                2, WF_INVALID_ARGUMENT, "entry 3", "past the header's 2",
                NULL);
  rh_open_fails(f->csv, rh_path(f->dir, "absent.csv", 0),
                RH_OPTS(RH_STR("columns", "a:int32")), 1, WF_NOT_FOUND,
                "absent.csv", NULL);
  rh_open_fails(f->csv, f->dir, RH_OPTS(RH_STR("columns", "a:int32")), 1,
                WF_FAILED_PRECONDITION, "not a regular file", NULL);
}

static void test_csv_empty_and_unterminated_files(void **state) {
  fixture *f = *state;
  const char *p = put(f, "empty.csv", "");
  void *rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32")), 1);

  rh_end(f->csv, rd);
  assert_int_equal(f->csv->tell(rd), 0);
  f->csv->close(rd);
  p = put(f, "blank.csv", "\n\r\n\n");
  rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32")), 1);
  rh_end(f->csv, rd);
  f->csv->close(rd);
  /* The last row needs no line break, and a CR at the very end ends it. */
  p = put(f, "last.csv", "1\n2\r");
  rd = rh_open(f->csv, p, RH_OPTS(RH_STR("columns", "a:int32")), 1);
  expect_row(f, rd, 1, ROW(1));
  expect_row(f, rd, 1, ROW(2));
  rh_end(f->csv, rd);
  f->csv->close(rd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_is_registered_by_its_plugin),
      cmocka_unit_test(test_csv_reads_typed_columns_without_header),
      cmocka_unit_test(test_csv_follows_rfc4180_quoting),
      cmocka_unit_test(test_csv_header_names_and_selects_columns),
      cmocka_unit_test(test_csv_missing_values_follow_the_policy),
      cmocka_unit_test(test_csv_bad_rows_name_file_and_line),
      cmocka_unit_test(test_csv_nul_byte_in_a_number_is_refused),
      cmocka_unit_test(test_csv_numbers_allow_spaces_and_special_values),
      cmocka_unit_test(test_csv_bad_rows_skip_returns_data_loss),
      cmocka_unit_test(test_csv_seek_and_tell_round_trip),
      cmocka_unit_test(test_csv_delimiters),
      cmocka_unit_test(test_csv_refuses_bad_options),
      cmocka_unit_test(test_csv_empty_and_unterminated_files),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
