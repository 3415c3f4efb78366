/* weft/plugin.h — the plugin ABI: the one header a weft plugin includes.
 *
 * A plugin exports one entry point that returns a static description of
 * itself (name, version, what it registers). The core checks the ABI version
 * in that description before touching anything else, then calls the
 * plugin's optional init with a table of host functions, then registers the
 * plugin's static tables. A plugin never calls libweft directly and never
 * links against it: everything goes through the host table.
 *
 * Rules that keep this ABI stable:
 *  - every struct that crosses the boundary starts with WF_STRUCT_HEADER
 *    (its size and the ABI version it was built for);
 *  - structs only grow at their end within one ABI major; the core reads a
 *    member only when the struct's size covers it, and a plugin reads a
 *    host-table entry only when WF_HOST_HAS() says it is there;
 *  - a plugin built for a newer minor is capped to the core's minor (its
 *    extra members are ignored); a different major is refused. */
#ifndef WEFT_PLUGIN_H
#define WEFT_PLUGIN_H

#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WF_ABI_MAJOR 1
#define WF_ABI_MINOR 8

#if defined(__GNUC__)
#define WF_PLUGIN_EXPORT __attribute__((visibility("default")))
#define WF_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define WF_PLUGIN_EXPORT
#define WF_PRINTF_LIKE(f, a)
#endif

/* First members of every boundary struct. */
#define WF_STRUCT_HEADER                                                       \
  uint32_t struct_size;                                                        \
  uint16_t abi_major;                                                          \
  uint16_t abi_minor

/* Designated initialiser for the header of a struct of type T. */
#define WF_STRUCT_INIT(T)                                                      \
  .struct_size = (uint32_t)sizeof(T), .abi_major = WF_ABI_MAJOR,               \
  .abi_minor = WF_ABI_MINOR

/* True when a (possibly older) struct *p is large enough to hold member m. */
#define WF_STRUCT_HAS(p, T, m)                                                 \
  ((p)->struct_size >= offsetof(T, m) + sizeof(((T *)0)->m))
#define WF_HOST_HAS(host, m) WF_STRUCT_HAS(host, wf_host, m)
/* Element i of an array of size-headed structs the core handed over: the
 * core lays it out with its own struct_size, which may differ from the
 * plugin's sizeof. */
#define WF_STRUCT_AT(base, i)                                                  \
  ((__typeof__(base))((char *)(base) + (size_t)(i) * (base)->struct_size))

/* Structs the core gives a plugin to fill (wf_device_desc in enumerate,
 * wf_reader_field in a reader's field) arrive zeroed with their header set
 * for the core's version. A plugin writes members, never the header, and a
 * member added in a later minor only when WF_STRUCT_HAS(out, T, member)
 * says the core has room for it. */

/* ------------------------------------------------------------------------ */
/* Op definitions                                                           */

/* One input or output of an op. Arrays of these end with an element whose
 * struct_size is 0 (WF_ARG_END); elements are walked with their own
 * struct_size as the stride, so arrays from older minors still read right.
 *
 * An argument's type is either fixed (dtype) or taken from a dtype attribute
 * (type_attr). With number_attr set, the argument is a list of that many
 * tensors, all of the one type. An output without number_attr may instead
 * take its type from a list(dtype) attribute: it is then a list with one
 * tensor per item, each of that item's type (as IteratorGetNext's fields
 * are). */
typedef struct wf_arg_def {
  WF_STRUCT_HEADER;
  const char *name;
  int32_t dtype;           /* wf_dtype, or WF_DTYPE_INVALID with type_attr */
  int32_t reserved_;
  const char *type_attr;   /* name of a WF_ATTR_DTYPE attribute, or NULL */
  const char *number_attr; /* name of a WF_ATTR_INT attribute, or NULL */
  const char *doc;         /* shape in (N, C, H, W) style and meaning */
} wf_arg_def;

#define WF_ARG_END                                                             \
  { .struct_size = 0 }
/* A typed argument: WF_ARG_T("x", "T", "(N, D) input"). */
#define WF_ARG_T(nm, tattr, dc)                                                \
  {                                                                            \
    WF_STRUCT_INIT(wf_arg_def), .name = (nm), .type_attr = (tattr),            \
    .doc = (dc)                                                                \
  }
/* A fixed-type argument: WF_ARG_FIXED("shape", WF_INT64, "(R,) new shape"). */
#define WF_ARG_FIXED(nm, dt, dc)                                               \
  {                                                                            \
    WF_STRUCT_INIT(wf_arg_def), .name = (nm), .dtype = (dt), .doc = (dc)       \
  }
/* A list of N tensors of type T: WF_ARG_LIST("inputs", "T", "N", "..."). */
#define WF_ARG_LIST(nm, tattr, nattr, dc)                                      \
  {                                                                            \
    WF_STRUCT_INIT(wf_arg_def), .name = (nm), .type_attr = (tattr),            \
    .number_attr = (nattr), .doc = (dc)                                        \
  }

/* One attribute of an op. Arrays end with WF_ATTR_END, as for arguments. */
typedef struct wf_attr_def {
  WF_STRUCT_HEADER;
  const char *name;
  int32_t type;            /* wf_attr_type */
  int32_t has_default;     /* default_value is used when the attr is unset */
  wf_attr_value default_value;
  uint32_t allowed_dtypes; /* dtype attrs: WF_DTYPE_BIT mask; 0 = any */
  int32_t has_minimum;     /* ints: minimum value; lists: minimum length */
  int64_t minimum;
  const char *doc;
} wf_attr_def;

#define WF_ATTR_END                                                            \
  { .struct_size = 0 }

/* Op flags. */
#define WF_OP_STATEFUL UINT32_C(0x1)    /* has side effects or state: never merged or folded */
#define WF_OP_COMMUTATIVE UINT32_C(0x2) /* two inputs may be swapped */
#define WF_OP_RANDOM UINT32_C(0x4)      /* output is random: never merged or folded */
#define WF_OP_SOURCE_FED UINT32_C(0x8)  /* must be fed (Placeholder) */
/* Since 1.4: roles the core relies on, so that it names no op. */
/* Outputs its tensor attribute 'value' (of type attribute 'dtype'): shape
 * functions read its output as a known value (shape_input_value), and
 * constant folding makes nodes of the first op registered with the flag. */
#define WF_OP_CONSTANT UINT32_C(0x10)
/* Outputs the handle of the session's variable named by its string
 * attribute 'shared_name' ("" or absent: the node's name), of attributes
 * 'dtype' and 'shape': checkpoints and saved models find a graph's
 * variables by it. */
#define WF_OP_VARIABLE UINT32_C(0x20)
/* The ops automatic differentiation joins the gradient functions' nodes
 * with: */
/* OnesLike: ones of its one input's shape and dtype (the seed dy = 1). */
#define WF_OP_ONES_LIKE UINT32_C(0x40)
/* AddN: the sum of its one list input (number attribute 'N'), tensors of
 * one dtype and shape (gradients arriving at one output). */
#define WF_OP_ADD_N UINT32_C(0x80)
/* Concat: its one list input (number attribute 'N') joined along int
 * attribute 'axis' (the rows of several sparse gradients). */
#define WF_OP_CONCAT UINT32_C(0x100)
/* Cast: its one input converted to type attribute 'DstT' (int32 indices of
 * sparse gradients where they meet int64 ones). */
#define WF_OP_CAST UINT32_C(0x200)
/* UnsortedSegmentSumToShape: inputs (values, indices, dense_shape); zeros
 * of dense_shape with row k of values added at row indices[k] (a sparse
 * gradient made dense where it meets a dense one). */
#define WF_OP_SCATTER_ADD UINT32_C(0x400)

typedef struct wf_shape_ctx wf_shape_ctx;

/* Shape inference: read inputs and attributes through the host table's
 * shape_* entries and set every output's shape with shape_set_output.
 * Outputs left unset have unknown shape. Return 0, or a status code with
 * st set (host->status_set) when the inputs are incompatible. */
typedef int wf_shape_fn(wf_shape_ctx *ctx, wf_status *st);

typedef struct wf_op_def {
  WF_STRUCT_HEADER;
  const char *name;
  const wf_arg_def *inputs;  /* WF_ARG_END-terminated, or NULL for none */
  const wf_arg_def *outputs; /* WF_ARG_END-terminated, or NULL for none */
  const wf_attr_def *attrs;  /* WF_ATTR_END-terminated, or NULL for none */
  uint32_t flags;            /* WF_OP_* */
  int32_t reserved_;
  wf_shape_fn *shape_fn;     /* NULL: output shapes unknown */
  const char *doc;
} wf_op_def;

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */

typedef struct wf_kernel_ctx wf_kernel_ctx;

/* Kernel flags. */
#define WF_KERNEL_CHEAP UINT32_C(0x1) /* run inline by the executor */
#define WF_KERNEL_ASYNC UINT32_C(0x2) /* completes later through kernel_done */
/* Since 1.7: output 0 may be made over input 0. kernel_output_new for
 * output 0 may then hand back input 0's own tensor instead of a new one,
 * when nothing else can read it any more (the input slot holds its only
 * reference: no other reader, no fetch, no variable's value, not a feed
 * or a constant) and its dtype and shape are the output's. For kernels
 * whose element j of output 0 is the only one that reads element j of
 * input 0, reading it before writing it: elementwise ops (o[j] = f(x[j],
 * ...)), however their work is split over threads. A core older than 1.7
 * ignores the flag: the output is then always new. */
#define WF_KERNEL_IN_PLACE UINT32_C(0x4)

/* Optional per-node setup, once when an executor is built: may keep state
 * (cached primitives, parsed attributes) in *state. */
typedef int wf_kernel_create_fn(wf_kernel_ctx *ctx, void **state,
                                wf_status *st);
/* Runs the op: inputs are borrowed views valid for the call; outputs are
 * made with kernel_output_new or forwarded with kernel_output_set. */
typedef int wf_kernel_compute_fn(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st);
typedef void wf_kernel_destroy_fn(void *state);

/* A kernel is keyed by (op, device type, dtypes of its type attribute); of
 * several that match, the highest priority wins. */
/* The device type of a kernel that works on any device (since 1.2): it
 * only passes references and handles along, never touching elements in a
 * device's memory (variable handles, reads, assignments). A device type
 * without a kernel of its own for the op uses it. */
#define WF_KERNEL_ANY_DEVICE "*"

typedef struct wf_kernel_def {
  WF_STRUCT_HEADER;
  const char *op;
  const char *device_type; /* "cpu", "cuda", or WF_KERNEL_ANY_DEVICE */
  const char *type_attr; /* attribute the dtype mask applies to, or NULL */
  uint32_t dtypes;       /* WF_DTYPE_BIT mask of supported values of type_attr */
  int32_t priority;      /* reference kernels use 0 */
  uint32_t flags;        /* WF_KERNEL_* */
  int32_t reserved_;
  const char *label;     /* short name shown by `weft ops`, e.g. "reference" */
  wf_kernel_create_fn *create;   /* may be NULL */
  wf_kernel_compute_fn *compute; /* required */
  wf_kernel_destroy_fn *destroy; /* may be NULL */
  /* -- since 1.2 -- */
  /* For a device type with memory of its own (wf_device_def.copy): bit i
   * set when the kernel reads input i (host_inputs) or writes output i
   * (host_outputs) in host memory rather than in the device's: shapes,
   * axes, sizes, scalars the host code needs. Bits past 63 cannot be set:
   * those inputs and outputs are always in the device's memory. Resource
   * handles (WF_RESOURCE) and strings are always host memory. Ignored on
   * devices without memory of their own. */
  uint64_t host_inputs;
  uint64_t host_outputs;
  /* -- since 1.3 -- */
  /* Optional: 0 when this kernel cannot run node (an attribute value, a
   * rank or a shape it does not handle), so the next kernel by priority
   * (or another device) is chosen instead; 1 when it can. Asked while the
   * node is placed, with the host's node_* entries to read it; it must not
   * keep node. Without it the kernel takes every node of its dtypes. */
  int (*supports)(const wf_node *node);
  /* -- since 1.4 -- */
  /* Optional: the step whose kernel_step is step failed on this task
   * before this node ran, so it never will in that step. A kernel that
   * other processes meet in the same step (a collective) tells them here,
   * so that their step fails too instead of waiting for this one. Called
   * once per node and failed step, from an executor thread; must not
   * block. */
  void (*skipped)(void *state, int64_t step);
} wf_kernel_def;

/* ------------------------------------------------------------------------ */
/* Gradients                                                                */

typedef struct wf_grad_ctx wf_grad_ctx;

/* Builds the gradient of one node into the graph through the host table. */
typedef int wf_grad_fn(wf_grad_ctx *ctx, wf_status *st);

#define WF_GRAD_NOT_DIFFERENTIABLE UINT32_C(0x1) /* registered: no gradient flows */

typedef struct wf_gradient_def {
  WF_STRUCT_HEADER;
  const char *op;
  uint32_t flags;  /* WF_GRAD_* */
  int32_t reserved_;
  wf_grad_fn *fn;  /* NULL only with WF_GRAD_NOT_DIFFERENTIABLE */
} wf_gradient_def;

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */

/* One device instance, filled by a device type's enumerate. */
typedef struct wf_device_desc {
  WF_STRUCT_HEADER;
  char name[64];          /* "cpu:0" */
  char description[1024]; /* human-readable: cores, memory, caches, bus id */
  int32_t available;      /* 0: present but unusable, see reason */
  int32_t reserved_;
  char reason[256];
  void *state;            /* the device's own, passed back to alloc/free */
  /* The processing units this device's executor threads should run on, in
   * hwloc's list syntax ("0-3,8"); "" for no preference. Check with
   * WF_STRUCT_HAS before writing it. */
  char cpus[256];
} wf_device_desc;

typedef struct wf_device_def {
  WF_STRUCT_HEADER;
  const char *type; /* "cpu", "cuda" */
  const char *doc;
  /* Fills up to max instances; returns how many, or -1 with st set. */
  int (*enumerate)(void *plugin_state, wf_device_desc *out, int max,
                   wf_status *st);
  void *(*alloc)(void *device_state, size_t bytes, size_t align);
  void (*free)(void *device_state, void *ptr, size_t bytes);
  /* -- since 1.2 -- */
  /* Set by a device type with memory of its own (a GPU): the core then
   * keeps the tensors of the kernels placed on it in that memory (made
   * with alloc, given back with free, which may happen while work the
   * device queued earlier still reads it: the device orders reuse after
   * that work) and moves tensors between it and host memory with copy at
   * the borders of its partitions. Kernels on such a device get device
   * pointers from tensor_data, except for the inputs and outputs their
   * kernel_def marks as host memory; they may queue work and return
   * before it is done, as long as the device runs it in the order it was
   * queued and copy waits for it. NULL: the device computes in host
   * memory (the CPU).
   *
   * Copies bytes (> 0) from src to dst, kind WF_COPY_*: to the device
   * (src is host memory and may be reused once copy returns; device work
   * queued after the copy sees the data), to the host (returns when dst
   * holds the data, after all work queued before on the device) or within
   * the device. Returns 0, or a WF_* code with st set. */
  int (*copy)(void *device_state, void *dst, const void *src, size_t bytes,
              int32_t kind, wf_status *st);
} wf_device_def;

/* wf_device_def.copy's kinds. */
#define WF_COPY_TO_DEVICE 1
#define WF_COPY_TO_HOST 2
#define WF_COPY_ON_DEVICE 3

/* ------------------------------------------------------------------------ */
/* Readers and graph passes                                                 */

/* A data reader turns one file into records. The core's input pipeline
 * (weft/data.h) expands globs, shards, shuffles, batches and prefetches;
 * a reader only opens one file, describes its fields, and yields records
 * one at a time, each field a new tensor. */

/* One field of a reader's records. */
typedef struct wf_reader_field {
  WF_STRUCT_HEADER;
  char name[64];
  int32_t dtype;  /* wf_dtype */
  int32_t reserved_;
  wf_shape shape; /* per record; unknown dims for variable-length fields */
} wf_reader_field;

/* next's results besides a status code. */
#define WF_READER_RECORD 1 /* a record was produced */
#define WF_READER_END 0    /* no more records */
/* A negative return is -code with st set. -WF_DATA_LOSS means this record
 * was bad and skipped (st says where: file and offset or line); reading may
 * go on with the next one. Any other negative is fatal for the file. */

typedef struct wf_reader_def {
  WF_STRUCT_HEADER;
  const char *name;    /* "idx" */
  const char *formats; /* comma-separated file suffixes: "idx,idx.gz,ubyte.gz" */
  const char *doc;     /* what it reads and its options */
  /* Opens path with reader options (typed name/value pairs, documented in
   * doc; unknown names are INVALID_ARGUMENT). *rd is the reader's state. */
  int (*open)(const char *path, const wf_attr_item *options, int32_t nopts,
              void **rd, wf_status *st);
  /* The record schema (valid after open). */
  int32_t (*num_fields)(void *rd);
  void (*field)(void *rd, int32_t i, wf_reader_field *out);
  /* Produces the next record: fields[i] receives a new reference for each
   * field (made with host->tensor_new). Returns WF_READER_RECORD,
   * WF_READER_END, or a negative code (see above). */
  int (*next)(void *rd, wf_tensor **fields, wf_status *st);
  /* The position after the last record returned, as an opaque token that
   * seek accepts (a record number or a byte offset); 0 is the start. */
  uint64_t (*tell)(void *rd);
  int (*seek)(void *rd, uint64_t pos, wf_status *st);
  void (*close)(void *rd);
  /* Optional: the number of records without decoding them (-1 if unknown
   * cheaply), for `weft data count`. */
  int64_t (*count)(void *rd, wf_status *st);
} wf_reader_def;

/* Graph passes (run since 1.3). A pass rewrites the working graph of one
 * signature (a copy of the user's graph holding what the signature needs)
 * through the host's pass_* and node_* entries. Plugin passes run after the
 * core's CSE, constant folding and arithmetic passes and before dead-node
 * removal, in increasing `order` (then by name); each can be switched off
 * by name in the config ([passes] NAME = false). After each pass the core
 * checks the graph; a pass that returns an error or leaves a cycle has its
 * change discarded and is named in a warning (an error under [plugins]
 * strict). A pass must keep every fetched value and every stateful node's
 * effect; nodes it leaves unread drop out of what runs. */
typedef struct wf_pass_ctx wf_pass_ctx;

typedef struct wf_pass_def {
  WF_STRUCT_HEADER;
  const char *name; /* the config key that switches it ([passes]) */
  const char *doc;
  int32_t order; /* passes run in increasing order */
  int32_t reserved_;
  int (*run)(wf_pass_ctx *ctx, wf_status *st);
} wf_pass_def;

/* One node of a pattern for the host's pass_match (since 1.3). Pattern
 * node 0 is the root (the node a match starts from); node k > 0 must
 * produce input `parent_input` of pattern node `parent` (< k). */
typedef struct wf_pattern_node {
  WF_STRUCT_HEADER;
  const char *op;       /* the op, several as "Relu|Tanh", or NULL: any */
  int32_t parent;       /* -1 for the root */
  int32_t parent_input; /* which input of the parent it produces */
  /* Non-zero: the output the parent reads has no other reader and is not
   * fetched, so the node may be folded into a replacement. */
  int32_t single_use;
  int32_t reserved_;
} wf_pattern_node;

/* ------------------------------------------------------------------------ */
/* Importers (since 1.3)                                                    */

/* An importer builds a weft graph from a model file of another framework
 * (ONNX, ...) through the host's import_* entries: the model's inputs as
 * Placeholders, its weights as variables whose initial assignments it
 * marks with import_add_init, its computation as ordinary ops, and one or
 * more signatures. The core picks an importer by name (--format), by the
 * file's extension, or by asking each sniff function about the file's
 * first bytes, and turns the result into a graph or a saved model
 * (weft/import.h, `weft import`). */
typedef struct wf_import_ctx wf_import_ctx;

typedef struct wf_importer_def {
  WF_STRUCT_HEADER;
  const char *name;       /* "onnx": what --format names */
  const char *doc;
  const char *extensions; /* ".onnx" or ".a,.b": chosen by file name */
  /* Optional: 1 when the file's first n bytes (n <= 64) are this format's. */
  int (*sniff)(const void *head, size_t n);
  /* Reads the model at path and builds it; an error names the file and
   * where in it (the core discards whatever was built). */
  int (*import)(wf_import_ctx *ctx, const char *path, wf_status *st);
} wf_importer_def;

/* ------------------------------------------------------------------------ */
/* Transports (since 1.1)                                                   */

/* A transport joins the processes of one job: tasks 0 .. size-1, task 0
 * being the client that builds graphs and runs sessions, the others
 * workers (weft/cluster.h). It carries byte messages between tasks, each
 * under a 128-bit key that the core chooses (a channel and a sequence, or
 * a step and a transfer): a receive takes the one message from its source
 * with its key, whatever the order in which messages arrive, so concurrent
 * steps and several tensors never mix. The plugin also registers whatever
 * collective ops it provides (AllReduce, ...) as ordinary ops.
 *
 * Every function may be called from any thread once open returned. */

/* Completion of a receive, called once from the transport's own thread:
 * code 0 with the message (data valid during the call only), or a status
 * code and why (the peer failed, the receive was cancelled, ...). */
typedef void wf_transport_recv_fn(void *arg, int32_t code, const char *why,
                                  const void *data, size_t n);

typedef struct wf_transport_def {
  WF_STRUCT_HEADER;
  const char *name; /* "mpi": what [cluster] transport names */
  const char *doc;
  /* Joins the job (a process joins once; later opens from other runtimes
   * share it). *tp is the transport's handle for the calls below. */
  int (*open)(void *plugin_state, void **tp, wf_status *st);
  int32_t (*rank)(void *tp);
  int32_t (*size)(void *tp);
  /* Queues n bytes for task dst under key (hi, lo); data may be reused as
   * soon as send returns. Messages from one task to another under
   * different keys may arrive in any order. */
  int (*send)(void *tp, int32_t dst, uint64_t key_hi, uint64_t key_lo,
              const void *data, size_t n, wf_status *st);
  /* Asks for the message from task src under key (hi, lo): done(arg, ...)
   * runs once, when it arrives (at once if it already has) or when the
   * receive fails or is cancelled. One receive per (src, key). */
  int (*recv)(void *tp, int32_t src, uint64_t key_hi, uint64_t key_lo,
              wf_transport_recv_fn *done, void *arg, wf_status *st);
  /* Completes every pending receive whose key_hi equals key_hi with code
   * and why, and drops messages under that key_hi that arrive later or
   * arrived unclaimed (a step that failed). */
  void (*cancel)(void *tp, uint64_t key_hi, int32_t code, const char *why);
  /* Milliseconds since anything was last heard from task (the transport
   * exchanges heartbeats while open); -1 for this task itself. */
  int64_t (*silent_ms)(void *tp, int32_t task);
  /* Ends the whole job at once with an exit code (a task that cannot go
   * on and cannot tell the others). */
  void (*abort)(void *tp, int32_t code);
  /* Leaves the job: the last close of the process shuts the transport
   * down, after every queued send went out. */
  void (*close)(void *tp);
} wf_transport_def;

/* ------------------------------------------------------------------------ */
/* The host table                                                           */

#define WF_LOG_ERROR 0
#define WF_LOG_WARNING 1
#define WF_LOG_INFO 2
#define WF_LOG_DEBUG 3

typedef struct wf_host {
  WF_STRUCT_HEADER;
  /* -- since 1.0 -- */
  /* Memory that may cross the boundary in either direction. align is a
   * power of two (0 = 64). */
  void *(*alloc)(size_t bytes, size_t align);
  void (*free)(void *ptr);

  void (*status_set)(wf_status *st, int32_t code, const char *fmt, ...)
      WF_PRINTF_LIKE(3, 4);
  int32_t (*status_code)(const wf_status *st);
  const char *(*status_message)(const wf_status *st);
  void (*log)(int32_t level, const char *who, const char *fmt, ...)
      WF_PRINTF_LIKE(3, 4);

  /* Tensors (reference counted; see weft/tensor.h for the contracts). */
  wf_tensor *(*tensor_new)(int32_t dtype, const wf_shape *shape,
                           wf_status *st);
  wf_tensor *(*tensor_retain)(wf_tensor *t);
  void (*tensor_release)(wf_tensor *t);
  int32_t (*tensor_dtype)(const wf_tensor *t);
  void (*tensor_shape)(const wf_tensor *t, wf_shape *out);
  int64_t (*tensor_count)(const wf_tensor *t);
  size_t (*tensor_nbytes)(const wf_tensor *t);
  void *(*tensor_data)(const wf_tensor *t);

  /* Shape inference contexts (valid during a wf_shape_fn call). */
  int32_t (*shape_num_inputs)(const wf_shape_ctx *ctx);
  int32_t (*shape_num_outputs)(const wf_shape_ctx *ctx);
  /* Input i's dtype and shape; returns 0, or -1 when i is out of range. */
  int (*shape_input)(const wf_shape_ctx *ctx, int32_t i, int32_t *dtype,
                     wf_shape *shape);
  /* Input i's value when it is known while building (a Const), else NULL.
   * Borrowed: valid during the call. */
  const wf_tensor *(*shape_input_value)(const wf_shape_ctx *ctx, int32_t i);
  /* Attribute (with its default applied); returns 0, or -1 when absent. */
  int (*shape_attr)(const wf_shape_ctx *ctx, const char *name,
                    wf_attr_value *out);
  void (*shape_set_output)(wf_shape_ctx *ctx, int32_t i, const wf_shape *s);
  const char *(*shape_node_name)(const wf_shape_ctx *ctx);

  /* Kernel contexts (valid during create/compute). */
  int32_t (*kernel_num_inputs)(const wf_kernel_ctx *ctx);
  int32_t (*kernel_num_outputs)(const wf_kernel_ctx *ctx);
  /* Input i, borrowed for the call; NULL when the node has no input i. */
  const wf_tensor *(*kernel_input)(const wf_kernel_ctx *ctx, int32_t i);
  /* Allocates output i with the node's declared dtype; NULL with st set on
   * failure. The context keeps the reference. For a WF_KERNEL_IN_PLACE
   * kernel's output 0 it may be input 0 itself (see the flag). */
  wf_tensor *(*kernel_output_new)(wf_kernel_ctx *ctx, int32_t i,
                                  const wf_shape *shape, wf_status *st);
  /* Makes t (retained) output i: used to forward an input unchanged. */
  int (*kernel_output_set)(wf_kernel_ctx *ctx, int32_t i, wf_tensor *t,
                           wf_status *st);
  int (*kernel_attr)(const wf_kernel_ctx *ctx, const char *name,
                     wf_attr_value *out);
  int32_t (*kernel_output_dtype)(const wf_kernel_ctx *ctx, int32_t i);
  const char *(*kernel_node_name)(const wf_kernel_ctx *ctx);
  /* Asynchronous kernels: report completion, from any thread, exactly once.
   * code 0 (WF_OK) is success; otherwise fmt... says what went wrong. */
  void (*kernel_done)(wf_kernel_ctx *ctx, int32_t code, const char *fmt, ...)
      WF_PRINTF_LIKE(3, 4);
  /* The step counter of the run (0, 1, 2, ... per session): with the node
   * name it keys random streams, so values never depend on scheduling. */
  int64_t (*kernel_step)(const wf_kernel_ctx *ctx);

  /* Gradient contexts (valid during a wf_grad_fn call). The function reads
   * the forward node's inputs, outputs and the gradients arriving at its
   * outputs, adds nodes, and sets the gradient of each input it has one
   * for. Unset inputs get no gradient. */
  int32_t (*grad_num_inputs)(const wf_grad_ctx *ctx);
  int32_t (*grad_num_outputs)(const wf_grad_ctx *ctx);
  wf_output (*grad_input)(const wf_grad_ctx *ctx, int32_t i);
  wf_output (*grad_output)(const wf_grad_ctx *ctx, int32_t i);
  /* The gradient arriving at forward output i; node NULL when none does
   * (it is zero). At least one output has a gradient. */
  wf_output (*grad_output_grad)(const wf_grad_ctx *ctx, int32_t i);
  int (*grad_attr)(const wf_grad_ctx *ctx, const char *name,
                   wf_attr_value *out);
  /* Static dtype and shape of any tensor of the graph. */
  int (*grad_tensor_info)(const wf_grad_ctx *ctx, wf_output t, int32_t *dtype,
                          wf_shape *shape);
  /* Adds a node of op with inputs in order (an op's list argument takes as
   * many as its number attribute says, or all that the other arguments
   * leave) and attrs. Named under the gradient's scope. NULL with st set
   * when the node is refused. */
  wf_node *(*grad_add_node)(wf_grad_ctx *ctx, const char *op,
                            const wf_output *inputs, int32_t ninputs,
                            const wf_attr_item *attrs, int32_t nattrs,
                            wf_status *st);
  void (*grad_set_input_grad)(wf_grad_ctx *ctx, int32_t i, wf_output g);
  /* A sparse gradient: rows `indices` (int32/int64, (K,)) of a tensor of
   * shape `dense_shape` ((R,) int64) hold `values` ((K, ...)); repeated
   * indices add up. */
  void (*grad_set_input_grad_sparse)(wf_grad_ctx *ctx, int32_t i,
                                     wf_output indices, wf_output values,
                                     wf_output dense_shape);
  const char *(*grad_node_name)(const wf_grad_ctx *ctx);

  /* Variables: state owned by the session, reached through WF_RESOURCE
   * handle tensors. A read returns a snapshot: the value before or after
   * any one update, never a mix (an update made while readers hold the old
   * value writes into a copy). */
  /* The handle of the variable a VarHandle-like node names (attr
   * "shared_name", else the node name; "dtype" and "shape" attrs), created
   * uninitialised on first use. Output 0 is set to it. */
  int (*kernel_variable)(wf_kernel_ctx *ctx, wf_status *st);
  /* A new reference to the current value; FAILED_PRECONDITION naming the
   * variable when it was never assigned. */
  wf_tensor *(*var_read)(const wf_tensor *handle, wf_status *st);
  /* Makes value (retained) the variable's value; dtype and shape must
   * match the variable's. */
  int (*var_assign)(const wf_tensor *handle, wf_tensor *value,
                    wf_status *st);
  /* Locks the variable for an in-place update and returns its value to
   * write (borrowed until var_unlock). Lock several in increasing handle
   * order (var_order) to avoid deadlock. */
  wf_tensor *(*var_lock)(const wf_tensor *handle, wf_status *st);
  void (*var_unlock)(const wf_tensor *handle);
  /* A total order of variables for locking several. */
  int (*var_order)(const wf_tensor *a, const wf_tensor *b);
  const char *(*var_name)(const wf_tensor *handle);

  /* A new tensor of the same dtype and element count as t, with another
   * shape, sharing t's buffer (t stays alive as long as the view). For
   * Reshape-like kernels, with kernel_output_set. */
  wf_tensor *(*tensor_reshape)(wf_tensor *t, const wf_shape *shape,
                               wf_status *st);

  /* The thread split of the runtime: executor (inter-op) threads, and the
   * threads a kernel library may use inside one op (intra-op). Together
   * they never exceed the cores unless the config says so. */
  void (*threads)(int32_t *inter_op, int32_t *intra_op);

  /* A number or boolean setting of the config of the runtime being created
   * (valid in init and in a device type's enumerate): [devices]
   * cpu_devices, [threads] pin, ... -1 outside those calls or for a key
   * that is not a number. */
  int64_t (*config_int)(const char *section, const char *key);

  /* -- since 1.2 -- */
  /* The state (wf_device_desc.state) of the device the kernel's node was
   * placed on; NULL outside an executor (a kernel run by constant
   * folding). */
  void *(*kernel_device_state)(const wf_kernel_ctx *ctx);

  /* -- since 1.3 -- */
  /* Nodes, as graph passes (and importers) read them. The strings are
   * borrowed from the graph (valid during the pass). */
  const char *(*node_op)(const wf_node *n);
  const char *(*node_name)(const wf_node *n);
  const char *(*node_device)(const wf_node *n); /* "" when none was asked */
  int32_t (*node_num_inputs)(const wf_node *n);
  wf_output (*node_input)(const wf_node *n, int32_t i);
  int32_t (*node_num_outputs)(const wf_node *n);
  /* Output i's dtype and static shape; 0, or -1 when i is out of range. */
  int (*node_output_info)(const wf_node *n, int32_t i, int32_t *dtype,
                          wf_shape *shape);
  /* Attribute name (defaults applied); 0, or -1 when absent. */
  int (*node_attr)(const wf_node *n, const char *name, wf_attr_value *out);
  int32_t (*node_num_control_inputs)(const wf_node *n);
  wf_node *(*node_control_input)(const wf_node *n, int32_t i);

  /* Graph passes (valid during a wf_pass_def.run call). Nodes are numbered
   * 0 .. pass_num_nodes - 1; nodes a pass adds get the next numbers, so a
   * pass may walk while it adds. */
  int32_t (*pass_num_nodes)(const wf_pass_ctx *ctx);
  wf_node *(*pass_node)(const wf_pass_ctx *ctx, int32_t i);
  /* How many inputs of nodes read output o; whether the signature fetches
   * it (a fetched value must stay). */
  int32_t (*pass_num_consumers)(const wf_pass_ctx *ctx, wf_output o);
  int (*pass_is_fetched)(const wf_pass_ctx *ctx, wf_output o);
  /* Matches pattern (n nodes, see wf_pattern_node) at root: 1 with out[k]
   * the node matching pattern node k, else 0. */
  int (*pass_match)(const wf_pass_ctx *ctx, wf_node *root,
                    const wf_pattern_node *pattern, int32_t n, wf_node **out);
  /* Adds a node of op with inputs in order (a list argument takes as many
   * as its number attribute says, or all the other arguments leave) and
   * attrs; name NULL: made from the op; device: the device request (a
   * replacement usually takes node_device of what it replaces), NULL for
   * none. NULL with st set when the node is refused. */
  wf_node *(*pass_add_node)(wf_pass_ctx *ctx, const char *op,
                            const char *name, const char *device,
                            const wf_output *inputs, int32_t ninputs,
                            const wf_attr_item *attrs, int32_t nattrs,
                            wf_status *st);
  /* Every reader of old, and the signature's fetches of it, read `with`
   * instead (same dtype): how a pass replaces a subgraph. A fetch stays on
   * old when `with` is a fed value (a signature never fetches what it
   * feeds). */
  int (*pass_replace)(wf_pass_ctx *ctx, wf_output old, wf_output with,
                      wf_status *st);
  /* Input i of n reads src instead (same dtype). */
  int (*pass_set_input)(wf_pass_ctx *ctx, wf_node *n, int32_t i,
                        wf_output src, wf_status *st);
  int (*pass_add_control_edge)(wf_pass_ctx *ctx, wf_node *from, wf_node *to,
                               wf_status *st);
  void (*pass_remove_control_edge)(wf_pass_ctx *ctx, wf_node *from,
                                   wf_node *to);

  /* Output i's shape as the op's shape function gives it for the inputs
   * of this call (valid during compute): what a kernel allocates, so it
   * need not derive or re-check shapes itself. The shape function sees
   * the values of the inputs in host memory through shape_input_value (a
   * shape vector that is no Const). 0, or the code with st set: an output
   * index out of range, or the shape function's own error for inputs the
   * op refuses. */
  int (*kernel_output_shape)(const wf_kernel_ctx *ctx, int32_t i,
                             wf_shape *shape, wf_status *st);

  /* Importers (valid during a wf_importer_def.import call). Nodes are
   * added as pass_add_node adds them (device NULL: none asked); a name
   * already taken is refused (ALREADY_EXISTS). */
  wf_node *(*import_add_node)(wf_import_ctx *ctx, const char *op,
                              const char *name, const wf_output *inputs,
                              int32_t ninputs, const wf_attr_item *attrs,
                              int32_t nattrs, wf_status *st);
  /* The node called name, or NULL. */
  wf_node *(*import_find_node)(wf_import_ctx *ctx, const char *name);
  /* Node n (an assignment of a weight's value) runs once, before the model
   * is first used or saved. */
  int (*import_add_init)(wf_import_ctx *ctx, wf_node *n, wf_status *st);
  /* A signature: inputs (outputs of Placeholder nodes) and outputs under
   * keys (letters, digits, '_', '-', '.'); the first one added is the
   * default. Strings are copied. */
  int (*import_add_signature)(wf_import_ctx *ctx, const char *name,
                              const char *const *input_keys,
                              const wf_output *inputs, int32_t ninputs,
                              const char *const *output_keys,
                              const wf_output *outputs, int32_t noutputs,
                              wf_status *st);

  /* -- since 1.4 -- */
  /* How many nodes wait for n through control edges: a pass must not
   * drop a node that others wait for, since they would wait for a node
   * that no longer runs. */
  int32_t (*node_num_control_consumers)(const wf_node *n);
  /* 1 when a device that `device` names ("cpu", "cpu:1", "/device:cuda:0";
   * NULL or "": any available device) has a kernel for op with dtype
   * (its type attribute) that the config's [kernels] rules allow, else 0:
   * how a pass makes sure the node it is about to add can run. */
  int (*pass_has_kernel)(const wf_pass_ctx *ctx, const char *op,
                         const char *device, int32_t dtype);
  /* var_lock for a kernel: the variable's value moves to the memory of
   * the device the kernel's node was placed on (it stays there for the
   * next update). Kernels use this one; var_lock without a context is
   * kept for plugins built against 1.0-1.3. */
  wf_tensor *(*kernel_var_lock)(const wf_kernel_ctx *ctx,
                                const wf_tensor *handle, wf_status *st);

  /* -- since 1.5 -- */
  /* A version of t's bytes, or 0 when the core cannot vouch for them.
   * Non-zero while a variable holds t as its value: then every write goes
   * through var_lock, and each lock and unlock gives t a version no tensor
   * had before, so while the number stays the same, t's bytes do too.
   * Non-zero too while a node holds t, a tensor of the core's own, as an
   * attribute (a Const's value), which nobody writes. A kernel that keeps
   * something made from an input (oneDNN's reordered weights) keeps its
   * address and version and checks both on the next call; on 0 it must
   * compare the bytes themselves. */
  uint64_t (*tensor_version)(const wf_tensor *t);
  /* Importers: adds the gradient of the sum of y's elements with respect
   * to each of xs (outputs of the model's nodes) as weft's autodiff does
   * (wf_graph_add_gradients in weft/gradients.h, gradients made dense):
   * dxs[i] is it, or a NULL node when xs[i] does not affect y. 0, or the
   * code with st set: NOT_FOUND naming an op on the way that has no
   * gradient, INVALID_ARGUMENT for a y that is not a float tensor. */
  int (*import_add_gradients)(wf_import_ctx *ctx, wf_output y,
                              const wf_output *xs, int32_t nxs,
                              wf_output *dxs, wf_status *st);

  /* -- since 1.6 -- */
  /* String tensors (WF_STRING; their layout in weft/tensor.h): a new one
   * holding copies of strings[i] (lengths[i] bytes; lengths NULL: each
   * NUL-terminated), count of the shape of them; and element i of one
   * (NUL-terminated, its length in *len), NULL for another dtype or an i
   * out of range. kernel_output_new refuses string outputs: a kernel makes
   * its string output with tensor_new_strings and hands it over with
   * kernel_output_set. */
  wf_tensor *(*tensor_new_strings)(const wf_shape *shape,
                                   const char *const *strings,
                                   const size_t *lengths, wf_status *st);
  const char *(*tensor_string)(const wf_tensor *t, int64_t i, size_t *len);

  /* -- since 1.8 -- */
  /* Where a node of op with dtype (its type attribute) asking for device
   * (as in pass_has_kernel; NULL or "": no request) would be placed on its
   * own: the requested device when it has a kernel for it that the
   * config's [kernels] rules allow, else the first available device in
   * the runtime's device order that has one. Its index among the
   * runtime's devices, or -1 when none has. A pass that replaces nodes by
   * one of another op compares the new op's device with theirs, so that a
   * rewrite never moves work to another device (a fused op only the CPU
   * has, in a graph whose other nodes run on a GPU). */
  int32_t (*pass_kernel_device)(const wf_pass_ctx *ctx, const char *op,
                                const char *device, int32_t dtype);
} wf_host;

/* ------------------------------------------------------------------------ */
/* The plugin description and its entry point                              */

typedef struct wf_plugin_desc {
  WF_STRUCT_HEADER;
  const char *name;        /* unique plugin name: "ops-math" */
  const char *version;     /* the plugin's own version */
  const char *license;     /* SPDX identifier */
  const char *description;
  const char *const *requires; /* NULL-terminated plugin names, or NULL */
  /* What the plugin registers: NULL-terminated arrays of pointers, or NULL. */
  const wf_op_def *const *ops;
  const wf_kernel_def *const *kernels;
  const wf_gradient_def *const *gradients;
  const wf_device_def *const *devices;
  const wf_reader_def *const *readers;
  const wf_pass_def *const *passes;
  /* Optional: called once after the ABI check, before registration. Keep
   * host for later calls. A non-zero return refuses the plugin. */
  int (*init)(const wf_host *host, void **state, wf_status *st);
  /* Optional: called when the core unloads the plugin. */
  void (*fini)(void *state);
  /* -- since 1.1 -- */
  const wf_transport_def *const *transports;
  /* -- since 1.3 -- */
  const wf_importer_def *const *importers;
} wf_plugin_desc;

/* The entry point's name and type. */
#define WF_PLUGIN_ENTRY_NAME "weft_plugin"
typedef const wf_plugin_desc *wf_plugin_entry_fn(void);

/* Defines the entry point of module `mod` (the plugin file's base name, with
 * characters other than letters and digits as '_'), returning &desc. The
 * <mod>_LTX_ form is what libltdl finds in statically preloaded builds; the
 * plain form is kept for shared modules whose file was renamed. */
#define WF_PLUGIN_LTX_(mod) mod##_LTX_weft_plugin
#ifdef WF_PLUGIN_STATIC
#define WF_PLUGIN(mod, desc)                                                   \
  WF_PLUGIN_EXPORT const wf_plugin_desc *WF_PLUGIN_LTX_(mod)(void);            \
  const wf_plugin_desc *WF_PLUGIN_LTX_(mod)(void) { return &(desc); }
#else
#define WF_PLUGIN(mod, desc)                                                   \
  WF_PLUGIN_EXPORT const wf_plugin_desc *WF_PLUGIN_LTX_(mod)(void);            \
  WF_PLUGIN_EXPORT const wf_plugin_desc *weft_plugin(void);                    \
  const wf_plugin_desc *WF_PLUGIN_LTX_(mod)(void) { return &(desc); }          \
  const wf_plugin_desc *weft_plugin(void) { return &(desc); }
#endif

#ifdef __cplusplus
}
#endif
#endif /* WEFT_PLUGIN_H */
