/* plugins/readers/idx/idx_stream.c — the idx reader's byte stream: buffered
 * reads from a raw file, or inflate of a gzip file (one or more members,
 * each trailer checked by zlib). It knows nothing of the idx format; it
 * does not memory-map (the same code serves both kinds of file, and reads
 * of a whole buffer at a time cost no more than a mapping here). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "idx_stream.h"

#define IN_SIZE ((size_t)1 << 18)   /* file reads, in bytes */
#define DROP_SIZE ((size_t)1 << 16) /* inflated bytes dropped per step */

struct idx_stream {
  char *path; /* for messages */
  int fd;
  int gzip;
  uint64_t file_size;
  unsigned char *in; /* IN_SIZE bytes read from the file */
  size_t in_pos, in_len; /* raw: in[in_pos..in_len) not yet consumed */
  uint64_t file_off;     /* file offset just past in[in_len - 1] */
  uint64_t out_off;      /* offset of the next byte of data */
  /* gzip only */
  z_stream z;
  int z_ready;     /* inflateInit2 succeeded: inflateEnd is owed */
  int member_done; /* the last member ended; another may follow */
  int data_end;    /* the file ended right after a member */
  unsigned char *drop; /* DROP_SIZE bytes for seeking forward, or NULL */
};

static int io_error(idx_stream *s, const char *what, int err, wf_status *st) {

  wfx_host->status_set(st, WF_UNAVAILABLE, "%s: %s: %s", s->path, what,
                       strerror(err));
  return WF_UNAVAILABLE;
}

/* Reads up to `cap` bytes at the current file offset into buf; *got is 0 at
 * the end of the file. */
static int file_read(idx_stream *s, void *buf, size_t cap, size_t *got,
                     wf_status *st) {
  ssize_t r;

  do
    r = read(s->fd, buf, cap);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return io_error(s, "read failed", errno, st);
  s->file_off += (uint64_t)r;
  *got = (size_t)r;
  return 0;
}

int idx_stream_open(const char *path, idx_stream **out, wf_status *st) {
  idx_stream *s = wfx_host->alloc(sizeof *s, 0);
  size_t plen = strlen(path);
  unsigned char magic[2];
  struct stat sb;
  ssize_t r;
  int code;

  *out = NULL;
  if (!s)
    goto oom;
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->path = wfx_host->alloc(plen + 1, 0);
  s->in = wfx_host->alloc(IN_SIZE, 0);
  if (!s->path || !s->in)
    goto oom;
  memcpy(s->path, path, plen + 1);

  s->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (s->fd < 0) {
    code = errno == ENOENT    ? WF_NOT_FOUND
           : errno == EACCES ? WF_PERMISSION_DENIED
                             : WF_UNAVAILABLE;
    wfx_host->status_set(st, code, "%s: cannot open: %s", path,
                         strerror(errno));
    goto fail;
  }
  if (fstat(s->fd, &sb) != 0) {
    code = io_error(s, "cannot stat", errno, st);
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    code = WF_FAILED_PRECONDITION;
    wfx_host->status_set(st, code, "%s: not a regular file", path);
    goto fail;
  }
  s->file_size = (uint64_t)sb.st_size;

  do
    r = pread(s->fd, magic, sizeof magic, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    code = io_error(s, "read failed", errno, st);
    goto fail;
  }
  s->gzip = r == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (s->gzip) {
    /* 16 + 15: gzip framing only, the largest window. */
    int zr = inflateInit2(&s->z, 16 + MAX_WBITS);
    if (zr != Z_OK) {
      code = zr == Z_MEM_ERROR ? WF_RESOURCE_EXHAUSTED : WF_INTERNAL;
      wfx_host->status_set(st, code, "%s: cannot start inflate: %s", path,
                           s->z.msg ? s->z.msg : zError(zr));
      goto fail;
    }
    s->z_ready = 1;
  }
  *out = s;
  return 0;

oom:
  code = WF_RESOURCE_EXHAUSTED;
  wfx_host->status_set(st, code, "%s: out of memory opening the file", path);
fail:
  idx_stream_close(s);
  return code;
}

void idx_stream_close(idx_stream *s) {

  if (!s)
    return;
  if (s->z_ready)
    inflateEnd(&s->z);
  if (s->fd >= 0)
    close(s->fd);
  wfx_host->free(s->drop);
  wfx_host->free(s->in);
  wfx_host->free(s->path);
  wfx_host->free(s);
}

int idx_stream_is_gzip(const idx_stream *s) { return s->gzip; }
uint64_t idx_stream_file_size(const idx_stream *s) { return s->file_size; }
uint64_t idx_stream_offset(const idx_stream *s) { return s->out_off; }

static int raw_read(idx_stream *s, unsigned char *dst, size_t n, size_t *got,
                    wf_status *st) {
  size_t done = 0, k;

  while (done < n) {
    if (s->in_pos == s->in_len) {
      /* Large reads skip the buffer. */
      unsigned char *to = n - done >= IN_SIZE ? dst + done : s->in;
      size_t cap = n - done >= IN_SIZE ? n - done : IN_SIZE;
      s->in_pos = s->in_len = 0; /* the buffer no longer ends at file_off */
      if (file_read(s, to, cap, &k, st))
        return wfx_code(st);
      if (k == 0)
        break;
      if (to != s->in) {
        done += k;
        continue;
      }
      s->in_pos = 0;
      s->in_len = k;
    }
    k = s->in_len - s->in_pos;
    if (k > n - done)
      k = n - done;
    memcpy(dst + done, s->in + s->in_pos, k);
    s->in_pos += k;
    done += k;
  }
  s->out_off += done;
  *got = done;
  return 0;
}

static uint64_t gz_in_offset(const idx_stream *s) {
  return s->file_off - s->z.avail_in;
}

static int gz_read(idx_stream *s, unsigned char *dst, size_t n, size_t *got,
                   wf_status *st) {
  size_t k;
  int zr;

  s->z.next_out = dst;
  s->z.avail_out = (uInt)n;
  while (s->z.avail_out > 0 && !s->data_end) {
    if (s->z.avail_in == 0) {
      if (file_read(s, s->in, IN_SIZE, &k, st))
        return wfx_code(st);
      s->z.next_in = s->in;
      s->z.avail_in = (uInt)k;
      if (k == 0) {
        if (s->member_done) {
          s->data_end = 1;
          break;
        }
        wfx_host->status_set(
            st, WF_INVALID_ARGUMENT,
            "%s: truncated gzip data: the file ends at byte %" PRIu64
            " inside a gzip member (decompressed offset %" PRIu64 ")",
            s->path, s->file_off, s->out_off + (n - s->z.avail_out));
        return WF_INVALID_ARGUMENT;
      }
    }
    if (s->member_done) {
      /* More bytes follow a member: they must be another member. */
      inflateReset(&s->z);
      s->member_done = 0;
    }
    zr = inflate(&s->z, Z_NO_FLUSH);
    if (zr == Z_STREAM_END) {
      s->member_done = 1;
    } else if (zr == Z_MEM_ERROR) {
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "%s: out of memory inflating gzip data", s->path);
      return WF_RESOURCE_EXHAUSTED;
    } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
      /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR: the bytes are bad, and
       * zlib's state stays bad until a seek starts it again. */
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: corrupt gzip data near byte %" PRIu64
                           " of the file (decompressed offset %" PRIu64 "): %s",
                           s->path, gz_in_offset(s),
                           s->out_off + (n - s->z.avail_out),
                           s->z.msg ? s->z.msg : zError(zr));
      return WF_INVALID_ARGUMENT;
    }
  }
  *got = n - s->z.avail_out;
  s->out_off += *got;
  return 0;
}

int idx_stream_read(idx_stream *s, void *dst, size_t n, size_t *got,
                    wf_status *st) {
  size_t part, k;

  *got = 0;
  if (!s->gzip)
    return raw_read(s, dst, n, got, st);
  /* inflate counts in uInt: large reads go in pieces. */
  while (*got < n) {
    part = n - *got;
    if (part > ((size_t)1 << 30))
      part = (size_t)1 << 30;
    if (gz_read(s, (unsigned char *)dst + *got, part, &k, st))
      return wfx_code(st);
    *got += k;
    if (k < part)
      break;
  }
  return 0;
}

static int seek_error(idx_stream *s, uint64_t off, wf_status *st) {
  wfx_host->status_set(st, WF_OUT_OF_RANGE,
                       "%s: cannot seek to offset %" PRIu64
                       ": the data ends at %" PRIu64,
                       s->path, off, s->out_off);
  return WF_OUT_OF_RANGE;
}

int idx_stream_seek(idx_stream *s, uint64_t off, wf_status *st) {
  size_t got;

  if (!s->gzip) {
    uint64_t buf_start = s->file_off - s->in_len;
    if (off > s->file_size)
      return seek_error(s, off, st);
    if (off >= buf_start && off <= s->file_off) {
      s->in_pos = (size_t)(off - buf_start);
    } else {
      if (lseek(s->fd, (off_t)off, SEEK_SET) < 0)
        return io_error(s, "seek failed", errno, st);
      s->file_off = off;
      s->in_pos = s->in_len = 0;
    }
    s->out_off = off;
    return 0;
  }

  if (off < s->out_off) {
    /* Backward: start again from the first byte of the file. */
    if (lseek(s->fd, 0, SEEK_SET) < 0)
      return io_error(s, "seek failed", errno, st);
    inflateReset(&s->z);
    s->z.avail_in = 0;
    s->file_off = 0;
    s->out_off = 0;
    s->member_done = 0;
    s->data_end = 0;
  }
  if (off > s->out_off && !s->drop) {
    s->drop = wfx_host->alloc(DROP_SIZE, 0);
    if (!s->drop) {
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "%s: out of memory seeking", s->path);
      return WF_RESOURCE_EXHAUSTED;
    }
  }
  while (s->out_off < off) {
    uint64_t left = off - s->out_off;
    size_t want = left < DROP_SIZE ? (size_t)left : DROP_SIZE;
    if (gz_read(s, s->drop, want, &got, st))
      return wfx_code(st);
    if (got == 0)
      return seek_error(s, off, st);
  }
  return 0;
}

int idx_stream_at_end(idx_stream *s, int *at_end, wf_status *st) {
  unsigned char b;
  size_t got;

  if (!s->gzip) {
    *at_end = s->out_off >= s->file_size;
    return 0;
  }
  if (gz_read(s, &b, 1, &got, st))
    return wfx_code(st);
  *at_end = got == 0;
  return 0;
}
