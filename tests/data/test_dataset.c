/* tests/data/test_dataset.c — dataset descriptions: file sources (patterns,
 * choosing readers by name or suffix, schemas, options), the stage
 * builders' checks and ownership rules, zip, counting. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "host/host.h"
#include "data_harness.h"

static void test_from_files_reads_the_schema_of_the_first_file(void **state) {
  (void)state;
  const char *p = dh_write_range("schema.tst", 0, 3);
  wf_dataset *ds = dh_files("schema.tst");
  wf_data_field f;
  const char *reader;
  assert_int_equal(wf_dataset_num_fields(ds), 3);
  wf_dataset_field(ds, 0, &f);
  assert_string_equal(f.name, "index");
  assert_int_equal(f.dtype, WF_INT64);
  assert_int_equal(f.shape.rank, 0);
  wf_dataset_field(ds, 2, &f);
  assert_string_equal(f.name, "pixels");
  assert_int_equal(f.dtype, WF_UINT8);
  assert_int_equal(f.shape.rank, 1);
  assert_int_equal(f.shape.dims[0], 4);
  assert_int_equal(wf_dataset_find_field(ds, "label"), 1);
  assert_int_equal(wf_dataset_find_field(ds, "nope"), -1);
  assert_int_equal(wf_dataset_num_files(ds), 1);
  assert_string_equal(wf_dataset_file(ds, 0, &reader), p);
  assert_string_equal(reader, "tst");
  wf_dataset_release(ds);
}

/* A second working reader ("txt", suffix "txt" or `formats`) registered in
 * its own runtime with the test reader. */
static wf_runtime *runtime_with_second_reader(const char *formats) {
  static wf_reader_def other;
  static const wf_reader_def *readers[2];
  static wf_plugin_desc desc;
  other = *test_reader_desc()->readers[0];
  other.name = "txt";
  other.formats = formats;
  readers[0] = &other;
  readers[1] = NULL;
  desc = *test_reader_desc();
  desc.name = "test-reader-2";
  desc.readers = readers;
  wf_runtime *r = wf__runtime_new_empty(NULL, st);
  DH_CHECK(!r);
  DH_CHECK(wf__runtime_add_plugin(r, test_reader_desc(), "(test)", NULL, st));
  DH_CHECK(wf__runtime_add_plugin(r, &desc, "(test 2)", NULL, st));
  return r;
}

static void test_reader_is_chosen_by_the_longest_suffix(void **state) {
  (void)state;
  const char *reader;
  wf_runtime *r2 = runtime_with_second_reader("txt");
  /* "tst.txt" (the test reader) beats "txt". */
  wf_dataset *ds = wf_dataset_from_files(
      r2, dh_write_range("long.tst.txt", 0, 1), NULL, NULL, 0, st);
  DH_CHECK(!ds);
  wf_dataset_file(ds, 0, &reader);
  assert_string_equal(reader, "tst");
  wf_dataset_release(ds);
  ds = wf_dataset_from_files(r2, dh_write_range("plain.txt", 0, 1), NULL,
                             NULL, 0, st);
  DH_CHECK(!ds);
  wf_dataset_file(ds, 0, &reader);
  assert_string_equal(reader, "txt");
  wf_dataset_release(ds);
  /* A suffix must follow a separator: "xtst" is nobody's. */
  const char *p = dh_write_range("xtst", 0, 1);
  assert_null(wf_dataset_from_files(r2, p, NULL, NULL, 0, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), p));
  assert_non_null(strstr(wf_status_message(st), "tst (tst, tst.txt)"));
  /* Named formats: a reader's name or one of its suffixes. */
  ds = wf_dataset_from_files(r2, p, "txt", NULL, 0, st);
  DH_CHECK(!ds);
  wf_dataset_file(ds, 0, &reader);
  assert_string_equal(reader, "txt");
  wf_dataset_release(ds);
  ds = wf_dataset_from_files(r2, p, "tst.txt", NULL, 0, st);
  DH_CHECK(!ds);
  wf_dataset_file(ds, 0, &reader);
  assert_string_equal(reader, "tst");
  wf_dataset_release(ds);
  assert_null(wf_dataset_from_files(r2, p, "csv", NULL, 0, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "'csv'"));
  wf_runtime_free(r2);
}

static void test_two_readers_of_one_suffix_must_be_told_apart(void **state) {
  (void)state;
  wf_runtime *r2 = runtime_with_second_reader("dat,tst");
  const char *p = dh_write_range("twice.tst", 0, 1);
  assert_null(wf_dataset_from_files(r2, p, NULL, NULL, 0, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'tst'"));
  assert_non_null(strstr(wf_status_message(st), "'txt'"));
  wf_dataset *ds = wf_dataset_from_files(r2, p, "txt", NULL, 0, st);
  DH_CHECK(!ds);
  wf_dataset_release(ds);
  wf_runtime_free(r2);
}

static void test_missing_files_are_not_found(void **state) {
  (void)state;
  assert_null(wf_dataset_from_files(rt, dh_path("none-*.tst"), NULL, NULL, 0,
                                    st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "none-*.tst"));
  assert_null(wf_dataset_from_files(rt, dh_path("absent.tst"), NULL, NULL, 0,
                                    st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
}

static void test_reader_options_reach_the_reader(void **state) {
  (void)state;
  const char *p = dh_write_range("opts.tst", 7, 1);
  wf_attr_item opts[2] = {
      {"pixels", {.type = WF_ATTR_INT, .count = 1, .u.i = 6}},
      {"prefix", {.type = WF_ATTR_STRING, .count = 1, .u.s = "a_"}}};
  wf_dataset *ds = wf_dataset_from_files(rt, p, NULL, opts, 2, st);
  wf_data_field f;
  DH_CHECK(!ds);
  wf_dataset_field(ds, 2, &f);
  assert_string_equal(f.name, "a_pixels");
  assert_int_equal(f.shape.dims[0], 6);
  wf_dataset_release(ds);
  wf_attr_item bogus = {"bogus", {.type = WF_ATTR_INT, .count = 1, .u.i = 1}};
  assert_null(wf_dataset_from_files(rt, p, NULL, &bogus, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'bogus'"));
  assert_non_null(strstr(wf_status_message(st), p));
}

static void test_a_file_of_another_schema_is_refused(void **state) {
  (void)state;
  dh_write_range("sch-a.tst", 0, 2);
  const char *b = dh_write_lines("sch-b.tst", "#pixels 8", "5", NULL);
  wf_dataset *ds = dh_files("sch-*.tst");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  DH_CHECK(!it);
  for (int i = 0; i < 2; i++) {
    DH_CHECK(wf_iterator_next(it, f, st));
    dh_release(f, 3);
  }
  assert_int_equal(wf_iterator_next(it, f, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), b));
  assert_non_null(strstr(wf_status_message(st), "sch-a.tst"));
  assert_non_null(strstr(wf_status_message(st), "pixels"));
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_a_failed_stage_passes_null_along_the_chain(void **state) {
  (void)state;
  dh_write_range("chain.tst", 0, 2);
  wf_dataset *ds = dh_files("chain.tst");
  ds = wf_dataset_shuffle(ds, 0, 1, st); /* refused: frees ds */
  assert_null(ds);
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "shuffle"));
  ds = wf_dataset_batch(ds, 2, 0, st);
  ds = wf_dataset_prefetch(ds, 2, st);
  ds = wf_dataset_repeat(ds, -1, st);
  ds = wf_dataset_map_scale(ds, "pixels", 1, 0, st);
  ds = wf_dataset_cache(ds, st);
  assert_null(ds);
  /* The message is still the one of the stage that failed. */
  assert_non_null(strstr(wf_status_message(st), "shuffle"));
  assert_null(wf_dataset_repeat(dh_files("chain.tst"), -2, st));
  assert_null(wf_dataset_prefetch(dh_files("chain.tst"), 0, st));
  assert_null(wf_dataset_map_scale(dh_files("chain.tst"), "nope", 1, 0, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "'pixels'"));
}

static void test_a_dataset_is_shared_by_its_stages(void **state) {
  (void)state;
  int64_t v[64];
  dh_write_range("shared.tst", 0, 4);
  wf_dataset *base = dh_files("shared.tst");
  wf_dataset *twice = wf_dataset_repeat(wf_dataset_retain(base), 2, st);
  wf_dataset *batched = wf_dataset_batch(wf_dataset_retain(base), 3, 0, st);
  DH_CHECK(!twice || !batched);
  wf_dataset_release(base); /* the stages keep it */
  wf_iterator *it = wf_iterator_new(twice, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, -1, v, 64), 8);
  wf_iterator_free(it);
  it = wf_iterator_new(batched, NULL, st);
  DH_CHECK(!it);
  wf_dataset_release(batched); /* the iterator keeps it */
  assert_int_equal(dh_take(it, 0, -1, v, 64), 4);
  wf_iterator_free(it);
  wf_dataset_release(twice);
}

static wf_dataset *prefixed(const char *path, const char *prefix) {
  wf_attr_item opt = {"prefix", {.type = WF_ATTR_STRING, .count = 1}};
  opt.value.u.s = prefix;
  wf_dataset *ds = wf_dataset_from_files(rt, path, NULL, &opt, 1, st);
  DH_CHECK(!ds);
  return ds;
}

static void test_zip_pairs_elements_one_to_one(void **state) {
  (void)state;
  const char *a = dh_write_range("zip-a.tst", 0, 5);
  const char *b = dh_write_range("zip-b.tst", 10, 5);
  const char *c = dh_write_range("zip-c.tst", 20, 3);
  wf_dataset *ds = wf_dataset_zip(prefixed(a, "a_"), prefixed(b, "b_"), st);
  wf_tensor *f[6];
  DH_CHECK(!ds);
  assert_int_equal(wf_dataset_num_fields(ds), 6);
  assert_int_equal(wf_dataset_find_field(ds, "b_index"), 3);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  for (int i = 0; i < 5; i++) {
    DH_CHECK(wf_iterator_next(it, f, st));
    assert_int_equal(dh_index(f, 0), i);
    assert_int_equal(dh_index(f, 3), 10 + i);
    dh_release(f, 6);
  }
  assert_int_equal(wf_iterator_next(it, f, st), WF_OUT_OF_RANGE);
  wf_iterator_free(it);
  wf_dataset_release(ds);

  /* Inputs of different lengths are an error naming the shorter one. */
  ds = wf_dataset_zip(prefixed(a, "a_"), prefixed(c, "c_"), st);
  DH_CHECK(!ds);
  it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  int rc;
  while ((rc = wf_iterator_next(it, f, st)) == WF_OK)
    dh_release(f, 6);
  assert_int_equal(rc, WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'c_index'"));
  assert_non_null(strstr(wf_status_message(st), "after 3"));
  wf_iterator_free(it);
  wf_dataset_release(ds);

  assert_null(wf_dataset_zip(dh_files("zip-a.tst"), dh_files("zip-b.tst"),
                             st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'index'"));
}

static void test_count_asks_the_reader_or_reads(void **state) {
  (void)state;
  int64_t n;
  dh_write_lines("count-a.tst", "0", "1", "# note", "2", NULL);
  dh_write_lines("count-b.tst", "3", "bad", "4", NULL);
  wf_dataset *ds = dh_files("count-*.tst");
  long calls = test_reader_next_calls();
  DH_CHECK(wf_dataset_count(ds, &n, st));
  assert_int_equal(n, 5);
  assert_int_equal(test_reader_next_calls(), calls); /* the reader's count */
  wf_dataset_release(ds);

  wf_attr_item opt = {"no_count", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}};
  ds = wf_dataset_from_files(rt, dh_path("count-*.tst"), NULL, &opt, 1, st);
  DH_CHECK(!ds);
  DH_CHECK(wf_dataset_count(ds, &n, st));
  assert_int_equal(n, 5); /* read: the bad record is not counted */
  assert_int_equal(test_reader_next_calls() - calls, 8);
  wf_dataset_release(ds);

  ds = wf_dataset_batch(dh_files("count-*.tst"), 2, 0, st);
  DH_CHECK(!ds);
  DH_CHECK(wf_dataset_count(ds, &n, st));
  assert_int_equal(n, 3);
  wf_dataset_release(ds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_files_reads_the_schema_of_the_first_file),
      cmocka_unit_test(test_reader_is_chosen_by_the_longest_suffix),
      cmocka_unit_test(test_two_readers_of_one_suffix_must_be_told_apart),
      cmocka_unit_test(test_missing_files_are_not_found),
      cmocka_unit_test(test_reader_options_reach_the_reader),
      cmocka_unit_test(test_a_file_of_another_schema_is_refused),
      cmocka_unit_test(test_a_failed_stage_passes_null_along_the_chain),
      cmocka_unit_test(test_a_dataset_is_shared_by_its_stages),
      cmocka_unit_test(test_zip_pairs_elements_one_to_one),
      cmocka_unit_test(test_count_asks_the_reader_or_reads),
  };
  return cmocka_run_group_tests(tests, dh_setup, dh_teardown);
}
