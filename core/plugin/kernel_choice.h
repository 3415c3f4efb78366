/* core/plugin/kernel_choice.h — which registered kernel runs a node on a
 * device type (core/plugin/kernel_choice.c). */
#ifndef WF_CORE_KERNEL_CHOICE_H
#define WF_CORE_KERNEL_CHOICE_H

#include <stddef.h>

#include <weft/graph.h>
#include <weft/runtime.h>
#include <weft/tensor.h>

#include "plugin/registry.h"

/* The kernel n runs on device_type under rt's config (dtype from each
 * kernel's type attribute on the node; see wf__registry_choose_kernel), or
 * NULL; *out (may be NULL) says what there was. */
const wf__kernel *wf__kernel_choose(const wf_runtime *rt, const wf_node *n,
                                    const char *device_type,
                                    wf__kernel_choice *out);
/* wf__kernel_choose, with NOT_FOUND naming node, op and device type when
 * there is none, and when the config's [kernels] deny is why, which kernels
 * it denied by which item and where that was set. */
const wf__kernel *wf__kernel_select(const wf_runtime *rt, const wf_node *n,
                                    const char *device_type, wf_status *st);
/* Writes into buf (len > 0) the kernels on device_type that would fit n but
 * rt's config denies: "onednn (plugin device-cpu) by [kernels] deny =
 * onednn (FILE:LINE); ...". Returns the length written (0: none). */
size_t wf__kernel_denials(const wf_runtime *rt, const wf_node *n,
                          const char *device_type, char *buf, size_t len);

#endif
