/* tests/data/test_iterator.c — iterators over the pipeline's stages (file
 * order, interleave, shard, shuffle, batch, cache, repeat, prefetch), bad
 * records, and saving and restoring positions, on files of the test
 * reader (tests/data/test_reader.c). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "data_harness.h"

#define MAXV 4096

/* Every index value of one pass (or of max elements). */
static int drain(wf_dataset *ds, int max, int64_t *out) {
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  int n = dh_take(it, 0, max, out, MAXV);
  wf_iterator_free(it);
  return n;
}

static void assert_values(const int64_t *got, int n, const int64_t *want,
                          int nwant) {
  if (n != nwant)
    fail_msg("got %d values, expected %d", n, nwant);
  for (int i = 0; i < n; i++)
    if (got[i] != want[i])
      fail_msg("value %d is %lld, expected %lld", i, (long long)got[i],
               (long long)want[i]);
}

/* ---- order -------------------------------------------------------------------- */

static void test_files_are_read_in_sorted_order(void **state) {
  (void)state;
  dh_write_range("order-b.tst", 10, 2);
  dh_write_range("order-a.tst", 0, 3);
  wf_dataset *ds = dh_files("order-*.tst");
  assert_int_equal(wf_dataset_num_files(ds), 2);
  int64_t v[MAXV];
  int n = drain(ds, -1, v);
  assert_values(v, n, (int64_t[]){0, 1, 2, 10, 11}, 5);
  wf_dataset_release(ds);
}

static void test_interleave_reads_files_round_robin(void **state) {
  (void)state;
  dh_write_range("il-0.tst", 0, 4);
  dh_write_range("il-1.tst", 10, 4);
  dh_write_range("il-2.tst", 20, 4);
  int64_t v[MAXV];
  wf_dataset *ds = wf_dataset_interleave(dh_files("il-*.tst"), 2, 1, st);
  DH_CHECK(!ds);
  int n = drain(ds, -1, v);
  assert_values(v, n,
                (int64_t[]){0, 10, 1, 11, 2, 12, 3, 13, 20, 21, 22, 23}, 12);
  wf_dataset_release(ds);

  ds = wf_dataset_interleave(dh_files("il-*.tst"), 2, 2, st);
  DH_CHECK(!ds);
  n = drain(ds, -1, v);
  assert_values(v, n,
                (int64_t[]){0, 1, 10, 11, 2, 3, 12, 13, 20, 21, 22, 23}, 12);
  wf_dataset_release(ds);
}

static void test_interleave_refuses_anything_but_a_file_source(void **state) {
  (void)state;
  dh_write_range("il-bad.tst", 0, 2);
  wf_dataset *ds = wf_dataset_shuffle(dh_files("il-bad.tst"), 4, 1, st);
  assert_null(wf_dataset_interleave(ds, 2, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "file source"));
  assert_null(wf_dataset_interleave(dh_files("il-bad.tst"), 0, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
}

/* ---- shuffle -------------------------------------------------------------------- */

static wf_dataset *shuffled(const char *pattern, int64_t buffer,
                            uint64_t seed) {
  wf_dataset *ds = wf_dataset_shuffle(dh_files(pattern), buffer, seed, st);
  DH_CHECK(!ds);
  return ds;
}

static void test_shuffle_is_deterministic_for_a_seed(void **state) {
  (void)state;
  int64_t a[MAXV], b[MAXV], c[MAXV];
  dh_write_range("shuf.tst", 0, 200);
  wf_dataset *d1 = shuffled("shuf.tst", 32, 7);
  wf_dataset *d2 = shuffled("shuf.tst", 32, 7);
  wf_dataset *d3 = shuffled("shuf.tst", 32, 8);
  int na = drain(d1, -1, a), nb = drain(d2, -1, b), nc = drain(d3, -1, c);
  assert_int_equal(na, 200);
  assert_values(a, na, b, nb); /* same seed, same order */
  dh_assert_permutation(a, na, 0);
  dh_assert_permutation(c, nc, 0);
  int same = 0, moved = 0;
  for (int i = 0; i < 200; i++) {
    same += a[i] == c[i];
    moved += a[i] != i;
  }
  assert_true(same < 40);   /* another seed, another order */
  assert_true(moved > 150); /* and it is shuffled at all */
  /* A second iterator of one dataset starts the same way. */
  nb = drain(d1, -1, b);
  assert_values(a, na, b, nb);
  wf_dataset_release(d1);
  wf_dataset_release(d2);
  wf_dataset_release(d3);
}

static void test_shuffle_buffer_bounds_how_far_elements_move(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("shuf-bound.tst", 0, 100);
  wf_dataset *ds = shuffled("shuf-bound.tst", 4, 3);
  int n = drain(ds, -1, v);
  assert_int_equal(n, 100);
  /* Output i comes from the first i + 4 inputs. */
  for (int i = 0; i < n; i++)
    assert_true(v[i] < i + 4);
  dh_assert_permutation(v, n, 0);
  wf_dataset_release(ds);
}

static void test_shuffle_reshuffles_each_pass_of_repeat(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("shuf-rep.tst", 0, 64);
  wf_dataset *ds = wf_dataset_repeat(shuffled("shuf-rep.tst", 64, 5), 2, st);
  DH_CHECK(!ds);
  int n = drain(ds, -1, v);
  assert_int_equal(n, 128);
  dh_assert_permutation(v, 64, 0);
  dh_assert_permutation(v + 64, 64, 0);
  int same = 0;
  for (int i = 0; i < 64; i++)
    same += v[i] == v[64 + i];
  assert_true(same < 16);
  wf_dataset_release(ds);
}

/* ---- shard ----------------------------------------------------------------------- */

static void test_shards_cover_every_record_exactly_once(void **state) {
  (void)state;
  dh_write_range("shard-0.tst", 0, 9);
  dh_write_range("shard-1.tst", 9, 7);
  dh_write_range("shard-2.tst", 16, 9);
  for (int shuffle = 0; shuffle < 2; shuffle++) {
    for (int64_t nshards = 1; nshards <= 5; nshards++) {
      int64_t all[MAXV];
      int total = 0;
      for (int64_t k = 0; k < nshards; k++) {
        wf_dataset *ds =
            wf_dataset_interleave(dh_files("shard-*.tst"), 2, 3, st);
        if (shuffle)
          ds = wf_dataset_shuffle(ds, 6, 99, st);
        ds = wf_dataset_shard(ds, nshards, k, st);
        DH_CHECK(!ds);
        int n = drain(ds, -1, all + total);
        /* Shards differ in size by at most one. */
        assert_true(n == 25 / nshards || n == 25 / nshards + 1);
        total += n;
        wf_dataset_release(ds);
      }
      assert_int_equal(total, 25);
      dh_assert_permutation(all, total, 0);
    }
  }
}

static void test_shard_refuses_bad_index(void **state) {
  (void)state;
  dh_write_range("shard-bad.tst", 0, 2);
  assert_null(wf_dataset_shard(dh_files("shard-bad.tst"), 3, 3, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_dataset_shard(dh_files("shard-bad.tst"), 0, 0, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
}

/* ---- repeat and cache ------------------------------------------------------------- */

static void test_repeat_counts_passes(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("rep.tst", 0, 3);
  wf_dataset *ds = wf_dataset_repeat(dh_files("rep.tst"), 3, st);
  DH_CHECK(!ds);
  int n = drain(ds, -1, v);
  assert_values(v, n, (int64_t[]){0, 1, 2, 0, 1, 2, 0, 1, 2}, 9);
  wf_dataset_release(ds);

  ds = wf_dataset_repeat(dh_files("rep.tst"), 0, st);
  DH_CHECK(!ds);
  assert_int_equal(drain(ds, -1, v), 0);
  wf_dataset_release(ds);

  ds = wf_dataset_repeat(dh_files("rep.tst"), -1, st);
  DH_CHECK(!ds);
  n = drain(ds, 1000, v);
  assert_int_equal(n, 1000);
  assert_int_equal(v[999], 999 % 3);
  int64_t count;
  assert_int_equal(wf_dataset_count(ds, &count, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "forever"));
  wf_dataset_release(ds);
}

static void test_repeat_forever_of_nothing_ends(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_lines("empty.tst", "# no records", NULL);
  wf_dataset *ds = wf_dataset_repeat(dh_files("empty.tst"), -1, st);
  DH_CHECK(!ds);
  assert_int_equal(drain(ds, -1, v), 0);
  wf_dataset_release(ds);
}

static void test_cache_serves_later_passes_without_the_reader(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("cache.tst", 0, 20);
  wf_dataset *ds =
      wf_dataset_repeat(wf_dataset_cache(dh_files("cache.tst"), st), 3, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  long calls0 = test_reader_next_calls(), opens0 = test_reader_open_calls();
  int n = dh_take(it, 0, 20, v, MAXV);
  assert_int_equal(n, 20);
  /* The first pass read every record (the end is read with the first
   * element of the second pass). */
  assert_int_equal(test_reader_next_calls() - calls0, 20);
  n += dh_take(it, 0, -1, v + n, MAXV - n);
  assert_int_equal(n, 60);
  assert_int_equal(test_reader_next_calls() - calls0, 21);
  assert_int_equal(test_reader_open_calls() - opens0, 1);
  for (int i = 0; i < 60; i++)
    assert_int_equal(v[i], i % 20);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_cache_of_an_interrupted_pass_reads_again(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("cache-int.tst", 0, 10);
  wf_dataset *ds = wf_dataset_cache(dh_files("cache-int.tst"), st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 4, v, MAXV), 4);
  /* Abandoning the pass: the cache is incomplete and is filled again. */
  DH_CHECK(wf_iterator_reset(it, st));
  long calls0 = test_reader_next_calls();
  assert_int_equal(dh_take(it, 0, -1, v, MAXV), 10);
  assert_int_equal(test_reader_next_calls() - calls0, 11);
  DH_CHECK(wf_iterator_reset(it, st));
  assert_int_equal(dh_take(it, 0, -1, v, MAXV), 10);
  assert_int_equal(test_reader_next_calls() - calls0, 11);
  for (int i = 0; i < 10; i++)
    assert_int_equal(v[i], i);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

/* ---- batch ---------------------------------------------------------------------- */

/* Sizes of the batches of one pass. */
static int batch_sizes(wf_dataset *ds, int64_t *sizes) {
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  int n = 0;
  DH_CHECK(!it);
  for (int64_t next = 0;;) {
    int rc = wf_iterator_next(it, f, st);
    if (rc == WF_OUT_OF_RANGE)
      break;
    DH_CHECK(rc);
    sizes[n++] = wf_tensor_dim(f[0], 0);
    assert_int_equal(wf_tensor_rank(f[2]), 2);
    assert_int_equal(wf_tensor_dim(f[2], 1), 4);
    const int64_t *idx = wf_tensor_data(f[0]);
    const uint8_t *px = wf_tensor_data(f[2]);
    for (int64_t k = 0; k < sizes[n - 1]; k++, next++) {
      assert_int_equal(idx[k], next);
      assert_int_equal(px[k * 4 + 1], (next + 1) % 256);
    }
    for (int i = 0; i < 3; i++)
      wf_tensor_release(f[i]);
  }
  wf_iterator_free(it);
  return n;
}

static void test_batch_keeps_or_drops_the_remainder(void **state) {
  (void)state;
  int64_t sizes[16];
  wf_data_field fd;
  dh_write_range("batch.tst", 0, 10);
  wf_dataset *ds = wf_dataset_batch(dh_files("batch.tst"), 4, 0, st);
  DH_CHECK(!ds);
  wf_dataset_field(ds, 2, &fd);
  assert_int_equal(fd.shape.rank, 2);
  assert_int_equal(fd.shape.dims[0], WF_UNKNOWN_DIM);
  assert_int_equal(fd.shape.dims[1], 4);
  assert_values(sizes, batch_sizes(ds, sizes), (int64_t[]){4, 4, 2}, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_batch(dh_files("batch.tst"), 4, 1, st);
  DH_CHECK(!ds);
  wf_dataset_field(ds, 0, &fd);
  assert_int_equal(fd.shape.rank, 1);
  assert_int_equal(fd.shape.dims[0], 4);
  assert_values(sizes, batch_sizes(ds, sizes), (int64_t[]){4, 4}, 2);
  wf_dataset_release(ds);

  ds = wf_dataset_batch(dh_files("batch.tst"), 5, 1, st);
  DH_CHECK(!ds);
  assert_values(sizes, batch_sizes(ds, sizes), (int64_t[]){5, 5}, 2);
  wf_dataset_release(ds);

  assert_null(wf_dataset_batch(dh_files("batch.tst"), 0, 0, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
}

/* ---- prefetch ------------------------------------------------------------------- */

static wf_dataset *training_chain(const char *pattern, int prefetch,
                                  int64_t delay_us) {
  wf_attr_item opt = {"delay_us", {.type = WF_ATTR_INT, .count = 1}};
  opt.value.u.i = delay_us;
  wf_dataset *ds =
      wf_dataset_from_files(rt, dh_path(pattern), NULL, &opt, 1, st);
  ds = wf_dataset_interleave(ds, 2, 1, st);
  ds = wf_dataset_shuffle(ds, 16, 11, st);
  ds = wf_dataset_batch(ds, 5, 0, st);
  ds = wf_dataset_repeat(ds, 2, st);
  if (prefetch)
    ds = wf_dataset_prefetch(ds, prefetch, st);
  DH_CHECK(!ds);
  return ds;
}

static void test_prefetch_gives_the_same_sequence(void **state) {
  (void)state;
  int64_t a[MAXV], b[MAXV];
  dh_write_range("pf-0.tst", 0, 23);
  dh_write_range("pf-1.tst", 100, 17);
  wf_dataset *plain = training_chain("pf-*.tst", 0, 0);
  int na = drain(plain, -1, a);
  assert_int_equal(na, 80);
  for (int depth = 1; depth <= 4; depth += 3) {
    wf_dataset *pf = training_chain("pf-*.tst", depth, depth == 1 ? 200 : 0);
    int nb = drain(pf, -1, b);
    assert_values(b, nb, a, na);
    /* An iterator freed while its thread is working stops cleanly. */
    wf_iterator *it = wf_iterator_new(pf, NULL, st);
    DH_CHECK(!it);
    assert_int_equal(dh_take(it, 0, 1, b, MAXV), 5);
    wf_iterator_free(it);
    wf_dataset_release(pf);
  }
  /* Prefetch at several places of one chain. */
  wf_dataset *ds = dh_files("pf-*.tst");
  ds = wf_dataset_prefetch(wf_dataset_interleave(ds, 2, 1, st), 3, st);
  ds = wf_dataset_shuffle(ds, 16, 11, st);
  ds = wf_dataset_prefetch(wf_dataset_batch(ds, 5, 0, st), 1, st);
  ds = wf_dataset_prefetch(wf_dataset_repeat(ds, 2, st), 2, st);
  DH_CHECK(!ds);
  int nb = drain(ds, -1, b);
  assert_values(b, nb, a, na);
  wf_dataset_release(ds);
  wf_dataset_release(plain);
}

/* ---- bad records -------------------------------------------------------------------- */

static void test_bad_record_is_data_loss_and_reading_goes_on(void **state) {
  (void)state;
  const char *p = dh_write_lines("bad.tst", "0", "bad", "1", NULL);
  wf_dataset *ds = dh_files("bad.tst");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  DH_CHECK(!it);
  DH_CHECK(wf_iterator_next(it, f, st));
  assert_int_equal(dh_index(f, 0), 0);
  dh_release(f, 3);
  assert_int_equal(wf_iterator_next(it, f, st), WF_DATA_LOSS);
  assert_non_null(strstr(wf_status_message(st), p));
  assert_non_null(strstr(wf_status_message(st), ":2:"));
  DH_CHECK(wf_iterator_next(it, f, st));
  assert_int_equal(dh_index(f, 0), 1);
  dh_release(f, 3);
  assert_int_equal(wf_iterator_next(it, f, st), WF_OUT_OF_RANGE);
  assert_int_equal(wf_iterator_next(it, f, st), WF_OUT_OF_RANGE);
  assert_int_equal(wf_iterator_bad_records(it), 0);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_pipeline_names_the_file_when_the_reader_does_not(
    void **state) {
  (void)state;
  const char *p = dh_write_lines("anon.tst", "bad", "fatal", NULL);
  wf_attr_item opt = {"path_in_errors",
                      {.type = WF_ATTR_BOOL, .count = 1, .u.b = 0}};
  wf_dataset *ds = wf_dataset_from_files(rt, p, NULL, &opt, 1, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  DH_CHECK(!it);
  assert_int_equal(wf_iterator_next(it, f, st), WF_DATA_LOSS);
  assert_non_null(strstr(wf_status_message(st), p));
  assert_non_null(strstr(wf_status_message(st), "line 1"));
  assert_int_equal(wf_iterator_next(it, f, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), p));
  assert_non_null(strstr(wf_status_message(st), "line 2"));
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_skipped_bad_records_are_counted(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_lines("skip.tst", "0", "bad", "1", "bad", "bad", "2", NULL);
  wf_dataset *ds = wf_dataset_batch(dh_files("skip.tst"), 2, 0, st);
  wf_iterator_options opt = WF_ITERATOR_OPTIONS_INIT;
  opt.skip_bad_records = 1;
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, &opt, st);
  DH_CHECK(!it);
  int n = dh_take(it, 0, -1, v, MAXV);
  assert_values(v, n, (int64_t[]){0, 1, 2}, 3);
  assert_int_equal(wf_iterator_bad_records(it), 3);
  wf_iterator_free(it);
  int64_t count;
  DH_CHECK(wf_dataset_count(ds, &count, st));
  assert_int_equal(count, 2); /* batches */
  wf_dataset_release(ds);
}

static void test_fatal_error_stops_the_iterator(void **state) {
  (void)state;
  const char *p = dh_write_lines("fatal.tst", "0", "fatal", "1", NULL);
  wf_dataset *ds = wf_dataset_prefetch(dh_files("fatal.tst"), 2, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  DH_CHECK(!it);
  DH_CHECK(wf_iterator_next(it, f, st));
  dh_release(f, 3);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(wf_iterator_next(it, f, st), WF_INVALID_ARGUMENT);
    assert_non_null(strstr(wf_status_message(st), p));
    assert_non_null(strstr(wf_status_message(st), ":2:"));
  }
  assert_null(wf_iterator_save(it, st));
  assert_int_equal(wf_status_code(st), WF_FAILED_PRECONDITION);
  /* A reset starts a new pass. */
  DH_CHECK(wf_iterator_reset(it, st));
  DH_CHECK(wf_iterator_next(it, f, st));
  assert_int_equal(dh_index(f, 0), 0);
  dh_release(f, 3);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_corrupt_file_is_a_bad_record_of_the_source(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("corr-a.tst", 0, 2);
  const char *b = dh_write_lines("corr-b.tst", "corrupt", "5", NULL);
  dh_write_range("corr-c.tst", 10, 2);
  wf_dataset *ds = dh_files("corr-*.tst");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  wf_tensor *f[3];
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 2, v, MAXV), 2);
  assert_int_equal(wf_iterator_next(it, f, st), WF_DATA_LOSS);
  assert_non_null(strstr(wf_status_message(st), b));
  int n = dh_take(it, 0, -1, v, MAXV);
  assert_values(v, n, (int64_t[]){10, 11}, 2);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_bad_record_inside_a_batch_keeps_the_batch(void **state) {
  (void)state;
  dh_write_lines("bad-batch.tst", "0", "1", "2", "bad", "3", "4", "5", NULL);
  wf_dataset *ds = wf_dataset_prefetch(
      wf_dataset_batch(dh_files("bad-batch.tst"), 3, 0, st), 2, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  int64_t v[MAXV];
  wf_tensor *f[3];
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 1, v, MAXV), 3);
  assert_int_equal(wf_iterator_next(it, f, st), WF_DATA_LOSS);
  int n = dh_take(it, 0, -1, v, MAXV);
  assert_values(v, n, (int64_t[]){3, 4, 5}, 3);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

/* ---- positions ------------------------------------------------------------------- */

/* Iterates ds uninterrupted, then for each cut: takes `cut` elements,
 * saves, frees the iterator, restores into a new one and takes the rest;
 * the two parts must be exactly the uninterrupted sequence. */
static void check_resume(wf_dataset *ds, const int *cuts, int ncuts) {
  int64_t whole[MAXV], part[MAXV];
  int n = drain(ds, -1, whole);
  assert_true(n > 0);
  for (int c = 0; c < ncuts; c++) {
    wf_iterator *it = wf_iterator_new(ds, NULL, st);
    DH_CHECK(!it);
    int got = dh_take(it, 0, cuts[c], part, MAXV);
    wf_tensor *pos = wf_iterator_save(it, st);
    DH_CHECK(!pos);
    /* The saved iterator itself goes on unchanged. */
    int64_t rest[MAXV];
    int nrest = dh_take(it, 0, -1, rest, MAXV);
    wf_iterator_free(it);
    assert_int_equal(got + nrest, n);

    wf_iterator *again = wf_iterator_new(ds, NULL, st);
    DH_CHECK(!again);
    DH_CHECK(wf_iterator_restore(again, pos, st));
    got += dh_take(again, 0, -1, part + got, MAXV - got);
    wf_iterator_free(again);
    wf_tensor_release(pos);
    if (got != n)
      fail_msg("cut %d: %d values after resuming, %d uninterrupted",
               cuts[c], got, n);
    for (int i = 0; i < n; i++)
      if (part[i] != whole[i])
        fail_msg("cut %d: value %d is %lld after resuming, %lld "
                 "uninterrupted",
                 cuts[c], i, (long long)part[i], (long long)whole[i]);
  }
}

static void test_resume_yields_the_rest_exactly_once(void **state) {
  (void)state;
  dh_write_range("res-0.tst", 0, 7);
  dh_write_range("res-1.tst", 100, 5);
  dh_write_range("res-2.tst", 200, 6);
  static const int cuts[] = {0, 1, 6, 7, 8, 12, 17, 18, 25};
  /* Plain files, across file boundaries. */
  wf_dataset *ds = dh_files("res-*.tst");
  check_resume(ds, cuts, 8);
  wf_dataset_release(ds);
  /* Interleaved and shuffled: the shuffle buffer and its random state. */
  ds = wf_dataset_interleave(dh_files("res-*.tst"), 2, 2, st);
  ds = wf_dataset_shuffle(ds, 5, 21, st);
  DH_CHECK(!ds);
  check_resume(ds, cuts, 8);
  wf_dataset_release(ds);
  /* Sharded, repeated, reshuffled each pass. */
  ds = wf_dataset_shard(dh_files("res-*.tst"), 2, 1, st);
  ds = wf_dataset_repeat(wf_dataset_shuffle(ds, 4, 3, st), 3, st);
  DH_CHECK(!ds);
  check_resume(ds, cuts, 9);
  wf_dataset_release(ds);
}

static void test_resume_with_batch_prefetch_and_cache(void **state) {
  (void)state;
  dh_write_range("resb-0.tst", 0, 9);
  dh_write_range("resb-1.tst", 50, 8);
  static const int cuts[] = {0, 1, 2, 3, 5, 6, 7, 9};
  /* Batches (and a partial one at the end of each pass), prefetched. */
  wf_dataset *ds = wf_dataset_shuffle(dh_files("resb-*.tst"), 6, 4, st);
  ds = wf_dataset_batch(ds, 4, 0, st);
  ds = wf_dataset_prefetch(wf_dataset_repeat(ds, 2, st), 3, st);
  DH_CHECK(!ds);
  check_resume(ds, cuts, 8);
  wf_dataset_release(ds);
  /* A cache in its first pass and in later ones, then shuffled. */
  ds = wf_dataset_cache(dh_files("resb-*.tst"), st);
  ds = wf_dataset_shuffle(wf_dataset_repeat(ds, 3, st), 8, 2, st);
  ds = wf_dataset_batch(ds, 3, 1, st);
  DH_CHECK(!ds);
  check_resume(ds, cuts, 8);
  wf_dataset_release(ds);
}

static void test_resumed_cache_serves_from_memory_again(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("resc.tst", 0, 10);
  wf_dataset *ds =
      wf_dataset_repeat(wf_dataset_cache(dh_files("resc.tst"), st), 3, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 14, v, MAXV), 14);
  wf_tensor *pos = wf_iterator_save(it, st);
  DH_CHECK(!pos);
  wf_iterator_free(it);
  it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  long calls0 = test_reader_next_calls();
  DH_CHECK(wf_iterator_restore(it, pos, st));
  /* The restore replays the first pass up to where the cache stood. */
  int n = dh_take(it, 0, -1, v, MAXV);
  assert_int_equal(n, 16);
  assert_int_equal(v[0], 4);
  assert_true(test_reader_next_calls() - calls0 <= 11);
  wf_tensor_release(pos);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_restore_refuses_another_dataset(void **state) {
  (void)state;
  dh_write_range("other.tst", 0, 5);
  wf_dataset *a = shuffled("other.tst", 3, 1);
  wf_dataset *b = shuffled("other.tst", 3, 2);
  wf_iterator *ia = wf_iterator_new(a, NULL, st);
  wf_iterator *ib = wf_iterator_new(b, NULL, st);
  DH_CHECK(!ia || !ib);
  wf_tensor *pos = wf_iterator_save(ia, st);
  DH_CHECK(!pos);
  assert_int_equal(wf_iterator_restore(ib, pos, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "another dataset"));
  wf_tensor_release(pos);
  wf_iterator_free(ia);
  wf_iterator_free(ib);
  wf_dataset_release(a);
  wf_dataset_release(b);
}

static void test_restore_refuses_damaged_bytes_and_keeps_its_state(
    void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("dmg-0.tst", 0, 8);
  dh_write_range("dmg-1.tst", 10, 8);
  wf_dataset *ds = wf_dataset_interleave(dh_files("dmg-*.tst"), 2, 1, st);
  ds = wf_dataset_batch(wf_dataset_shuffle(ds, 4, 9, st), 3, 0, st);
  ds = wf_dataset_prefetch(ds, 2, st);
  DH_CHECK(!ds);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 2, v, MAXV), 6);
  wf_tensor *pos = wf_iterator_save(it, st);
  DH_CHECK(!pos);
  size_t len = wf_tensor_nbytes(pos);
  const uint8_t *bytes = wf_tensor_data(pos);

  wf_iterator *victim = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!victim);
  assert_int_equal(dh_take(victim, 0, 1, v, MAXV), 3);
  /* Every truncation is refused. */
  for (size_t cut = 0; cut < len; cut++) {
    int64_t n = (int64_t)cut;
    wf_tensor *t = wf_tensor_new(WF_UINT8, &n, 1, st);
    DH_CHECK(!t);
    memcpy(wf_tensor_data(t), bytes, cut);
    assert_int_equal(wf_iterator_restore(victim, t, st), WF_INVALID_ARGUMENT);
    wf_tensor_release(t);
  }
  /* Flipped bytes never crash or allocate absurdly: refused or, where a
   * byte holds data, accepted. */
  int64_t n = (int64_t)len;
  wf_tensor *t = wf_tensor_new(WF_UINT8, &n, 1, st);
  DH_CHECK(!t);
  for (size_t i = 0; i < len; i++) {
    memcpy(wf_tensor_data(t), bytes, len);
    ((uint8_t *)wf_tensor_data(t))[i] ^= 0xff;
    wf_iterator *probe = wf_iterator_new(ds, NULL, st);
    DH_CHECK(!probe);
    if (wf_iterator_restore(probe, t, st) != WF_OK)
      assert_true(wf_status_code(st) != WF_OK);
    wf_iterator_free(probe);
  }
  wf_tensor_release(t);
  /* The victim kept its own position: 3 more batches, 16 values in all. */
  int rest = dh_take(victim, 0, -1, v, MAXV);
  assert_int_equal(rest, 13);
  wf_tensor_release(pos);
  wf_iterator_free(victim);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_restore_names_a_file_that_is_gone(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("gone-a.tst", 0, 3);
  const char *b = dh_write_range("gone-b.tst", 10, 3);
  char path[256];
  snprintf(path, sizeof path, "%s", b);
  wf_dataset *ds = dh_files("gone-*.tst");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, 4, v, MAXV), 4); /* inside gone-b */
  wf_tensor *pos = wf_iterator_save(it, st);
  DH_CHECK(!pos);
  assert_int_equal(remove(path), 0);
  wf_iterator *again = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!again);
  assert_int_equal(wf_iterator_restore(again, pos, st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), path));
  /* Unchanged: it still starts at the beginning. */
  assert_int_equal(dh_take(again, 0, 1, v, MAXV), 1);
  assert_int_equal(v[0], 0);
  wf_tensor_release(pos);
  wf_iterator_free(again);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_position_at_the_end_stays_at_the_end(void **state) {
  (void)state;
  int64_t v[MAXV];
  dh_write_range("endpos.tst", 0, 3);
  wf_dataset *ds = dh_files("endpos.tst");
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  assert_int_equal(dh_take(it, 0, -1, v, MAXV), 3);
  wf_tensor *pos = wf_iterator_save(it, st);
  DH_CHECK(!pos);
  wf_iterator *again = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!again);
  DH_CHECK(wf_iterator_restore(again, pos, st));
  wf_tensor *f[3];
  assert_int_equal(wf_iterator_next(again, f, st), WF_OUT_OF_RANGE);
  assert_string_equal(wf_status_message(st), "end of data");
  wf_tensor_release(pos);
  wf_iterator_free(again);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static void test_reset_starts_the_next_pass(void **state) {
  (void)state;
  int64_t a[MAXV], b[MAXV], c[MAXV];
  dh_write_range("reset.tst", 0, 30);
  wf_dataset *ds = shuffled("reset.tst", 30, 17);
  wf_dataset *twice = wf_dataset_repeat(wf_dataset_retain(ds), 2, st);
  DH_CHECK(!twice);
  assert_int_equal(drain(twice, -1, c), 60);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  int na = dh_take(it, 0, -1, a, MAXV);
  DH_CHECK(wf_iterator_reset(it, st));
  int nb = dh_take(it, 0, -1, b, MAXV);
  /* The same two passes as repeat makes. */
  assert_values(a, na, c, 30);
  assert_values(b, nb, c + 30, 30);
  wf_iterator_free(it);
  wf_dataset_release(twice);
  wf_dataset_release(ds);
}

/* ---- allocation failures ------------------------------------------------------ */

/* Builds a pipeline, drains half of it, saves, restores into a second
 * iterator and drains that. Returns the first error's code (st says it) or
 * WF_OK; *n receives the values read. Frees everything either way. */
static int pipeline_once(int *n) {
  wf_tensor *f[6], *pos = NULL;
  wf_iterator *it = NULL, *again = NULL;
  int rc = WF_OK;
  wf_attr_item opt = {"prefix", {.type = WF_ATTR_STRING, .count = 1,
                                 .u.s = "b_"}};
  wf_dataset *a = wf_dataset_from_files(rt, dh_path("oom-*.tst"), NULL, NULL,
                                        0, st);
  a = wf_dataset_interleave(a, 2, 1, st);
  wf_dataset *b = wf_dataset_from_files(rt, dh_path("oom-*.tst"), NULL, &opt,
                                        1, st);
  wf_dataset *ds = wf_dataset_zip(a, b, st);
  ds = wf_dataset_shuffle(wf_dataset_cache(ds, st), 4, 1, st);
  ds = wf_dataset_map_one_hot(ds, "label", 10, st);
  ds = wf_dataset_repeat(wf_dataset_batch(ds, 3, 0, st), 2, st);
  ds = wf_dataset_map_scale(ds, "pixels", 0.5, 1, st);
  ds = wf_dataset_map_cast(ds, "b_pixels", WF_FLOAT16, st);
  *n = 0;
  if (!ds)
    return wf_status_code(st);
  if (!(it = wf_iterator_new(ds, NULL, st)))
    goto fail;
  for (int k = 0; k < 3; k++) {
    if ((rc = wf_iterator_next(it, f, st)))
      goto fail;
    *n += (int)wf_tensor_dim(f[0], 0);
    dh_release(f, 6);
  }
  if (!(pos = wf_iterator_save(it, st)) ||
      !(again = wf_iterator_new(ds, NULL, st)) ||
      wf_iterator_restore(again, pos, st))
    goto fail;
  while ((rc = wf_iterator_next(again, f, st)) == WF_OK) {
    *n += (int)wf_tensor_dim(f[0], 0);
    dh_release(f, 6);
  }
  if (rc == WF_OUT_OF_RANGE) {
    rc = WF_OK;
    wf_status_reset(st);
  }
fail:
  if (!rc)
    rc = wf_status_code(st);
  wf_tensor_release(pos);
  wf_iterator_free(again);
  wf_iterator_free(it);
  wf_dataset_release(ds);
  return rc;
}

static void test_allocation_failures_are_reported_and_leak_nothing(
    void **state) {
  (void)state;
  int n;
  dh_write_range("oom-0.tst", 0, 5);
  dh_write_range("oom-1.tst", 10, 4);
  wf_status_reset(st);
  long before = wf__alloc_count();
  DH_CHECK(pipeline_once(&n));
  assert_int_equal(n, 18);
  long total = wf__alloc_count() - before;
  assert_true(total > 50);
  for (long k = 1; k <= total; k++) {
    wf_status_reset(st);
    wf__alloc_fail_after(k, 0);
    int rc = pipeline_once(&n);
    wf__alloc_fail_after(0, 0);
    if (rc != WF_OK && rc != WF_RESOURCE_EXHAUSTED)
      fail_msg("allocation %ld failing gave %s: %s", k,
               wf_code_name((wf_code)rc), wf_status_message(st));
    if (rc == WF_OK)
      assert_int_equal(n, 18);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_files_are_read_in_sorted_order),
      cmocka_unit_test(test_interleave_reads_files_round_robin),
      cmocka_unit_test(test_interleave_refuses_anything_but_a_file_source),
      cmocka_unit_test(test_shuffle_is_deterministic_for_a_seed),
      cmocka_unit_test(test_shuffle_buffer_bounds_how_far_elements_move),
      cmocka_unit_test(test_shuffle_reshuffles_each_pass_of_repeat),
      cmocka_unit_test(test_shards_cover_every_record_exactly_once),
      cmocka_unit_test(test_shard_refuses_bad_index),
      cmocka_unit_test(test_repeat_counts_passes),
      cmocka_unit_test(test_repeat_forever_of_nothing_ends),
      cmocka_unit_test(test_cache_serves_later_passes_without_the_reader),
      cmocka_unit_test(test_cache_of_an_interrupted_pass_reads_again),
      cmocka_unit_test(test_batch_keeps_or_drops_the_remainder),
      cmocka_unit_test(test_prefetch_gives_the_same_sequence),
      cmocka_unit_test(test_bad_record_is_data_loss_and_reading_goes_on),
      cmocka_unit_test(
          test_pipeline_names_the_file_when_the_reader_does_not),
      cmocka_unit_test(test_skipped_bad_records_are_counted),
      cmocka_unit_test(test_fatal_error_stops_the_iterator),
      cmocka_unit_test(test_corrupt_file_is_a_bad_record_of_the_source),
      cmocka_unit_test(test_bad_record_inside_a_batch_keeps_the_batch),
      cmocka_unit_test(test_resume_yields_the_rest_exactly_once),
      cmocka_unit_test(test_resume_with_batch_prefetch_and_cache),
      cmocka_unit_test(test_resumed_cache_serves_from_memory_again),
      cmocka_unit_test(test_restore_refuses_another_dataset),
      cmocka_unit_test(
          test_restore_refuses_damaged_bytes_and_keeps_its_state),
      cmocka_unit_test(test_restore_names_a_file_that_is_gone),
      cmocka_unit_test(test_position_at_the_end_stays_at_the_end),
      cmocka_unit_test(test_reset_starts_the_next_pass),
      cmocka_unit_test(
          test_allocation_failures_are_reported_and_leak_nothing),
  };
  return cmocka_run_group_tests(tests, dh_setup, dh_teardown);
}
