/* core/graph/tensor_internal.h — the tensor object behind weft/tensor.h. */
#ifndef WF_CORE_TENSOR_H
#define WF_CORE_TENSOR_H

#include <stdatomic.h>
#include <weft/status.h>
#include <weft/tensor.h>

/* One past the last dtype this core knows: WF_DTYPE_COUNT counts only the
 * dtypes of fixed element size (weft/types.h), WF_STRING lies past it. */
#define WF__DTYPE_END (WF_STRING + 1)
/* Every dtype bit an op or kernel may name. */
#define WF__DTYPES_KNOWN (WF_DTYPES_ALL | WF_DTYPE_BIT(WF_STRING))

struct wf_tensor {
  wf_dtype dtype;
  wf_shape shape; /* always fully known */
  atomic_long refs;
  void *data; /* 64-byte aligned for host tensors we allocate */
  size_t nbytes;
  /* Wrapped buffers and arena views: called once with (data, nbytes,
   * dealloc_arg) when the last reference goes; NULL for buffers allocated
   * with the tensor. */
  wf_dealloc_fn *dealloc;
  /* Wrapped buffers and views: dealloc's argument. Buffers allocated with
   * the tensor: the wf__meter counting it, or NULL. */
  void *dealloc_arg;
  int wrapped;          /* WF__TENSOR_*: whose the buffer and the struct are */
  uint32_t epoch;       /* the meter's step when the tensor was counted */
  /* The device whose memory holds the buffer (a device with its own copy
   * function, core/plugin/runtime_internal.h); NULL for host memory. Device buffers are
   * always WRAPPED, their dealloc giving them back to the device. */
  const struct wf__device *mem;
  /* 0, or the content's version while a variable holds the tensor as its
   * value or nodes hold it as an attribute (wf__tensor_stamp): see the
   * host table's tensor_version. */
  atomic_uint_fast64_t version;
  /* The nodes holding it as a tensor attribute (wf__tensor_attr_hold). */
  atomic_int attr_holds;
};

/* wf_tensor.wrapped. Only OWNED and VIEW buffers may ever be written over
 * an input in place: a wrapped buffer may be shared with its parent or be
 * the caller's. Anything but OWNED counts as "not the core's" for code that
 * must copy what it keeps (a variable's value). */
#define WF__TENSOR_OWNED 0   /* struct and buffer in one core block */
#define WF__TENSOR_WRAPPED 1 /* wf_tensor_wrap: someone else's buffer */
#define WF__TENSOR_VIEW 2    /* a planned output: the struct and buffer belong
                                to a step's arena (core/compile/memplan.h); the last
                                release calls dealloc and frees nothing */

/* Counts the bytes of live OWNED tensors made for the steps of one step
 * state: what a step allocated beyond its arena (core/compile/memplan.c
 * makes one per arena and reads it; tensors count themselves in and out). */
typedef struct wf__meter {
  atomic_long refs;  /* the arena's, and one per counted tensor */
  atomic_uint epoch; /* the step being counted */
  atomic_llong live; /* bytes of its step's counted tensors alive now */
  atomic_llong peak; /* the most live has been in its step */
} wf__meter;

/* Counts nbytes more live for the meter's current step (and keeps m). */
void wf__meter_add(wf__meter *m, size_t nbytes);
/* A counted tensor of step `epoch` went: nbytes fewer live if that is still
 * the current step; drops the tensor's hold on m. */
void wf__meter_drop(wf__meter *m, size_t nbytes, uint32_t epoch);
/* Drops one hold on m; the last frees it. */
void wf__meter_unref(wf__meter *m);

/* Checks that the nbytes at data are a string tensor's buffer of count
 * elements (weft/tensor.h): 0, or INVALID_ARGUMENT saying what is wrong. */
int wf__strings_check(const void *data, size_t nbytes, int64_t count,
                      wf_status *st);

/* Makes t (storage the caller owns) a VIEW of nbytes at data, with one
 * reference; done(data, nbytes, arg) runs when the last one goes. */
void wf__tensor_init_view(wf_tensor *t, wf_dtype dtype, const wf_shape *shape,
                          void *data, size_t nbytes, wf_dealloc_fn *done,
                          void *arg);

/* A new OWNED tensor like wf__tensor_new_shape, counted by m (may be NULL)
 * from now until its last release, for m's step `epoch`. */
wf_tensor *wf__tensor_new_metered(wf_dtype dtype, const wf_shape *shape,
                                  wf__meter *m, uint32_t epoch, wf_status *st);

/* wf_tensor_new taking a wf_shape (the host table's form); the shape must be
 * fully known. */
wf_tensor *wf__tensor_new_shape(wf_dtype dtype, const wf_shape *shape,
                                wf_status *st);

/* A tensor sharing t's buffer under another shape of the same element
 * count (the host table's tensor_reshape). */
wf_tensor *wf__tensor_reshape(wf_tensor *t, const wf_shape *shape,
                              wf_status *st);

/* The cache of freed large tensor blocks (core/graph/tensor.c): empties it (and
 * reads $WEFT_TENSOR_CACHE_MB again), and how many bytes it holds. */
void wf__tensor_cache_clear(void);
size_t wf__tensor_cache_bytes(void);

/* ---- device memory (core/plugin/device_memory.h) ---------------------- */

/* Where t's values are, for messages: "host memory" or the device's name
 * ("cuda:0"). */
const char *wf__tensor_memory_name(const wf_tensor *t);

/* Content versions (the host table's tensor_version, weft/plugin.h).
 * wf__tensor_stamp gives t a version no tensor had before and returns it:
 * called while a variable holds t as its value, when it becomes the value
 * and each time it is locked for an in-place update, so that while t's
 * version stays the same its bytes do too (the only other holders may not
 * write it: weft/tensor.h). wf__tensor_unstamp makes it 0 ("not known")
 * when the variable lets go of t, after which its last holder may write
 * it unseen.
 * wf__tensor_attr_hold counts a node taking t (OWNED) as a tensor
 * attribute, which nobody writes while a node holds it: the first one
 * stamps t; wf__tensor_attr_drop, when the node goes, unstamps it after
 * the last. (A variable letting go of the same tensor meanwhile makes it
 * 0 early: a lost shortcut, never a stale version.) */
uint64_t wf__tensor_stamp(wf_tensor *t);
void wf__tensor_unstamp(wf_tensor *t);
void wf__tensor_attr_hold(wf_tensor *t);
void wf__tensor_attr_drop(wf_tensor *t);
uint64_t wf__tensor_version(const wf_tensor *t);

/* Sets every member of t (storage the caller owns) for a tensor of dtype
 * and dims over data (nbytes), in host memory, with no reference yet. */
void wf__tensor_fill(wf_tensor *t, wf_dtype dtype, const int64_t *dims,
                     int rank, void *data, size_t nbytes);

/* Byte size of a tensor of dtype and shape, checking dtype, rank and every
 * dim; INVALID_ARGUMENT naming the problem otherwise. */
int wf__tensor_check(wf_dtype dtype, const int64_t *dims, int rank,
                     size_t *nbytes, wf_status *st);

/* IEEE half and bfloat16 to and from float (core/graph/dtype.c): exact widening;
 * narrowing rounds to nearest even, overflow to infinity, NaN stays NaN. */
float wf__half_to_float(uint16_t h);
/* Counts the NaN and Inf elements of t (a float dtype, in host memory):
 * adds them to *nan and *inf, sets *first to the index of the first one
 * (-1 when none) and returns how many there are. */
int64_t wf__tensor_count_nonfinite(const wf_tensor *t, int64_t *nan,
                                   int64_t *inf, int64_t *first);
uint16_t wf__float_to_half(float f);
float wf__bf16_to_float(uint16_t h);
uint16_t wf__float_to_bf16(float f);

#endif
