/* core/exec/iterators.h — a session's attached iterators by name
 * (core/exec/iterators.c). The iterators are borrowed: attaching takes no
 * ownership. */
#ifndef WF_CORE_ITERATORS_H
#define WF_CORE_ITERATORS_H

#include <weft/data.h>
#include <weft/status.h>

typedef struct wf__iterators wf__iterators;

/* A session's attached iterators by name. */
wf__iterators *wf__iterators_new(void);
void wf__iterators_free(wf__iterators *t);
/* Attaches it under name (it NULL: detaches). */
int wf__iterators_attach(wf__iterators *t, const char *name, wf_iterator *it,
                         wf_status *st);
/* The iterator attached as name, or NULL. */
wf_iterator *wf__iterators_find(wf__iterators *t, const char *name);
/* The attached iterators, in no particular order (for checkpoints):
 * iterator i and, in *name, the name it is attached as (borrowed until it
 * is detached). i from 0 to count - 1; attaching or detaching meanwhile
 * changes the numbering. */
int wf__iterators_count(wf__iterators *t);
wf_iterator *wf__iterators_at(wf__iterators *t, int i, const char **name);

#endif
