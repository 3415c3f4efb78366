/* plugins/importers/onnx/onnx_tensor.c — ONNX TensorProtos as weft
 * tensors: element types, the typed fields and raw_data (little-endian),
 * string_data, and external data files beside the model. It does not
 * convert to other dtypes: a type weft lacks (int16, uint32, complex, ...)
 * is refused, naming it. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_internal.h"

int32_t ox_dtype(int32_t t) {
  switch (t) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    return WF_FLOAT32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    return WF_FLOAT64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    return WF_FLOAT16;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
    return WF_BFLOAT16;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    return WF_INT8;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    return WF_UINT8;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    return WF_INT32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    return WF_INT64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
    return WF_BOOL;
  case ONNX__TENSOR_PROTO__DATA_TYPE__STRING:
    return WF_STRING;
  default:
    return WF_DTYPE_INVALID;
  }
}

const char *ox_onnx_type_name(int32_t t) {
  static const char *const names[] = {
      "undefined", "float",  "uint8",  "int8",      "uint16",     "int16",
      "int32",     "int64",  "string", "bool",      "float16",    "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]))
    return names[t];
  return "unknown";
}

/* The external file's path, under dir only: no absolute path, no "..". */
static int external_path(const char *dir, const char *loc, char *out,
                         size_t len, wf_status *st) {
  if (!loc || !*loc)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "external data without a 'location'");
  if (loc[0] == '/' || strstr(loc, "..") || strchr(loc, '\\'))
    return wfx_fail(st, WF_PERMISSION_DENIED,
                    "external data location '%s' leaves the model's "
                    "directory (only relative paths below it are read)",
                    loc);
  if ((size_t)snprintf(out, len, "%s/%s", dir, loc) >= len)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "external data location '%s' is too long", loc);
  return 0;
}

/* Where a tensor's external data lies: the file (below the model's
 * directory) and the offset in it. */
typedef struct ext_src {
  char path[4352];
  int64_t offset;
} ext_src;

/* Reads the external_data entries and checks, before the tensor is
 * allocated, that the file holds the nbytes the shape needs: a corrupt
 * model must not make the importer ask for terabytes. */
static int find_external(const Onnx__TensorProto *tp, const char *dir,
                         size_t nbytes, ext_src *src, wf_status *st) {
  const char *loc = NULL;
  int64_t length = -1;
  struct stat sb;

  src->offset = 0;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    if (!e->key || !e->value)
      continue;
    char *end;
    if (strcmp(e->key, "location") == 0)
      loc = e->value;
    else if (strcmp(e->key, "offset") == 0) {
      errno = 0;
      src->offset = strtoll(e->value, &end, 10);
      if (*end || errno || src->offset < 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "external data offset '%s' is not a byte offset",
                        e->value);
    } else if (strcmp(e->key, "length") == 0) {
      errno = 0;
      length = strtoll(e->value, &end, 10);
      if (*end || errno || length < 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "external data length '%s' is not a length",
                        e->value);
    }
  }
  if (external_path(dir, loc, src->path, sizeof src->path, st))
    return wfx_code(st);
  if (length >= 0 && (uint64_t)length != nbytes)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "external data '%s' has length %lld; the tensor's shape "
                    "needs %zu bytes",
                    loc, (long long)length, nbytes);
  if (stat(src->path, &sb) != 0)
    return wfx_fail(st, WF_NOT_FOUND, "cannot open external data '%s': %s",
                    src->path, strerror(errno));
  if (sb.st_size < src->offset ||
      (uint64_t)(sb.st_size - src->offset) < (uint64_t)nbytes)
    return wfx_fail(st, WF_DATA_LOSS,
                    "external data '%s' holds fewer than %zu bytes from "
                    "offset %lld",
                    src->path, nbytes, (long long)src->offset);
  return 0;
}

static int read_external(const ext_src *src, void *dst, size_t nbytes,
                         wf_status *st) {
  FILE *f = fopen(src->path, "rb");
  if (!f)
    return wfx_fail(st, WF_NOT_FOUND, "cannot open external data '%s': %s",
                    src->path, strerror(errno));
  int rc = 0;
  if (fseeko(f, (off_t)src->offset, SEEK_SET) != 0 ||
      fread(dst, 1, nbytes, f) != nbytes)
    rc = wfx_fail(st, WF_DATA_LOSS,
                  "external data '%s' holds fewer than %zu bytes from "
                  "offset %lld",
                  src->path, nbytes, (long long)src->offset);
  fclose(f);
  return rc;
}

/* Copies n typed values from a protobuf repeated field into the tensor,
 * converting each (int32_data holds the small integer types and bool). */
#define COPY_FIELD(DST_T, src, count)                                          \
  do {                                                                         \
    DST_T *d_ = (DST_T *)data;                                                 \
    for (int64_t k_ = 0; k_ < (count); k_++)                                   \
      d_[k_] = (DST_T)(src)[k_];                                               \
  } while (0)

wf_tensor *ox_strings(const ProtobufCBinaryData *v, size_t k,
                      const wf_shape *s, wf_status *st) {
  if (!WF_HOST_HAS(wfx_host, tensor_new_strings)) {
    wfx_fail(st, WF_UNIMPLEMENTED,
             "string tensors need weft's plugin ABI 1.6; this core has %u.%u",
             (unsigned)wfx_host->abi_major, (unsigned)wfx_host->abi_minor);
    return NULL;
  }
  const char **strs = calloc(k ? k : 1, sizeof *strs);
  size_t *lens = calloc(k ? k : 1, sizeof *lens);
  wf_tensor *t = NULL;
  if (!strs || !lens) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED, "out of memory for %zu strings", k);
  } else {
    for (size_t i = 0; i < k; i++) {
      /* protobuf-c leaves an empty bytes field without data */
      strs[i] = v[i].data ? (const char *)v[i].data : "";
      lens[i] = v[i].len;
    }
    t = wfx_host->tensor_new_strings(s, strs, lens, st);
  }
  free(strs);
  free(lens);
  return t;
}

/* A string tensor: ONNX keeps strings only in string_data. */
static wf_tensor *string_tensor(const Onnx__TensorProto *tp,
                                const wf_shape *s, int64_t count,
                                wf_status *st) {
  if ((tp->has_data_location &&
       tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
      tp->has_raw_data) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "a string tensor keeps its strings in string_data, not in %s",
             tp->has_raw_data ? "raw_data" : "external data");
    return NULL;
  }
  if ((int64_t)tp->n_string_data != count) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "the tensor holds %zu strings; its shape needs %lld",
             tp->n_string_data, (long long)count);
    return NULL;
  }
  return ox_strings(tp->string_data, tp->n_string_data, s, st);
}

wf_tensor *ox_tensor(const Onnx__TensorProto *tp, const char *dir,
                     wf_status *st) {
  wf_shape s;
  int32_t dt = ox_dtype(tp->data_type);

  if (!tp->has_data_type || tp->data_type == 0) {
    wfx_fail(st, WF_INVALID_ARGUMENT, "tensor without an element type");
    return NULL;
  }
  if (dt == WF_DTYPE_INVALID) {
    wfx_fail(st, WF_UNIMPLEMENTED, "element type %s is not supported by weft",
             ox_onnx_type_name(tp->data_type));
    return NULL;
  }
  if (tp->n_dims > WF_MAX_RANK) {
    wfx_fail(st, WF_UNIMPLEMENTED, "rank %zu is above weft's %d",
             tp->n_dims, WF_MAX_RANK);
    return NULL;
  }
  if (tp->segment) {
    wfx_fail(st, WF_UNIMPLEMENTED, "segmented tensors are not supported");
    return NULL;
  }
  s.rank = (int32_t)tp->n_dims;
  int64_t count = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0 || (tp->dims[i] > 0 && count > INT64_MAX / 4 /
                                                             tp->dims[i])) {
      wfx_fail(st, WF_INVALID_ARGUMENT, "dimension %zu is %lld", i,
               (long long)tp->dims[i]);
      return NULL;
    }
    s.dims[i] = tp->dims[i];
    count *= tp->dims[i];
  }
  if (dt == WF_STRING)
    return string_tensor(tp, &s, count, st);
  size_t esize = wfx_dtype_size(dt);
  size_t nbytes = (size_t)count * esize;
  int external = tp->has_data_location &&
                 tp->data_location ==
                     ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  /* Refuse before allocating: a corrupt file must not ask for terabytes. */
  if (!external && tp->has_raw_data && tp->raw_data.len != nbytes) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "raw_data holds %zu bytes; shape and type need %zu",
             tp->raw_data.len, nbytes);
    return NULL;
  }
  size_t typed = 0;
  switch (dt) {
  case WF_FLOAT32:
    typed = tp->n_float_data;
    break;
  case WF_FLOAT64:
    typed = tp->n_double_data;
    break;
  case WF_INT64:
    typed = tp->n_int64_data;
    break;
  default:
    typed = tp->n_int32_data;
  }
  if (!external && !tp->has_raw_data && (int64_t)typed != count) {
    wfx_fail(st, WF_INVALID_ARGUMENT,
             "the tensor holds %zu values; its shape needs %lld", typed,
             (long long)count);
    return NULL;
  }
  ext_src src;
  if (external && find_external(tp, dir, nbytes, &src, st))
    return NULL;
  wf_tensor *t = wfx_host->tensor_new(dt, &s, st);
  if (!t)
    return NULL;
  void *data = wfx_host->tensor_data(t);
  if (external) {
    if (read_external(&src, data, nbytes, st))
      goto fail;
  } else if (tp->has_raw_data) {
    if (nbytes)
      memcpy(data, tp->raw_data.data, nbytes);
  } else {
    switch (dt) {
    case WF_FLOAT32:
      COPY_FIELD(float, tp->float_data, count);
      break;
    case WF_FLOAT64:
      COPY_FIELD(double, tp->double_data, count);
      break;
    case WF_INT64:
      COPY_FIELD(int64_t, tp->int64_data, count);
      break;
    case WF_INT32:
      COPY_FIELD(int32_t, tp->int32_data, count);
      break;
    case WF_INT8:
      COPY_FIELD(int8_t, tp->int32_data, count);
      break;
    case WF_UINT8:
      COPY_FIELD(uint8_t, tp->int32_data, count);
      break;
    case WF_BOOL:
      for (int64_t k = 0; k < count; k++)
        ((uint8_t *)data)[k] = tp->int32_data[k] != 0;
      break;
    default: /* float16 and bfloat16: the bits in the low half */
      COPY_FIELD(uint16_t, tp->int32_data, count);
    }
  }
  if (dt == WF_BOOL) /* weft's bools are 0 or 1 */
    for (int64_t k = 0; k < count; k++)
      ((uint8_t *)data)[k] = ((uint8_t *)data)[k] != 0;
  return t;
fail:
  wfx_host->tensor_release(t);
  return NULL;
}
