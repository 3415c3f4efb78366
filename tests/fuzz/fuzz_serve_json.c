/* tests/fuzz/fuzz_serve_json.c — fuzz target for the model server's request
 * decoder (lib/serve/codec.c). The first byte picks the API (TensorFlow
 * Serving predict or KServe v2 infer) and one of four signatures covering
 * every dtype the decoder writes; the rest is the request body. A body the
 * decoder accepts is written back in the columnar format, which must decode
 * again to the same tensors (NaN to NaN).
 *
 * Beyond crashes and sanitizer reports, a finding is an error without a
 * message, a lost or changed value, or a tensor whose shape does not fit
 * the signature. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "../../lib/serve/codec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#define SHAPE(r, ...)                                                          \
  {                                                                            \
    r, 0, { __VA_ARGS__ }                                                      \
  }

static const srv_arg sig0[] = {{"x", WF_FLOAT32, SHAPE(2, -1, 4)}};
static const srv_arg sig1[] = {{"a", WF_FLOAT64, SHAPE(2, -1, 2)},
                               {"b", WF_FLOAT64, SHAPE(2, -1, 2)}};
static const srv_arg sig2[] = {{"u", WF_UINT8, SHAPE(2, -1, -1)}};
static const srv_arg sig3[] = {{"s", WF_INT32, SHAPE(1, 3)},
                               {"f", WF_BOOL, SHAPE(1, -1)},
                               {"i", WF_INT64, SHAPE(3, -1, -1, -1)},
                               {"k", WF_INT8, SHAPE(-1)}};
static const srv_sig_desc sigs[] = {{1, sig0, 1, sig0},
                                    {2, sig1, 2, sig1},
                                    {1, sig2, 1, sig2},
                                    {4, sig3, 4, sig3}};

static int same(const wf_tensor *a, const wf_tensor *b) {
  if (wf_tensor_dtype(a) != wf_tensor_dtype(b) ||
      wf_tensor_rank(a) != wf_tensor_rank(b))
    return 0;
  for (int k = 0; k < wf_tensor_rank(a); k++)
    if (wf_tensor_dim(a, k) != wf_tensor_dim(b, k))
      return 0;
  for (int64_t i = 0; i < wf_tensor_count(a); i++) {
    double x = wf_tensor_element(a, i), y = wf_tensor_element(b, i);
    if (!(x == y || (isnan(x) && isnan(y))))
      return 0;
  }
  return 1;
}

static void fits(const srv_arg *a, const wf_tensor *t) {
  CHECK(wf_tensor_dtype(t) == a->dtype);
  if (a->shape.rank < 0)
    return;
  CHECK(wf_tensor_rank(t) == a->shape.rank);
  for (int k = 0; k < a->shape.rank; k++)
    CHECK(a->shape.dims[k] < 0 || a->shape.dims[k] == wf_tensor_dim(t, k));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const srv_sig_desc *sig = &sigs[data[0] % 4];
  int kserve = (data[0] >> 2) & 1;
  wf_status *st = wf_status_new();
  wf_tensor *v[4] = {0}, *w[4] = {0};
  srv_request r, r2;
  srv_buf b = {0};
  CHECK(st);
  memset(&r2, 0, sizeof r2);
  if (srv_request_parse(&r, (const char *)data + 1, size - 1, kserve, st) ||
      srv_request_decode(&r, sig, v, st)) {
    CHECK(wf_status_code(st) != WF_OK && wf_status_message(st)[0]);
    goto done;
  }
  for (int j = 0; j < sig->ninputs; j++)
    fits(&sig->inputs[j], v[j]);
  /* Written back as {"outputs": X}, read again as {"inputs": X}. */
  CHECK(srv_encode_tf(&b, SRV_TF_COLUMNAR, sig, v, st) == 0);
  CHECK(!b.failed && b.len > 11 && !memcmp(b.p, "{\"outputs\":", 11));
  memcpy(b.p, "{\"inputs\": ", 11);
  if (srv_request_parse(&r2, b.p, b.len, 0, st) ||
      srv_request_decode(&r2, sig, w, st)) {
    /* An empty dimension cannot be written in a way that keeps the size of
     * the dimensions inside it; everything else must read back. */
    int empty = 0;
    for (int j = 0; j < sig->ninputs; j++)
      empty |= wf_tensor_count(v[j]) == 0;
    if (!empty) {
      fprintf(stderr, "written back: %s\nerror: %s\n", b.p,
              wf_status_message(st));
      abort();
    }
    goto done;
  }
  for (int j = 0; j < sig->ninputs; j++)
    if (!same(v[j], w[j])) {
      fprintf(stderr, "input %s changed when written back: %s\n",
              sig->inputs[j].key, b.p);
      abort();
    }
  /* The other encoders run on the same tensors without complaint. */
  srv_buf_free(&b);
  int want[4] = {1, 1, 1, 1};
  srv_encode_kserve(&b, "m", "1", r.id, sig, want, v);
  CHECK(!b.failed);
  srv_buf_free(&b);
  if (srv_encode_tf(&b, SRV_TF_ROW, sig, v, st) != 0)
    CHECK(wf_status_message(st)[0]);
done:
  for (int j = 0; j < 4; j++) {
    wf_tensor_release(v[j]);
    wf_tensor_release(w[j]);
  }
  srv_buf_free(&b);
  srv_request_deinit(&r);
  srv_request_deinit(&r2);
  wf_status_free(st);
  return 0;
}
