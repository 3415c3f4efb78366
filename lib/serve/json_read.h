/* lib/serve/json_read.h — a strict JSON reader for request bodies: the text
 * becomes a tree of values in one arena, freed at once. Besides RFC 8259 it
 * accepts the tokens NaN, Infinity and -Infinity as numbers (TensorFlow
 * Serving's clients send them).
 *
 * Why not jansson, which weft uses elsewhere: a predict body is mostly
 * numbers, and jansson spends a heap object and a locale-aware strtod on
 * each — about 0.2 to 0.5 us a number, ten times the cnn's whole run for
 * one 28x28 image. This reader keeps numbers in place in the arena and
 * converts the common short decimals exactly without strtod. It writes no
 * JSON (codec.c does) and keeps the first of duplicate object keys. */
#ifndef WEFT_LIB_SERVE_JSON_READ_H
#define WEFT_LIB_SERVE_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

typedef enum srv_json_type {
  SRV_JSON_NULL,
  SRV_JSON_FALSE,
  SRV_JSON_TRUE,
  SRV_JSON_NUMBER,
  SRV_JSON_STRING,
  SRV_JSON_ARRAY,
  SRV_JSON_OBJECT
} srv_json_type;

typedef struct srv_json {
  uint8_t type;   /* srv_json_type */
  uint8_t is_int; /* a number written without fraction or exponent that
                     fits int64 (then i holds it, d its double) */
  uint32_t n;     /* string: bytes; array: items; object: members */
  double d;
  union {
    int64_t i;
    const char *s;          /* NUL-terminated (may hold NULs: use n) */
    struct srv_json *items; /* array: n values; object: 2n, key then value */
  } u;
} srv_json;

typedef struct srv_json_doc srv_json_doc;

/* Parses len bytes of text. Returns the root (owned by *doc, which the
 * caller frees with srv_json_doc_free, also after a failure), or NULL with
 * "line L, column C: what" in err. Nesting deeper than 64 is refused. */
const srv_json *srv_json_parse(const char *text, size_t len, srv_json_doc **doc,
                               char *err, size_t errlen);
void srv_json_doc_free(srv_json_doc *doc);

/* Object member called key (the first one), or NULL (also for a non-object). */
const srv_json *srv_json_get(const srv_json *obj, const char *key);

#endif
