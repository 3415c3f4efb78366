/* plugins/readers/tfrecord/stream.c — the uncompressed bytes of a TFRecord
 * file: a read-only memory map of a plain file, or a growing window over a
 * gzip (concatenated members included) or zlib stream inflated with zlib.
 *
 * It knows nothing of records; it does not seek backwards in a compressed
 * stream except by starting over (rewind). */
#include <config.h>

#include "tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Compressed bytes read per read(2), and the least room the window keeps
 * for one inflate call. */
#define IN_CHUNK ((size_t)1 << 16)
#define OUT_CHUNK ((size_t)1 << 16)

const char *tfr_codec_name(int codec) {
  switch (codec) {
  case WF__TFR_CODEC_NONE:
    return "none";
  case WF__TFR_CODEC_GZIP:
    return "gzip";
  case WF__TFR_CODEC_ZLIB:
    return "zlib";
  default:
    return "auto";
  }
}

static int errno_code(int e) {
  switch (e) {
  case ENOENT:
  case ENOTDIR:
    return WF_NOT_FOUND;
  case EACCES:
  case EPERM:
    return WF_PERMISSION_DENIED;
  case ENOMEM:
    return WF_RESOURCE_EXHAUSTED;
  default:
    return WF_UNAVAILABLE;
  }
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  if (size != 0 && items > SIZE_MAX / size)
    return Z_NULL;
  return wfx_host->alloc((size_t)items * size, 0);
}

static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  wfx_host->free(p);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* The codec of a file starting with the n bytes at h. A valid TFRecord
 * header wins: a plain file's first length may look like a zlib header
 * (0x78 0x01 is length 376), but its CRC will not match by chance. */
static int detect(const uint8_t *h, size_t n) {
  if (n >= 12 && tfr_crc_mask(tfr_crc32c(0, h, 8)) == le32(h + 8))
    return WF__TFR_CODEC_NONE;
  if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b)
    return WF__TFR_CODEC_GZIP;
  if (n >= 2 && (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 &&
      ((unsigned)h[0] << 8 | h[1]) % 31 == 0)
    return WF__TFR_CODEC_ZLIB;
  return WF__TFR_CODEC_NONE;
}

/* Compressed bytes consumed so far (of the file, across members). */
static uint64_t z_consumed(const tfr_stream *s) {
  return (uint64_t)lseek(s->fd, 0, SEEK_CUR) - s->z.avail_in;
}

/* Records a fatal error of the compressed stream, to be repeated. */
static int z_fail(tfr_stream *s, int32_t code, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);
static int z_fail(tfr_stream *s, int32_t code, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(s->z_msg, sizeof s->z_msg, "%s (%s): ", s->path,
                   tfr_codec_name(s->codec));
  if (n < 0 || (size_t)n >= sizeof s->z_msg)
    n = 0;
  va_start(ap, fmt);
  vsnprintf(s->z_msg + n, sizeof s->z_msg - (size_t)n, fmt, ap);
  va_end(ap);
  s->z_error = code;
  return code;
}

static int z_repeat(const tfr_stream *s, wf_status *st) {
  wfx_host->status_set(st, s->z_error, "%s", s->z_msg);
  return s->z_error;
}

static int z_start(tfr_stream *s, wf_status *st) {
  int bits = s->codec == WF__TFR_CODEC_GZIP ? 15 + 16 : 15;
  memset(&s->z, 0, sizeof s->z);
  s->z.zalloc = z_alloc;
  s->z.zfree = z_free;
  if (inflateInit2(&s->z, bits) != Z_OK) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory starting %s decompression", s->path,
                         tfr_codec_name(s->codec));
    return WF_RESOURCE_EXHAUSTED;
  }
  s->z_live = 1;
  return 0;
}

int tfr_stream_open(tfr_stream *s, const char *path, int codec, wf_status *st) {
  struct stat sb;
  uint8_t head[12];
  ssize_t got = 0;

  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->path = path;
  s->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (s->fd < 0) {
    int e = errno;
    wfx_host->status_set(st, errno_code(e), "%s: cannot open: %s", path,
                         strerror(e));
    goto fail;
  }
  if (fstat(s->fd, &sb) != 0) {
    int e = errno;
    wfx_host->status_set(st, errno_code(e), "%s: cannot stat: %s", path,
                         strerror(e));
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: not a regular file (TFRecord files are read "
                         "from regular files only)",
                         path);
    goto fail;
  }
  s->file_size = (uint64_t)sb.st_size;
  if (codec == WF__TFR_CODEC_AUTO || codec == WF__TFR_CODEC_GZIP ||
      codec == WF__TFR_CODEC_ZLIB) {
    do
      got = pread(s->fd, head, sizeof head, 0);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
      int e = errno;
      wfx_host->status_set(st, errno_code(e), "%s: cannot read: %s", path,
                           strerror(e));
      goto fail;
    }
  }
  if (codec == WF__TFR_CODEC_AUTO)
    codec = detect(head, (size_t)got);
  else if (codec == WF__TFR_CODEC_GZIP &&
           !(got >= 2 && head[0] == 0x1f && head[1] == 0x8b)) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: compression is gzip but the file does not start "
                         "with gzip's magic bytes 1f 8b",
                         path);
    goto fail;
  }
  s->codec = codec;

  if (codec == WF__TFR_CODEC_NONE) {
    if (s->file_size > SIZE_MAX) {
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "%s: %llu bytes do not fit in this address space",
                           path, (unsigned long long)s->file_size);
      goto fail;
    }
    if (s->file_size > 0) {
      void *m = mmap(NULL, (size_t)s->file_size, PROT_READ, MAP_PRIVATE,
                     s->fd, 0);
      if (m == MAP_FAILED) {
        int e = errno;
        wfx_host->status_set(st, errno_code(e), "%s: cannot map %llu bytes: %s",
                             path, (unsigned long long)s->file_size,
                             strerror(e));
        goto fail;
      }
      madvise(m, (size_t)s->file_size, MADV_SEQUENTIAL);
      s->map = m;
    }
    return 0;
  }

  s->in = wfx_host->alloc(IN_CHUNK, 0);
  if (!s->in) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory for the %s input buffer", path,
                         tfr_codec_name(codec));
    goto fail;
  }
  if (z_start(s, st))
    goto fail;
  return 0;

fail:
  tfr_stream_close(s);
  return wfx_code(st);
}

void tfr_stream_close(tfr_stream *s) {
  if (s->map)
    munmap((void *)s->map, (size_t)s->file_size);
  if (s->z_live)
    inflateEnd(&s->z);
  wfx_host->free(s->in);
  wfx_host->free(s->buf);
  if (s->fd >= 0)
    close(s->fd);
  memset(s, 0, sizeof *s);
  s->fd = -1;
}

/* Reads more compressed input when all of it was consumed. */
static int z_refill(tfr_stream *s, wf_status *st) {
  ssize_t r;
  if (s->z.avail_in > 0 || s->file_eof)
    return 0;
  do
    r = read(s->fd, s->in, IN_CHUNK);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    int e = errno;
    z_fail(s, errno_code(e), "cannot read: %s", strerror(e));
    return z_repeat(s, st);
  }
  if (r == 0)
    s->file_eof = 1;
  s->z.next_in = s->in;
  s->z.avail_in = (uInt)r;
  return 0;
}

/* Makes room for at least OUT_CHUNK bytes after hi, moving the held bytes
 * to the front or doubling the window. */
static int window_room(tfr_stream *s, wf_status *st) {
  size_t held = s->hi - s->lo;
  size_t cap;
  uint8_t *nb;

  if (s->cap - s->hi >= OUT_CHUNK)
    return 0;
  if (s->lo > 0 && s->cap - held >= OUT_CHUNK) {
    memmove(s->buf, s->buf + s->lo, held);
    s->lo = 0;
    s->hi = held;
    return 0;
  }
  cap = s->cap * 2 > held + OUT_CHUNK ? s->cap * 2 : held + OUT_CHUNK;
  nb = wfx_host->alloc(cap, 0);
  if (!nb) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory growing the decompression "
                         "window to %zu bytes",
                         s->path, cap);
    return WF_RESOURCE_EXHAUSTED;
  }
  if (held)
    memcpy(nb, s->buf + s->lo, held);
  wfx_host->free(s->buf);
  s->buf = nb;
  s->cap = cap;
  s->lo = 0;
  s->hi = held;
  return 0;
}

/* One inflate step: appends what it produces to the window. */
static int z_step(tfr_stream *s, wf_status *st) {
  size_t room;
  int ret;

  if (z_refill(s, st) || window_room(s, st))
    return wfx_code(st);
  room = s->cap - s->hi;
  s->z.next_out = s->buf + s->hi;
  s->z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
  room = s->z.avail_out;
  ret = inflate(&s->z, Z_NO_FLUSH);
  s->hi += room - s->z.avail_out;

  switch (ret) {
  case Z_OK:
    return 0;
  case Z_STREAM_END:
    /* Another gzip member may follow; anything after a zlib stream is
     * garbage. */
    if (z_refill(s, st))
      return wfx_code(st);
    if (s->z.avail_in == 0) {
      s->z_end = 1;
      return 0;
    }
    if (s->codec != WF__TFR_CODEC_GZIP) {
      z_fail(s, WF_INVALID_ARGUMENT,
             "data follows the end of the zlib stream at compressed offset "
             "%llu",
             (unsigned long long)z_consumed(s));
      return z_repeat(s, st);
    }
    inflateReset(&s->z);
    return 0;
  case Z_BUF_ERROR:
    if (s->z.avail_in == 0 && s->file_eof) {
      z_fail(s, WF_INVALID_ARGUMENT,
             "compressed data ends at compressed offset %llu (decompressed "
             "offset %llu) before the end of its stream: truncated file",
             (unsigned long long)z_consumed(s),
             (unsigned long long)(s->pos + (s->hi - s->lo)));
      return z_repeat(s, st);
    }
    return 0;
  case Z_MEM_ERROR:
    z_fail(s, WF_RESOURCE_EXHAUSTED, "out of memory while decompressing");
    return z_repeat(s, st);
  case Z_NEED_DICT:
  case Z_DATA_ERROR:
  default:
    z_fail(s, WF_INVALID_ARGUMENT,
           "corrupt compressed data at compressed offset %llu (decompressed "
           "offset %llu): %s",
           (unsigned long long)z_consumed(s),
           (unsigned long long)(s->pos + (s->hi - s->lo)),
           s->z.msg ? s->z.msg : "invalid stream");
    return z_repeat(s, st);
  }
}

int tfr_stream_peek(tfr_stream *s, size_t n, const uint8_t **p,
                        size_t *avail, wf_status *st) {
  if (s->codec == WF__TFR_CODEC_NONE) {
    uint64_t rem = s->file_size - s->pos;
    *avail = rem < n ? (size_t)rem : n;
    *p = s->map ? s->map + s->pos : NULL;
    return 0;
  }
  if (s->z_error)
    return z_repeat(s, st);
  while (s->hi - s->lo < n && !s->z_end)
    if (z_step(s, st))
      return wfx_code(st);
  *avail = s->hi - s->lo < n ? s->hi - s->lo : n;
  *p = s->buf ? s->buf + s->lo : NULL;
  return 0;
}

void tfr_stream_skip(tfr_stream *s, size_t n) {
  s->pos += n;
  if (s->codec != WF__TFR_CODEC_NONE)
    s->lo += n;
}

int tfr_stream_pass(tfr_stream *s, uint64_t n, uint32_t *crc,
                        uint64_t *done, wf_status *st) {
  *done = 0;
  if (s->codec == WF__TFR_CODEC_NONE) {
    uint64_t rem = s->file_size - s->pos;
    uint64_t k = rem < n ? rem : n;
    if (crc && k > 0)
      *crc = tfr_crc32c(*crc, s->map + s->pos, (size_t)k);
    s->pos += k;
    *done = k;
    return 0;
  }
  while (*done < n) {
    const uint8_t *p;
    size_t avail;
    uint64_t want = n - *done;
    if (tfr_stream_peek(s, want < OUT_CHUNK ? (size_t)want : OUT_CHUNK,
                            &p, &avail, st))
      return wfx_code(st);
    if (avail == 0)
      break;
    if (crc)
      *crc = tfr_crc32c(*crc, p, avail);
    tfr_stream_skip(s, avail);
    *done += avail;
  }
  return 0;
}

int tfr_stream_rewind(tfr_stream *s, wf_status *st) {
  s->pos = 0;
  if (s->codec == WF__TFR_CODEC_NONE)
    return 0;
  if (lseek(s->fd, 0, SEEK_SET) != 0) {
    int e = errno;
    wfx_host->status_set(st, errno_code(e), "%s: cannot seek: %s", s->path,
                         strerror(e));
    return errno_code(e);
  }
  inflateReset(&s->z);
  s->z.next_in = s->in;
  s->z.avail_in = 0;
  s->z_end = 0;
  s->file_eof = 0;
  s->z_error = 0;
  s->z_msg[0] = '\0';
  s->lo = s->hi = 0;
  return 0;
}
