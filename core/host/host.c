/* core/host/host.c — the host table: every function a plugin may call, as
 * thin wrappers over the rooms below (status, allocator, tensors, shape,
 * gradient and kernel contexts, variables, the log). It sits above every
 * room because it hands all of them to plugins; the loader receives it
 * through the runtime (core/host/runtime_new.c).
 *
 * The wrappers only adapt types; the contracts live with the functions they
 * forward to (core/graph/graph.c for shape contexts, core/exec/kernel.c for kernels). */
#include <config.h>

#include "host/host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/log.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"
#include "exec/kernel.h"
#include "base/status_internal.h"
#include "compile/plugin_passes.h"
#include "io/import_internal.h"
#include "graph/tensor_internal.h"
#include "exec/variables.h"

/* ---- memory and status -------------------------------------------------- */

static void *host_alloc(size_t bytes, size_t align) {
  return wf__alloc(bytes, align);
}

static void host_free(void *p) { wf__free(p); }

static wf_tensor *host_tensor_new_strings(const wf_shape *shape,
                                          const char *const *strings,
                                          const size_t *lengths,
                                          wf_status *st) {
  char buf[128];
  if (!shape || !wf_shape_is_known(shape)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "string tensor: shape %s is not fully known",
                  shape ? wf_shape_str(shape, buf, sizeof buf) : "NULL");
    return NULL;
  }
  return wf_tensor_new_strings(shape->dims, shape->rank, strings, lengths, st);
}

static void host_status_set(wf_status *st, int32_t code, const char *fmt, ...) {
  va_list ap;
  /* A plugin's code outside the canonical set still marks a failure. */
  if (code < WF_OK || code > WF_UNAUTHENTICATED)
    code = WF_UNKNOWN;
  va_start(ap, fmt);
  wf__status_vset(st, (wf_code)code, fmt, ap);
  va_end(ap);
}

static int32_t host_status_code(const wf_status *st) {
  return wf_status_code(st);
}

static const char *host_status_message(const wf_status *st) {
  return wf_status_message(st);
}

/* ---- tensors ------------------------------------------------------------ */

static wf_tensor *host_tensor_new(int32_t dtype, const wf_shape *shape,
                                  wf_status *st) {
  return wf__tensor_new_shape((wf_dtype)dtype, shape, st);
}

static int32_t host_tensor_dtype(const wf_tensor *t) {
  return wf_tensor_dtype(t);
}

/* ---- the table ---------------------------------------------------------- */

static const wf_host host = {
    WF_STRUCT_INIT(wf_host),
    .alloc = host_alloc,
    .free = host_free,
    .status_set = host_status_set,
    .status_code = host_status_code,
    .status_message = host_status_message,
    .log = wf__log,
    .tensor_new = host_tensor_new,
    .tensor_retain = wf_tensor_retain,
    .tensor_release = wf_tensor_release,
    .tensor_dtype = host_tensor_dtype,
    .tensor_shape = wf_tensor_shape,
    .tensor_count = wf_tensor_count,
    .tensor_nbytes = wf_tensor_nbytes,
    .tensor_data = wf_tensor_data,
    .shape_num_inputs = wf__shape_num_inputs,
    .shape_num_outputs = wf__shape_num_outputs,
    .shape_input = wf__shape_input,
    .shape_input_value = wf__shape_input_value,
    .shape_attr = wf__shape_attr,
    .shape_set_output = wf__shape_set_output,
    .shape_node_name = wf__shape_node_name,
    .kernel_num_inputs = wf__kernel_num_inputs,
    .kernel_num_outputs = wf__kernel_num_outputs,
    .kernel_input = wf__kernel_input,
    .kernel_output_new = wf__kernel_output_new,
    .kernel_output_set = wf__kernel_output_set,
    .kernel_attr = wf__kernel_attr,
    .kernel_output_dtype = wf__kernel_output_dtype,
    .kernel_node_name = wf__kernel_node_name,
    .kernel_done = wf__kernel_done,
    .kernel_step = wf__kernel_step,
    .grad_num_inputs = wf__grad_num_inputs,
    .grad_num_outputs = wf__grad_num_outputs,
    .grad_input = wf__grad_input,
    .grad_output = wf__grad_output,
    .grad_output_grad = wf__grad_output_grad,
    .grad_attr = wf__grad_attr,
    .grad_tensor_info = wf__grad_tensor_info,
    .grad_add_node = wf__grad_add_node,
    .grad_set_input_grad = wf__grad_set_input_grad,
    .grad_set_input_grad_sparse = wf__grad_set_input_grad_sparse,
    .grad_node_name = wf__grad_node_name,
    .kernel_variable = wf__kernel_variable,
    .var_read = wf__var_read,
    .var_assign = wf__var_assign,
    .var_lock = wf__var_lock,
    .var_unlock = wf__var_unlock,
    .var_order = wf__var_order,
    .var_name = wf__var_name,
    .tensor_reshape = wf__tensor_reshape,
    .threads = wf__host_threads,
    .config_int = wf__host_config_int,
    .kernel_device_state = wf__kernel_device_state,
    /* 1.3 */
    .node_op = wf__node_op_of,
    .node_name = wf__node_name_of,
    .node_device = wf__node_device_of,
    .node_num_inputs = wf__node_num_inputs_of,
    .node_input = wf__node_input_of,
    .node_num_outputs = wf__node_num_outputs_of,
    .node_output_info = wf__node_output_info,
    .node_attr = wf__node_attr_of,
    .node_num_control_inputs = wf__node_num_control_inputs_of,
    .node_control_input = wf__node_control_input_of,
    .pass_num_nodes = wf__pass_num_nodes,
    .pass_node = wf__pass_node,
    .pass_num_consumers = wf__pass_num_consumers,
    .pass_is_fetched = wf__pass_is_fetched,
    .pass_match = wf__pass_match,
    .pass_add_node = wf__pass_add_node,
    .pass_replace = wf__pass_replace,
    .pass_set_input = wf__pass_set_input,
    .pass_add_control_edge = wf__pass_add_control_edge,
    .pass_remove_control_edge = wf__pass_remove_control_edge,
    .kernel_output_shape = wf__kernel_output_shape,
    .import_add_node = wf__import_add_node,
    .import_find_node = wf__import_find_node,
    .import_add_init = wf__import_add_init,
    .import_add_signature = wf__import_add_signature,
    /* 1.4 */
    .node_num_control_consumers = wf__node_num_control_consumers_of,
    .pass_has_kernel = wf__pass_has_kernel,
    .kernel_var_lock = wf__kernel_var_lock,
    /* 1.5 */
    .tensor_version = wf__tensor_version,
    .import_add_gradients = wf__import_add_gradients,
    /* 1.6 */
    .tensor_new_strings = host_tensor_new_strings,
    .tensor_string = wf_tensor_string,
    /* 1.8 */
    .pass_kernel_device = wf__pass_kernel_device,
};

const wf_host *wf__host(void) { return &host; }
