/* core/exec/rendezvous.h — where the partitions of one step hand tensors to each
 * other: a fixed set of numbered slots (one per Send/Recv pair of the
 * executor), each filled once by its _Send and taken once by its _Recv,
 * whichever comes first waiting for the other. Host memory only; device
 * plugins with memory of their own bring their own transfer kernels. */
#ifndef WF_CORE_RENDEZVOUS_H
#define WF_CORE_RENDEZVOUS_H

#include <weft/types.h>

struct wf_kernel_ctx;
typedef struct wf__rendezvous wf__rendezvous;

/* nslots >= 0. NULL when out of memory. */
wf__rendezvous *wf__rendezvous_new(int nslots);
void wf__rendezvous_free(wf__rendezvous *r);
/* Empties every slot for the next step (releasing what a failed step left). */
void wf__rendezvous_reset(wf__rendezvous *r);
/* Hands t (retained; NULL for a control signal) to slot's receiver. */
void wf__rendezvous_send(wf__rendezvous *r, int slot, wf_tensor *t);
/* The receiving kernel of slot: completes ctx (output 0 set unless a
 * control signal) now if the value is there, else when it arrives or the
 * step is aborted. */
void wf__rendezvous_recv(wf__rendezvous *r, int slot,
                         struct wf_kernel_ctx *ctx);
/* Completes every waiting receiver with code and message (the step failed
 * or was cancelled); later receives complete at once the same way. */
void wf__rendezvous_abort(wf__rendezvous *r, wf_code code, const char *msg);

#endif
