/* tests/plugins/good.c — the "test-good" plugin: one entry of every kind a
 * well-behaved plugin registers, used by the loader and kernel tests.
 *
 *   TestSource  () -> y: T        shape from attr "shape" (must be fed)
 *   TestScale   x: T -> y: T      y = scale * x, same shape as x; kernels
 *                                 on "testdev" (sync) and "testasync"
 *                                 (finishes on another thread); a negative
 *                                 scale makes the kernel fail
 *   device type "testdev" with one instance, "testdev:0"
 *   TestScale's gradient is registered as not differentiable. */
#include <pthread.h>
#include <string.h>
#include <weft/plugin.h>

static const wf_host *host; /* from init: the only way into the core */

typedef struct plugin_state {
  int devices_listed;
} plugin_state;

/* ---- ops ------------------------------------------------------------------
 */

static int source_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  if (host->shape_attr(ctx, "shape", &v) != 0 || v.type != WF_ATTR_SHAPE) {
    host->status_set(st, WF_INVALID_ARGUMENT, "node '%s': no shape attr",
                     host->shape_node_name(ctx));
    return WF_INVALID_ARGUMENT;
  }
  host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

static int same_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dtype;
  wf_shape s;
  (void)st;
  if (host->shape_input(ctx, 0, &dtype, &s) != 0)
    return WF_INTERNAL;
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static const wf_arg_def source_outputs[] = {
    WF_ARG_T("y", "T", "the fed value, shape from attr shape"), WF_ARG_END};
static const wf_attr_def source_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WF_DTYPES_FLOAT, .doc = "element type"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .doc = "shape of the fed value"},
    WF_ATTR_END};
static const wf_op_def source_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestSource",
    .outputs = source_outputs,
    .attrs = source_attrs,
    .flags = WF_OP_SOURCE_FED,
    .shape_fn = source_shape,
    .doc = "A value fed at run time (test plugin).",
};

static const wf_arg_def scale_inputs[] = {WF_ARG_T("x", "T", "(...) input"),
                                          WF_ARG_END};
static const wf_arg_def scale_outputs[] = {
    WF_ARG_T("y", "T", "(...) scale * x"), WF_ARG_END};
static const wf_attr_def scale_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WF_DTYPES_FLOAT, .doc = "element type"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "scale", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = 2.0},
     .doc = "factor; negative values make the kernel fail"},
    WF_ATTR_END};
static const wf_op_def scale_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "TestScale",
    .inputs = scale_inputs,
    .outputs = scale_outputs,
    .attrs = scale_attrs,
    .shape_fn = same_shape,
    .doc = "y = scale * x (test plugin).",
};

/* ---- kernels ----------------------------------------------------------------
 */

/* Reads and checks the scale attribute. */
static int scale_of(wf_kernel_ctx *ctx, float *scale, wf_status *st) {
  wf_attr_value v;
  if (host->kernel_attr(ctx, "scale", &v) != 0 || v.type != WF_ATTR_FLOAT) {
    host->status_set(st, WF_INTERNAL, "no float attribute 'scale'");
    return WF_INTERNAL;
  }
  if (v.u.f < 0) {
    host->status_set(st, WF_INVALID_ARGUMENT, "scale must be >= 0, got %g",
                     v.u.f);
    return WF_INVALID_ARGUMENT;
  }
  *scale = (float)v.u.f;
  return 0;
}

/* y = scale * x for float32 x: the work of both TestScale kernels. */
static int scale_work(wf_kernel_ctx *ctx, float scale, wf_status *st) {
  const wf_tensor *x = host->kernel_input(ctx, 0);
  wf_shape s;
  wf_tensor *y;
  const float *px;
  float *py;
  int64_t n;

  if (!x) {
    host->status_set(st, WF_INTERNAL, "no input 0");
    return WF_INTERNAL;
  }
  host->tensor_shape(x, &s);
  y = host->kernel_output_new(ctx, 0, &s, st);
  if (!y)
    return WF_RESOURCE_EXHAUSTED;
  px = host->tensor_data(x);
  py = host->tensor_data(y);
  n = host->tensor_count(x);
  for (int64_t i = 0; i < n; i++)
    py[i] = scale * px[i];
  return 0;
}

static int scale_sync(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  float scale;
  (void)state;
  if (scale_of(ctx, &scale, st))
    return host->status_code(st);
  return scale_work(ctx, scale, st);
}

/* The asynchronous kernel checks its attribute at once, then does the work
 * on a thread of its own and reports through kernel_done. A missing output
 * (out of memory on that thread) is caught by the core. */
typedef struct async_job {
  wf_kernel_ctx *ctx;
  float scale;
} async_job;

static void *scale_thread(void *arg) {
  async_job *job = arg;
  wf_kernel_ctx *ctx = job->ctx;
  scale_work(ctx, job->scale, NULL);
  host->free(job);
  host->kernel_done(ctx, WF_OK, NULL);
  return NULL;
}

/* The last worker thread: joined before the next starts and by fini, so no
 * thread runs this module's code once the core unloads it. */
static pthread_mutex_t worker_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t worker;
static int have_worker;

static void join_worker(void) {
  pthread_mutex_lock(&worker_lock);
  if (have_worker)
    pthread_join(worker, NULL);
  have_worker = 0;
  pthread_mutex_unlock(&worker_lock);
}

static int scale_async(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  async_job *job;
  float scale;
  int rc;
  (void)state;
  if (scale_of(ctx, &scale, st))
    return host->status_code(st);
  job = host->alloc(sizeof *job, 0);
  if (!job) {
    host->status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return WF_RESOURCE_EXHAUSTED;
  }
  job->ctx = ctx;
  job->scale = scale;
  join_worker();
  pthread_mutex_lock(&worker_lock);
  rc = pthread_create(&worker, NULL, scale_thread, job);
  have_worker = rc == 0;
  pthread_mutex_unlock(&worker_lock);
  if (rc != 0) {
    host->free(job);
    host->status_set(st, WF_UNAVAILABLE, "cannot start a thread");
    return WF_UNAVAILABLE;
  }
  return 0;
}

static const wf_kernel_def scale_kernel = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "TestScale",
    .device_type = "testdev",
    .type_attr = "T",
    .dtypes = WF_DTYPE_BIT(WF_FLOAT32),
    .label = "test-reference",
    .compute = scale_sync,
};

static const wf_kernel_def scale_async_kernel = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = "TestScale",
    .device_type = "testasync",
    .type_attr = "T",
    .dtypes = WF_DTYPE_BIT(WF_FLOAT32),
    .flags = WF_KERNEL_ASYNC,
    .label = "test-async",
    .compute = scale_async,
};

/* ---- gradient and device ----------------------------------------------------
 */

static const wf_gradient_def scale_gradient = {
    WF_STRUCT_INIT(wf_gradient_def),
    .op = "TestScale",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE,
};

static int testdev_enumerate(void *state, wf_device_desc *out, int max,
                             wf_status *st) {
  plugin_state *ps = state;
  (void)st;
  if (max < 1)
    return 0;
  strcpy(out[0].name, "testdev:0");
  strcpy(out[0].description, "test device of the test-good plugin");
  out[0].available = 1;
  ps->devices_listed++;
  return 1;
}

static void *testdev_alloc(void *device_state, size_t bytes, size_t align) {
  (void)device_state;
  return host->alloc(bytes, align);
}

static void testdev_free(void *device_state, void *ptr, size_t bytes) {
  (void)device_state;
  (void)bytes;
  host->free(ptr);
}

static const wf_device_def testdev = {
    WF_STRUCT_INIT(wf_device_def),
    .type = "testdev",
    .doc = "a device that exists only in tests",
    .enumerate = testdev_enumerate,
    .alloc = testdev_alloc,
    .free = testdev_free,
};

/* ---- the plugin
 * -------------------------------------------------------------- */

static int good_init(const wf_host *h, void **state, wf_status *st) {
  plugin_state *ps;
  if (!WF_HOST_HAS(h, kernel_done)) {
    h->status_set(st, WF_FAILED_PRECONDITION, "host table too old");
    return WF_FAILED_PRECONDITION;
  }
  ps = h->alloc(sizeof *ps, 0);
  if (!ps) {
    h->status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return WF_RESOURCE_EXHAUSTED;
  }
  memset(ps, 0, sizeof *ps);
  host = h;
  *state = ps;
  return 0;
}

static void good_fini(void *state) {
  join_worker();
  host->free(state);
}

static const wf_op_def *const ops[] = {&source_op, &scale_op, NULL};
static const wf_kernel_def *const kernels[] = {&scale_kernel,
                                               &scale_async_kernel, NULL};
static const wf_gradient_def *const gradients[] = {&scale_gradient, NULL};
static const wf_device_def *const devices[] = {&testdev, NULL};

static const wf_plugin_desc good_plugin = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-good",
    .version = "1.2.3",
    .license = "MIT",
    .description = "test plugin: an op, kernels, a gradient, a device type",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .devices = devices,
    .init = good_init,
    .fini = good_fini,
};

WF_PLUGIN(good, good_plugin)
