/* lib/serve/codec.c — decoding predict/infer request bodies into tensors and
 * encoding outputs as JSON (codec.h). Input is read by json_read.c (which
 * takes NaN, Infinity and -Infinity as numbers); output is written
 * directly, so a large tensor never becomes a tree of JSON values. It does
 * no HTTP and runs no model. */
#include <config.h>

#include "codec.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffer --------------------------------------------------------- */

static int buf_reserve(srv_buf *b, size_t extra) {
  if (b->failed)
    return -1;
  if (b->len + extra + 1 <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->failed = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

void srv_buf_put(srv_buf *b, const char *s, size_t n) {
  if (buf_reserve(b, n))
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void srv_buf_puts(srv_buf *b, const char *s) { srv_buf_put(b, s, strlen(s)); }

void srv_buf_printf(srv_buf *b, const char *fmt, ...) {
  va_list ap;
  char small[128];
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof small) {
    srv_buf_put(b, small, (size_t)n);
    return;
  }
  if (buf_reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void srv_buf_json_string(srv_buf *b, const char *s) {
  srv_buf_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      srv_buf_put(b, e, 2);
    } else if (*p < 0x20) {
      srv_buf_printf(b, "\\u%04x", *p);
    } else {
      srv_buf_put(b, (const char *)p, 1);
    }
  }
  srv_buf_put(b, "\"", 1);
}

char *srv_buf_take(srv_buf *b, size_t *len) {
  if (buf_reserve(b, 0))
    return NULL;
  char *p = b->p;
  if (len)
    *len = b->len;
  b->p = NULL;
  b->len = b->cap = 0;
  return p;
}

void srv_buf_free(srv_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->failed = 0;
}

/* ---- dtype names -----------------------------------------------------------
 */

const char *srv_tf_dtype_name(wf_dtype t) {
  switch (t) {
  case WF_FLOAT32:
    return "DT_FLOAT";
  case WF_FLOAT64:
    return "DT_DOUBLE";
  case WF_FLOAT16:
    return "DT_HALF";
  case WF_BFLOAT16:
    return "DT_BFLOAT16";
  case WF_INT8:
    return "DT_INT8";
  case WF_UINT8:
    return "DT_UINT8";
  case WF_INT32:
    return "DT_INT32";
  case WF_INT64:
    return "DT_INT64";
  case WF_BOOL:
    return "DT_BOOL";
  case WF_STRING:
    return "DT_STRING";
  default:
    return "DT_INVALID";
  }
}

const char *srv_kserve_dtype_name(wf_dtype t) {
  switch (t) {
  case WF_FLOAT32:
    return "FP32";
  case WF_FLOAT64:
    return "FP64";
  case WF_FLOAT16:
    return "FP16";
  case WF_BFLOAT16:
    return "BF16";
  case WF_INT8:
    return "INT8";
  case WF_UINT8:
    return "UINT8";
  case WF_INT32:
    return "INT32";
  case WF_INT64:
    return "INT64";
  case WF_BOOL:
    return "BOOL";
  case WF_STRING:
    return "BYTES";
  default:
    return "INVALID";
  }
}

static int supported(wf_dtype t) {
  return t == WF_FLOAT32 || t == WF_FLOAT64 || t == WF_INT8 || t == WF_UINT8 ||
         t == WF_INT32 || t == WF_INT64 || t == WF_BOOL;
}

/* ---- JSON values -----------------------------------------------------------
 */

static int is_type(const srv_json *v, int t) { return v && v->type == t; }
static int is_object(const srv_json *v) { return is_type(v, SRV_JSON_OBJECT); }
static int is_array(const srv_json *v) { return is_type(v, SRV_JSON_ARRAY); }
static int is_string(const srv_json *v) { return is_type(v, SRV_JSON_STRING); }
static int is_number(const srv_json *v) { return is_type(v, SRV_JSON_NUMBER); }
static int is_integer(const srv_json *v) { return is_number(v) && v->is_int; }
static int is_true(const srv_json *v) { return is_type(v, SRV_JSON_TRUE); }
static int is_bool(const srv_json *v) {
  return is_true(v) || is_type(v, SRV_JSON_FALSE);
}
static size_t arr_len(const srv_json *v) { return is_array(v) ? v->n : 0; }
static const srv_json *arr_at(const srv_json *v, size_t i) {
  return is_array(v) && i < v->n ? &v->u.items[i] : NULL;
}
static size_t obj_len(const srv_json *v) { return is_object(v) ? v->n : 0; }
/* Member i's key and value of object v. */
static const char *obj_key(const srv_json *v, size_t i) {
  return v->u.items[2 * i].u.s;
}

/* ---- parsing ------------------------------------------------------------- */

int srv_request_parse(srv_request *r, const char *body, size_t len, int kserve,
                      wf_status *st) {
  char err[256];
  memset(r, 0, sizeof *r);
  r->body_len = len;
  const srv_json *root = srv_json_parse(body, len, &r->doc, err, sizeof err);
  if (!root)
    return wf_status_set(st, WF_INVALID_ARGUMENT, "malformed JSON at %s", err);
  if (!is_object(root))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "the request body must be a JSON object");
  if (kserve) {
    r->format = SRV_KSERVE;
    const srv_json *id = srv_json_get(root, "id");
    if (id && !is_string(id))
      return wf_status_set(st, WF_INVALID_ARGUMENT, "'id' must be a string");
    r->id = id ? id->u.s : NULL;
    r->inputs = srv_json_get(root, "inputs");
    if (!is_array(r->inputs))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "the request needs an 'inputs' list");
    r->outputs = srv_json_get(root, "outputs");
    if (r->outputs && !is_array(r->outputs))
      return wf_status_set(st, WF_INVALID_ARGUMENT, "'outputs' must be a list");
    return 0;
  }
  const srv_json *sig = srv_json_get(root, "signature_name");
  if (sig && !is_string(sig))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "'signature_name' must be a string");
  r->signature_name = sig ? sig->u.s : NULL;
  const srv_json *inst = srv_json_get(root, "instances");
  const srv_json *cols = srv_json_get(root, "inputs");
  if (inst && cols)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "give either 'instances' or 'inputs', not both");
  if (!inst && !cols)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "missing 'instances' or 'inputs' in the request");
  if (inst) {
    if (!is_array(inst))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "'instances' must be a list");
    r->format = SRV_TF_ROW;
    r->inputs = inst;
  } else {
    r->format = SRV_TF_COLUMNAR;
    r->inputs = cols;
  }
  return 0;
}

void srv_request_deinit(srv_request *r) {
  srv_json_doc_free(r->doc);
  memset(r, 0, sizeof *r);
}

/* ---- decoding values ----------------------------------------------------- */

/* Where a value sits in the body, for messages: "instances[3]" and the
 * indices below it. */
typedef struct where {
  const char *input;
  char base[96];
  int64_t idx[WF_MAX_RANK + 1];
  int depth;
} where;

static int fail_at(wf_status *st, const where *w, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(wf_status *st, const where *w, const char *fmt, ...) {
  char msg[256], at[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = (size_t)snprintf(at, sizeof at, "%s", w->base);
  for (int i = 0; i < w->depth && n < sizeof at; i++)
    n += (size_t)snprintf(at + n, sizeof at - n, "[%" PRId64 "]", w->idx[i]);
  return wf_status_set(st, WF_INVALID_ARGUMENT, "input '%s' at %s: %s",
                       w->input, at, msg);
}

static const char *json_kind(const srv_json *v) {
  switch (v ? v->type : SRV_JSON_NULL) {
  case SRV_JSON_OBJECT:
    return "an object";
  case SRV_JSON_ARRAY:
    return "a list";
  case SRV_JSON_STRING:
    return "a string";
  case SRV_JSON_NUMBER:
    return v->is_int ? "an integer" : "a number";
  case SRV_JSON_TRUE:
  case SRV_JSON_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

static int b64_value(int c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

/* Decodes base64 (standard or URL alphabet, padding optional) into out
 * (NULL: only count). Returns the byte count, or -1 when s is not base64. */
static int64_t b64_decode(const char *s, size_t n, unsigned char *out) {
  while (n > 0 && s[n - 1] == '=')
    n--;
  if (n % 4 == 1)
    return -1;
  int64_t len = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_value((unsigned char)s[i]);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (out)
        out[len] = (unsigned char)(acc >> bits);
      len++;
    }
  }
  return len;
}

/* The string of a {"b64": "..."} object, or NULL when v is not one. */
static const srv_json *b64_object(const srv_json *v) {
  if (!is_object(v) || obj_len(v) != 1)
    return NULL;
  const srv_json *s = srv_json_get(v, "b64");
  return is_string(s) ? s : NULL;
}

static int bytes_dtype(wf_dtype t) { return t == WF_UINT8 || t == WF_INT8; }

/* Infers the shape of nested lists v by following first elements; a b64
 * object is a vector of its bytes. */
static int infer_shape(const srv_json *v, wf_dtype dtype, int64_t *dims,
                       int *rank, const where *w, wf_status *st) {
  int r = 0;
  for (;;) {
    const srv_json *b = bytes_dtype(dtype) ? b64_object(v) : NULL;
    if (b) {
      if (r == WF_MAX_RANK)
        return fail_at(st, w, "more than %d dimensions", WF_MAX_RANK);
      int64_t n = b64_decode(b->u.s, (size_t)b->n, NULL);
      if (n < 0)
        return fail_at(st, w, "'b64' holds no valid base64");
      dims[r++] = n;
      break;
    }
    if (!is_array(v))
      break;
    if (r == WF_MAX_RANK)
      return fail_at(st, w, "more than %d dimensions", WF_MAX_RANK);
    dims[r++] = (int64_t)arr_len(v);
    if (arr_len(v) == 0)
      break;
    v = arr_at(v, 0);
  }
  *rank = r;
  return 0;
}

static int put_element(const srv_json *v, wf_dtype dtype, void *data, int64_t i,
                       const where *w, wf_status *st) {
  double d;
  if (dtype == WF_BOOL) {
    if (!is_bool(v))
      return fail_at(st, w, "expected true or false for a bool, got %s",
                     json_kind(v));
    if (data)
      ((uint8_t *)data)[i] = is_true(v);
    return 0;
  }
  if (dtype == WF_FLOAT32 || dtype == WF_FLOAT64) {
    if (is_number(v))
      d = v->d;
    else
      return fail_at(st, w, "expected a number for %s, got %s",
                     wf_dtype_name(dtype), json_kind(v));
    if (!data)
      return 0;
    if (dtype == WF_FLOAT32)
      ((float *)data)[i] = (float)d;
    else
      ((double *)data)[i] = d;
    return 0;
  }
  if (!is_integer(v))
    return fail_at(st, w, "expected an integer for %s, got %s",
                   wf_dtype_name(dtype), json_kind(v));
  int64_t x = v->u.i;
  switch (dtype) {
  case WF_INT8:
    if (x < INT8_MIN || x > INT8_MAX)
      goto range;
    if (data)
      ((int8_t *)data)[i] = (int8_t)x;
    return 0;
  case WF_UINT8:
    if (x < 0 || x > UINT8_MAX)
      goto range;
    if (data)
      ((uint8_t *)data)[i] = (uint8_t)x;
    return 0;
  case WF_INT32:
    if (x < INT32_MIN || x > INT32_MAX)
      goto range;
    if (data)
      ((int32_t *)data)[i] = (int32_t)x;
    return 0;
  case WF_INT64:
    if (data)
      ((int64_t *)data)[i] = (int64_t)x;
    return 0;
  default:
    return fail_at(st, w, "dtype %s is not supported", wf_dtype_name(dtype));
  }
range:
  return fail_at(st, w, "%" PRId64 " is out of range for %s", x,
                 wf_dtype_name(dtype));
}

/* Writes the nested lists v, which must have exactly the shape dims[0..rank)
 * (ragged lists are refused), into data from element *pos on. With data
 * NULL it only checks, so nothing is allocated for a body that is wrong. */
static int fill(const srv_json *v, const int64_t *dims, int rank,
                wf_dtype dtype, void *data, int64_t *pos, where *w,
                wf_status *st) {
  if (rank == 0)
    return put_element(v, dtype, data, (*pos)++, w, st);
  const srv_json *b = bytes_dtype(dtype) && rank == 1 ? b64_object(v) : NULL;
  if (b) {
    int64_t n = b64_decode(b->u.s, (size_t)b->n, NULL);
    if (n < 0)
      return fail_at(st, w, "'b64' holds no valid base64");
    if (n != dims[0])
      return fail_at(st, w, "'b64' holds %" PRId64 " bytes, expected %" PRId64,
                     n, dims[0]);
    if (data)
      b64_decode(b->u.s, (size_t)b->n, (unsigned char *)data + *pos);
    *pos += n;
    return 0;
  }
  if (!is_array(v))
    return fail_at(st, w, "expected a list of %" PRId64 ", got %s", dims[0],
                   json_kind(v));
  if ((int64_t)arr_len(v) != dims[0])
    return fail_at(st, w,
                   "expected %" PRId64 " values, got %zu (lists must not be "
                   "ragged)",
                   dims[0], arr_len(v));
  for (int64_t i = 0; i < dims[0]; i++) {
    w->idx[w->depth++] = i;
    int rc =
        fill(arr_at(v, (size_t)i), dims + 1, rank - 1, dtype, data, pos, w, st);
    w->depth--;
    if (rc)
      return rc;
  }
  return 0;
}

/* Checks dims against the signature's shape for input a. */
static int check_shape(const srv_arg *a, const int64_t *dims, int rank,
                       wf_status *st) {
  wf_shape got;
  char want[160], have[160];
  wf_shape_init(&got, dims, rank);
  if (a->shape.rank < 0)
    return 0;
  if (a->shape.rank == rank) {
    int ok = 1;
    for (int i = 0; i < rank; i++)
      if (a->shape.dims[i] >= 0 && a->shape.dims[i] != dims[i])
        ok = 0;
    if (ok)
      return 0;
  }
  return wf_status_set(st, WF_INVALID_ARGUMENT,
                       "input '%s' has shape %s, the signature wants %s",
                       a->key, wf_shape_str(&got, have, sizeof have),
                       wf_shape_str(&a->shape, want, sizeof want));
}

/* Whether a tensor of these dims may be allocated before its values are
 * checked: when it is no larger than the body could hold (every value
 * takes two bytes of text or more, a b64 byte four thirds), a wrong body
 * costs no more memory than its own size. Otherwise a checking pass comes
 * first. */
static int fits_body(const int64_t *dims, int rank, wf_dtype dtype,
                     size_t body_len) {
  int64_t bytes = (int64_t)wf_dtype_size(dtype);
  for (int i = 0; i < rank; i++) {
    if (dims[i] > 0 && bytes > ((int64_t)1 << 40) / dims[i])
      return 0;
    bytes *= dims[i];
  }
  return bytes <= 8 * (int64_t)body_len + 65536;
}

static wf_tensor *new_tensor(const srv_arg *a, const int64_t *dims, int rank,
                             wf_status *st) {
  if (!supported(a->dtype)) {
    wf_status_set(st, WF_UNIMPLEMENTED,
                  "input '%s' has dtype %s, which the server cannot decode "
                  "from JSON",
                  a->key, wf_dtype_name(a->dtype));
    return NULL;
  }
  if (check_shape(a, dims, rank, st))
    return NULL;
  /* Refuse absurd sizes before allocating (the JSON had to hold them). */
  int64_t count = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] > 0 && count > INT64_MAX / 16 / dims[i]) {
      wf_status_set(st, WF_INVALID_ARGUMENT, "input '%s' is too large", a->key);
      return NULL;
    }
    count *= dims[i];
  }
  wf_tensor *t = wf_tensor_new(a->dtype, dims, rank, st);
  if (t)
    wf_status_reset(st);
  return t;
}

static int find_input(const srv_sig_desc *sig, const char *key) {
  for (int j = 0; j < sig->ninputs; j++)
    if (!strcmp(sig->inputs[j].key, key))
      return j;
  return -1;
}

/* Row format: instances[i] is the i-th row of every input. */
static int decode_rows(const srv_request *r, const srv_sig_desc *sig,
                       wf_tensor **values, wf_status *st) {
  size_t n = arr_len(r->inputs);
  if (n == 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT, "'instances' is empty");
  const srv_json *first = arr_at(r->inputs, 0);
  /* One input may be given bare; otherwise each instance names its inputs. */
  int named = is_object(first) && !b64_object(first);
  if (!named && sig->ninputs != 1)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "the signature has %d inputs: each instance must be "
                         "an object naming them",
                         sig->ninputs);
  for (size_t i = 0; i < n; i++) {
    const srv_json *inst = arr_at(r->inputs, i);
    int is_named = is_object(inst) && !b64_object(inst);
    if (is_named != named)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "instances[%zu] is %s, instances[0] is not", i,
                           named ? "not an object of named inputs"
                                 : "an object of named inputs");
    if (!named)
      continue;
    for (size_t k = 0; k < obj_len(inst); k++)
      if (find_input(sig, obj_key(inst, k)) < 0)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "instances[%zu] names '%s', which is not an input "
                             "of the signature",
                             i, obj_key(inst, k));
    for (int j = 0; j < sig->ninputs; j++)
      if (!srv_json_get(inst, sig->inputs[j].key))
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "instances[%zu] lacks input '%s'", i,
                             sig->inputs[j].key);
  }
  for (int j = 0; j < sig->ninputs; j++) {
    const srv_arg *a = &sig->inputs[j];
    where w = {.input = a->key};
    int64_t dims[WF_MAX_RANK + 1];
    int rank;
    snprintf(w.base, sizeof w.base, "instances[0]");
    const srv_json *v0 = named ? srv_json_get(first, a->key) : first;
    if (infer_shape(v0, a->dtype, dims + 1, &rank, &w, st))
      return -1;
    if (rank + 1 > WF_MAX_RANK)
      return fail_at(st, &w, "more than %d dimensions", WF_MAX_RANK);
    dims[0] = (int64_t)n;
    if (check_shape(a, dims, rank + 1, st))
      return -1;
    int start = fits_body(dims, rank + 1, a->dtype, r->body_len);
    for (int pass = start; pass < 2; pass++) {
      if (pass == 1 && !(values[j] = new_tensor(a, dims, rank + 1, st)))
        return -1;
      int64_t pos = 0;
      for (size_t i = 0; i < n; i++) {
        const srv_json *inst = arr_at(r->inputs, i);
        snprintf(w.base, sizeof w.base, "instances[%zu]", i);
        if (fill(named ? srv_json_get(inst, a->key) : inst, dims + 1, rank,
                 a->dtype, pass ? wf_tensor_data(values[j]) : NULL, &pos, &w,
                 st))
          return -1;
      }
    }
  }
  return 0;
}

static int decode_one_columnar(const srv_arg *a, const srv_json *v,
                               const char *base, size_t body_len,
                               wf_tensor **out, wf_status *st) {
  where w = {.input = a->key};
  int64_t dims[WF_MAX_RANK];
  int rank;
  snprintf(w.base, sizeof w.base, "%s", base);
  if (infer_shape(v, a->dtype, dims, &rank, &w, st))
    return -1;
  int64_t pos = 0;
  if (check_shape(a, dims, rank, st))
    return -1;
  if (!fits_body(dims, rank, a->dtype, body_len) &&
      fill(v, dims, rank, a->dtype, NULL, &pos, &w, st))
    return -1;
  *out = new_tensor(a, dims, rank, st);
  if (!*out)
    return -1;
  pos = 0;
  return fill(v, dims, rank, a->dtype, wf_tensor_data(*out), &pos, &w, st);
}

/* Columnar format: inputs is {key: value} or, for one input, the value. */
static int decode_columns(const srv_request *r, const srv_sig_desc *sig,
                          wf_tensor **values, wf_status *st) {
  const srv_json *in = r->inputs;
  if (!is_object(in) || b64_object(in)) {
    if (sig->ninputs != 1)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "the signature has %d inputs: 'inputs' must be an "
                           "object naming them",
                           sig->ninputs);
    return decode_one_columnar(&sig->inputs[0], in, "inputs", r->body_len,
                               &values[0], st);
  }
  for (size_t k = 0; k < obj_len(in); k++)
    if (find_input(sig, obj_key(in, k)) < 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "'inputs' names '%s', which is not an input of the "
                           "signature",
                           obj_key(in, k));
  for (int j = 0; j < sig->ninputs; j++) {
    const srv_json *v = srv_json_get(in, sig->inputs[j].key);
    char base[96];
    if (!v)
      return wf_status_set(st, WF_INVALID_ARGUMENT, "'inputs' lacks input '%s'",
                           sig->inputs[j].key);
    snprintf(base, sizeof base, "inputs.%s", sig->inputs[j].key);
    if (decode_one_columnar(&sig->inputs[j], v, base, r->body_len, &values[j],
                            st))
      return -1;
  }
  return 0;
}

/* Flattens nested lists v into data (KServe allows both forms). */
static int fill_flat(const srv_json *v, wf_dtype dtype, void *data,
                     int64_t *pos, int64_t count, where *w, wf_status *st) {
  if (is_array(v)) {
    if (w->depth > WF_MAX_RANK)
      return fail_at(st, w, "lists nested too deeply");
    for (size_t i = 0; i < arr_len(v); i++) {
      w->idx[w->depth++] = (int64_t)i;
      int rc = fill_flat(arr_at(v, i), dtype, data, pos, count, w, st);
      w->depth--;
      if (rc)
        return rc;
    }
    return 0;
  }
  if (*pos >= count)
    return fail_at(st, w, "more values than the shape's %" PRId64, count);
  return put_element(v, dtype, data, (*pos)++, w, st);
}

static wf_dtype kserve_dtype(const char *name) {
  static const wf_dtype all[] = {WF_FLOAT32,  WF_FLOAT64, WF_FLOAT16,
                                 WF_BFLOAT16, WF_INT8,    WF_UINT8,
                                 WF_INT32,    WF_INT64,   WF_BOOL};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (!strcmp(srv_kserve_dtype_name(all[i]), name))
      return all[i];
  return WF_DTYPE_INVALID;
}

static int decode_kserve(const srv_request *r, const srv_sig_desc *sig,
                         wf_tensor **values, wf_status *st) {
  for (size_t i = 0; i < arr_len(r->inputs); i++) {
    const srv_json *in = arr_at(r->inputs, i);
    const srv_json *name = srv_json_get(in, "name");
    const srv_json *shape = srv_json_get(in, "shape");
    const srv_json *dt = srv_json_get(in, "datatype");
    const srv_json *data = srv_json_get(in, "data");
    if (!is_object(in))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "inputs[%zu] must be an object", i);
    if (!is_string(name))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "inputs[%zu] needs a 'name' string", i);
    const char *key = name->u.s;
    int j = find_input(sig, key);
    if (j < 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "inputs[%zu] names '%s', which is not an input of "
                           "the model",
                           i, key);
    const srv_arg *a = &sig->inputs[j];
    if (values[j])
      return wf_status_set(st, WF_INVALID_ARGUMENT, "input '%s' is given twice",
                           key);
    if (!is_string(dt))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input '%s' needs a 'datatype' string", key);
    wf_dtype t = kserve_dtype(dt->u.s);
    if (t != a->dtype)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input '%s' has datatype '%s', the model wants %s",
                           key, dt->u.s, srv_kserve_dtype_name(a->dtype));
    if (!is_array(shape) || arr_len(shape) > WF_MAX_RANK)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input '%s' needs a 'shape' list of at most %d "
                           "sizes",
                           key, WF_MAX_RANK);
    int64_t dims[WF_MAX_RANK];
    int rank = (int)arr_len(shape);
    for (int k = 0; k < rank; k++) {
      const srv_json *d = arr_at(shape, (size_t)k);
      if (!is_integer(d) || d->u.i < 0)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "input '%s': shape[%d] is not a size", key, k);
      dims[k] = d->u.i;
    }
    if (!data)
      return wf_status_set(st, WF_INVALID_ARGUMENT, "input '%s' has no 'data'",
                           key);
    /* The values are checked and counted before anything is allocated. */
    int64_t count = 1;
    for (int k = 0; k < rank; k++) {
      if (dims[k] > 0 && count > INT64_MAX / dims[k])
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "input '%s': the shape is too large", key);
      count *= dims[k];
    }
    where w = {.input = key};
    snprintf(w.base, sizeof w.base, "inputs[%zu].data", i);
    int64_t pos = 0;
    if (fill_flat(data, t, NULL, &pos, count, &w, st))
      return -1;
    if (pos != count)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input '%s' has %" PRId64 " values, its shape "
                           "holds %" PRId64,
                           key, pos, count);
    values[j] = new_tensor(a, dims, rank, st);
    if (!values[j])
      return -1;
    pos = 0;
    if (fill_flat(data, t, wf_tensor_data(values[j]), &pos, count, &w, st))
      return -1;
  }
  for (int j = 0; j < sig->ninputs; j++)
    if (!values[j])
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "the request lacks input '%s'", sig->inputs[j].key);
  return 0;
}

int srv_request_decode(const srv_request *r, const srv_sig_desc *sig,
                       wf_tensor **values, wf_status *st) {
  int rc;
  for (int j = 0; j < sig->ninputs; j++)
    values[j] = NULL;
  if (r->format == SRV_TF_ROW)
    rc = decode_rows(r, sig, values, st);
  else if (r->format == SRV_TF_COLUMNAR)
    rc = decode_columns(r, sig, values, st);
  else
    rc = decode_kserve(r, sig, values, st);
  if (rc) {
    for (int j = 0; j < sig->ninputs; j++) {
      wf_tensor_release(values[j]);
      values[j] = NULL;
    }
    if (wf_status_code(st) == WF_OK)
      wf_status_set(st, WF_INTERNAL, "decoding the request failed");
    return -1;
  }
  return 0;
}

int srv_request_wanted(const srv_request *r, const srv_sig_desc *sig, int *want,
                       wf_status *st) {
  size_t n = r->outputs ? arr_len(r->outputs) : 0;
  for (int j = 0; j < sig->noutputs; j++)
    want[j] = n == 0;
  for (size_t i = 0; i < n; i++) {
    const srv_json *name = srv_json_get(arr_at(r->outputs, i), "name");
    int found = 0;
    if (!is_string(name))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "outputs[%zu] needs a 'name' string", i);
    for (int j = 0; j < sig->noutputs; j++)
      if (!strcmp(sig->outputs[j].key, name->u.s))
        want[j] = found = 1;
    if (!found)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "outputs[%zu] names '%s', which is not an output of "
                           "the model",
                           i, name->u.s);
  }
  return 0;
}

/* ---- encoding ------------------------------------------------------------ */

static void put_double(srv_buf *b, double d, int float32) {
  char s[40];
  if (isnan(d)) {
    srv_buf_puts(b, "NaN");
    return;
  }
  if (isinf(d)) {
    srv_buf_puts(b, d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  /* The shortest text that reads back as the same value. */
  for (int prec = float32 ? 6 : 15; prec <= (float32 ? 9 : 17); prec++) {
    snprintf(s, sizeof s, "%.*g", prec, d);
    if (float32 ? strtof(s, NULL) == (float)d : strtod(s, NULL) == d)
      break;
  }
  srv_buf_puts(b, s);
}

static void put_value(srv_buf *b, wf_dtype dtype, const void *data, int64_t i) {
  switch (dtype) {
  case WF_FLOAT32:
    put_double(b, ((const float *)data)[i], 1);
    break;
  case WF_FLOAT64:
    put_double(b, ((const double *)data)[i], 0);
    break;
  case WF_INT8:
    srv_buf_printf(b, "%d", ((const int8_t *)data)[i]);
    break;
  case WF_UINT8:
    srv_buf_printf(b, "%u", ((const uint8_t *)data)[i]);
    break;
  case WF_INT32:
    srv_buf_printf(b, "%" PRId32, ((const int32_t *)data)[i]);
    break;
  case WF_INT64:
    srv_buf_printf(b, "%" PRId64, ((const int64_t *)data)[i]);
    break;
  case WF_BOOL:
    srv_buf_puts(b, ((const uint8_t *)data)[i] ? "true" : "false");
    break;
  default: {
    /* float16 and bfloat16: through the tensor's own conversion. */
    srv_buf_puts(b, "null");
    break;
  }
  }
}

/* 1 when the n bytes at s are UTF-8 (what a JSON string may hold). */
static int is_utf8(const unsigned char *s, size_t n) {
  for (size_t k = 0; k < n;) {
    unsigned c = s[k];
    size_t len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2
                 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
    if (!len || k + len > n)
      return 0;
    uint32_t v = len == 1 ? c : c & (0x7Fu >> len);
    for (size_t j = 1; j < len; j++) {
      if ((s[k + j] & 0xC0) != 0x80)
        return 0;
      v = v << 6 | (s[k + j] & 0x3Fu);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v < 0xE000))) ||
        (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
      return 0;
    k += len;
  }
  return 1;
}

/* Element i of a string tensor: a JSON string when it is UTF-8 (NUL and
 * control bytes escaped), else TensorFlow Serving's {"b64": "..."}. */
static void put_string(srv_buf *b, const wf_tensor *t, int64_t i) {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n;
  const unsigned char *s =
      (const unsigned char *)wf_tensor_string(t, i, &n);
  if (is_utf8(s, n)) {
    srv_buf_put(b, "\"", 1);
    for (size_t k = 0; k < n; k++) {
      if (s[k] == '"' || s[k] == '\\') {
        char e[2] = {'\\', (char)s[k]};
        srv_buf_put(b, e, 2);
      } else if (s[k] < 0x20) {
        srv_buf_printf(b, "\\u%04x", s[k]);
      } else {
        srv_buf_put(b, (const char *)s + k, 1);
      }
    }
    srv_buf_put(b, "\"", 1);
    return;
  }
  srv_buf_puts(b, "{\"b64\":\"");
  for (size_t k = 0; k < n; k += 3) {
    uint32_t v = (uint32_t)s[k] << 16 |
                 (k + 1 < n ? (uint32_t)s[k + 1] << 8 : 0) |
                 (k + 2 < n ? s[k + 2] : 0);
    char q[4] = {digits[v >> 18], digits[v >> 12 & 63],
                 k + 1 < n ? digits[v >> 6 & 63] : '=',
                 k + 2 < n ? digits[v & 63] : '='};
    srv_buf_put(b, q, 4);
  }
  srv_buf_puts(b, "\"}");
}

/* Nested lists of t's elements from *pos on, shape dims[0..rank). */
static void put_nested(srv_buf *b, const wf_tensor *t, const int64_t *dims,
                       int rank, int64_t *pos) {
  wf_dtype dt = wf_tensor_dtype(t);
  if (rank == 0) {
    if (dt == WF_STRING)
      put_string(b, t, *pos);
    else if (dt == WF_FLOAT16 || dt == WF_BFLOAT16)
      put_double(b, wf_tensor_element(t, *pos), 1);
    else
      put_value(b, dt, wf_tensor_data(t), *pos);
    (*pos)++;
    return;
  }
  srv_buf_put(b, "[", 1);
  for (int64_t i = 0; i < dims[0]; i++) {
    if (i)
      srv_buf_put(b, ",", 1);
    put_nested(b, t, dims + 1, rank - 1, pos);
  }
  srv_buf_put(b, "]", 1);
}

static void tensor_dims(const wf_tensor *t, int64_t *dims) {
  for (int i = 0; i < wf_tensor_rank(t); i++)
    dims[i] = wf_tensor_dim(t, i);
}

int srv_encode_tf(srv_buf *b, srv_format format, const srv_sig_desc *sig,
                  wf_tensor *const *outputs, wf_status *st) {
  int64_t dims[WF_MAX_RANK];
  if (format == SRV_TF_COLUMNAR) {
    srv_buf_puts(b, "{\"outputs\":");
    if (sig->noutputs == 1) {
      int64_t pos = 0;
      tensor_dims(outputs[0], dims);
      put_nested(b, outputs[0], dims, wf_tensor_rank(outputs[0]), &pos);
    } else {
      srv_buf_put(b, "{", 1);
      for (int j = 0; j < sig->noutputs; j++) {
        int64_t pos = 0;
        if (j)
          srv_buf_put(b, ",", 1);
        srv_buf_json_string(b, sig->outputs[j].key);
        srv_buf_put(b, ":", 1);
        tensor_dims(outputs[j], dims);
        put_nested(b, outputs[j], dims, wf_tensor_rank(outputs[j]), &pos);
      }
      srv_buf_put(b, "}", 1);
    }
    srv_buf_puts(b, "}");
    return 0;
  }
  int64_t n = -1;
  for (int j = 0; j < sig->noutputs; j++) {
    int64_t d0 =
        wf_tensor_rank(outputs[j]) > 0 ? wf_tensor_dim(outputs[j], 0) : -1;
    if (d0 < 0 || (n >= 0 && d0 != n))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "output '%s' does not share the batch size of the "
                           "others, so it cannot be written as rows: ask "
                           "with 'inputs' for the columnar format",
                           sig->outputs[j].key);
    n = d0;
  }
  int64_t pos[64] = {0};
  int64_t *p =
      sig->noutputs <= 64 ? pos : calloc((size_t)sig->noutputs, sizeof *p);
  if (!p)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  srv_buf_puts(b, "{\"predictions\":[");
  for (int64_t i = 0; i < n; i++) {
    if (i)
      srv_buf_put(b, ",", 1);
    if (sig->noutputs > 1)
      srv_buf_put(b, "{", 1);
    for (int j = 0; j < sig->noutputs; j++) {
      if (sig->noutputs > 1) {
        if (j)
          srv_buf_put(b, ",", 1);
        srv_buf_json_string(b, sig->outputs[j].key);
        srv_buf_put(b, ":", 1);
      }
      tensor_dims(outputs[j], dims);
      put_nested(b, outputs[j], dims + 1, wf_tensor_rank(outputs[j]) - 1,
                 &p[j]);
    }
    if (sig->noutputs > 1)
      srv_buf_put(b, "}", 1);
  }
  srv_buf_puts(b, "]}");
  if (p != pos)
    free(p);
  return 0;
}

void srv_encode_kserve(srv_buf *b, const char *model, const char *version,
                       const char *id, const srv_sig_desc *sig, const int *want,
                       wf_tensor *const *outputs) {
  srv_buf_puts(b, "{\"model_name\":");
  srv_buf_json_string(b, model);
  srv_buf_puts(b, ",\"model_version\":");
  srv_buf_json_string(b, version);
  if (id) {
    srv_buf_puts(b, ",\"id\":");
    srv_buf_json_string(b, id);
  }
  srv_buf_puts(b, ",\"outputs\":[");
  int first = 1;
  for (int j = 0; j < sig->noutputs; j++) {
    if (!want[j])
      continue;
    const wf_tensor *t = outputs[j];
    if (!first)
      srv_buf_put(b, ",", 1);
    first = 0;
    srv_buf_puts(b, "{\"name\":");
    srv_buf_json_string(b, sig->outputs[j].key);
    srv_buf_printf(b, ",\"datatype\":\"%s\",\"shape\":[",
                   srv_kserve_dtype_name(wf_tensor_dtype(t)));
    for (int k = 0; k < wf_tensor_rank(t); k++)
      srv_buf_printf(b, "%s%" PRId64, k ? "," : "", wf_tensor_dim(t, k));
    srv_buf_puts(b, "],\"data\":");
    int64_t pos = 0, count = wf_tensor_count(t);
    put_nested(b, t, &count, 1, &pos);
    srv_buf_puts(b, "}");
  }
  srv_buf_puts(b, "]}");
}
