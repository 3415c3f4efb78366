/* plugins/devices/cuda/cuda_stage.h — copies between host memory and a
 * device through a pinned staging buffer of two halves, ordered by one
 * event per half: the logic of wf_device_def.copy, apart from CUDA.
 *
 * It knows nothing of CUDA: the plugin's backend queues cudaMemcpyAsync on
 * the device's stream and records and waits for CUDA events
 * (cuda_plugin.c); the test's is a fake device that runs queued work only
 * when an event is waited for, so that a half overwritten too early shows
 * as corrupt data. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_STAGE_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_STAGE_H

#include <stddef.h>

/* Queues a copy of n bytes from src to dst on the device's stream
 * (to_device: host staging memory to device memory; else the reverse).
 * Returns 0, or non-zero with why written (terminated, at most whylen). */
typedef int custage_copy_fn(void *ctx, void *dst, const void *src,
                                size_t n, int to_device, char *why,
                                size_t whylen);
/* Records half h's event behind everything queued so far / waits until
 * it has completed. Same returns. */
typedef int custage_event_fn(void *ctx, int h, char *why, size_t whylen);

typedef struct custage_backend {
  custage_copy_fn *copy;
  custage_event_fn *record;
  custage_event_fn *wait;
  void *ctx;
} custage_backend;

typedef struct custage {
  custage_backend b;
  unsigned char *buf; /* 2 * half bytes of pinned host memory */
  size_t half;
  int recorded[2];    /* half h's event was recorded and not waited for */
} custage;

/* Starts s over buf (2 * half bytes, half > 0) with backend b (copied). */
void custage_init(custage *s, const custage_backend *b,
                      unsigned char *buf, size_t half);

/* Host to device: bytes from host memory src to device memory dst. Each
 * chunk of at most `half` bytes is copied into a free half and queued from
 * there, so src may be reused on return and the device copies one chunk
 * while the next is staged. Returns 0, or non-zero with why. */
int custage_in(custage *s, unsigned char *dst,
                   const unsigned char *src, size_t bytes, char *why,
                   size_t whylen);

/* Device to host: bytes from device memory src to host memory dst, after
 * everything queued before; returns once dst holds them. The copy of the
 * next chunk is queued before the last one is taken out of its half. */
int custage_out(custage *s, unsigned char *dst,
                    const unsigned char *src, size_t bytes, char *why,
                    size_t whylen);

/* Waits for both halves' last events (before the buffer is freed). */
int custage_drain(custage *s, char *why, size_t whylen);

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_STAGE_H */
