/* weft/checkpoint.h — checkpoints: a session's variables, its step counter
 * and the positions of its input iterators in one safetensors file, with a
 * CRC-32C per tensor; directories of numbered checkpoints that survive a
 * crash at any moment; reading checkpoint files tensor by tensor.
 *
 * The file is plain safetensors (readable by other programs): tensors are
 * stored by name with their dtype and shape, little-endian and row-major.
 * weft adds metadata: "weft.format" = "1", "weft.crc32c/<tensor>" = its
 * CRC-32C as 8 hex digits, "weft.step" = the session's step counter,
 * "weft.global_step" = the step a training loop numbered the checkpoint
 * with. Iterator positions are U8 tensors named "weft.iterator/<name>".
 * Checksums are checked on every read. Files are written atomically: a
 * crash or a failed write leaves the previous file as it was.
 *
 * Errors common to this file: NOT_FOUND, PERMISSION_DENIED,
 * RESOURCE_EXHAUSTED (no space, a file size limit) or UNAVAILABLE when a
 * file cannot be opened, read or written; DATA_LOSS for a file that is not
 * well-formed safetensors or whose data fails its checksum; UNIMPLEMENTED
 * for a well-formed file weft cannot hold (a dtype it lacks, a rank above
 * WF_MAX_RANK). Every message names the file and the tensor or field. */
#ifndef WEFT_CHECKPOINT_H
#define WEFT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <weft/export.h>
#include <weft/session.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata keys and the tensor name prefix weft writes. */
#define WF_CHECKPOINT_STEP_KEY "weft.step"
#define WF_CHECKPOINT_GLOBAL_STEP_KEY "weft.global_step"
#define WF_CHECKPOINT_ITERATOR_PREFIX "weft.iterator/"

/* ---- sessions ------------------------------------------------------------ */

typedef struct wf_save_options {
  uint32_t struct_size;     /* sizeof(wf_save_options) */
  const char *const *names; /* only these variables ... */
  int32_t nnames;           /* ... (0: every initialised variable) */
  int32_t variables_only;   /* non-zero: no step counter, no iterators */
  int64_t global_step;      /* written as weft.global_step; -1: none */
} wf_save_options;

#define WF_SAVE_OPTIONS_INIT                                                   \
  { (uint32_t)sizeof(wf_save_options), NULL, 0, 0, -1 }

/* Writes a checkpoint of s to path, atomically. opt NULL (or
 * WF_SAVE_OPTIONS_INIT) saves every variable of the session that has a
 * value (optimizer slots and a global step variable are variables like
 * any other; variables never assigned are left out), the session's step
 * counter, and the position of every iterator attached to the session
 * (wf_session_attach_iterator). Each variable's value is a snapshot taken
 * under its lock; for one consistent state across variables, save while no
 * step runs. Errors: NOT_FOUND naming every name in opt->names that is not
 * a variable of the session, FAILED_PRECONDITION naming those that have no
 * value yet, INVALID_ARGUMENT for a variable whose name starts with
 * WF_CHECKPOINT_ITERATOR_PREFIX, an iterator's error naming it, or an I/O
 * error naming path (which is then as it was). */
WF_API int wf_session_save(wf_session *s, const char *path,
                           const wf_save_options *opt, wf_status *st);

typedef struct wf_restore_options {
  uint32_t struct_size;     /* sizeof(wf_restore_options) */
  int32_t partial;          /* non-zero: variables missing from the file
                               are left as they are */
  const char *const *names; /* only these variables ... */
  int32_t nnames;           /* ... (0: every variable) */
} wf_restore_options;

#define WF_RESTORE_OPTIONS_INIT                                                \
  { (uint32_t)sizeof(wf_restore_options), 0, NULL, 0 }

/* Restores s from the checkpoint at path. The variables restored are those
 * the session's graph declares (VarHandle nodes: the variable called
 * shared_name, or the node's name, with the node's dtype and shape) and
 * those the session already has, or only opt->names of them. Each must be
 * in the file (unless opt->partial) with the same dtype and shape, and its
 * data must pass its checksum. Every check is made before anything
 * changes: if any fails, nothing changes, and the error lists every
 * problem, each naming its variable: DATA_LOSS when a checksum failed,
 * INVALID_ARGUMENT otherwise (missing, another dtype or shape, a name that
 * is not a variable of the session or its graph). Variables the session
 * has not created yet are created, so a new session can restore without
 * running initialisers. Without opt->names, the session's step counter
 * (weft.step) and the position of each attached iterator saved in the file
 * are restored too; attached iterators the file has no position for are
 * left alone. With opt->names, they are restored when named as the file
 * names them: WF_CHECKPOINT_STEP_KEY for the step counter and
 * WF_CHECKPOINT_ITERATOR_PREFIX followed by the attachment name for an
 * iterator (INVALID_ARGUMENT when no iterator is attached by that name, or
 * when the file lacks what is named, unless opt->partial); the list may
 * name only those. The values are read (and checked) into memory
 * before the first is assigned. Do not run steps on s meanwhile. */
WF_API int wf_session_restore(wf_session *s, const char *path,
                              const wf_restore_options *opt, wf_status *st);

/* ---- directories of checkpoints ------------------------------------------ */

/* Saves s (as wf_session_save with global_step = step) to
 * dir/ckpt-<step, 10 digits or more>.safetensors, creating dir (and its
 * parents) when needed; then, when keep > 0, deletes the checkpoints of
 * dir with the lowest steps until `keep` remain (never the one just
 * written), and the temporary files of saves that died (those of
 * processes no longer running on this machine). Steps order the
 * checkpoints of a directory; step must be >= 0. A crash at any moment
 * leaves dir with the checkpoints it had and possibly the new one, each
 * whole. INVALID_ARGUMENT for an empty dir, a negative step, or a dir
 * that is not a directory. */
WF_API int wf_checkpoint_save_dir(wf_session *s, const char *dir, int64_t step,
                                  int keep, wf_status *st);

/* Writes to path (len bytes, NUL-terminated) the newest checkpoint of dir
 * that verifies fully (wf_checkpoint_verify); newer ones that do not are
 * skipped, each with a warning in the log (WEFT_LOG_LEVEL) that says why.
 * NOT_FOUND when dir has none that verifies (the message counts those that
 * failed and says why the newest failed); INVALID_ARGUMENT when the path
 * does not fit in len. */
WF_API int wf_checkpoint_latest(const char *dir, char *path, size_t len,
                                wf_status *st);

/* The steps of the checkpoints in dir (files named as
 * wf_checkpoint_save_dir names them), ascending, in *steps (a new array
 * from malloc: free() it; NULL when *n is 0). Does not open the files. */
WF_API int wf_checkpoint_list(const char *dir, int64_t **steps, int *n,
                              wf_status *st);

/* Writes to path (len bytes) the name wf_checkpoint_save_dir gives the
 * checkpoint of step in dir. INVALID_ARGUMENT when step < 0 or it does not
 * fit. */
WF_API int wf_checkpoint_path(const char *dir, int64_t step, char *path,
                              size_t len, wf_status *st);

/* ---- checkpoint files ---------------------------------------------------- */

typedef struct wf_checkpoint wf_checkpoint;

/* Opens the checkpoint (or any safetensors file) at path and checks its
 * header: structure, dtypes, shapes, offsets, metadata, and that every
 * tensor of a weft file has a checksum. Tensor data is read when asked
 * for. Files written by other programs have no checksums (only their
 * structure is checked). Owned by the caller: wf_checkpoint_close. NULL
 * with st set on error. */
WF_API wf_checkpoint *wf_checkpoint_open(const char *path, wf_status *st);
WF_API void wf_checkpoint_close(wf_checkpoint *c);

/* The path it was opened with and the file's size in bytes. */
WF_API const char *wf_checkpoint_file(const wf_checkpoint *c);
WF_API uint64_t wf_checkpoint_size(const wf_checkpoint *c);

/* Tensors, sorted by name; i from 0 to num_tensors - 1. Strings are
 * borrowed until the checkpoint is closed. */
WF_API int wf_checkpoint_num_tensors(const wf_checkpoint *c);
WF_API const char *wf_checkpoint_tensor_name(const wf_checkpoint *c, int i);
WF_API wf_dtype wf_checkpoint_tensor_dtype(const wf_checkpoint *c, int i);
WF_API void wf_checkpoint_tensor_shape(const wf_checkpoint *c, int i,
                                       wf_shape *out);
/* The index of the tensor called name, or -1. */
WF_API int wf_checkpoint_find(const wf_checkpoint *c, const char *name);
/* Reads tensor i into a new host tensor (the caller owns the reference);
 * DATA_LOSS naming the file and the tensor when its checksum fails. Bools
 * read as 0 or 1. Thread-safe. */
WF_API wf_tensor *wf_checkpoint_read(const wf_checkpoint *c, int i,
                                     wf_status *st);

/* Metadata, sorted by key (weft's own keys included). */
WF_API int wf_checkpoint_num_metadata(const wf_checkpoint *c);
WF_API const char *wf_checkpoint_metadata_key(const wf_checkpoint *c, int i);
WF_API const char *wf_checkpoint_metadata_value(const wf_checkpoint *c, int i);
/* The value of key, or NULL. */
WF_API const char *wf_checkpoint_metadata(const wf_checkpoint *c,
                                          const char *key);

/* Opens path and checks every tensor's checksum. WF_OK when the file is
 * whole; otherwise the header's first problem, or DATA_LOSS listing every
 * tensor whose checksum fails. */
WF_API int wf_checkpoint_verify(const char *path, wf_status *st);

/* Writes n tensors (names[i] -> tensors[i], borrowed) and nmeta metadata
 * pairs to path as a weft checkpoint, atomically (as wf_session_save does;
 * the keys weft manages are refused). INVALID_ARGUMENT for an empty,
 * duplicate or non-UTF-8 name, "__metadata__", or a WF_RESOURCE tensor. */
WF_API int wf_checkpoint_write(const char *path, const char *const *names,
                               wf_tensor *const *tensors, int n,
                               const char *const *meta_keys,
                               const char *const *meta_values, int nmeta,
                               wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_CHECKPOINT_H */
