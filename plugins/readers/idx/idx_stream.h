/* plugins/readers/idx/idx_stream.h — a byte stream over one file, raw or
 * gzip (detected by its magic bytes, not its name), with exact reads and
 * seeking by offset in the (decompressed) data.
 *
 * Seeking in gzip data has no index: a seek forward inflates and drops the
 * bytes in between, a seek backward starts again from the file's first
 * byte. Either costs one pass of inflate over the bytes skipped (about
 * 0.1-0.2 s for the 47 MB of Fashion-MNIST's training images), which the
 * pipeline pays once per resume. Periodic zlib restart points would make
 * this O(1) but need 32 KiB of window per point and a raw-deflate parser of
 * the gzip framing; a resume does not justify that. One stream is used by
 * one thread at a time. */
#ifndef WF_READERS_IDX_STREAM_H
#define WF_READERS_IDX_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin_aux.h>

typedef struct idx_stream idx_stream;

/* Opens path for reading. NOT_FOUND or PERMISSION_DENIED naming the file
 * when it cannot be opened, FAILED_PRECONDITION when it is not a regular
 * file. The stream is owned by the caller (idx_stream_close). */
int idx_stream_open(const char *path, idx_stream **out, wf_status *st);
void idx_stream_close(idx_stream *s);

int idx_stream_is_gzip(const idx_stream *s);
/* The file's size on disk (compressed size for gzip). */
uint64_t idx_stream_file_size(const idx_stream *s);
/* The offset of the next byte read, in the decompressed data. */
uint64_t idx_stream_offset(const idx_stream *s);

/* Reads up to n bytes into dst; *got says how many came (fewer than n only
 * at the end of the data). Returns 0, or INVALID_ARGUMENT naming the file
 * and the compressed offset for corrupt or truncated gzip data (never
 * DATA_LOSS, which a reader's next keeps for a skipped record), or the
 * code of a failed read. */
int idx_stream_read(idx_stream *s, void *dst, size_t n, size_t *got,
                    wf_status *st);

/* Moves to offset off of the data. OUT_OF_RANGE when the data is shorter
 * than off; other codes as for idx_stream_read. */
int idx_stream_seek(idx_stream *s, uint64_t off, wf_status *st);

/* Sets *at_end to 1 when no byte follows the current offset. For gzip this
 * inflates through the end of the file, so the trailers' CRC and length
 * are checked (INVALID_ARGUMENT when they disagree). When a byte follows,
 * the offset has moved past it. */
int idx_stream_at_end(idx_stream *s, int *at_end, wf_status *st);

#endif
