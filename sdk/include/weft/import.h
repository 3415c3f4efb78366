/* weft/import.h — models of other frameworks (ONNX, ...) through importer
 * plugins (wf_importer_def in weft/plugin.h): into a graph with its
 * signatures, or straight into a saved model (weft/saved_model.h) that
 * `weft run` and wf_saved_model_load take. */
#ifndef WEFT_IMPORT_H
#define WEFT_IMPORT_H

#include <weft/export.h>
#include <weft/graph.h>
#include <weft/runtime.h>
#include <weft/saved_model.h>
#include <weft/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_imported wf_imported;

/* Imports the model file at path with rt's importers: the one called
 * format, or (format NULL) the one whose extensions match path's name,
 * else the first whose sniff accepts the file's first bytes. Returns the
 * model (owned by the caller, wf_imported_free), or NULL with st set:
 * NOT_FOUND when the file is missing or no importer takes it (naming the
 * importers there are), the importer's own error (naming the file and
 * where in it) otherwise. */
WF_API wf_imported *wf_import(wf_runtime *rt, const char *path,
                              const char *format, wf_status *st);
WF_API void wf_imported_free(wf_imported *m);

/* The graph the importer built (owned by m). */
WF_API wf_graph *wf_imported_graph(const wf_imported *m);
/* The nodes that give the weights their imported values: run them once as
 * targets before anything else (borrowed; *n gets their count). */
WF_API wf_node *const *wf_imported_init(const wf_imported *m, int *n);
/* The signatures, the default first; borrowed until m is freed. */
WF_API int wf_imported_num_signatures(const wf_imported *m);
WF_API const wf_signature_def *wf_imported_signature(const wf_imported *m,
                                                     int i);
/* The importer used (its name, borrowed from the plugin). */
WF_API const char *wf_imported_format(const wf_imported *m);

/* Imports path as wf_import does and writes it into dir as a saved model
 * with its weights' values and every signature (dir replaced atomically;
 * untouched on error). */
WF_API int wf_import_saved_model(wf_runtime *rt, const char *path,
                                 const char *format, const char *dir,
                                 wf_status *st);

#ifdef __cplusplus
}
#endif
#endif
