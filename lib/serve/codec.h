/* lib/serve/codec.h — JSON in and out of the model server: request bodies
 * of TensorFlow Serving's predict API (row "instances" and columnar
 * "inputs") and of KServe v2's infer API decoded into tensors checked
 * against a signature, and outputs encoded in the format asked for.
 *
 * Knows nothing of HTTP, models or sessions. Bodies are read with
 * json_read.h. The literal tokens NaN, Infinity and -Infinity are accepted
 * and written; {"b64": "..."} stands for
 * the bytes of a uint8 or int8 vector (weft has no string dtype). */
#ifndef WEFT_LIB_SERVE_CODEC_H
#define WEFT_LIB_SERVE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include <weft/weft.h>

#include "json_read.h"

/* A signature as the codec sees it: keys, dtypes and shapes (-1: any size).
 * Everything borrowed. */
typedef struct srv_arg {
  const char *key;
  wf_dtype dtype;
  wf_shape shape;
} srv_arg;

typedef struct srv_sig_desc {
  int ninputs;
  const srv_arg *inputs;
  int noutputs;
  const srv_arg *outputs;
} srv_sig_desc;

typedef enum srv_format {
  SRV_TF_ROW = 0,      /* {"instances": [...]} -> {"predictions": [...]} */
  SRV_TF_COLUMNAR = 1, /* {"inputs": ...} -> {"outputs": ...} */
  SRV_KSERVE = 2       /* {"inputs": [{name, shape, datatype, data}]} */
} srv_format;

/* A parsed request body. */
typedef struct srv_request {
  srv_json_doc *doc;
  srv_format format;
  const char *signature_name; /* TF's signature_name, or NULL; borrowed */
  const char *id;             /* KServe's id, or NULL; borrowed */
  const srv_json *inputs;     /* "instances" or "inputs"; borrowed */
  const srv_json *outputs;    /* KServe's requested outputs, or NULL */
  size_t body_len;
} srv_request;

/* Parses body (len bytes, not NUL-terminated) as a predict request
 * (kserve 0) or an infer request (kserve 1). INVALID_ARGUMENT saying where
 * the JSON is malformed or which member is wrong. On success the request
 * must be released with srv_request_deinit (also safe after failure). */
int srv_request_parse(srv_request *r, const char *body, size_t len, int kserve,
                      wf_status *st);
void srv_request_deinit(srv_request *r);

/* Decodes the request's inputs against sig into sig->ninputs new tensors,
 * in signature order (values[j] for sig->inputs[j]; release them). Every
 * input must be given once with a fitting dtype and shape; the error names
 * the input and where in the body it went wrong. On failure nothing is
 * left allocated. */
int srv_request_decode(const srv_request *r, const srv_sig_desc *sig,
                       wf_tensor **values, wf_status *st);

/* KServe: which outputs the request asks for (want[j] = 1 for
 * sig->outputs[j]); all when it names none. INVALID_ARGUMENT for an
 * unknown name. */
int srv_request_wanted(const srv_request *r, const srv_sig_desc *sig, int *want,
                       wf_status *st);

/* A growing text buffer; `failed` is set when memory ran out. */
typedef struct srv_buf {
  char *p;
  size_t len, cap;
  int failed;
} srv_buf;

void srv_buf_put(srv_buf *b, const char *s, size_t n);
void srv_buf_puts(srv_buf *b, const char *s);
void srv_buf_printf(srv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a JSON string literal, quotes included. */
void srv_buf_json_string(srv_buf *b, const char *s);
/* Hands the text (NUL-terminated) to the caller, who frees it; resets b. */
char *srv_buf_take(srv_buf *b, size_t *len);
void srv_buf_free(srv_buf *b);

/* Writes {"predictions": ...} (SRV_TF_ROW) or {"outputs": ...}
 * (SRV_TF_COLUMNAR) for the signature's outputs. Row format needs every
 * output to share its first dimension: INVALID_ARGUMENT otherwise. */
int srv_encode_tf(srv_buf *b, srv_format format, const srv_sig_desc *sig,
                  wf_tensor *const *outputs, wf_status *st);
/* Writes KServe's infer response for the wanted outputs. */
void srv_encode_kserve(srv_buf *b, const char *model, const char *version,
                       const char *id, const srv_sig_desc *sig, const int *want,
                       wf_tensor *const *outputs);

/* TensorFlow's name for a dtype ("DT_FLOAT") and KServe's ("FP32"). */
const char *srv_tf_dtype_name(wf_dtype t);
const char *srv_kserve_dtype_name(wf_dtype t);

#endif
