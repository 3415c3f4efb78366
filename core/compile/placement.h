/* core/compile/placement.h — the device and kernel of every node of a working graph
 * (core/compile/placement.c), the record of requests that could not be met, and the
 * notes on config items that name nothing the runtime has. */
#ifndef WF_CORE_PLACEMENT_H
#define WF_CORE_PLACEMENT_H

#include <weft/graph.h>

#include "plugin/config_notes.h"
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

/* The index in rt's devices of the device a request names: "cpu",
 * "cpu:1", optionally after "/device:" or "/" and after this task's
 * "/task:K/", any case (a type alone names its first device); -1 when none
 * does. */
int wf__resolve_device(const wf_runtime *rt, const char *req);


/* The task a device request names: "/task:K" or "/task:K/DEVICE" gives K
 * and *rest "DEVICE" ("" for none); any other request gives -1 and *rest
 * the request itself. -2 for a malformed "/task:" prefix. */
int wf__device_task(const char *request, const char **rest);

#endif
