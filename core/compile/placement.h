/* core/compile/placement.h — the device and kernel of every node of a working graph
 * (core/compile/placement.c), the record of requests that could not be met, and the
 * notes on config items that name nothing the runtime has. */
#ifndef WF_CORE_PLACEMENT_H
#define WF_CORE_PLACEMENT_H

#include <weft/graph.h>

#include "plugin/registry.h"

/* A request that was not met: node asked for `requested`, runs on device
 * `device` (an index in the runtime's devices) because of `reason`. */
typedef struct wf__placement_note {
  const wf_node *node;
  char *requested;
  int device;
  char *reason;
} wf__placement_note;

/* A config item that had no effect with what the runtime loaded. */
typedef struct wf__config_note {
  int level;  /* WF_LOG_INFO (expected on some machines) or WF_LOG_WARNING */
  char *text; /* "FILE:LINE: [section] key item ...; skipped" */
} wf__config_note;

typedef struct wf__placement {
  int *device;               /* per node id: runtime device index, -1 none */
  const wf__kernel **kernel; /* per node id: the kernel chosen there */
  wf__placement_note *notes;
  int num_notes;
  wf__config_note *config_notes; /* wf__config_notes of the runtime */
  int num_config_notes;
} wf__placement;

/* Places the nodes marked in keep (SOURCE_FED ones get no device). NOT_FOUND
 * naming each op and where its kernels are when no device fits. */
int wf__place(wf_runtime *rt, const wf_graph *g, const unsigned char *keep,
              wf__placement *p, wf_status *st);
void wf__placement_deinit(wf__placement *p);

/* The items of rt's config that name nothing rt has: [devices] order types
 * that no loaded plugin provides, or whose devices are missing or all
 * unavailable (placement skips them: INFO), and [kernels] items that match
 * no kernel of a loaded device type (ignored: WARNING). *notes gets a new
 * array (NULL when *n is 0) for wf__config_notes_free. -1 when out of
 * memory (nothing returned). */
int wf__config_notes(const wf_runtime *rt, wf__config_note **notes, int *n);
void wf__config_notes_free(wf__config_note *notes, int n);
/* Logs rt's config notes, the first time it is called on rt only. */
void wf__config_notice(const wf_runtime *rt);

#endif
