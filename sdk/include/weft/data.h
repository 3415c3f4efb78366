/* weft/data.h — the input pipeline: datasets and the iterators that walk
 * them, and how a graph consumes an iterator.
 *
 * A dataset is an immutable description of a stream of elements; every
 * element has the same fields (named tensors). A dataset starts from files
 * that a reader plugin decodes into records, and grows by chaining stages:
 *
 *   wf_dataset *ds = wf_dataset_from_files(rt, "data/train-*.tst", NULL,
 *                                          NULL, 0, st);
 *   ds = wf_dataset_shuffle(ds, 10000, 42, st);
 *   ds = wf_dataset_map_scale(ds, "pixels", 1.0 / 255, 0.0, st);
 *   ds = wf_dataset_batch(ds, 64, 1, st);
 *   ds = wf_dataset_repeat(ds, -1, st);
 *   ds = wf_dataset_prefetch(ds, 2, st);
 *   if (!ds) ... st says which stage failed and why ...
 *
 * Each stage function takes over the caller's reference to its input (also
 * when it fails) and returns a new dataset; given a NULL input (the result
 * of a failed stage) it returns NULL and leaves st as the failed stage set
 * it, so a chain needs one check at its end. Datasets are reference
 * counted and may be shared between threads and iterators.
 *
 * An iterator walks a dataset: wf_iterator_next gives one element at a
 * time, WF_OUT_OF_RANGE at the end. Its position can be saved as bytes and
 * restored into a new iterator of the same dataset, so an interrupted epoch
 * resumes exactly where it stopped.
 *
 * A graph reads an iterator through the IteratorGetNext op (registered by
 * the core's "core-data" plugin): attach the iterator to a session under a
 * name, add the op with wf_graph_add_get_next, and every run that needs the
 * op's outputs pulls the next element. When the data is exhausted the run
 * fails with WF_OUT_OF_RANGE naming the iterator.
 *
 * Errors: a record that a reader reports as bad is WF_DATA_LOSS, naming the
 * file and the offset, line or record; the iterator stays usable and the
 * next call goes on with the next record (or such records are skipped and
 * counted, see wf_iterator_options). Every other error stops the iterator:
 * later calls return it again. */
#ifndef WEFT_DATA_H
#define WEFT_DATA_H

#include <weft/export.h>
#include <weft/graph.h>
#include <weft/runtime.h>
#include <weft/session.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_dataset wf_dataset;
typedef struct wf_iterator wf_iterator;

/* One field of a dataset's elements. */
typedef struct wf_data_field {
  const char *name; /* borrowed: valid while the dataset lives */
  wf_dtype dtype;
  wf_shape shape;   /* unknown dims where elements may differ (the batch
                       dimension of a batch that keeps its remainder) */
} wf_data_field;

/* ---- sources --------------------------------------------------------------- */

/* Records of the files that `pattern` names: one path, or a glob(7)
 * pattern whose matches are read in sorted order (a path that exists is
 * taken literally even when it holds glob characters). Files are read one
 * after the other unless wf_dataset_interleave says otherwise.
 *
 * format: the name of a reader ("idx") or one of the suffixes it declares
 * ("idx.gz"); NULL chooses each file's reader by the longest declared
 * suffix its name ends with. options (noptions items, copied) are passed to
 * every open of the reader; their names and types are the reader's (see
 * its doc). The first file is opened here to learn the record schema;
 * every later file must have the same one.
 *
 * rt must outlive the dataset. Returns a new dataset owned by the caller.
 * Errors: NOT_FOUND (no file matches, no reader for a file's name or for
 * `format`), INVALID_ARGUMENT (two readers claim the same suffix, bad
 * options), or the reader's error opening the first file. */
WF_API wf_dataset *wf_dataset_from_files(wf_runtime *rt, const char *pattern,
                                         const char *format,
                                         const wf_attr_item *options,
                                         int noptions, wf_status *st);

/* ---- stages (each takes over `in`; see the top of this file) -------------- */

/* Reads cycle_length files of the file source `in` at once, block_length
 * records from each in turn. When a file ends, the next unread file takes
 * its place in the cycle. INVALID_ARGUMENT when `in` is not a file source
 * (wf_dataset_from_files) or a length is below 1. */
WF_API wf_dataset *wf_dataset_interleave(wf_dataset *in, int cycle_length,
                                         int block_length, wf_status *st);

/* Pairs the elements of a and b: each element has a's fields, then b's.
 * Field names must differ between a and b (INVALID_ARGUMENT). The pair
 * ends when both end; when only one does, iteration fails with
 * INVALID_ARGUMENT saying which input ran out first (images and labels
 * read from separate files must match one to one). Takes over both. */
WF_API wf_dataset *wf_dataset_zip(wf_dataset *a, wf_dataset *b,
                                  wf_status *st);

/* Keeps element i of `in` (counting from 0 in each pass) when
 * i % num_shards == index, so the num_shards shards of one dataset cover
 * every element exactly once. INVALID_ARGUMENT unless
 * 0 <= index < num_shards. */
WF_API wf_dataset *wf_dataset_shard(wf_dataset *in, int64_t num_shards,
                                    int64_t index, wf_status *st);

/* Shuffles through a buffer of up to buffer_size elements: each output is
 * drawn uniformly from the buffer, which is refilled from `in`. The order
 * depends only on seed and the pass (each pass over the data, as repeat
 * starts it, draws a different order from the same seed). Memory grows
 * with the elements actually buffered. INVALID_ARGUMENT when
 * buffer_size < 1. */
WF_API wf_dataset *wf_dataset_shuffle(wf_dataset *in, int64_t buffer_size,
                                      uint64_t seed, wf_status *st);

/* Built-in maps: each replaces one field (by name) in every element.
 * NOT_FOUND when the field does not exist; INVALID_ARGUMENT when its dtype
 * does not suit the map. Applied after wf_dataset_batch they work on whole
 * batches. */
/* field -> float32 field * a + b (any numeric dtype in). */
WF_API wf_dataset *wf_dataset_map_scale(wf_dataset *in, const char *field,
                                        double a, double b, wf_status *st);
/* field -> field converted to dtype. Floats to integers truncate toward
 * zero and saturate at the integer type's range (NaN gives 0); integers to
 * narrower integers wrap; anything to bool is value != 0. */
WF_API wf_dataset *wf_dataset_map_cast(wf_dataset *in, const char *field,
                                       wf_dtype dtype, wf_status *st);
/* Integer field of shape S -> float32 of shape (S..., depth), 1 at the
 * field's value and 0 elsewhere; a value outside [0, depth) gives a row of
 * zeros. */
WF_API wf_dataset *wf_dataset_map_one_hot(wf_dataset *in, const char *field,
                                          int64_t depth, wf_status *st);

/* A graph function: fields in_fields[i] of each element (or batch) are fed
 * to inputs[i] (graph outputs, usually placeholders, of matching dtype and
 * compatible shape) and outputs[j] are fetched as fields out_fields[j]. An
 * output named like an existing field takes that field's place; other
 * outputs are appended after the element's fields. g must outlive the
 * dataset and its iterators and is not changed; each iterator runs it
 * through a session of its own. Names are copied. */
WF_API wf_dataset *wf_dataset_map_graph(wf_dataset *in, wf_graph *g,
                                        const char *const *in_fields,
                                        const wf_output *inputs, int ninputs,
                                        const char *const *out_fields,
                                        const wf_output *outputs,
                                        int noutputs, wf_status *st);

/* Stacks batch_size consecutive elements into one: each field gains a
 * leading dimension. Elements of one batch must have equal shapes
 * (iteration fails with INVALID_ARGUMENT naming the field otherwise). At
 * the end of a pass a smaller last batch is produced, or dropped when
 * drop_remainder is non-zero (then the batch dimension is known
 * statically). INVALID_ARGUMENT when batch_size < 1. */
WF_API wf_dataset *wf_dataset_batch(wf_dataset *in, int64_t batch_size,
                                    int drop_remainder, wf_status *st);

/* Produces up to buffer_size elements of `in` ahead on a background thread
 * of the iterator, so that reading and decoding overlap with the
 * consumer. The sequence is the same as without it. INVALID_ARGUMENT unless
 * 1 <= buffer_size <= 65536. */
WF_API wf_dataset *wf_dataset_prefetch(wf_dataset *in, int buffer_size,
                                       wf_status *st);

/* Keeps the elements of `in` in memory once a pass over it has completed;
 * later passes are served from memory without touching `in`. The memory is
 * the iterator's and is released with it. */
WF_API wf_dataset *wf_dataset_cache(wf_dataset *in, wf_status *st);

/* Passes over `in` count times (count -1: forever). A pass that produces
 * no element ends the repetition. INVALID_ARGUMENT when count < -1. */
WF_API wf_dataset *wf_dataset_repeat(wf_dataset *in, int64_t count,
                                     wf_status *st);

/* ---- datasets ---------------------------------------------------------------- */

/* Adds a reference and returns ds. Thread-safe. */
WF_API wf_dataset *wf_dataset_retain(wf_dataset *ds);
/* Drops a reference; the last one frees the description (and the inputs
 * it references). NULL is ignored. */
WF_API void wf_dataset_release(wf_dataset *ds);

WF_API int wf_dataset_num_fields(const wf_dataset *ds);
/* Fills *out with field i (0 <= i < num_fields). */
WF_API void wf_dataset_field(const wf_dataset *ds, int i, wf_data_field *out);
/* Index of the field called name, or -1. */
WF_API int wf_dataset_find_field(const wf_dataset *ds, const char *name);

/* The files of a file source (0 for other stages), and file i's path and
 * reader name (both borrowed from the dataset). */
WF_API int wf_dataset_num_files(const wf_dataset *ds);
WF_API const char *wf_dataset_file(const wf_dataset *ds, int i,
                                   const char **reader);

/* Counts the elements of one pass. A file source asks each reader for its
 * count when it has a cheap one and reads the records otherwise; other
 * datasets are iterated (records reported bad are not counted).
 * INVALID_ARGUMENT when the dataset repeats forever; errors as for
 * wf_iterator_next. */
WF_API int wf_dataset_count(wf_dataset *ds, int64_t *count, wf_status *st);

/* ---- iterators --------------------------------------------------------------- */

typedef struct wf_iterator_options {
  uint32_t struct_size;     /* sizeof(wf_iterator_options) */
  int32_t skip_bad_records; /* non-zero: records reported bad (DATA_LOSS)
                               are skipped and counted, not returned */
} wf_iterator_options;

#define WF_ITERATOR_OPTIONS_INIT                                               \
  { (uint32_t)sizeof(wf_iterator_options), 0 }

/* A new iterator at the start of ds (retained). options may be NULL for
 * the defaults. Files are opened and background threads started on the
 * first wf_iterator_next. Owned by the caller: wf_iterator_free, which
 * stops its threads and closes its files. */
WF_API wf_iterator *wf_iterator_new(wf_dataset *ds,
                                    const wf_iterator_options *options,
                                    wf_status *st);
WF_API void wf_iterator_free(wf_iterator *it);
/* The dataset walked (borrowed: valid while the iterator lives). */
WF_API wf_dataset *wf_iterator_dataset(const wf_iterator *it);

/* The next element: fields receives wf_dataset_num_fields new references
 * (release them). Returns WF_OK; WF_OUT_OF_RANGE at the end of the data
 * (st says so too; nothing is stored in fields; later calls return it
 * again until wf_iterator_reset); WF_DATA_LOSS for a bad record (st names
 * file and position; the next call goes on after it);
 * WF_RESOURCE_EXHAUSTED when memory ran out — after which a pipeline
 * ending in a prefetch over data that can be read again goes on with the
 * element it would have returned, and any other stops; or another error,
 * which stops the iterator. Thread-safe: calls are serialised. */
WF_API int wf_iterator_next(wf_iterator *it, wf_tensor **fields,
                            wf_status *st);
/* Starts the next pass over the data (after the end, or abandoning the
 * current one): as if repeat had started it, so shuffles draw the next
 * pass's order. Clears a stopped iterator's error. */
WF_API int wf_iterator_reset(wf_iterator *it, wf_status *st);
/* Records skipped as bad so far (with skip_bad_records). */
WF_API int64_t wf_iterator_bad_records(const wf_iterator *it);

/* The iterator's position, as a new rank-1 uint8 tensor (release it) that
 * wf_iterator_restore accepts on an iterator of the same dataset
 * description, in this process or another (of the same byte order). It
 * holds a fingerprint of the dataset description; for a file source, how
 * many files are done and each open file's reader position; the shard,
 * repeat and pass counters; a cache's progress (not its contents: a
 * restored cache reads its input again up to where it stopped). Shuffle,
 * batch and prefetch stages over data that can be read again (files, and
 * what cache, shard, zip, repeat and the built-in maps make of them; not a
 * graph map) save where to read again from, not what they hold: a shuffle
 * its input's position at the start of the pass and the elements it handed
 * out since (a restore re-reads and reshuffles them, the random state
 * following from seed and pass), a batch in progress its input's position
 * before its first element, a prefetch the position before the oldest
 * element not yet taken. Such a position takes a few hundred bytes however
 * large the buffers are, and restoring it costs up to one pass over the
 * shuffle's input. A shuffle over an input that never ends (a repeat(-1)
 * below it), and stages above one, save their buffered elements instead,
 * and so grow with their buffers. Prefetch threads pause while it is
 * taken. */
WF_API wf_tensor *wf_iterator_save(wf_iterator *it, wf_status *st);
/* Replaces the iterator's state with a saved position: the next element is
 * the one that followed when it was saved. The files open at that point
 * are opened again and sought. INVALID_ARGUMENT when the bytes are not a
 * position or come from another dataset description; a reader's error
 * when a file cannot be reopened or sought. On any error the iterator is
 * unchanged. */
WF_API int wf_iterator_restore(wf_iterator *it, const wf_tensor *position,
                               wf_status *st);

/* ---- graphs and sessions ------------------------------------------------------ */

/* Adds an IteratorGetNext node named `name` (NULL: made from the op) that
 * reads the iterator attached as `iterator` to the session running it;
 * output i is field i of ds's elements, typed and shaped as the dataset
 * says. ds is only read here. Returns the node (owned by the graph) or
 * NULL with st set. */
WF_API wf_node *wf_graph_add_get_next(wf_graph *g, const char *iterator,
                                      const wf_dataset *ds, const char *name,
                                      wf_status *st);

/* Makes it the iterator that IteratorGetNext nodes with attribute
 * iterator = name read in runs of s; it NULL detaches the name. The
 * session borrows it: keep it alive until the session is freed or the name
 * is detached, and neither detach nor free it while a run is in progress.
 * A name may be attached again to replace its iterator. */
WF_API int wf_session_attach_iterator(wf_session *s, const char *name,
                                      wf_iterator *it, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_DATA_H */
