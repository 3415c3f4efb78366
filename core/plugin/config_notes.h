/* core/plugin/config_notes.h — what a runtime's config names that its
 * plugins do not have (core/plugin/config_notes.c). */
#ifndef WF_CORE_CONFIG_NOTES_H
#define WF_CORE_CONFIG_NOTES_H

#include <weft/runtime.h>

typedef struct wf__config_note {
  int level;  /* WF_LOG_INFO (expected on some machines) or WF_LOG_WARNING */
  char *text; /* "FILE:LINE: [section] key item ...; skipped" */
} wf__config_note;

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
