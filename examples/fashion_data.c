/* examples/fashion_data.c — reading gzip'd IDX files with zlib: magic, type
 * code and dimensions checked against what the file holds. */
#include "fashion_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Reads exactly n bytes; -1 (with a message) on a short or broken file. */
static int read_all(gzFile f, const char *path, void *buf, size_t n,
                    const char *what) {
  unsigned char *p = buf;
  while (n > 0) {
    unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
    int got = gzread(f, p, chunk);
    if (got <= 0) {
      int err;
      const char *msg = gzerror(f, &err);
      fprintf(stderr, "%s: %s: %s\n", path, what,
              got == 0 ? "file ends early" : msg);
      return -1;
    }
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

static uint32_t be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
         b[3];
}

/* Opens an IDX file of unsigned bytes with `rank` dimensions; fills dims. */
static gzFile open_idx(const char *path, int rank, uint32_t *dims) {
  gzFile f = gzopen(path, "rb");
  unsigned char hdr[4 + 4 * 3];
  if (!f) {
    fprintf(stderr, "%s: cannot open (is the Debian package "
                    "dataset-fashion-mnist installed?)\n",
            path);
    return NULL;
  }
  if (read_all(f, path, hdr, 4 + 4 * (size_t)rank, "header") != 0)
    goto fail;
  if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != rank) {
    fprintf(stderr,
            "%s: not an IDX file of unsigned bytes with %d dimensions "
            "(magic %02x %02x %02x %02x)\n",
            path, rank, hdr[0], hdr[1], hdr[2], hdr[3]);
    goto fail;
  }
  for (int i = 0; i < rank; i++)
    dims[i] = be32(hdr + 4 + 4 * i);
  return f;
fail:
  gzclose(f);
  return NULL;
}

int fashion_load(const char *dir, const char *prefix, int limit,
                 fashion_set *out) {
  char ipath[512], lpath[512];
  uint32_t idims[3], ldims[1];
  gzFile fi = NULL, fl = NULL;
  unsigned char *bytes = NULL, *lbytes = NULL;
  memset(out, 0, sizeof *out);
  snprintf(ipath, sizeof ipath, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  snprintf(lpath, sizeof lpath, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  if (!(fi = open_idx(ipath, 3, idims)) || !(fl = open_idx(lpath, 1, ldims)))
    goto fail;
  if (idims[1] != 28 || idims[2] != 28) {
    fprintf(stderr, "%s: images are %ux%u, expected 28x28\n", ipath, idims[1],
            idims[2]);
    goto fail;
  }
  if (idims[0] != ldims[0]) {
    fprintf(stderr, "%s has %u images but %s has %u labels\n", ipath,
            idims[0], lpath, ldims[0]);
    goto fail;
  }
  int n = (int)idims[0];
  if (limit > 0 && limit < n)
    n = limit;
  size_t npix = (size_t)n * 784;
  bytes = malloc(npix);
  lbytes = malloc((size_t)n);
  out->images = malloc(npix * sizeof(float));
  out->labels = malloc((size_t)n * sizeof(int32_t));
  if (!bytes || !lbytes || !out->images || !out->labels) {
    fprintf(stderr, "%s: out of memory for %d samples\n", ipath, n);
    goto fail;
  }
  if (read_all(fi, ipath, bytes, npix, "pixels") ||
      read_all(fl, lpath, lbytes, (size_t)n, "labels"))
    goto fail;
  for (size_t i = 0; i < npix; i++)
    out->images[i] = (float)bytes[i] / 255.0f;
  for (int i = 0; i < n; i++) {
    if (lbytes[i] > 9) {
      fprintf(stderr, "%s: label %d of sample %d is out of range 0..9\n",
              lpath, lbytes[i], i);
      goto fail;
    }
    out->labels[i] = lbytes[i];
  }
  out->n = n;
  free(bytes);
  free(lbytes);
  gzclose(fi);
  gzclose(fl);
  return 0;
fail:
  free(bytes);
  free(lbytes);
  if (fi)
    gzclose(fi);
  if (fl)
    gzclose(fl);
  fashion_free(out);
  return -1;
}

void fashion_free(fashion_set *s) {
  free(s->images);
  free(s->labels);
  memset(s, 0, sizeof *s);
}
