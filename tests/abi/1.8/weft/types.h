/* weft/types.h — plain types shared by the application API and the plugin ABI.
 *
 * Holds only type definitions and constants: no function is declared here, so
 * a plugin can include it without being tempted to call into libweft. The
 * numeric values of every enumerator are frozen for an ABI major version. */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: TensorFlow's canonical set, with the same numbers. */
typedef enum wf_code {
  WF_OK = 0,
  WF_CANCELLED = 1,
  WF_UNKNOWN = 2,
  WF_INVALID_ARGUMENT = 3,
  WF_DEADLINE_EXCEEDED = 4,
  WF_NOT_FOUND = 5,
  WF_ALREADY_EXISTS = 6,
  WF_PERMISSION_DENIED = 7,
  WF_RESOURCE_EXHAUSTED = 8,
  WF_FAILED_PRECONDITION = 9,
  WF_ABORTED = 10,
  WF_OUT_OF_RANGE = 11,
  WF_UNIMPLEMENTED = 12,
  WF_INTERNAL = 13,
  WF_UNAVAILABLE = 14,
  WF_DATA_LOSS = 15,
  WF_UNAUTHENTICATED = 16
} wf_code;

/* Element types. WF_DTYPE_INVALID is never the type of a tensor. */
typedef enum wf_dtype {
  WF_DTYPE_INVALID = 0,
  WF_FLOAT32 = 1,
  WF_FLOAT64 = 2,
  WF_FLOAT16 = 3,
  WF_BFLOAT16 = 4,
  WF_INT8 = 5,
  WF_UINT8 = 6,
  WF_INT32 = 7,
  WF_INT64 = 8,
  WF_BOOL = 9,
  /* A handle to state owned by a session (a variable): a scalar whose
   * element is opaque to everyone but the core. Never in WF_DTYPES_ALL. */
  WF_RESOURCE = 10,
  /* The number of dtypes whose elements have a fixed size: a table indexed
   * by dtype has WF_DTYPE_COUNT entries, and code that indexes one with a
   * dtype it did not choose checks it against WF_DTYPE_COUNT first. */
  WF_DTYPE_COUNT = 11,
  /* -- since ABI 1.6 -- */
  /* Byte strings of any length (weft/tensor.h, "String tensors"). Past
   * WF_DTYPE_COUNT, so that no table of an earlier plugin is indexed with
   * it, and in no WF_DTYPES_* set: a string tensor reaches only the ops and
   * kernels whose masks name WF_DTYPE_BIT(WF_STRING) (and passes and
   * importers, which see every node). */
  WF_STRING = 11
} wf_dtype;

/* Sets of dtypes as bit masks, for op type constraints and kernel keys. */
#define WF_DTYPE_BIT(t) (UINT32_C(1) << (unsigned)(t))
#define WF_DTYPES_FLOAT                                                        \
  (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64) |                       \
   WF_DTYPE_BIT(WF_FLOAT16) | WF_DTYPE_BIT(WF_BFLOAT16))
#define WF_DTYPES_INT                                                          \
  (WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_UINT8) | WF_DTYPE_BIT(WF_INT32) |   \
   WF_DTYPE_BIT(WF_INT64))
#define WF_DTYPES_NUMBER (WF_DTYPES_FLOAT | WF_DTYPES_INT)
#define WF_DTYPES_ALL (WF_DTYPES_NUMBER | WF_DTYPE_BIT(WF_BOOL))

/* Shapes. rank == -1: rank unknown; dims[i] == -1: that dimension unknown.
 * A scalar has rank 0. Ranks above WF_MAX_RANK are refused everywhere. */
#define WF_MAX_RANK 8
#define WF_UNKNOWN_RANK (-1)
#define WF_UNKNOWN_DIM (-1)

typedef struct wf_shape {
  int32_t rank;
  int32_t reserved_;
  int64_t dims[WF_MAX_RANK];
} wf_shape;

/* Attribute types. A list type is WF_ATTR_LIST | its element type. */
typedef enum wf_attr_type {
  WF_ATTR_NONE = 0,
  WF_ATTR_INT = 1,
  WF_ATTR_FLOAT = 2,
  WF_ATTR_BOOL = 3,
  WF_ATTR_STRING = 4,
  WF_ATTR_DTYPE = 5,
  WF_ATTR_SHAPE = 6,
  WF_ATTR_TENSOR = 7,
  WF_ATTR_LIST = 0x100
} wf_attr_type;

#define WF_ATTR_IS_LIST(t) (((t)&WF_ATTR_LIST) != 0)
#define WF_ATTR_BASE(t) ((t) & ~WF_ATTR_LIST)

/* Opaque handles. */
typedef struct wf_status wf_status;
typedef struct wf_tensor wf_tensor;
typedef struct wf_graph wf_graph;
typedef struct wf_node wf_node;

/* An output of a node: (node, output slot). */
typedef struct wf_output {
  wf_node *node;
  int32_t index;
} wf_output;

/* An attribute value as it crosses the API and the plugin boundary. Every
 * pointer in it is borrowed from whoever produced the value (the graph, a
 * static op definition) and lives as long as that producer says. */
typedef struct wf_attr_value {
  int32_t type;  /* wf_attr_type */
  int32_t reserved_;
  int64_t count; /* lists: number of items; scalars: 1 */
  union {
    int64_t i;
    double f;
    int32_t b;
    const char *s;
    int32_t dtype; /* wf_dtype */
    wf_shape shape;
    const wf_tensor *tensor;
    const int64_t *ints;
    const double *floats;
    const int32_t *bools;
    const char *const *strings;
    const int32_t *dtypes;
    const wf_shape *shapes;
    const wf_tensor *const *tensors;
  } u;
} wf_attr_value;

/* A named attribute value (for adding nodes through the host table). */
typedef struct wf_attr_item {
  const char *name;
  wf_attr_value value;
} wf_attr_item;

#ifdef __cplusplus
}
#endif
#endif /* WEFT_TYPES_H */
