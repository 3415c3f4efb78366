/* core/io/checkpoint_internal.h — what core/io/checkpoint.c shares with the Save
 * and Restore graph ops (core/io/checkpoint_ops.c): saving variable
 * snapshots, the restore that checks everything before it changes
 * anything, problem lists that become one message, and the ops' plugin
 * description. */
#ifndef WF_CORE_CHECKPOINT_INTERNAL_H
#define WF_CORE_CHECKPOINT_INTERNAL_H

#include <weft/plugin.h>

#include "io/safetensors.h"
#include "exec/variables.h"

/* ---- problem lists ------------------------------------------------------- */

/* Problems gathered while checking, reported together in one message. */
typedef struct wf__problems {
  char *text; /* "; "-separated (malloc'd) */
  size_t len, cap;
  int n;
  wf_code code; /* of the first problem, or DATA_LOSS once one is */
  int lost;     /* a problem's text could not be stored */
} wf__problems;

#define WF__PROBLEMS_INIT                                                      \
  { NULL, 0, 0, 0, WF_OK, 0 }

/* Adds a problem of code (DATA_LOSS wins over other codes). */
void wf__problems_add(wf__problems *p, wf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* WF_OK when there is none; otherwise sets st to "what: the problem" or
 * "what: N problems: first; second; ..." and returns the code. Clears p. */
int wf__problems_report(wf__problems *p, const char *what, wf_status *st);
void wf__problems_deinit(wf__problems *p);

/* ---- saving -------------------------------------------------------------- */

/* Writes the values of vars[0..n-1] (each a snapshot taken under its lock)
 * and the extra entries (borrowed) with the metadata to path as
 * wf__st_write does. FAILED_PRECONDITION naming every variable that has no
 * value; INVALID_ARGUMENT for a variable whose name starts with
 * WF_CHECKPOINT_ITERATOR_PREFIX. */
int wf__checkpoint_save_vars(const char *path, wf__variable *const *vars, int n,
                             const wf__st_entry *extra, int nextra,
                             const char *const *keys, const char *const *values,
                             int nmeta, wf_status *st);

/* ---- restoring ----------------------------------------------------------- */

/* One variable to restore. */
typedef struct wf__restore_item {
  const char *name; /* borrowed from its variable or node */
  wf_dtype dtype;
  wf_shape shape;
  wf__variable *var; /* NULL: not created yet (created by _create) */
  wf_tensor *value;  /* read from the file by _check; owned */
} wf__restore_item;

/* Finds each item's tensor in c, compares dtype and shape and reads it
 * (checking its checksum) into item->value. Each failure is added to p
 * naming the variable; a variable missing from the file is one unless
 * partial. */
void wf__restore_check(const wf_checkpoint *c, wf__restore_item *items, int n,
                       int partial, wf__problems *p);
/* Creates in vs the variables of items that have a value but no variable
 * yet. Only fails (out of memory, or a variable created meanwhile with
 * another dtype or shape) before anything was assigned. */
int wf__restore_create(wf__varstore *vs, wf__restore_item *items, int n,
                       wf_status *st);
/* Assigns every value read (after _create); cannot fail. */
void wf__restore_assign(wf__restore_item *items, int n);
/* Releases the values read. */
void wf__restore_items_clear(wf__restore_item *items, int n);

/* ---- the graph ops (core/io/checkpoint_ops.c) ------------------------------- */

/* The "core-checkpoint" plugin: the Save and Restore ops and their CPU
 * kernels, added to every runtime by wf_runtime_new. */
const wf_plugin_desc *wf__checkpoint_ops(void);

#endif
