/* tests/serve/test_codec.c — the model server's JSON reader
 * (lib/serve/json_read.c) and codec (lib/serve/codec.c) without HTTP:
 * numbers read to the same double strtod gives (exact fast path and
 * fallback), integers at the int64 limits, escapes and UTF-8, errors that
 * name line and column, the nesting limit; the codec's row, columnar and
 * KServe decoding checked value by value, b64, and its refusals naming the
 * input and place; outputs written back with NaN and Infinity. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "../../lib/serve/codec.h"
#include "../../lib/serve/json_read.h"

static const srv_json *parse(const char *text, srv_json_doc **doc, char *err) {
  return srv_json_parse(text, strlen(text), doc, err, 256);
}

static void test_json_numbers_match_strtod(void **state) {
  (void)state;
  static const char *nums[] = {"0",
                               "-0",
                               "1",
                               "0.1",
                               "0.30000000000000004",
                               "1e22",
                               "1e23",
                               "123456789012345678",
                               "9007199254740993",
                               "1.7976931348623157e308",
                               "4.9e-324",
                               "2.2250738585072014e-308",
                               "3.14159265358979323846264338327950288",
                               "-12.5e-3",
                               "1E+2",
                               "0.000001",
                               "12345678901234567890123",
                               "1e400",
                               "-1e-400"};
  char text[128], err[256];
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
    srv_json_doc *doc;
    snprintf(text, sizeof text, "[%s]", nums[i]);
    const srv_json *v = parse(text, &doc, err);
    assert_non_null(v);
    assert_int_equal(v->u.items[0].type, SRV_JSON_NUMBER);
    double want = strtod(nums[i], NULL);
    if (memcmp(&want, &v->u.items[0].d, sizeof want)) {
      fprintf(stderr, "%s: read %.17g, strtod %.17g\n", nums[i],
              v->u.items[0].d, want);
      fail();
    }
    srv_json_doc_free(doc);
  }
  /* Random decimals of every length. */
  srand(7);
  for (int i = 0; i < 20000; i++) {
    srv_json_doc *doc;
    int digits = 1 + rand() % 20, point = rand() % (digits + 1);
    char num[64];
    size_t n = 0;
    if (rand() % 2)
      num[n++] = '-';
    num[n++] = (char)('1' + rand() % 9);
    for (int k = 1; k < digits; k++) {
      if (k == point)
        num[n++] = '.';
      num[n++] = (char)('0' + rand() % 10);
    }
    if (rand() % 3 == 0)
      n += (size_t)snprintf(num + n, sizeof num - n, "e%d", rand() % 60 - 30);
    num[n] = '\0';
    const srv_json *v = parse(num, &doc, err);
    assert_non_null(v);
    double want = strtod(num, NULL);
    if (memcmp(&want, &v->d, sizeof want)) {
      fprintf(stderr, "%s: read %.17g, strtod %.17g\n", num, v->d, want);
      fail();
    }
    srv_json_doc_free(doc);
  }
}

static void test_json_integers_keep_int64(void **state) {
  (void)state;
  char err[256];
  srv_json_doc *doc;
  const srv_json *v = parse("[9223372036854775807, -9223372036854775808, "
                            "9223372036854775808, 1.0, 2e0, -7]",
                            &doc, err);
  assert_non_null(v);
  assert_true(v->u.items[0].is_int);
  assert_true(v->u.items[0].u.i == INT64_MAX);
  assert_true(v->u.items[1].is_int);
  assert_true(v->u.items[1].u.i == INT64_MIN);
  assert_false(v->u.items[2].is_int); /* too large: a double only */
  assert_false(v->u.items[3].is_int);
  assert_false(v->u.items[4].is_int);
  assert_true(v->u.items[5].is_int && v->u.items[5].u.i == -7);
  srv_json_doc_free(doc);
}

static void test_json_strings_and_special_numbers(void **state) {
  (void)state;
  char err[256];
  srv_json_doc *doc;
  const srv_json *v = parse("{\"k\\u00e9y\": \"a\\\"b\\\\c\\n\\ud83d\\ude00"
                            "\xc3\xa9\\u0000z\", \"n\": [NaN, Infinity, "
                            "-Infinity, true, false, null], \"k\\u00e9y\": 1}",
                            &doc, err);
  assert_non_null(v);
  assert_int_equal(v->n, 3);
  const srv_json *s = srv_json_get(v, "k\xc3\xa9y");
  assert_non_null(s);
  assert_int_equal(s->type, SRV_JSON_STRING); /* the first of duplicates */
  const char want[] = "a\"b\\c\n\xf0\x9f\x98\x80\xc3\xa9\0z";
  assert_int_equal(s->n, sizeof want - 1);
  assert_memory_equal(s->u.s, want, sizeof want - 1);
  const srv_json *n = srv_json_get(v, "n");
  assert_true(isnan(n->u.items[0].d));
  assert_true(n->u.items[1].d == INFINITY);
  assert_true(n->u.items[2].d == -INFINITY);
  assert_int_equal(n->u.items[3].type, SRV_JSON_TRUE);
  assert_int_equal(n->u.items[4].type, SRV_JSON_FALSE);
  assert_int_equal(n->u.items[5].type, SRV_JSON_NULL);
  assert_null(srv_json_get(v, "missing"));
  srv_json_doc_free(doc);
}

static void test_json_errors_name_line_and_column(void **state) {
  (void)state;
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"a\": [1, 2,\n  ]}", "line 2, column 3: unexpected ']'"},
      {"[1, 2", "line 1, column 6: the text ends inside a list"},
      {"[01]", "leading zero"},
      {"[1.]", "no digit after '.'"},
      {"[1e]", "no digit in the exponent"},
      {"\"abc", "not closed"},
      {"\"a\x01\"", "control character"},
      {"\"\\x\"", "unknown escape"},
      {"\"\\ud800\"", "lone surrogate"},
      {"\"\xc3\x28\"", "not UTF-8"},
      {"{1: 2}", "key must be a string"},
      {"{\"a\" 2}", "':' expected"},
      {"[1 2]", "',' or ']' expected"},
      {"[1] x", "text after the value"},
      {"[nan]", "unexpected 'n'"},
      {"[Infinityx]", "unexpected 'I'"},
      {"", "the text ends"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char err[256];
    srv_json_doc *doc;
    const srv_json *v = parse(cases[i].text, &doc, err);
    if (v || !strstr(err, cases[i].want)) {
      fprintf(stderr, "'%s': got '%s', want '%s'\n", cases[i].text, err,
              cases[i].want);
      fail();
    }
    srv_json_doc_free(doc);
  }
  char deep[200], err[256];
  srv_json_doc *doc;
  memset(deep, '[', 100);
  memset(deep + 100, ']', 99);
  deep[199] = '\0';
  assert_null(srv_json_parse(deep, 199, &doc, err, sizeof err));
  assert_non_null(strstr(err, "nested deeper than 64"));
  srv_json_doc_free(doc);
}

/* A signature: x float32 (-1, 2); n int32 (-1); u uint8 (-1, -1). */
static const srv_arg args[] = {{"x", WF_FLOAT32, {2, 0, {-1, 2}}},
                               {"n", WF_INT32, {1, 0, {-1}}},
                               {"u", WF_UINT8, {2, 0, {-1, -1}}}};
static const srv_sig_desc sig = {3, args, 3, args};

static int decode(const char *body, int kserve, wf_tensor **v, wf_status *st) {
  srv_request r;
  int rc = srv_request_parse(&r, body, strlen(body), kserve, st) ||
           srv_request_decode(&r, &sig, v, st);
  srv_request_deinit(&r);
  return rc;
}

static void release(wf_tensor **v) {
  for (int j = 0; j < 3; j++)
    wf_tensor_release(v[j]);
}

static void check_values(wf_tensor **v) {
  const float *x = wf_tensor_data(v[0]);
  const int32_t *n = wf_tensor_data(v[1]);
  const uint8_t *u = wf_tensor_data(v[2]);
  assert_int_equal(wf_tensor_dim(v[0], 0), 2);
  assert_int_equal(wf_tensor_dim(v[0], 1), 2);
  assert_true(x[0] == 1.5f && x[1] == -2 && isnan(x[2]) && x[3] == INFINITY);
  assert_int_equal(wf_tensor_dim(v[1], 0), 2);
  assert_true(n[0] == -7 && n[1] == 2147483647);
  assert_int_equal(wf_tensor_dim(v[2], 1), 3);
  assert_true(u[0] == 1 && u[1] == 2 && u[2] == 3 && u[3] == 255 && u[4] == 0 &&
              u[5] == 128);
}

static void test_codec_decodes_rows_columns_and_kserve(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  wf_tensor *v[3];
  /* "AQID" = 1 2 3; "/wCA" = 255 0 128. */
  assert_int_equal(decode("{\"instances\": [{\"x\": [1.5, -2], \"n\": -7, "
                          "\"u\": {\"b64\": \"AQID\"}}, {\"x\": [NaN, "
                          "Infinity], \"n\": 2147483647, \"u\": [255, 0, "
                          "128]}]}",
                          0, v, st),
                   0);
  check_values(v);
  release(v);
  assert_int_equal(decode("{\"inputs\": {\"x\": [[1.5, -2], [NaN, "
                          "Infinity]], \"n\": [-7, 2147483647], \"u\": "
                          "[{\"b64\": \"AQID\"}, {\"b64\": \"_wCA\"}]}}",
                          0, v, st),
                   0);
  check_values(v);
  release(v);
  assert_int_equal(decode("{\"inputs\": [{\"name\": \"u\", \"shape\": [2, 3], "
                          "\"datatype\": \"UINT8\", \"data\": [1, 2, 3, 255, "
                          "0, 128]}, {\"name\": \"n\", \"shape\": [2], "
                          "\"datatype\": \"INT32\", \"data\": [-7, "
                          "2147483647]}, {\"name\": \"x\", \"shape\": [2, 2], "
                          "\"datatype\": \"FP32\", \"data\": [[1.5, -2], "
                          "[NaN, Infinity]]}]}",
                          1, v, st),
                   0);
  check_values(v);
  /* Written back: shortest text, NaN and Infinity as tokens. */
  srv_buf b = {0};
  assert_int_equal(srv_encode_tf(&b, SRV_TF_COLUMNAR, &sig, v, st), 0);
  assert_string_equal(b.p, "{\"outputs\":{\"x\":[[1.5,-2],[NaN,Infinity]],"
                           "\"n\":[-7,2147483647],\"u\":[[1,2,3],[255,0,"
                           "128]]}}");
  srv_buf_free(&b);
  assert_int_equal(srv_encode_tf(&b, SRV_TF_ROW, &sig, v, st), 0);
  assert_string_equal(b.p, "{\"predictions\":[{\"x\":[1.5,-2],\"n\":-7,"
                           "\"u\":[1,2,3]},{\"x\":[NaN,Infinity],\"n\":"
                           "2147483647,\"u\":[255,0,128]}]}");
  srv_buf_free(&b);
  int want[3] = {0, 1, 0};
  srv_encode_kserve(&b, "m", "4", "q", &sig, want, v);
  assert_string_equal(b.p, "{\"model_name\":\"m\",\"model_version\":\"4\","
                           "\"id\":\"q\",\"outputs\":[{\"name\":\"n\","
                           "\"datatype\":\"INT32\",\"shape\":[2],\"data\":"
                           "[-7,2147483647]}]}");
  srv_buf_free(&b);
  release(v);
  wf_status_free(st);
}

/* String outputs: JSON strings where they are UTF-8, b64 objects where
 * not; a string input is refused, naming it. */
static void test_codec_writes_string_outputs(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  static const srv_arg sargs[] = {{"s", WF_STRING, {1, 0, {-1}}}};
  static const srv_sig_desc ssig = {1, sargs, 1, sargs};
  const char *strs[3] = {"\xc3\x89t\xc3\xa9 \"q\"", "a\0b", "\xff\xfe"};
  size_t lens[3] = {9, 3, 2};
  int64_t dims[1] = {3};
  wf_tensor *t = wf_tensor_new_strings(dims, 1, strs, lens, st);
  srv_buf b = {0};
  assert_int_equal(srv_encode_tf(&b, SRV_TF_COLUMNAR, &ssig, &t, st), 0);
  assert_string_equal(b.p, "{\"outputs\":[\"\xc3\x89t\xc3\xa9 \\\"q\\\"\","
                           "\"a\\u0000b\",{\"b64\":\"//4=\"}]}");
  srv_buf_free(&b);
  int want[1] = {1};
  srv_encode_kserve(&b, "m", "1", NULL, &ssig, want, &t);
  assert_non_null(strstr(b.p, "\"datatype\":\"BYTES\",\"shape\":[3]"));
  srv_buf_free(&b);
  wf_tensor_release(t);
  srv_request r;
  wf_tensor *in = NULL;
  const char *body = "{\"inputs\": {\"s\": [\"a\"]}}";
  assert_int_equal(srv_request_parse(&r, body, strlen(body), 0, st), 0);
  assert_int_not_equal(srv_request_decode(&r, &ssig, &in, st), 0);
  assert_int_equal(wf_status_code(st), WF_UNIMPLEMENTED);
  assert_non_null(strstr(wf_status_message(st), "input 's' has dtype string"));
  srv_request_deinit(&r);
  wf_status_free(st);
}

static void test_codec_refusals_name_input_and_place(void **state) {
  (void)state;
  static const struct {
    const char *body;
    int kserve;
    const char *want;
  } cases[] = {
      {"{\"instances\": [{\"x\": [1, 2], \"n\": 1, \"u\": [1]}, {\"x\": [1], "
       "\"n\": 1, \"u\": [1]}]}",
       0, "input 'x' at instances[1]: expected 2 values, got 1"},
      {"{\"instances\": [{\"x\": [1, 2], \"n\": 3000000000, \"u\": [1]}]}", 0,
       "input 'n' at instances[0]: 3000000000 is out of range for int32"},
      {"{\"instances\": [{\"x\": [1, \"a\"], \"n\": 1, \"u\": [1]}]}", 0,
       "input 'x' at instances[0][1]: expected a number for float32, got a "
       "string"},
      {"{\"inputs\": {\"x\": [[1, 2]], \"n\": [1], \"u\": [[256]]}}", 0,
       "input 'u' at inputs.u[0][0]: 256 is out of range for uint8"},
      {"{\"inputs\": {\"x\": [[1, 2, 3]], \"n\": [1], \"u\": [[1]]}}", 0,
       "input 'x' has shape (1, 3), the signature wants (?, 2)"},
      {"{\"inputs\": {\"x\": [[1, 2]], \"n\": [1]}}", 0,
       "'inputs' lacks input 'u'"},
      {"{\"inputs\": [{\"name\": \"x\", \"shape\": [1000000000000, 2], "
       "\"datatype\": \"FP32\", \"data\": [1, 2]}]}",
       1, "input 'x' has 2 values, its shape holds 2000000000000"},
      {"{\"inputs\": [{\"name\": \"x\", \"shape\": [1, 2], \"datatype\": "
       "\"FP32\", \"data\": [1, 2]}, {\"name\": \"x\", \"shape\": [1, 2], "
       "\"datatype\": \"FP32\", \"data\": [1, 2]}]}",
       1, "input 'x' is given twice"},
      {"{\"instances\": [1]", 0,
       "malformed JSON at line 1, column 18: the text ends inside an object"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    wf_status *st = wf_status_new();
    wf_tensor *v[3] = {0};
    int rc = decode(cases[i].body, cases[i].kserve, v, st);
    if (!rc || !strstr(wf_status_message(st), cases[i].want)) {
      fprintf(stderr, "case %zu: got '%s', want '%s'\n", i,
              wf_status_message(st), cases[i].want);
      fail();
    }
    assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
    for (int j = 0; j < 3; j++)
      assert_null(v[j]);
    wf_status_free(st);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_numbers_match_strtod),
      cmocka_unit_test(test_json_integers_keep_int64),
      cmocka_unit_test(test_json_strings_and_special_numbers),
      cmocka_unit_test(test_json_errors_name_line_and_column),
      cmocka_unit_test(test_codec_decodes_rows_columns_and_kserve),
      cmocka_unit_test(test_codec_writes_string_outputs),
      cmocka_unit_test(test_codec_refusals_name_input_and_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
