/* plugins/devices/cuda/cuda_stage.c — copies through two staging halves
 * ordered by events (cuda_stage.h). */
#include <config.h>

#include "cuda_stage.h"

#include <string.h>

void custage_init(custage *s, const custage_backend *b,
                      unsigned char *buf, size_t half) {
  memset(s, 0, sizeof *s);
  s->b = *b;
  s->buf = buf;
  s->half = half;
}

/* Waits until half h may be written again. */
static int half_free(custage *s, int h, char *why, size_t whylen) {
  if (!s->recorded[h])
    return 0;
  s->recorded[h] = 0;
  return s->b.wait(s->b.ctx, h, why, whylen);
}

/* Queues a copy from or into half h and records its event. */
static int queue(custage *s, int h, void *dst, const void *src, size_t n,
                 int to_device, char *why, size_t whylen) {
  int rc = s->b.copy(s->b.ctx, dst, src, n, to_device, why, whylen);
  if (!rc && !(rc = s->b.record(s->b.ctx, h, why, whylen)))
    s->recorded[h] = 1;
  return rc;
}

int custage_in(custage *s, unsigned char *dst,
                   const unsigned char *src, size_t bytes, char *why,
                   size_t whylen) {
  int h = 0, rc = 0;

  for (size_t off = 0; off < bytes && !rc; off += s->half, h ^= 1) {
    size_t n = bytes - off < s->half ? bytes - off : s->half;
    unsigned char *stage = s->buf + (size_t)h * s->half;
    if ((rc = half_free(s, h, why, whylen)) != 0)
      break;
    memcpy(stage, src + off, n);
    rc = queue(s, h, dst + off, stage, n, 1, why, whylen);
  }
  return rc;
}

int custage_out(custage *s, unsigned char *dst,
                    const unsigned char *src, size_t bytes, char *why,
                    size_t whylen) {
  size_t off = 0, pending_off = 0, pending_n = 0;
  int h = 0, pending = -1, rc = 0;

  for (;;) {
    size_t n = 0;
    if (off < bytes) {
      n = bytes - off < s->half ? bytes - off : s->half;
      if ((rc = half_free(s, h, why, whylen)) != 0 ||
          (rc = queue(s, h, s->buf + (size_t)h * s->half, src + off, n, 0,
                      why, whylen)) != 0)
        break;
    }
    if (pending >= 0) {
      /* The chunk before this one: out of its half once it has landed. */
      if ((rc = half_free(s, pending, why, whylen)) != 0)
        break;
      memcpy(dst + pending_off, s->buf + (size_t)pending * s->half,
             pending_n);
    }
    if (off >= bytes)
      break;
    pending = h;
    pending_off = off;
    pending_n = n;
    off += n;
    h ^= 1;
  }
  return rc;
}

int custage_drain(custage *s, char *why, size_t whylen) {
  int rc = half_free(s, 0, why, whylen);
  int rc1 = half_free(s, 1, rc ? NULL : why, rc ? 0 : whylen);
  return rc ? rc : rc1;
}
