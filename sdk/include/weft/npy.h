/* weft/npy.h — tensors as NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Reads the dtypes weft has (float16/32/64, int8, uint8, int32, int64,
 * bool) in either byte order and in C or Fortran order; writes C order in
 * the machine's byte order, version 1.0, the bytes numpy.save would write.
 * .npz archives, pickled object arrays and structured dtypes are refused.
 *
 * Errors (codes): NOT_FOUND when a file or its directory does not exist,
 * FAILED_PRECONDITION when the path is a directory, PERMISSION_DENIED or
 * UNAVAILABLE when a file cannot be opened, read or written,
 * RESOURCE_EXHAUSTED when memory runs out; DATA_LOSS for bytes that are not
 * a well-formed .npy (bad magic or header, data shorter or longer than the
 * header's shape); UNIMPLEMENTED for well-formed files weft cannot hold (a
 * numpy dtype weft lacks, rank above WF_MAX_RANK, an unknown format
 * version); INVALID_ARGUMENT for tensors numpy cannot hold (bfloat16). Every
 * message names the file (or the `what` of a buffer) and the problem. */
#ifndef WEFT_NPY_H
#define WEFT_NPY_H

#include <stddef.h>

#include <weft/export.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the .npy file at path into a new host tensor in row-major order and
 * the machine's byte order; bool elements read as 0 or 1. The caller owns
 * the one reference (wf_tensor_release). Returns NULL with st set on
 * failure. Thread-safe. */
WF_API wf_tensor *wf_npy_read(const char *path, wf_status *st);

/* As wf_npy_read, from the len bytes at buf (borrowed for the call only;
 * no alignment needed). what names the source in error messages, e.g. an
 * archive member; NULL reads as "npy buffer". */
WF_API wf_tensor *wf_npy_parse(const void *buf, size_t len, const char *what,
                               wf_status *st);

/* Writes t to path as a .npy file, atomically: the bytes go to a new file
 * beside path, which is synced and renamed over path, and the directory is
 * synced. On failure path is left as it was (absent or its old contents)
 * and no temporary file remains — except when only the final sync of the
 * directory fails: path then holds the new file and the message says so.
 * Returns WF_OK or the error code. Thread-safe (for different paths). */
WF_API int wf_npy_write(const char *path, const wf_tensor *t, wf_status *st);

/* The bytes wf_npy_write would write, in a new buffer from malloc that the
 * caller frees with free(). On failure *buf is NULL and *len 0. */
WF_API int wf_npy_to_buffer(const wf_tensor *t, void **buf, size_t *len,
                            wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_NPY_H */
