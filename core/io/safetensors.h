/* core/io/safetensors.h — the safetensors file format as checkpoints use it:
 * a strict parser that trusts nothing in the file, lazy checksummed reads
 * of single tensors, and an atomic writer. This is the object behind
 * weft/checkpoint.h's wf_checkpoint; sessions and graphs are
 * core/io/checkpoint.c's business.
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}
 * and the tensors' little-endian, row-major bytes; offsets count from the
 * first byte after the header. weft adds to the metadata "weft.format": "1"
 * and, per tensor, "weft.crc32c/<name>": the CRC-32C of its bytes as eight
 * lowercase hex digits. Files without "weft.format" (written by other
 * programs) carry no checksums; files with it must have one per tensor. */
#ifndef WF_CORE_SAFETENSORS_H
#define WF_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <weft/checkpoint.h>
#include <weft/tensor.h>

/* Headers above this size are refused (as the reference implementation
 * does), whatever the file's size. */
#define WF__ST_HEADER_MAX ((uint64_t)100 << 20)
#define WF__ST_FORMAT_KEY "weft.format"
#define WF__ST_CRC_PREFIX "weft.crc32c/"

typedef struct wf__st_tensor {
  char *name;
  wf_dtype dtype;
  wf_shape shape;
  uint64_t begin, end; /* its bytes in the data section */
  int has_crc;
  uint32_t crc;
} wf__st_tensor;

struct wf_checkpoint {
  char *path;
  int fd;
  uint64_t size;          /* of the file */
  uint64_t data_start;    /* 8 + the header length */
  wf__st_tensor *tensors; /* sorted by name */
  int ntensors;
  char **meta_keys, **meta_values; /* sorted by key */
  int nmeta;
};

/* The safetensors name of a weft dtype ("F32"), or NULL (WF_RESOURCE). */
const char *wf__st_dtype_name(wf_dtype dtype);

/* Opens and checks path: the header length against the file size, the JSON,
 * every tensor's dtype, shape and offsets (in bounds, matching the size,
 * neither overlapping nor leaving gaps), the metadata (string values, a
 * well-formed checksum for each tensor of a weft file). Tensor data is not
 * read. Errors name path and the tensor or field: NOT_FOUND,
 * PERMISSION_DENIED or UNAVAILABLE when it cannot be read, DATA_LOSS for a
 * malformed file, UNIMPLEMENTED for a well-formed one weft cannot hold (a
 * safetensors dtype weft lacks, rank above WF_MAX_RANK). */
wf_checkpoint *wf__st_open(const char *path, wf_status *st);
void wf__st_close(wf_checkpoint *c);
/* Index of the tensor called name, or -1. */
int wf__st_find(const wf_checkpoint *c, const char *name);
/* The value of metadata key, or NULL. */
const char *wf__st_meta(const wf_checkpoint *c, const char *key);

/* Reads tensor i into buf (end - begin bytes, in host byte order) and
 * checks its checksum: DATA_LOSS naming the file and the tensor when it
 * does not match; an I/O error naming the file otherwise. Thread-safe. */
int wf__st_read(const wf_checkpoint *c, int i, void *buf, wf_status *st);
/* Checks tensor i's checksum without keeping its bytes (reads it in
 * pieces). WF_OK for tensors without one. */
int wf__st_check(const wf_checkpoint *c, int i, wf_status *st);

/* One tensor to write; everything borrowed for the call. */
typedef struct wf__st_entry {
  const char *name;
  wf_dtype dtype;
  wf_shape shape;   /* fully known */
  const void *data; /* host byte order, nbytes of the dtype and shape */
} wf__st_entry;

/* Writes n tensors and nmeta metadata pairs to path as a weft file, in the
 * given order, atomically: into a new file beside path, synced, renamed
 * over path, the directory synced. On failure path is as it was (absent or
 * its old contents) and no temporary file remains. INVALID_ARGUMENT for an
 * empty, duplicate, reserved ("__metadata__") or non-UTF-8 name, a
 * metadata key weft manages ("weft.format", "weft.crc32c/..."); I/O
 * errors name the file: NOT_FOUND (no such directory), PERMISSION_DENIED,
 * RESOURCE_EXHAUSTED (no space, file size limit), UNAVAILABLE. */
int wf__st_write(const char *path, const wf__st_entry *e, int n,
                 const char *const *keys, const char *const *values, int nmeta,
                 wf_status *st);

#endif
