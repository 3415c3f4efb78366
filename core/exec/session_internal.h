/* core/exec/session_internal.h — what tests and checkpoints may reach of a
 * session. */
#ifndef WF_CORE_SESSION_INTERNAL_H
#define WF_CORE_SESSION_INTERNAL_H

#include <weft/session.h>

struct wf__session_state;

/* The state s shares with its steps (core/exec/executor.h: variables, step
 * counter, attached iterators) and the graph it runs; both live as long as
 * s. For checkpoints. */
struct wf__session_state *wf__session_state_of(wf_session *s);
wf_graph *wf__session_graph(const wf_session *s);

/* Executors cached now, and the most the cache keeps. */
int wf__session_cache_count(wf_session *s);
int wf__session_cache_capacity(void);

#endif
