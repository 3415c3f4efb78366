/* core/compile/partition.h — transfers between devices in a placed working graph
 * (core/compile/partition.c). */
#ifndef WF_CORE_PARTITION_H
#define WF_CORE_PARTITION_H

#include "compile/optimize.h"
#include "compile/placement.h"

/* Inserts _Send/_Recv (and control) pairs where kept nodes' edges cross
 * devices, places them, and adds the sends to w's targets. Returns the
 * number of rendezvous slots used, or -1 with st set. */
int wf__partition(wf_runtime *rt, wf__work *w, wf__placement *p,
                  const unsigned char *keep, wf_status *st);

#endif
