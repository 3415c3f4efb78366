/* tests/data/test_data_map.c — the map stage: scale, cast (saturation,
 * wrapping, float16 and bfloat16), one-hot, on elements and on batches,
 * against values worked out by hand; and graph functions run per element
 * and per batch. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "data_harness.h"

/* The first element of ds (fields into f). */
static void first(wf_dataset *ds, wf_tensor **f) {
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  DH_CHECK(wf_iterator_next(it, f, st));
  wf_iterator_free(it);
}

static void test_scale_gives_float_a_x_plus_b(void **state) {
  (void)state;
  wf_tensor *f[3];
  dh_write_range("scale.tst", 254, 1);
  wf_dataset *ds = wf_dataset_map_scale(dh_files("scale.tst"), "pixels",
                                        0.5, 1.0, st);
  wf_data_field fd;
  DH_CHECK(!ds);
  wf_dataset_field(ds, 2, &fd);
  assert_int_equal(fd.dtype, WF_FLOAT32);
  assert_int_equal(fd.shape.dims[0], 4);
  first(ds, f);
  /* pixels of 254 are 254, 255, 0, 1 */
  const float *px = wf_tensor_data(f[2]);
  const float want[4] = {128.0f, 128.5f, 1.0f, 1.5f};
  for (int k = 0; k < 4; k++)
    assert_float_equal(px[k], want[k], 0);
  dh_release(f, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_map_scale(dh_files("scale.tst"), "index", 1.0 / 254, -1,
                            st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_float_equal(*(float *)wf_tensor_data(f[0]), 0.0f, 1e-6);
  dh_release(f, 3);
  wf_dataset_release(ds);
}

/* Batches long enough for the vector loops (blocks of 16) and their
 * remainder: every value, uint8 and float32 inputs, equal to the float
 * multiply and add done here (not contracted: the same bits). */
static void test_scale_covers_blocks_and_remainder(void **state) {
  (void)state;
  enum { P = 37, B = 3 };
  const float a = (float)(1.0 / 255), b = -0.5f, a2 = 3.0f, b2 = 0.25f;
  FILE *fp = fopen(dh_path("scalev.tst"), "w");
  assert_non_null(fp);
  fprintf(fp, "#pixels %d\n", P);
  for (int i = 0; i < B; i++)
    fprintf(fp, "%d\n", 240 + i); /* pixels wrap past 255 */
  assert_int_equal(fclose(fp), 0);

  wf_dataset *ds = wf_dataset_batch(dh_files("scalev.tst"), B, 0, st);
  ds = wf_dataset_map_scale(ds, "pixels", 1.0 / 255, -0.5, st);
  DH_CHECK(!ds);
  wf_dataset *ds2 = wf_dataset_map_scale(wf_dataset_retain(ds), "pixels",
                                         3.0, 0.25, st);
  DH_CHECK(!ds2);
  wf_tensor *f[3], *g[3];
  first(ds, f);
  first(ds2, g);
  assert_int_equal(wf_tensor_count(f[2]), B * P);
  const float *px = wf_tensor_data(f[2]), *qx = wf_tensor_data(g[2]);
  for (int i = 0; i < B; i++)
    for (int k = 0; k < P; k++) {
      volatile float x = (float)((240 + i + k) % 256), y = x * a;
      float want = y + b;
      volatile float y2 = want * a2;
      float want2 = y2 + b2;
      assert_memory_equal(&px[i * P + k], &want, sizeof want);
      assert_memory_equal(&qx[i * P + k], &want2, sizeof want2);
    }
  dh_release(f, 3);
  dh_release(g, 3);
  wf_dataset_release(ds2);
  wf_dataset_release(ds);
}

static void test_cast_wraps_integers_and_saturates_floats(void **state) {
  (void)state;
  wf_tensor *f[3];
  dh_write_range("cast.tst", 300, 1);
  wf_dataset *ds =
      wf_dataset_map_cast(dh_files("cast.tst"), "index", WF_INT8, st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_int_equal(wf_tensor_dtype(f[0]), WF_INT8);
  assert_int_equal(*(int8_t *)wf_tensor_data(f[0]), 44); /* 300 - 256 */
  dh_release(f, 3);
  wf_dataset_release(ds);

  /* index 300 scaled by 1.01 and shifted: 301.0 -> uint8 255; by -1: 0. */
  ds = wf_dataset_map_scale(dh_files("cast.tst"), "index", 1.0, 1.0, st);
  ds = wf_dataset_map_cast(ds, "index", WF_UINT8, st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_int_equal(*(uint8_t *)wf_tensor_data(f[0]), 255);
  dh_release(f, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_map_scale(dh_files("cast.tst"), "index", -1.5, 0.0, st);
  ds = wf_dataset_map_cast(ds, "index", WF_INT32, st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_int_equal(*(int32_t *)wf_tensor_data(f[0]), -450);
  dh_release(f, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_map_scale(dh_files("cast.tst"), "index", 0.0, NAN, st);
  ds = wf_dataset_map_cast(ds, "index", WF_INT64, st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_int_equal(*(int64_t *)wf_tensor_data(f[0]), 0); /* NaN -> 0 */
  dh_release(f, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_map_scale(dh_files("cast.tst"), "index", 1e30, 0.0, st);
  ds = wf_dataset_map_cast(ds, "index", WF_INT64, st);
  DH_CHECK(!ds);
  first(ds, f);
  assert_true(*(int64_t *)wf_tensor_data(f[0]) == INT64_MAX);
  dh_release(f, 3);
  wf_dataset_release(ds);

  ds = wf_dataset_map_cast(dh_files("cast.tst"), "pixels", WF_BOOL, st);
  DH_CHECK(!ds);
  first(ds, f); /* pixels 44, 45, 46, 47 */
  for (int k = 0; k < 4; k++)
    assert_int_equal(((uint8_t *)wf_tensor_data(f[2]))[k], 1);
  dh_release(f, 3);
  wf_dataset_release(ds);
}

static void test_cast_through_half_precision(void **state) {
  (void)state;
  wf_tensor *f[3];
  dh_write_range("half.tst", 3, 1);
  /* index 3 * 0.1 + 0 = 0.3: float16 keeps 0.300048828125, bfloat16
   * 0.30078125; 65504 is float16's largest, 1e6 becomes infinity. */
  static const struct {
    double a;
    wf_dtype via;
    float want;
  } cases[] = {{0.1, WF_FLOAT16, 0.300048828125f},
               {0.1, WF_BFLOAT16, 0.30078125f},
               {65504.0 / 3, WF_FLOAT16, 65504.0f},
               {1e6, WF_FLOAT16, INFINITY},
               {-2e-8, WF_FLOAT16, -5.9604645e-08f}, /* subnormal */
               {3.0, WF_BFLOAT16, 9.0f}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    wf_dataset *ds =
        wf_dataset_map_scale(dh_files("half.tst"), "index", cases[c].a, 0, st);
    ds = wf_dataset_map_cast(ds, "index", cases[c].via, st);
    ds = wf_dataset_map_cast(ds, "index", WF_FLOAT32, st);
    DH_CHECK(!ds);
    first(ds, f);
    float got = *(float *)wf_tensor_data(f[0]);
    if (got != cases[c].want)
      fail_msg("case %zu: %.10g, expected %.10g", c, (double)got,
               (double)cases[c].want);
    dh_release(f, 3);
    wf_dataset_release(ds);
  }
}

static void test_one_hot_marks_the_value(void **state) {
  (void)state;
  wf_tensor *f[3];
  dh_write_range("onehot.tst", 7, 3); /* labels 7, 8, 9 */
  wf_dataset *ds =
      wf_dataset_map_one_hot(dh_files("onehot.tst"), "label", 10, st);
  wf_data_field fd;
  DH_CHECK(!ds);
  wf_dataset_field(ds, 1, &fd);
  assert_int_equal(fd.dtype, WF_FLOAT32);
  assert_int_equal(fd.shape.rank, 1);
  assert_int_equal(fd.shape.dims[0], 10);
  first(ds, f);
  const float *row = wf_tensor_data(f[1]);
  for (int k = 0; k < 10; k++)
    assert_float_equal(row[k], k == 7 ? 1.0f : 0.0f, 0);
  dh_release(f, 3);
  wf_dataset_release(ds);

  /* On batches: (3,) labels -> (3, 9); label 9 is out of range. */
  ds = wf_dataset_batch(dh_files("onehot.tst"), 3, 1, st);
  ds = wf_dataset_map_one_hot(ds, "label", 9, st);
  DH_CHECK(!ds);
  wf_dataset_field(ds, 1, &fd);
  assert_int_equal(fd.shape.rank, 2);
  assert_int_equal(fd.shape.dims[0], 3);
  assert_int_equal(fd.shape.dims[1], 9);
  first(ds, f);
  assert_int_equal(wf_tensor_dim(f[1], 0), 3);
  assert_int_equal(wf_tensor_dim(f[1], 1), 9);
  const float *m = wf_tensor_data(f[1]);
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 9; k++)
      assert_float_equal(m[r * 9 + k], 7 + r == k ? 1.0f : 0.0f, 0);
  dh_release(f, 3);
  wf_dataset_release(ds);
}

static void test_maps_refuse_unsuitable_fields(void **state) {
  (void)state;
  dh_write_range("mapbad.tst", 0, 1);
  wf_dataset *ds =
      wf_dataset_map_scale(dh_files("mapbad.tst"), "pixels", 2, 0, st);
  assert_null(wf_dataset_map_one_hot(ds, "pixels", 4, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "float32"));
  assert_null(wf_dataset_map_one_hot(dh_files("mapbad.tst"), "label", 0, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_dataset_map_cast(dh_files("mapbad.tst"), "label",
                                  WF_RESOURCE, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(wf_dataset_map_cast(dh_files("mapbad.tst"), "labels",
                                  WF_INT32, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "'labels'"));
}

/* ---- graph functions ------------------------------------------------------------ */

static wf_node *node(wf_graph *g, const char *op, const wf_output *in, int n,
                     void (*attrs)(wf_node_desc *, void *), void *arg) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, in[i]);
  if (attrs)
    attrs(d, arg);
  wf_node *x = wf_node_desc_finish(d, st);
  DH_CHECK(!x);
  return x;
}

static void ph_attrs(wf_node_desc *d, void *arg) {
  const wf_shape *s = arg;
  wf_node_desc_set_attr_dtype(d, "dtype", WF_UINT8);
  wf_node_desc_set_attr_shape(d, "shape", s->dims, s->rank);
}

static void cast_attrs(wf_node_desc *d, void *arg) {
  (void)arg;
  wf_node_desc_set_attr_dtype(d, "DstT", WF_FLOAT32);
}

static void const_attrs(wf_node_desc *d, void *arg) {
  wf_node_desc_set_attr_tensor(d, "value", arg);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
}

static void sum_attrs(wf_node_desc *d, void *arg) {
  int64_t axis = *(int64_t *)arg;
  wf_node_desc_set_attr_int_list(d, "axes", &axis, axis < 0 ? 0 : 1);
}

/* pixels (uint8 of shape s) -> pixels * 2 (float32) and their sum along
 * axis (-1: all) as "total". */
static wf_graph *doubling_graph(const wf_shape *s, int64_t axis,
                                wf_output *in, wf_output *out) {
  wf_graph *g = wf_graph_new(rt);
  assert_non_null(g);
  wf_tensor *two = wf_tensor_new(WF_FLOAT32, NULL, 0, st);
  DH_CHECK(!two);
  *(float *)wf_tensor_data(two) = 2.0f;
  wf_output ph = {node(g, "Placeholder", NULL, 0, ph_attrs, (void *)s), 0};
  wf_output c = {node(g, "Cast", &ph, 1, cast_attrs, NULL), 0};
  wf_output k = {node(g, "Const", NULL, 0, const_attrs, two), 0};
  wf_tensor_release(two);
  wf_output mul_in[2] = {c, k};
  wf_output y = {node(g, "Mul", mul_in, 2, NULL, NULL), 0};
  wf_output sum = {node(g, "Sum", &y, 1, sum_attrs, &axis), 0};
  *in = ph;
  out[0] = y;
  out[1] = sum;
  return g;
}

static void test_graph_map_runs_per_element(void **state) {
  (void)state;
  wf_tensor *f[4];
  wf_shape s = {.rank = 1, .dims = {4}};
  wf_output in, out[2];
  wf_graph *g = doubling_graph(&s, -1, &in, out);
  static const char *const in_fields[] = {"pixels"};
  static const char *const out_fields[] = {"pixels", "total"};
  dh_write_range("graph.tst", 10, 3);
  wf_dataset *ds = wf_dataset_map_graph(dh_files("graph.tst"), g, in_fields,
                                        &in, 1, out_fields, out, 2, st);
  wf_data_field fd;
  DH_CHECK(!ds);
  assert_int_equal(wf_dataset_num_fields(ds), 4);
  wf_dataset_field(ds, 2, &fd);
  assert_string_equal(fd.name, "pixels");
  assert_int_equal(fd.dtype, WF_FLOAT32);
  wf_dataset_field(ds, 3, &fd);
  assert_string_equal(fd.name, "total");
  assert_int_equal(fd.shape.rank, 0);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  for (int e = 0; e < 3; e++) {
    DH_CHECK(wf_iterator_next(it, f, st));
    int64_t idx = dh_index(f, 0);
    assert_int_equal(idx, 10 + e);
    const float *px = wf_tensor_data(f[2]);
    float total = 0;
    for (int k = 0; k < 4; k++) {
      assert_float_equal(px[k], 2.0f * (float)(idx + k), 0);
      total += 2.0f * (float)(idx + k);
    }
    assert_float_equal(*(float *)wf_tensor_data(f[3]), total, 0);
    dh_release(f, 4);
  }
  assert_int_equal(wf_iterator_next(it, f, st), WF_OUT_OF_RANGE);
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_graph_free(g);
}

static void test_graph_map_runs_per_batch(void **state) {
  (void)state;
  wf_tensor *f[4];
  wf_shape s = {.rank = 2, .dims = {WF_UNKNOWN_DIM, 4}};
  wf_output in, out[2];
  wf_graph *g = doubling_graph(&s, 1, &in, out);
  static const char *const in_fields[] = {"pixels"};
  static const char *const out_fields[] = {"doubled", "total"};
  dh_write_range("graphb.tst", 0, 5);
  wf_dataset *ds = wf_dataset_batch(dh_files("graphb.tst"), 3, 0, st);
  ds = wf_dataset_map_graph(ds, g, in_fields, &in, 1, out_fields, out, 2, st);
  DH_CHECK(!ds);
  assert_int_equal(wf_dataset_num_fields(ds), 5);
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  DH_CHECK(!it);
  int64_t next = 0;
  wf_tensor *e[5];
  (void)f;
  for (int b = 0; b < 2; b++) {
    DH_CHECK(wf_iterator_next(it, e, st));
    int64_t n = wf_tensor_dim(e[0], 0);
    assert_int_equal(n, b == 0 ? 3 : 2);
    assert_int_equal(wf_tensor_dtype(e[2]), WF_UINT8); /* kept */
    const float *d = wf_tensor_data(e[3]), *t = wf_tensor_data(e[4]);
    assert_int_equal(wf_tensor_dim(e[4], 0), n);
    for (int64_t r = 0; r < n; r++, next++) {
      float total = 0;
      for (int k = 0; k < 4; k++) {
        assert_float_equal(d[r * 4 + k], 2.0f * (float)(next + k), 0);
        total += 2.0f * (float)(next + k);
      }
      assert_float_equal(t[r], total, 0);
    }
    dh_release(e, 5);
  }
  wf_iterator_free(it);
  wf_dataset_release(ds);
  wf_graph_free(g);
}

static void test_graph_map_checks_its_inputs(void **state) {
  (void)state;
  wf_shape s = {.rank = 1, .dims = {4}};
  wf_output in, out[2];
  wf_graph *g = doubling_graph(&s, -1, &in, out);
  static const char *const wrong[] = {"label"};
  static const char *const names[] = {"x", "x"};
  dh_write_range("graphbad.tst", 0, 1);
  assert_null(wf_dataset_map_graph(dh_files("graphbad.tst"), g, wrong, &in,
                                   1, names, out, 1, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'label' is int32"));
  static const char *const px[] = {"pixels"};
  assert_null(wf_dataset_map_graph(dh_files("graphbad.tst"), g, px, &in, 1,
                                   names, out, 2, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "two outputs"));
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scale_gives_float_a_x_plus_b),
      cmocka_unit_test(test_scale_covers_blocks_and_remainder),
      cmocka_unit_test(test_cast_wraps_integers_and_saturates_floats),
      cmocka_unit_test(test_cast_through_half_precision),
      cmocka_unit_test(test_one_hot_marks_the_value),
      cmocka_unit_test(test_maps_refuse_unsuitable_fields),
      cmocka_unit_test(test_graph_map_runs_per_element),
      cmocka_unit_test(test_graph_map_runs_per_batch),
      cmocka_unit_test(test_graph_map_checks_its_inputs),
  };
  return cmocka_run_group_tests(tests, dh_setup, dh_teardown);
}
