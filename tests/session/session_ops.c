/* tests/session/session_ops.c — a test plugin with small ops that make the
 * executor's behaviour observable: a value source, increments, a two-input
 * sum, a placeholder, a slow op, a failing op, an asynchronous op and a
 * counter. Float32 only; not a model of real kernels. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/plugin.h>

static const wf_host *host;

/* Runs and counts of the Count op, read by the tests through its output. */
static atomic_long count_runs;

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

static int same_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dt;
  wf_shape s;
  (void)st;
  host->shape_input(ctx, 0, &dt, &s);
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int scalar_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s = {0};
  (void)st;
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int placeholder_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  (void)st;
  if (host->shape_attr(ctx, "shape", &v) == 0)
    host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

/* ---- kernels ------------------------------------------------------------- */

static wf_tensor *out_like(wf_kernel_ctx *ctx, const wf_tensor *in,
                           wf_status *st) {
  wf_shape s;
  host->tensor_shape(in, &s);
  return host->kernel_output_new(ctx, 0, &s, st);
}

static int src_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value v;
  wf_shape s = {0};
  (void)state;
  host->kernel_attr(ctx, "value", &v);
  wf_tensor *o = host->kernel_output_new(ctx, 0, &s, st);
  if (!o)
    return host->status_code(st);
  *(float *)host->tensor_data(o) = (float)v.u.f;
  return 0;
}

static int inc_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  const wf_tensor *in = host->kernel_input(ctx, 0);
  wf_tensor *o = out_like(ctx, in, st);
  if (!o)
    return host->status_code(st);
  const float *x = host->tensor_data(in);
  float *y = host->tensor_data(o);
  for (int64_t i = 0, n = host->tensor_count(in); i < n; i++)
    y[i] = x[i] + 1.0f;
  return 0;
}

static int sum2_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  const wf_tensor *a = host->kernel_input(ctx, 0);
  const wf_tensor *b = host->kernel_input(ctx, 1);
  if (host->tensor_count(a) != host->tensor_count(b)) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "Sum2 needs equal sizes, got %lld and %lld",
                     (long long)host->tensor_count(a),
                     (long long)host->tensor_count(b));
    return WF_INVALID_ARGUMENT;
  }
  wf_tensor *o = out_like(ctx, a, st);
  if (!o)
    return host->status_code(st);
  const float *x = host->tensor_data(a), *y = host->tensor_data(b);
  float *z = host->tensor_data(o);
  for (int64_t i = 0, n = host->tensor_count(a); i < n; i++)
    z[i] = x[i] + y[i];
  return 0;
}

static int sleep_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_attr_value v;
  (void)state;
  (void)st;
  host->kernel_attr(ctx, "ms", &v);
  struct timespec ts = {(time_t)(v.u.i / 1000), (long)(v.u.i % 1000) * 1000000};
  nanosleep(&ts, NULL);
  wf_tensor *in = (wf_tensor *)host->kernel_input(ctx, 0);
  return host->kernel_output_set(ctx, 0, in, st);
}

static int fail_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)ctx;
  (void)state;
  host->status_set(st, WF_INVALID_ARGUMENT, "deliberate failure");
  return WF_INVALID_ARGUMENT;
}

static int count_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  wf_shape s = {0};
  wf_tensor *o = host->kernel_output_new(ctx, 0, &s, st);
  if (!o)
    return host->status_code(st);
  *(float *)host->tensor_data(o) = (float)(atomic_fetch_add(&count_runs, 1) + 1);
  return 0;
}

/* AsyncInc: computes x + 1 on a short-lived thread and reports through
 * kernel_done, the way a device kernel completes from a callback. */
typedef struct async_job {
  wf_kernel_ctx *ctx;
} async_job;

static void *async_main(void *arg) {
  async_job job = *(async_job *)arg;
  host->free(arg);
  const wf_tensor *in = host->kernel_input(job.ctx, 0);
  wf_status *st = NULL;
  wf_tensor *o = out_like(job.ctx, in, st);
  const float *x = host->tensor_data(in);
  if (host->tensor_count(in) > 0 && x[0] < 0) {
    /* Failures are reported from the worker thread too. */
    host->kernel_done(job.ctx, WF_OUT_OF_RANGE,
                      "AsyncInc refuses negative input %g", (double)x[0]);
    return NULL;
  }
  float *y = host->tensor_data(o);
  for (int64_t i = 0, n = host->tensor_count(in); i < n; i++)
    y[i] = x[i] + 1.0f;
  host->kernel_done(job.ctx, WF_OK, NULL);
  return NULL;
}

static int async_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  async_job *job = host->alloc(sizeof *job, 0);
  if (!job) {
    host->status_set(st, WF_RESOURCE_EXHAUSTED, "AsyncInc: out of memory");
    return WF_RESOURCE_EXHAUSTED;
  }
  job->ctx = ctx;
  pthread_t t;
  if (pthread_create(&t, NULL, async_main, job) != 0) {
    host->free(job);
    host->status_set(st, WF_RESOURCE_EXHAUSTED, "AsyncInc: no thread");
    return WF_RESOURCE_EXHAUSTED;
  }
  pthread_detach(t);
  return 0;
}

/* ---- definitions ------------------------------------------------------------ */

static const wf_arg_def x_in[] = {WF_ARG_FIXED("x", WF_FLOAT32, "any shape"),
                                  WF_ARG_END};
static const wf_arg_def xy_in[] = {WF_ARG_FIXED("x", WF_FLOAT32, "any shape"),
                                   WF_ARG_FIXED("y", WF_FLOAT32, "as x"),
                                   WF_ARG_END};
static const wf_arg_def y_out[] = {WF_ARG_FIXED("y", WF_FLOAT32, "result"),
                                   WF_ARG_END};

static const wf_attr_def src_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "value", .type = WF_ATTR_FLOAT,
     .doc = "the scalar produced"},
    WF_ATTR_END};
static const wf_attr_def ph_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE, .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}},
     .doc = "shape of the fed tensor"},
    WF_ATTR_END};
static const wf_attr_def sleep_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "ms", .type = WF_ATTR_INT,
     .doc = "milliseconds to sleep"},
    WF_ATTR_END};

#define OP(nm, in, attrs_, fl, fn, dc)                                         \
  static const wf_op_def op_##nm = {WF_STRUCT_INIT(wf_op_def), .name = #nm,    \
                                    .inputs = in, .outputs = y_out,            \
                                    .attrs = attrs_, .flags = fl,              \
                                    .shape_fn = fn, .doc = dc}
OP(TSrc, NULL, src_attrs, 0, scalar_shape, "() the scalar `value`");
OP(TInc, x_in, NULL, 0, same_shape, "x + 1");
OP(TSum2, xy_in, NULL, WF_OP_COMMUTATIVE, same_shape, "x + y");
OP(TPlaceholder, NULL, ph_attrs, WF_OP_SOURCE_FED, placeholder_shape,
   "a value fed at run time");
OP(TSleep, x_in, sleep_attrs, 0, same_shape, "x, after sleeping `ms`");
OP(TFail, x_in, NULL, 0, same_shape, "always fails");
OP(TCount, NULL, NULL, WF_OP_STATEFUL, scalar_shape,
   "() how many times any TCount ran in this process");
OP(TGhost, x_in, NULL, 0, same_shape,
   "x; its only kernel is for a device type nobody provides");
OP(TAsyncInc, x_in, NULL, 0, same_shape,
   "x + 1, completed asynchronously; fails when x[0] < 0");

#define KERNEL(nm, fn, fl)                                                     \
  static const wf_kernel_def k_##nm = {WF_STRUCT_INIT(wf_kernel_def),          \
                                       .op = #nm, .device_type = "cpu",        \
                                       .flags = fl, .label = "test",           \
                                       .compute = fn}
KERNEL(TSrc, src_compute, WF_KERNEL_CHEAP);
KERNEL(TInc, inc_compute, 0);
KERNEL(TSum2, sum2_compute, 0);
KERNEL(TSleep, sleep_compute, 0);
KERNEL(TFail, fail_compute, 0);
KERNEL(TCount, count_compute, 0);
KERNEL(TAsyncInc, async_compute, WF_KERNEL_ASYNC);
/* TInc also runs on the "accel" test device; TGhost only on "ghost". */
static const wf_kernel_def k_TInc_accel = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "TInc", .device_type = "accel",
    .label = "test", .compute = inc_compute};
static const wf_kernel_def k_TGhost = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "TGhost", .device_type = "ghost",
    .label = "test", .compute = inc_compute};

static const wf_op_def *const ops[] = {
    &op_TSrc, &op_TInc,  &op_TSum2,  &op_TPlaceholder,
    &op_TSleep, &op_TFail, &op_TCount, &op_TAsyncInc, &op_TGhost, NULL};
static const wf_kernel_def *const kernels[] = {
    &k_TSrc,   &k_TInc,      &k_TSum2,     &k_TSleep, &k_TFail,
    &k_TCount, &k_TAsyncInc, &k_TInc_accel, &k_TGhost, NULL};

/* A CPU device, so the executor can run without the real CPU plugin. */
static int enumerate(void *state, wf_device_desc *out, int max,
                     wf_status *st) {
  (void)state;
  (void)st;
  if (max < 1)
    return 0;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->abi_major = WF_ABI_MAJOR;
  out->abi_minor = WF_ABI_MINOR;
  strcpy(out->name, "cpu:0");
  strcpy(out->description, "test cpu");
  out->available = 1;
  return 1;
}
static const wf_device_def cpu = {WF_STRUCT_INIT(wf_device_def),
                                  .type = "cpu", .doc = "test cpu",
                                  .enumerate = enumerate};
/* "accel": two instances, the second unavailable, to test placement. */
static int enumerate_accel(void *state, wf_device_desc *out, int max,
                           wf_status *st) {
  (void)state;
  (void)st;
  int n = max < 2 ? max : 2;
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].struct_size = sizeof out[i];
    out[i].abi_major = WF_ABI_MAJOR;
    out[i].abi_minor = WF_ABI_MINOR;
    snprintf(out[i].name, sizeof out[i].name, "accel:%d", i);
    strcpy(out[i].description, "test accelerator");
    out[i].available = i == 0;
    if (i == 1)
      strcpy(out[i].reason, "no driver");
  }
  return n;
}
static const wf_device_def accel = {WF_STRUCT_INIT(wf_device_def),
                                    .type = "accel", .doc = "test accel",
                                    .enumerate = enumerate_accel};
static const wf_device_def *const devices[] = {&cpu, &accel, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-session-ops",
    .version = "1",
    .license = "MIT",
    .description = "ops that make the executor observable in tests",
    .ops = ops,
    .kernels = kernels,
    .devices = devices,
    .init = init,
};

WF_PLUGIN(test_session_ops, desc)
