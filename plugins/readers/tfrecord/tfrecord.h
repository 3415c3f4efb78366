/* plugins/readers/tfrecord/tfrecord.h — internals of the tfrecord reader
 * plugin: CRC masking, the byte stream under the records (a memory-mapped
 * file or a gzip/zlib-compressed one), TFRecord framing and the
 * tf.train.Example decoder. Nothing here is seen by the core; reader.c is
 * the plugin. */
#ifndef WF_TFRECORD_H
#define WF_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin_aux.h>
#include <zlib.h>

#include "tfr_crc32c.h"
#include "example.pb-c.h"

/* ---- CRC-32C (tfr_crc32c.h, the plugin's own) ----------------------------- */

/* TFRecord's masked CRC: rotated right by 15 bits plus 0xa282ead8. */
static inline uint32_t tfr_crc_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + UINT32_C(0xa282ead8);
}

/* ---- the byte stream (stream.c) ----------------------------------------- */

enum {
  WF__TFR_CODEC_AUTO = 0, /* detected from the first bytes */
  WF__TFR_CODEC_NONE = 1,
  WF__TFR_CODEC_GZIP = 2, /* RFC 1952; concatenated members are read on */
  WF__TFR_CODEC_ZLIB = 3  /* RFC 1950 */
};

/* The uncompressed bytes of one file, read forward from an offset.
 * Uncompressed files are memory-mapped; compressed ones are inflated into
 * a window that grows only as far as one peek needs. Offsets are always
 * in the uncompressed bytes. Not thread-safe: one reader, one thread. */
typedef struct tfr_stream {
  const char *path;    /* borrowed; for messages */
  int fd;
  int codec;           /* WF__TFR_CODEC_NONE, _GZIP or _ZLIB */
  uint64_t file_size;
  uint64_t pos;        /* offset of the next byte */
  const uint8_t *map;  /* NONE: the whole file (NULL when it is empty) */
  /* Compressed files only. */
  z_stream z;
  int z_live;          /* inflateInit2 succeeded: inflateEnd is owed */
  int z_end;           /* the last member ended and the file is read */
  int file_eof;        /* read() returned 0 */
  int32_t z_error;     /* a fatal error seen earlier: it is repeated */
  char z_msg[512];
  uint8_t *in;         /* compressed input buffer */
  uint8_t *buf;        /* uncompressed window: buf[lo..hi) is at pos */
  size_t cap, lo, hi;
} tfr_stream;

/* Opens path; codec WF__TFR_CODEC_AUTO detects gzip (1f 8b) and zlib
 * headers unless the file starts with a valid TFRecord header. Errors:
 * NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT (a directory, not
 * compressed as codec says), RESOURCE_EXHAUSTED. s is unusable after an
 * error and needs no close. */
int tfr_stream_open(tfr_stream *s, const char *path, int codec,
                        wf_status *st);
void tfr_stream_close(tfr_stream *s);
/* Makes up to n bytes from pos readable at *p: *avail is n, or fewer when
 * the data ends first. *p is valid until the next peek, pass or rewind.
 * Errors (corrupt or truncated compressed data, a failed read,
 * RESOURCE_EXHAUSTED) are fatal; a compressed stream repeats its error. */
int tfr_stream_peek(tfr_stream *s, size_t n, const uint8_t **p,
                        size_t *avail, wf_status *st);
/* Moves pos forward by n bytes that the last peek made readable. */
void tfr_stream_skip(tfr_stream *s, size_t n);
/* Moves pos forward by up to n bytes without keeping them, extending *crc
 * (may be NULL) with them; *done is n, or fewer when the data ends. */
int tfr_stream_pass(tfr_stream *s, uint64_t n, uint32_t *crc,
                        uint64_t *done, wf_status *st);
/* Back to offset 0 (clears a compressed stream's earlier error). */
int tfr_stream_rewind(tfr_stream *s, wf_status *st);
/* "none", "gzip", "zlib". */
const char *tfr_codec_name(int codec);

/* ---- framing (record.c) ------------------------------------------------- */

/* Where a record is, for messages: "PATH: record N at offset X". */
typedef struct tfr_where {
  const char *path;
  uint64_t number; /* counted from 0 */
  uint64_t offset; /* of its header, in the uncompressed bytes */
  int compressed;
} tfr_where;

/* Writes "PATH: record N at [decompressed] offset X" into buf. */
const char *tfr_where_str(const tfr_where *w, char *buf, size_t len);

typedef struct tfr_record {
  uint64_t len;        /* data bytes */
  uint64_t size;       /* header, data and CRC: what the record spans */
  const uint8_t *data; /* valid until the next call on the stream */
} tfr_record;

/* Reads the record at the stream's position (number: its record number,
 * for messages) without moving past it. Returns WF_READER_RECORD with *rec
 * filled; WF_READER_END at the end of the data; -WF_DATA_LOSS with *rec
 * filled when the data's CRC does not match (the length is sound, so the
 * caller may skip rec->size bytes and go on); or another -code, fatal: a
 * truncated header, a length CRC mismatch, a length past the end of the
 * data or above max_len, an error of the stream. */
int tfr_record_read(tfr_stream *s, uint64_t number, uint64_t max_len,
                        tfr_record *rec, wf_status *st);
/* Moves past the record at the stream's position without keeping its
 * data, checking the data's CRC when verify is set. Returns as
 * tfr_record_read; on -WF_DATA_LOSS the stream has moved past it, on
 * fatal errors the position is unspecified (rewind before reusing). */
int tfr_record_pass(tfr_stream *s, uint64_t number, uint64_t max_len,
                        int verify, wf_status *st);

/* ---- tf.train.Example (example.c) --------------------------------------- */

/* One feature the reader yields as a field: "name:dtype:shape[:default]". */
typedef struct tfr_spec {
  char name[64];
  int32_t dtype;  /* WF_FLOAT32, WF_INT64 or WF_UINT8 (bytes) */
  wf_shape shape; /* at most one dim is WF_UNKNOWN_DIM */
  int var_dim;    /* index of the unknown dim, or -1 */
  int64_t known;  /* product of the known dims */
  int has_default;
  int64_t def_count; /* elements in def */
  void *def;         /* host-allocated default values, or NULL */
} tfr_spec;

/* Parses one spec of len bytes (not NUL-terminated). INVALID_ARGUMENT
 * names the spec and what is wrong with it. */
int tfr_spec_parse(const char *text, size_t len, tfr_spec *out,
                       wf_status *st);
void tfr_spec_deinit(tfr_spec *spec);

/* Bump allocator for protobuf-c: a record's whole message tree lives in
 * one block that is reused for the next record. */
typedef struct tfr_arena {
  uint8_t *block;
  size_t cap, used;
  void **retired; /* blocks outgrown during this record */
  size_t num_retired, cap_retired;
  int failed;     /* an allocation failed since the last reset */
} tfr_arena;

/* Turns Example payloads into one tensor per spec. */
typedef struct tfr_decoder {
  tfr_spec *specs; /* owned */
  int num_specs;
  int32_t *slots;      /* open hash of spec names: index or -1 */
  uint32_t slot_mask;
  const Tensorflow__Feature **found; /* per spec, for the current record */
  unsigned char *seen;               /* per spec: the record names it */
  tfr_arena arena;
  ProtobufCAllocator pballoc;
} tfr_decoder;

/* Takes ownership of specs (num host-allocated entries), also on error.
 * INVALID_ARGUMENT when two specs share a name. */
int tfr_decoder_init(tfr_decoder *d, tfr_spec *specs, int num,
                         wf_status *st);
void tfr_decoder_deinit(tfr_decoder *d);
/* Parses a payload and makes fields[i] (new references) for spec i.
 * Returns 0; -WF_DATA_LOSS for a payload that is not an Example or whose
 * features do not match the specs (missing without a default, another
 * kind, a count the shape cannot hold), naming w and the feature; or
 * -WF_RESOURCE_EXHAUSTED. fields are all NULL after an error. */
int tfr_decoder_decode(tfr_decoder *d, const uint8_t *data,
                           size_t len, const tfr_where *w,
                           wf_tensor **fields, wf_status *st);
/* Specs for every feature of one payload, sorted by name: each a
 * variable-length list of the feature's kind. *specs is host-allocated
 * (free each with tfr_spec_deinit, then host->free). */
int tfr_infer_specs(const uint8_t *data, size_t len,
                        const tfr_where *w, tfr_spec **specs,
                        int *num, wf_status *st);

#endif
