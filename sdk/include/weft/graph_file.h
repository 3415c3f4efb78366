/* weft/graph_file.h — saving graphs to files and buffers and loading them
 * back.
 *
 * A graph file holds a graph's nodes in their order: names, ops, data and
 * control inputs, requested devices and every attribute (tensors bit for
 * bit). It holds no variable values (checkpoints do) and no shapes (they
 * are inferred again on loading). The format is protobuf, described field
 * by field in core/io/graph.proto of the source tree.
 *
 * Loading checks everything before the graph is returned: the ops must be
 * registered in the runtime (plugins supply them), every input must name
 * an earlier node and an output it has, attributes go through the same
 * validation as wf_node_desc_finish, tensors must hold as many bytes as
 * their dtype and dims say. Loading a file never runs anything. */
#ifndef WEFT_GRAPH_FILE_H
#define WEFT_GRAPH_FILE_H

#include <stddef.h>

#include <weft/export.h>
#include <weft/runtime.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The graph-file format version this weft writes, and the newest it
 * reads: files whose minimum reader version is above it are refused. */
#define WF_GRAPH_FILE_VERSION 1

/* Writes g to path atomically: into a new file beside it, flushed to disk,
 * then renamed over path (and the directory synced), so that path holds
 * either its old content or the whole graph, never a part. Returns WF_OK,
 * or: INVALID_ARGUMENT (an attribute holds a tensor that cannot be stored:
 * a resource handle), NOT_FOUND / PERMISSION_DENIED (the directory),
 * DATA_LOSS (a write failed; path is then untouched), RESOURCE_EXHAUSTED.
 * Messages name the file. Writing the same graph twice gives the same
 * bytes. */
WF_API int wf_graph_save(const wf_graph *g, const char *path, wf_status *st);

/* As wf_graph_save, keeping only what computing `outputs` and running
 * `targets` needs: those nodes and, transitively, the nodes they read from
 * or wait for (data and control inputs), in their original order. Nothing
 * is fed: every node the result needs is kept, placeholders included.
 * outputs and targets must belong to g (INVALID_ARGUMENT otherwise). */
WF_API int wf_graph_save_pruned(const wf_graph *g, const wf_output *outputs,
                                int noutputs, wf_node *const *targets,
                                int ntargets, const char *path, wf_status *st);

/* Serialises g into a new buffer: *buf (freed with free()) of *len bytes,
 * the bytes wf_graph_save would write. Errors as for wf_graph_save; *buf is
 * NULL then. */
WF_API int wf_graph_to_buffer(const wf_graph *g, void **buf, size_t *len,
                              wf_status *st);

/* Loads the graph file at path into a new graph whose ops come from rt.
 * Owned by the caller (wf_graph_free, before the runtime). NULL with st
 * set on any failure, naming the file, the node and the problem:
 * NOT_FOUND (no such file; an op no loaded plugin registers — the message
 * names the plugin that registered it when the file was written),
 * DATA_LOSS (not a graph file, truncated or corrupted: the message gives
 * the byte offset where decoding stopped when it can), UNIMPLEMENTED (the
 * file needs a newer reader: both versions are named), INVALID_ARGUMENT
 * (an input naming a later or missing node or a missing output, a
 * duplicate name, an attribute or tensor the op or dtype refuses),
 * RESOURCE_EXHAUSTED. */
WF_API wf_graph *wf_graph_load(wf_runtime *rt, const char *path, wf_status *st);

/* As wf_graph_load, from len bytes at buf (borrowed for the call). what
 * names the source in messages ("model.wfg", "request 12"); NULL: "buffer". */
WF_API wf_graph *wf_graph_from_buffer(wf_runtime *rt, const void *buf,
                                      size_t len, const char *what,
                                      wf_status *st);

/* What a graph file says about itself, read without building the graph
 * (so without the plugins its ops come from). */
typedef struct wf_graph_file_info {
  uint32_t struct_size;       /* sizeof(wf_graph_file_info), set by caller */
  int32_t format_version;     /* the version the writer followed */
  int32_t min_reader_version; /* the oldest reader that loads it */
  int32_t reserved_;
  int64_t num_nodes;
  int64_t file_bytes;
  char producer[128]; /* truncated to fit; "" if the file has none */
} wf_graph_file_info;

/* Fills *info (whose struct_size the caller sets) from the file at path.
 * The whole file is decoded, so DATA_LOSS reports a damaged file as
 * wf_graph_load would; a file that needs a newer reader is described, not
 * refused. Errors as for wf_graph_load, naming the file. */
WF_API int wf_graph_file_read_info(const char *path, wf_graph_file_info *info,
                                   wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_GRAPH_FILE_H */
