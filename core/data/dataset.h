/* core/data/dataset.h — the input pipeline's internals shared by its files:
 * dataset descriptions (core/data/dataset.c), the stages an iterator runs
 * (core/data/iterator.c; files in core/data/data_source.c, maps in core/data/data_map.c,
 * prefetch in core/data/prefetch.c), the bytes of a saved position
 * (core/data/data_codec.c), and a session's attached iterators together with
 * the IteratorGetNext op (core/data/data_ops.c). */
#ifndef WF_CORE_DATASET_H
#define WF_CORE_DATASET_H

#include <stdatomic.h>
#include <weft/data.h>
#include <weft/tensor.h>

#include "exec/iterators.h"
#include "plugin/registry.h"

/* ---- descriptions ----------------------------------------------------------- */

typedef enum wf__ds_kind {
  WF__DS_FILES = 1,
  WF__DS_ZIP,
  WF__DS_SHARD,
  WF__DS_SHUFFLE,
  WF__DS_MAP,
  WF__DS_BATCH,
  WF__DS_PREFETCH,
  WF__DS_CACHE,
  WF__DS_REPEAT
} wf__ds_kind;

typedef enum wf__map_kind {
  WF__MAP_SCALE = 1,
  WF__MAP_CAST,
  WF__MAP_ONE_HOT,
  WF__MAP_GRAPH
} wf__map_kind;

typedef struct wf__field {
  char *name;
  wf_dtype dtype;
  wf_shape shape;
} wf__field;

struct wf_dataset {
  atomic_int refs;
  wf__ds_kind kind;
  wf_runtime *rt;
  wf_dataset *input;  /* NULL for files */
  wf_dataset *input2; /* zip's second input */
  wf__field *fields;  /* the element's fields */
  int nfields;
  int forever;          /* a repeat(-1) is part of the chain */
  uint64_t fingerprint; /* of the whole chain, for saved positions */
  union {
    struct {
      char **paths;
      const wf__reader **readers; /* per file */
      int nfiles;
      wf_attr_item *options; /* deep copies */
      int nopts;
      int cycle, block;
    } files;
    struct {
      int64_t n, index;
    } shard;
    struct {
      int64_t size;
      uint64_t seed;
    } shuffle;
    struct {
      wf__map_kind kind;
      int field; /* scale, cast, one_hot: the field replaced */
      double a, b;
      wf_dtype dtype;
      int64_t depth;
      /* graph: inputs[i] <- field in_fields[i]; outputs[j] -> field
       * out_slot[j] of the result; result field k not in out_slot is
       * input field k. */
      wf_graph *g;
      wf_output *inputs;
      int *in_fields;
      int nin;
      wf_output *outputs;
      int *out_slot;
      int nout;
    } map;
    struct {
      int64_t size;
      int drop;
    } batch;
    struct {
      int size;
    } prefetch;
    struct {
      int64_t count;
    } repeat;
  } u;
};

/* ---- stages ------------------------------------------------------------------- */

/* A stage's next returns one of these, or -code with st set. -WF_DATA_LOSS
 * is a bad record: the stage's state is consistent and the next call goes
 * on after it. So is -WF_RESOURCE_EXHAUSTED from a stage that `recovers`:
 * the next call goes on where the failed one would have. Any other
 * negative stops the iterator. */
#define WF__ELEMENT 1
#define WF__END 0

typedef struct wf__stage wf__stage;
typedef struct wf__wbuf wf__wbuf;
typedef struct wf__rbuf wf__rbuf;

/* next returns WF__ELEMENT, WF__END or -code; reset, save and restore
 * return WF_OK or a (positive) code, with st set. */
typedef struct wf__stage_ops {
  /* Stores nfields new references in out (only for WF__ELEMENT). */
  int (*next)(wf__stage *s, wf_tensor **out, wf_status *st);
  /* Starts the next pass over the data from any state. */
  int (*reset)(wf__stage *s, wf_status *st);
  /* Appends the stage's position (and its inputs') to w. */
  int (*save)(wf__stage *s, wf__wbuf *w, wf_status *st);
  /* Loads a position into a stage that was just created. */
  int (*restore)(wf__stage *s, wf__rbuf *r, wf_status *st);
  void (*free)(wf__stage *s);
} wf__stage_ops;

struct wf__stage {
  const wf__stage_ops *ops;
  const wf_dataset *ds; /* borrowed from the iterator's reference */
  int nfields;
  /* Its position (save) is a few bytes whatever it holds, and restoring it
   * re-reads the data: cheap to take per element, and what buffering
   * stages above it save instead of their buffered elements. */
  int compact;
  /* Running out of memory in next leaves it consistent (see above). */
  int recovers;
};

/* How a buffering stage (shuffle, batch, prefetch) saved its position: its
 * buffered elements themselves, or — over a compact input — where its
 * input stood and how many input calls it made since, so that a restore
 * re-reads (and reshuffles) to the same state. The first byte after the
 * stage's kind. */
#define WF__SAVED_DATA 0
#define WF__SAVED_REPLAY 1

/* Restores stage s from the nested position bytes[0..len) (all of them
 * must be used). Returns WF_OK or a positive code with st set. */
int wf__stage_restore_bytes(wf__stage *s, const void *bytes, size_t len,
                            wf_status *st);
/* Replaces w's bytes with s's position: WF_OK or a positive code. */
int wf__stage_save_into(wf__stage *s, wf__wbuf *w, wf_status *st);

/* The stages for ds and everything it reads (core/data/iterator.c). */
wf__stage *wf__stage_new(const wf_dataset *ds, wf_status *st);
void wf__stage_free(wf__stage *s);
/* Per-kind constructors; each takes over `input` (freed on failure). */
wf__stage *wf__source_stage_new(const wf_dataset *ds, wf_status *st);
wf__stage *wf__map_stage_new(const wf_dataset *ds, wf__stage *input,
                             wf_status *st);
wf__stage *wf__prefetch_stage_new(const wf_dataset *ds, wf__stage *input,
                                  wf_status *st);

/* Releases n field references (NULL entries allowed) and clears them. */
void wf__element_clear(wf_tensor **f, int n);

/* The reader that handles path (longest declared suffix) or is named by
 * format (a reader name or a declared suffix). NOT_FOUND or
 * INVALID_ARGUMENT (ambiguous) naming the file and the known formats. */
const wf__reader *wf__reader_for(const wf_runtime *rt, const char *path,
                                 const char *format, wf_status *st);
/* Opens path with reader r (checking first that it has every function the
 * pipeline calls). Returns 0, or -code with st naming the file. */
int wf__reader_open(const wf__reader *r, const char *path,
                    const wf_attr_item *options, int nopts, void **rd,
                    wf_status *st);
/* Turns a reader's failure (rc = -code, its status rst) into st, naming
 * path when the reader's message does not. Returns -code. */
int wf__reader_error(const wf__reader *r, const char *path, int rc,
                     const wf_status *rst, wf_status *st);

/* ---- positions (core/data/data_codec.c) ------------------------------------------ */

/* An append-only byte buffer; a failed allocation is remembered and
 * reported by wf__wbuf_finish. Integers are little-endian. */
struct wf__wbuf {
  unsigned char *data;
  size_t len, cap;
  int failed;
};

void wf__wbuf_u8(wf__wbuf *w, uint8_t v);
void wf__wbuf_u32(wf__wbuf *w, uint32_t v);
void wf__wbuf_u64(wf__wbuf *w, uint64_t v);
void wf__wbuf_bytes(wf__wbuf *w, const void *p, size_t n);
void wf__wbuf_str(wf__wbuf *w, const char *s); /* u32 length + bytes */
/* A tensor: dtype, rank, dims, then its bytes in host order. */
void wf__wbuf_tensor(wf__wbuf *w, const wf_tensor *t);
/* nfields tensors. */
void wf__wbuf_element(wf__wbuf *w, wf_tensor *const *f, int nfields);
/* RESOURCE_EXHAUSTED when an append failed. */
int wf__wbuf_check(const wf__wbuf *w, wf_status *st);
void wf__wbuf_deinit(wf__wbuf *w);

/* A bounds-checked reader of saved bytes. Every read fails with
 * INVALID_ARGUMENT naming the byte offset and what was being read when the
 * bytes end or hold impossible values; nothing is allocated beyond what
 * the remaining bytes can describe. */
struct wf__rbuf {
  const unsigned char *data;
  size_t len, pos;
};

int wf__rbuf_u8(wf__rbuf *r, uint8_t *v, const char *what, wf_status *st);
int wf__rbuf_u32(wf__rbuf *r, uint32_t *v, const char *what, wf_status *st);
int wf__rbuf_u64(wf__rbuf *r, uint64_t *v, const char *what, wf_status *st);
int wf__rbuf_i64(wf__rbuf *r, int64_t *v, const char *what, wf_status *st);
/* A count of items of at least min_item bytes each that must still fit. */
int wf__rbuf_count(wf__rbuf *r, uint64_t *n, size_t min_item,
                   const char *what, wf_status *st);
/* A borrowed view of n bytes. */
int wf__rbuf_bytes(wf__rbuf *r, const void **p, size_t n, const char *what,
                   wf_status *st);
int wf__rbuf_tensor(wf__rbuf *r, wf_tensor **t, const char *what,
                    wf_status *st);
/* nfields tensors, each checked against ds's field (dtype, compatible
 * shape). On error nothing is stored. */
int wf__rbuf_element(wf__rbuf *r, const wf_dataset *ds, wf_tensor **f,
                     const char *what, wf_status *st);
/* A stage's tag: each stage's position starts with its kind. */
int wf__rbuf_expect(wf__rbuf *r, wf__ds_kind kind, wf_status *st);

/* The core-data plugin: the IteratorGetNext op, its kernel and gradient
 * registration, added to every runtime by wf_runtime_new. */
const wf_plugin_desc *wf__data_ops(void);

#endif
