/* core/session_internal.h — what tests may observe of a session. */
#ifndef WF_CORE_SESSION_INTERNAL_H
#define WF_CORE_SESSION_INTERNAL_H

#include <weft/session.h>

/* Executors cached now, and the most the cache keeps. */
int wf__session_cache_count(wf_session *s);
int wf__session_cache_capacity(void);

#endif
