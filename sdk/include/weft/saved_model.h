/* weft/saved_model.h — saved models: a trained graph, its variables and
 * named signatures in one directory, to run elsewhere (`weft run`).
 *
 * A saved model is a directory holding
 *   model.json             the index: format version, producer, the files
 *                          below and the signatures (each input and output:
 *                          a key, the graph output it maps to, its dtype
 *                          and shape)
 *   graph.wfg              a graph file (weft/graph_file.h) with only the
 *                          nodes the signatures need
 *   variables.safetensors  a checkpoint (weft/checkpoint.h) of the
 *                          variables those nodes read
 * Exporting builds the new directory beside the old one and swaps it in
 * atomically, so a crash leaves either the old model or the new one. */
#ifndef WEFT_SAVED_MODEL_H
#define WEFT_SAVED_MODEL_H

#include <weft/export.h>
#include <weft/graph.h>
#include <weft/runtime.h>
#include <weft/session.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The saved-model format this build writes and reads. */
#define WF_SAVED_MODEL_FORMAT 1

/* One signature to export: inputs are outputs of Placeholder nodes, fed by
 * key; outputs are any graph outputs, fetched by key. Keys are unique within
 * their list, made of letters, digits, '_', '-' and '.'. All borrowed for the
 * call. */
typedef struct wf_signature_def {
  const char *name;
  int ninputs;
  const char *const *input_keys;
  const wf_output *inputs;
  int noutputs;
  const char *const *output_keys;
  const wf_output *outputs;
} wf_signature_def;

/* Writes a saved model of s's graph into dir: the nodes the signatures'
 * outputs need, and the current values of the variables those nodes read.
 * INVALID_ARGUMENT when a signature is malformed (an input that is not a
 * Placeholder output, a duplicate key or name, an output whose computation
 * does not come from the inputs and variables alone — e.g. one that reads an
 * input iterator); FAILED_PRECONDITION when a variable it needs has no value
 * yet; an I/O error naming the file. dir is replaced atomically; on error
 * the previous contents of dir are untouched. */
WF_API int wf_saved_model_export(wf_session *s, const char *dir,
                                 const wf_signature_def *sigs, int nsigs,
                                 wf_status *st);

typedef struct wf_saved_model wf_saved_model;

/* Loads the saved model in dir with rt's ops: the graph, a session on it
 * with the variables restored, and the signatures. Checks the index, the
 * graph file and the checkpoint (names, dtypes, shapes, checksums); every
 * error names the file and the problem. NULL on failure. The model (and rt,
 * which must outlive it) is freed with wf_saved_model_free. */
WF_API wf_saved_model *wf_saved_model_load(wf_runtime *rt, const char *dir,
                                           wf_status *st);
WF_API void wf_saved_model_free(wf_saved_model *m);

/* The loaded graph and its session: owned by the model. */
WF_API wf_graph *wf_saved_model_graph(const wf_saved_model *m);
WF_API wf_session *wf_saved_model_session(const wf_saved_model *m);

/* Signatures, in the order they were exported. Strings are borrowed until
 * the model is freed. */
WF_API int wf_saved_model_num_signatures(const wf_saved_model *m);
WF_API const char *wf_saved_model_signature_name(const wf_saved_model *m,
                                                 int i);
/* The index of the signature called name, or -1 (also for NULL when there
 * is more than one signature; NULL picks the only one). */
WF_API int wf_saved_model_find_signature(const wf_saved_model *m,
                                         const char *name);

/* A signature's input or output j: its key, dtype and shape (-1: any size
 * in that dimension). */
typedef struct wf_signature_arg {
  const char *key;
  const char *tensor; /* "node:slot" in the saved graph */
  wf_dtype dtype;
  wf_shape shape;
} wf_signature_arg;

WF_API int wf_saved_model_num_inputs(const wf_saved_model *m, int sig);
WF_API int wf_saved_model_num_outputs(const wf_saved_model *m, int sig);
WF_API void wf_saved_model_input(const wf_saved_model *m, int sig, int j,
                                 wf_signature_arg *out);
WF_API void wf_saved_model_output(const wf_saved_model *m, int sig, int j,
                                  wf_signature_arg *out);

/* Runs signature sig: inputs[j] feeds the input with key input_keys[j]
 * (every input exactly once, in any order; borrowed), outputs receives one
 * new tensor per signature output, in signature order (release each).
 * INVALID_ARGUMENT naming the key for an unknown, missing or repeated key,
 * or a tensor whose dtype or shape does not fit. Thread-safe. */
WF_API int wf_saved_model_run(wf_saved_model *m, int sig,
                              const char *const *input_keys,
                              wf_tensor *const *inputs, int ninputs,
                              wf_tensor **outputs, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_SAVED_MODEL_H */
