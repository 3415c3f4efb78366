/* plugins/readers/tfrecord/record.c — TFRecord framing: a little-endian
 * uint64 length, the masked CRC-32C of those 8 bytes, the data, the masked
 * CRC-32C of the data. Checks every field against the bytes that remain.
 *
 * It does not interpret the data (example.c does) or track record numbers
 * (the reader does). */
#include <config.h>

#include "tfrecord.h"

#include <inttypes.h>
#include <stdio.h>

#define HEADER_BYTES 12
#define FOOTER_BYTES 4

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
  return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

const char *tfr_where_str(const tfr_where *w, char *buf, size_t len) {
  snprintf(buf, len, "%s: record %" PRIu64 " at %soffset %" PRIu64, w->path,
           w->number, w->compressed ? "decompressed " : "", w->offset);
  return buf;
}

static tfr_where where_at(const tfr_stream *s, uint64_t number,
                              uint64_t offset) {
  tfr_where w = {s->path, number, offset,
                     s->codec != WF__TFR_CODEC_NONE};
  return w;
}

/* The record at offset whose length runs past the data: after the
 * header, `left` bytes remained. */
static int past_end(const tfr_stream *s, uint64_t number, uint64_t offset,
                    uint64_t len, uint64_t left, wf_status *st) {
  char at[1024];
  tfr_where w = where_at(s, number, offset);
  wfx_host->status_set(
      st, WF_INVALID_ARGUMENT,
      "%s: length %" PRIu64 " is larger than what remains of the %s (%" PRIu64
      " bytes after the header; the data and its CRC need %" PRIu64
      "): truncated file or corrupt length",
      tfr_where_str(&w, at, sizeof at), len,
      w.compressed ? "decompressed data" : "file", left, len + FOOTER_BYTES);
  return WF_INVALID_ARGUMENT;
}

/* Reads and checks the header at the stream's position: WF_READER_RECORD
 * with *len, WF_READER_END when no byte is left, or a fatal -code. For a
 * plain file it also checks that the data and its CRC fit in the file. */
static int header(tfr_stream *s, uint64_t number, uint64_t max_len,
                  uint64_t *len, wf_status *st) {
  const uint8_t *p;
  size_t avail;
  uint32_t stored, computed;
  char at[1024];

  if (tfr_stream_peek(s, HEADER_BYTES, &p, &avail, st))
    return -wfx_code(st);
  if (avail == 0)
    return WF_READER_END;
  if (avail < HEADER_BYTES) {
    tfr_where w = where_at(s, number, s->pos);
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the data ends %zu bytes into the %d-byte record "
                         "header: truncated file",
                         tfr_where_str(&w, at, sizeof at), avail, HEADER_BYTES);
    return -WF_INVALID_ARGUMENT;
  }
  *len = le64(p);
  stored = le32(p + 8);
  computed = tfr_crc_mask(tfr_crc32c(0, p, 8));
  if (stored != computed) {
    tfr_where w = where_at(s, number, s->pos);
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: length CRC mismatch (stored 0x%08" PRIx32
                         ", computed 0x%08" PRIx32
                         "): not a TFRecord file, or a corrupt one",
                         tfr_where_str(&w, at, sizeof at), stored, computed);
    return -WF_INVALID_ARGUMENT;
  }
  if (*len > max_len) {
    tfr_where w = where_at(s, number, s->pos);
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: length %" PRIu64
                         " is above max_record_bytes (%" PRIu64
                         "); raise that option if the record is genuine",
                         tfr_where_str(&w, at, sizeof at), *len, max_len);
    return -WF_INVALID_ARGUMENT;
  }
  if (s->codec == WF__TFR_CODEC_NONE) {
    uint64_t left = s->file_size - s->pos - HEADER_BYTES;
    if (*len > left || left - *len < FOOTER_BYTES)
      return -past_end(s, number, s->pos, *len, left, st);
  }
  return WF_READER_RECORD;
}

int tfr_record_read(tfr_stream *s, uint64_t number, uint64_t max_len,
                    tfr_record *rec, wf_status *st) {
  const uint8_t *p;
  size_t avail, size;
  uint64_t len = 0;
  uint32_t stored, computed;
  int r;

  r = header(s, number, max_len, &len, st);
  if (r != WF_READER_RECORD)
    return r;
  /* max_len keeps len far below SIZE_MAX. */
  size = HEADER_BYTES + (size_t)len + FOOTER_BYTES;
  if (tfr_stream_peek(s, size, &p, &avail, st))
    return -wfx_code(st);
  if (avail < size)
    return -past_end(s, number, s->pos, len, avail - HEADER_BYTES, st);
  rec->len = len;
  rec->size = size;
  rec->data = p + HEADER_BYTES;
  stored = le32(p + HEADER_BYTES + len);
  computed = tfr_crc_mask(tfr_crc32c(0, rec->data, (size_t)len));
  if (stored != computed) {
    char at[1024];
    tfr_where w = where_at(s, number, s->pos);
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: data CRC mismatch (stored 0x%08" PRIx32
                         ", computed 0x%08" PRIx32 "): the record is corrupt",
                         tfr_where_str(&w, at, sizeof at), stored, computed);
    return -WF_DATA_LOSS;
  }
  return WF_READER_RECORD;
}

int tfr_record_pass(tfr_stream *s, uint64_t number, uint64_t max_len,
                    int verify, wf_status *st) {
  uint64_t offset = s->pos;
  const uint8_t *p;
  size_t avail = 0;
  uint64_t len = 0, done = 0;
  uint32_t crc = 0, stored;
  int r;

  r = header(s, number, max_len, &len, st);
  if (r != WF_READER_RECORD)
    return r;
  tfr_stream_skip(s, HEADER_BYTES);
  if (tfr_stream_pass(s, len, verify ? &crc : NULL, &done, st))
    return -wfx_code(st);
  if (done == len &&
      tfr_stream_peek(s, FOOTER_BYTES, &p, &avail, st))
    return -wfx_code(st);
  if (done < len || avail < FOOTER_BYTES)
    return -past_end(s, number, offset, len, done + (done == len ? avail : 0),
                     st);
  stored = le32(p);
  tfr_stream_skip(s, FOOTER_BYTES);
  if (verify && tfr_crc_mask(crc) != stored) {
    char at[1024];
    tfr_where w = where_at(s, number, offset);
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: data CRC mismatch (stored 0x%08" PRIx32
                         ", computed 0x%08" PRIx32 "): the record is corrupt",
                         tfr_where_str(&w, at, sizeof at), stored,
                         tfr_crc_mask(crc));
    return -WF_DATA_LOSS;
  }
  return WF_READER_RECORD;
}
