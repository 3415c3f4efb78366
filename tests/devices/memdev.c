/* tests/devices/memdev.c — the "test-memdev" plugin: a device with memory
 * of its own, for testing how the core keeps tensors in a device's memory
 * and moves them at the borders without a GPU.
 *
 * Device type "memdev", one instance "memdev:0". Its memory is host memory
 * the core must not read directly: every block is registered, and values
 * are stored with their bytes complemented, so host code that reads a
 * device buffer as if it were host memory gets wrong values, and a kernel
 * handed a host buffer fails naming the input. copy complements on the
 * way in and out and refuses pointers that are not (inside) its blocks.
 *
 * Kernels on "memdev", float32, each checking that its device inputs and
 * outputs are memdev blocks and that kernel_device_state is the device's:
 *   Add (equal shapes), Sub (int32 only, equal shapes: a device without
 *   ZerosLike, for the arithmetic pass's placement rule), Relu, Sum (over every axis), ApplyGradientDescent
 *   (lr read on the host: host_inputs bit 1; the variable, locked through
 *   kernel_var_lock, or through var_lock as plugins before ABI 1.4 lock it
 *   when MEMDEV_OLD_VAR_LOCK is set, must be in memdev memory), Shape (output written on the host:
 *   host_outputs bit 0; its input stays on the device, only its shape is
 *   read).
 * Op MemdevStats (CPU kernel): int64 (5,) = blocks alive, copies to the
 * device, copies to the host, copies on the device, bytes alive.
 * With MEMDEV_FAIL_COPY set in the environment, copies to the device fail
 * (to test the error path). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <weft/plugin.h>

static const wf_host *host;

/* ---- memory ---------------------------------------------------------------
 */

#define MAX_BLOCKS 4096

typedef struct block {
  unsigned char *base;
  size_t bytes;
} block;

typedef struct memdev {
  pthread_mutex_t mu;
  block blocks[MAX_BLOCKS];
  int num_blocks;
  size_t live_bytes;
  int64_t to_device, to_host, on_device;
} memdev;

static memdev dev0 = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *md_alloc(void *state, size_t bytes, size_t align) {
  memdev *d = state;
  void *p = NULL;

  if (align > 256 || bytes == 0)
    return NULL;
  if (posix_memalign(&p, 256, bytes) != 0)
    return NULL;
  pthread_mutex_lock(&d->mu);
  if (d->num_blocks == MAX_BLOCKS) {
    pthread_mutex_unlock(&d->mu);
    free(p);
    return NULL;
  }
  d->blocks[d->num_blocks++] = (block){p, bytes};
  d->live_bytes += bytes;
  pthread_mutex_unlock(&d->mu);
  /* Fresh device memory holds garbage, not zeros. */
  memset(p, 0xA5, bytes);
  return p;
}

static void md_free(void *state, void *ptr, size_t bytes) {
  memdev *d = state;
  pthread_mutex_lock(&d->mu);
  for (int i = 0; i < d->num_blocks; i++)
    if (d->blocks[i].base == ptr) {
      if (d->blocks[i].bytes != bytes)
        abort(); /* the core must give back the size it asked for */
      d->live_bytes -= bytes;
      d->blocks[i] = d->blocks[--d->num_blocks];
      pthread_mutex_unlock(&d->mu);
      free(ptr);
      return;
    }
  pthread_mutex_unlock(&d->mu);
  abort(); /* freeing what was never allocated here */
}

/* Whether [p, p + bytes) lies inside one block. */
static int in_device(memdev *d, const void *p, size_t bytes) {
  const unsigned char *c = p;
  int found = 0;
  pthread_mutex_lock(&d->mu);
  for (int i = 0; i < d->num_blocks && !found; i++)
    found = c >= d->blocks[i].base &&
            c + bytes <= d->blocks[i].base + d->blocks[i].bytes;
  pthread_mutex_unlock(&d->mu);
  return found;
}

static void complement(unsigned char *dst, const unsigned char *src,
                       size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (unsigned char)~src[i];
}

static int md_copy(void *state, void *dst, const void *src, size_t bytes,
                   int32_t kind, wf_status *st) {
  memdev *d = state;
  switch (kind) {
  case WF_COPY_TO_DEVICE:
    if (getenv("MEMDEV_FAIL_COPY")) {
      host->status_set(st, WF_UNAVAILABLE, "memdev: copy refused "
                                           "(MEMDEV_FAIL_COPY)");
      return WF_UNAVAILABLE;
    }
    if (!in_device(d, dst, bytes) || in_device(d, src, bytes))
      break;
    complement(dst, src, bytes);
    pthread_mutex_lock(&d->mu);
    d->to_device++;
    pthread_mutex_unlock(&d->mu);
    return 0;
  case WF_COPY_TO_HOST:
    if (!in_device(d, src, bytes) || in_device(d, dst, bytes))
      break;
    complement(dst, src, bytes);
    pthread_mutex_lock(&d->mu);
    d->to_host++;
    pthread_mutex_unlock(&d->mu);
    return 0;
  case WF_COPY_ON_DEVICE:
    if (!in_device(d, src, bytes) || !in_device(d, dst, bytes))
      break;
    memcpy(dst, src, bytes);
    pthread_mutex_lock(&d->mu);
    d->on_device++;
    pthread_mutex_unlock(&d->mu);
    return 0;
  default:
    host->status_set(st, WF_INVALID_ARGUMENT, "memdev: copy kind %d",
                     (int)kind);
    return WF_INVALID_ARGUMENT;
  }
  host->status_set(st, WF_INVALID_ARGUMENT,
                   "memdev: copy kind %d of %zu bytes with a pointer on the "
                   "wrong side",
                   (int)kind, bytes);
  return WF_INVALID_ARGUMENT;
}

static int md_enumerate(void *plugin_state, wf_device_desc *out, int max,
                        wf_status *st) {
  (void)plugin_state;
  (void)st;
  if (max < 1)
    return 0;
  strcpy(out->name, "memdev:0");
  strcpy(out->description, "test device with memory of its own");
  out->available = 1;
  out->state = &dev0;
  return 1;
}

/* ---- kernel helpers ------------------------------------------------------- */

static int fail(wf_status *st, const char *fmt, const char *what, int i) {
  host->status_set(st, WF_FAILED_PRECONDITION, fmt, what, i);
  return WF_FAILED_PRECONDITION;
}

/* Checks the context's device and that input i is (device) or is not
 * (host) in memdev memory. */
static int check_input(wf_kernel_ctx *ctx, int i, int on_device,
                       const wf_tensor **out, wf_status *st) {
  const wf_tensor *t = host->kernel_input(ctx, i);
  size_t bytes;
  if (host->kernel_device_state(ctx) != &dev0)
    return fail(st, "%s %d: kernel_device_state is not memdev:0's",
                "context", i);
  if (!t)
    return fail(st, "%s %d is missing", "input", i);
  bytes = host->tensor_nbytes(t);
  if (bytes && in_device(&dev0, host->tensor_data(t), bytes) != on_device)
    return fail(st, on_device ? "%s %d is not in memdev memory"
                              : "%s %d is in memdev memory, not the host's",
                "input", i);
  *out = t;
  return 0;
}

static wf_tensor *new_output(wf_kernel_ctx *ctx, int i, const wf_shape *s,
                             int on_device, wf_status *st) {
  wf_tensor *t = host->kernel_output_new(ctx, i, s, st);
  size_t bytes;
  if (!t)
    return NULL;
  bytes = host->tensor_nbytes(t);
  if (bytes && in_device(&dev0, host->tensor_data(t), bytes) != on_device) {
    fail(st, on_device ? "%s %d was not made in memdev memory"
                       : "%s %d was made in memdev memory, not the host's",
         "output", i);
    return NULL;
  }
  return t;
}

/* Device floats are stored complemented. */
static float get(const void *base, int64_t i) {
  uint32_t u;
  float f;
  memcpy(&u, (const char *)base + 4 * i, 4);
  u = ~u;
  memcpy(&f, &u, 4);
  return f;
}

static void put(void *base, int64_t i, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u = ~u;
  memcpy((char *)base + 4 * i, &u, 4);
}

/* ---- kernels ---------------------------------------------------------------
 */

/* The two device inputs of an elementwise op of equal shapes and its
 * device output; 0, or the code with st set. */
static int binary_begin(wf_kernel_ctx *ctx, const char *op,
                        const wf_tensor **x, const wf_tensor **y,
                        wf_tensor **z, wf_status *st) {
  wf_shape xs, ys;
  if (check_input(ctx, 0, 1, x, st) || check_input(ctx, 1, 1, y, st))
    return WF_FAILED_PRECONDITION;
  host->tensor_shape(*x, &xs);
  host->tensor_shape(*y, &ys);
  if (host->tensor_count(*x) != host->tensor_count(*y) || xs.rank != ys.rank) {
    host->status_set(st, WF_UNIMPLEMENTED, "memdev %s takes equal shapes", op);
    return WF_UNIMPLEMENTED;
  }
  if (!(*z = new_output(ctx, 0, &xs, 1, st)))
    return host->status_code(st);
  return 0;
}

static int add_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *y;
  wf_tensor *z;
  int rc;
  (void)state;
  if ((rc = binary_begin(ctx, "Add", &x, &y, &z, st)))
    return rc;
  for (int64_t i = 0; i < host->tensor_count(z); i++)
    put(host->tensor_data(z), i,
        get(host->tensor_data(x), i) + get(host->tensor_data(y), i));
  return 0;
}

/* int32 x - y, the bytes complemented like every value here. */
static int sub_i32_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *y;
  wf_tensor *z;
  int rc;
  (void)state;
  if ((rc = binary_begin(ctx, "Sub", &x, &y, &z, st)))
    return rc;
  for (int64_t i = 0; i < host->tensor_count(z); i++) {
    uint32_t a, b, d;
    memcpy(&a, (const char *)host->tensor_data(x) + 4 * i, 4);
    memcpy(&b, (const char *)host->tensor_data(y) + 4 * i, 4);
    d = ~((~a) - (~b)); /* wrapping, as int32 subtraction in two's complement */
    memcpy((char *)host->tensor_data(z) + 4 * i, &d, 4);
  }
  return 0;
}

static int relu_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs;
  wf_tensor *y;
  (void)state;
  if (check_input(ctx, 0, 1, &x, st))
    return WF_FAILED_PRECONDITION;
  host->tensor_shape(x, &xs);
  if (!(y = new_output(ctx, 0, &xs, 1, st)))
    return host->status_code(st);
  for (int64_t i = 0; i < host->tensor_count(y); i++) {
    float v = get(host->tensor_data(x), i);
    put(host->tensor_data(y), i, v > 0 ? v : 0);
  }
  return 0;
}

static int sum_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_attr_value axes;
  wf_shape scalar = {.rank = 0};
  wf_tensor *y;
  double acc = 0;
  (void)state;
  if (check_input(ctx, 0, 1, &x, st))
    return WF_FAILED_PRECONDITION;
  if (host->kernel_attr(ctx, "axes", &axes) == 0 && axes.count > 0) {
    host->status_set(st, WF_UNIMPLEMENTED, "memdev Sum reduces every axis");
    return WF_UNIMPLEMENTED;
  }
  if (!(y = new_output(ctx, 0, &scalar, 1, st)))
    return host->status_code(st);
  for (int64_t i = 0; i < host->tensor_count(x); i++)
    acc += get(host->tensor_data(x), i);
  put(host->tensor_data(y), 0, (float)acc);
  return 0;
}

static int apply_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *handle, *lr, *grad;
  wf_tensor *var;
  float rate;
  int rc = 0;
  (void)state;
  if (check_input(ctx, 1, 0, &lr, st) || check_input(ctx, 2, 1, &grad, st))
    return WF_FAILED_PRECONDITION;
  handle = host->kernel_input(ctx, 0);
  rate = *(const float *)host->tensor_data(lr);
  if (!(var = getenv("MEMDEV_OLD_VAR_LOCK")
                   ? host->var_lock(handle, st)
                   : host->kernel_var_lock(ctx, handle, st)))
    return host->status_code(st);
  if (host->tensor_count(var) != host->tensor_count(grad)) {
    host->status_set(st, WF_INVALID_ARGUMENT, "grad and var sizes differ");
    rc = WF_INVALID_ARGUMENT;
  } else if (host->tensor_nbytes(var) &&
             !in_device(&dev0, host->tensor_data(var),
                        host->tensor_nbytes(var))) {
    rc = fail(st, "%s %d: the variable is not in memdev memory", "input", 0);
  } else {
    for (int64_t i = 0; i < host->tensor_count(var); i++)
      put(host->tensor_data(var), i,
          get(host->tensor_data(var), i) -
              rate * get(host->tensor_data(grad), i));
  }
  host->var_unlock(handle);
  return rc;
}

static int shape_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs, ys;
  wf_tensor *y;
  int32_t out_type = host->kernel_output_dtype(ctx, 0);
  (void)state;
  if (check_input(ctx, 0, 1, &x, st))
    return WF_FAILED_PRECONDITION;
  host->tensor_shape(x, &xs);
  ys.rank = 1;
  ys.dims[0] = xs.rank;
  if (!(y = new_output(ctx, 0, &ys, 0, st)))
    return host->status_code(st);
  for (int i = 0; i < xs.rank; i++) {
    if (out_type == WF_INT64)
      ((int64_t *)host->tensor_data(y))[i] = xs.dims[i];
    else
      ((int32_t *)host->tensor_data(y))[i] = (int32_t)xs.dims[i];
  }
  return 0;
}

static int stats_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {5}};
  wf_tensor *y = host->kernel_output_new(ctx, 0, &s, st);
  int64_t *v;
  (void)state;
  if (!y)
    return host->status_code(st);
  v = host->tensor_data(y);
  pthread_mutex_lock(&dev0.mu);
  v[0] = dev0.num_blocks;
  v[1] = dev0.to_device;
  v[2] = dev0.to_host;
  v[3] = dev0.on_device;
  v[4] = (int64_t)dev0.live_bytes;
  pthread_mutex_unlock(&dev0.mu);
  return 0;
}

static int stats_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {5}};
  (void)st;
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static const wf_arg_def stats_outputs[] = {
    {WF_STRUCT_INIT(wf_arg_def), .name = "stats", .dtype = WF_INT64,
     .doc = "(5,) blocks, copies in, out, on device, bytes"},
    WF_ARG_END};
static const wf_op_def stats_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "MemdevStats",
    .outputs = stats_outputs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = stats_shape,
    .doc = "memdev:0's counters (test plugin).",
};
static const wf_op_def *const ops[] = {&stats_op, NULL};

#define F32 WF_DTYPE_BIT(WF_FLOAT32)
#define KERNEL(var, nm, tattr, mask, fn, hin, hout)                            \
  static const wf_kernel_def var = {WF_STRUCT_INIT(wf_kernel_def),             \
                                    .op = (nm),                                \
                                    .device_type = "memdev",                   \
                                    .type_attr = (tattr),                      \
                                    .dtypes = (mask),                          \
                                    .label = "memdev",                         \
                                    .compute = (fn),                           \
                                    .host_inputs = (hin),                      \
                                    .host_outputs = (hout)}
KERNEL(k_add, "Add", "T", F32, add_compute, 0, 0);
KERNEL(k_sub, "Sub", "T", WF_DTYPE_BIT(WF_INT32), sub_i32_compute, 0, 0);
KERNEL(k_relu, "Relu", "T", F32, relu_compute, 0, 0);
KERNEL(k_sum, "Sum", "T", F32, sum_compute, 0, 0);
KERNEL(k_apply, "ApplyGradientDescent", "T", F32, apply_compute, 2, 0);
KERNEL(k_shape, "Shape", "T", F32, shape_compute, 0, 1);
static const wf_kernel_def k_stats = {WF_STRUCT_INIT(wf_kernel_def),
                                      .op = "MemdevStats",
                                      .device_type = "cpu",
                                      .label = "memdev",
                                      .compute = stats_compute};
static const wf_kernel_def *const kernels[] = {
    &k_add, &k_sub, &k_relu, &k_sum, &k_apply, &k_shape, &k_stats, NULL};

static const wf_device_def memdev_def = {
    WF_STRUCT_INIT(wf_device_def),
    .type = "memdev",
    .doc = "test device with memory of its own (values stored complemented)",
    .enumerate = md_enumerate,
    .alloc = md_alloc,
    .free = md_free,
    .copy = md_copy,
};
static const wf_device_def *const devices[] = {&memdev_def, NULL};

static int md_init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  if (!WF_HOST_HAS(h, kernel_var_lock)) {
    h->status_set(st, WF_FAILED_PRECONDITION, "test-memdev needs ABI 1.4");
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-memdev",
    .version = "1",
    .license = "MIT",
    .description = "a device with memory of its own, for tests",
    .ops = ops,
    .kernels = kernels,
    .devices = devices,
    .init = md_init,
};

WF_PLUGIN(memdev, desc)
