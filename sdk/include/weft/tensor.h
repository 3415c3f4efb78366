/* weft/tensor.h — dtypes, shapes and reference-counted tensors.
 *
 * A tensor is a dtype, a shape and a reference-counted buffer. Host buffers
 * are 64-byte aligned. Tensors are immutable in shape; their data is written
 * by whoever holds the only reference. */
#ifndef WEFT_TENSOR_H
#define WEFT_TENSOR_H

#include <weft/export.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WF_TENSOR_ALIGN 64

/* Size in bytes of one element; 0 for WF_DTYPE_INVALID, WF_STRING (whose
 * elements have no fixed size) or unknown values. */
WF_API size_t wf_dtype_size(wf_dtype dtype);
/* "float32", "int64", ...; NULL for values that are not dtypes. */
WF_API const char *wf_dtype_name(wf_dtype dtype);
/* Parses a dtype name ("float32", also "f32"/"float"); WF_DTYPE_INVALID if
 * unknown. */
WF_API wf_dtype wf_dtype_from_name(const char *name);

/* Shapes are plain values (see weft/types.h). */
WF_API void wf_shape_init(wf_shape *s, const int64_t *dims, int rank);
WF_API void wf_shape_unknown(wf_shape *s);
/* Number of elements; -1 if the shape is not fully known. */
WF_API int64_t wf_shape_count(const wf_shape *s);
WF_API int wf_shape_is_known(const wf_shape *s);
/* 1 when the two could describe the same tensor (unknowns match anything). */
WF_API int wf_shape_compatible(const wf_shape *a, const wf_shape *b);
WF_API int wf_shape_equal(const wf_shape *a, const wf_shape *b);
/* Writes "(2, ?, 3)" or "<unknown>" into buf (always NUL-terminated); returns
 * buf. */
WF_API char *wf_shape_str(const wf_shape *s, char *buf, size_t len);

/* A new tensor with uninitialised, 64-byte-aligned host memory. rank may be
 * 0 (a scalar); every dim must be >= 0. The caller owns one reference.
 * Errors: INVALID_ARGUMENT (bad dtype, rank or dim; WF_STRING, whose tensors
 * are made with wf_tensor_new_strings), RESOURCE_EXHAUSTED. */
WF_API wf_tensor *wf_tensor_new(wf_dtype dtype, const int64_t *dims, int rank,
                                wf_status *st);
/* Called when the last reference to a wrapped buffer goes away. */
typedef void wf_dealloc_fn(void *data, size_t len, void *arg);
/* Wraps the caller's buffer without copying. len must equal the tensor's
 * byte size (for WF_STRING: the buffer must be laid out as below, which is
 * checked); dealloc (may be NULL) is called exactly once, when the last
 * reference is released — also when this call fails. */
WF_API wf_tensor *wf_tensor_wrap(wf_dtype dtype, const int64_t *dims, int rank,
                                 void *data, size_t len, wf_dealloc_fn *dealloc,
                                 void *arg, wf_status *st);
/* Adds a reference and returns t. Thread-safe. */
WF_API wf_tensor *wf_tensor_retain(wf_tensor *t);
/* Drops a reference; the last one frees the tensor. NULL is ignored. */
WF_API void wf_tensor_release(wf_tensor *t);

WF_API wf_dtype wf_tensor_dtype(const wf_tensor *t);
WF_API int wf_tensor_rank(const wf_tensor *t);
WF_API int64_t wf_tensor_dim(const wf_tensor *t, int i);
WF_API void wf_tensor_shape(const wf_tensor *t, wf_shape *out);
WF_API int64_t wf_tensor_count(const wf_tensor *t);
WF_API size_t wf_tensor_nbytes(const wf_tensor *t);
/* The element buffer; valid while a reference is held. */
WF_API void *wf_tensor_data(const wf_tensor *t);
/* Element i (row-major) as a double: exact for every dtype except int64
 * values beyond 2^53 (rounded); bool reads 0 or 1. NaN for a resource
 * tensor or an i outside [0, count). */
WF_API double wf_tensor_element(const wf_tensor *t, int64_t i);
/* Writes "dtype (shape) [v0, v1, ...]" into buf (len bytes, always
 * terminated): at most max_values values, then ", ... N values". Returns
 * buf. */
WF_API char *wf_tensor_str(const wf_tensor *t, int max_values, char *buf,
                           size_t len);

/* String tensors (WF_STRING). Each element is a byte string of any length
 * (UTF-8 by convention; not checked, and NUL bytes are allowed). A string
 * tensor is immutable once made, and its buffer is self-relative, so that
 * it is copied, saved and sent as plain bytes like any other tensor's:
 * count + 1 native-endian uint64 offsets from the start of the buffer,
 * then the bytes. Element i is the off[i+1] - off[i] - 1 bytes at
 * off[i], followed by a NUL; off[0] is 8 * (count + 1) and off[count] the
 * buffer's size. */

/* A new string tensor of the given shape holding copies of strings[i]
 * (lengths[i] bytes each; lengths NULL: each a NUL-terminated string),
 * count of the shape of them. Errors: INVALID_ARGUMENT (rank, dims, a NULL
 * string), RESOURCE_EXHAUSTED. */
WF_API wf_tensor *wf_tensor_new_strings(const int64_t *dims, int rank,
                                        const char *const *strings,
                                        const size_t *lengths, wf_status *st);
/* Element i of a string tensor, NUL-terminated, and its length in *len
 * (may be NULL); valid while a reference is held. NULL for a tensor of
 * another dtype or an i outside [0, count). */
WF_API const char *wf_tensor_string(const wf_tensor *t, int64_t i,
                                    size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_TENSOR_H */
