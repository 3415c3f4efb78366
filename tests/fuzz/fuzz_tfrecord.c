/* tests/fuzz/fuzz_tfrecord.c — libFuzzer target for the tfrecord reader:
 * each input is a file (plain, gzip or zlib) read through the plugin's own
 * entry point with three option sets (schema from the first record,
 * explicit specs with defaults, raw), checking the reader's contracts:
 * fields match the schema, positions only grow, a fatal error repeats,
 * count agrees with the records seen, seek returns to any told position.
 *
 * The plugin is linked in, not dlopen'ed, and sees a small strict host
 * table defined here (no libweft), so the fuzzer builds with clang alone.
 * Build and run: tests/fuzz/tfrecord.mk. */
#include <config.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <weft/plugin.h>

const wf_plugin_desc *weft_plugin(void);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* No tensor the reader makes from a fuzz input (at most a few MB once
 * inflated) may come near this. */
#define MAX_TENSOR_BYTES ((size_t)256 << 20)
#define MAX_RECORDS 100000

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* ---- a strict host table ---------------------------------------------- */

struct wf_status {
  int32_t code;
  char msg[4096];
};

struct wf_tensor {
  int32_t dtype;
  int refs;
  wf_shape shape;
  size_t nbytes;
  void *data;
};

static void *h_alloc(size_t bytes, size_t align) {
  if (align == 0)
    align = 64;
  CHECK((align & (align - 1)) == 0);
  bytes = (bytes + align - 1) / align * align;
  return aligned_alloc(align, bytes ? bytes : align);
}

static void h_free(void *p) { free(p); }

static void h_status_set(wf_status *st, int32_t code, const char *fmt, ...) {
  va_list ap;
  CHECK(code >= 0 && code <= WF_UNAUTHENTICATED);
  if (!st)
    return;
  st->code = code;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
}

static int32_t h_status_code(const wf_status *st) { return st ? st->code : 0; }
static const char *h_status_message(const wf_status *st) {
  return st ? st->msg : "";
}

static void h_log(int32_t level, const char *who, const char *fmt, ...) {
  (void)level;
  (void)who;
  (void)fmt;
}

static wf_tensor *h_tensor_new(int32_t dtype, const wf_shape *shape,
                               wf_status *st) {
  size_t n = dtype == WF_FLOAT32 ? 4 : dtype == WF_INT64 ? 8 : 1;
  wf_tensor *t;
  CHECK(dtype == WF_FLOAT32 || dtype == WF_INT64 || dtype == WF_UINT8);
  CHECK(shape->rank >= 0 && shape->rank <= WF_MAX_RANK);
  for (int i = 0; i < shape->rank; i++) {
    CHECK(shape->dims[i] >= 0);
    CHECK(shape->dims[i] == 0 ||
          n <= MAX_TENSOR_BYTES / (uint64_t)shape->dims[i]);
    n *= (size_t)shape->dims[i];
  }
  CHECK(n <= MAX_TENSOR_BYTES);
  t = calloc(1, sizeof *t);
  if (!t) {
    h_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  t->dtype = dtype;
  t->refs = 1;
  t->shape = *shape;
  t->nbytes = n;
  t->data = malloc(n ? n : 1);
  CHECK(t->data);
  return t;
}

static wf_tensor *h_tensor_retain(wf_tensor *t) {
  t->refs++;
  return t;
}

static void h_tensor_release(wf_tensor *t) {
  if (t && --t->refs == 0) {
    free(t->data);
    free(t);
  }
}

static int32_t h_tensor_dtype(const wf_tensor *t) { return t->dtype; }
static void h_tensor_shape(const wf_tensor *t, wf_shape *out) {
  *out = t->shape;
}
static size_t h_tensor_nbytes(const wf_tensor *t) { return t->nbytes; }
static void *h_tensor_data(const wf_tensor *t) { return t->data; }

/* Entries after tensor_data are never used by the reader: the table ends
 * there, as an older core's would. */
static const wf_host host = {
    .struct_size = (uint32_t)(offsetof(wf_host, tensor_data) +
                              sizeof(((wf_host *)0)->tensor_data)),
    .abi_major = WF_ABI_MAJOR,
    .abi_minor = WF_ABI_MINOR,
    .alloc = h_alloc,
    .free = h_free,
    .status_set = h_status_set,
    .status_code = h_status_code,
    .status_message = h_status_message,
    .log = h_log,
    .tensor_new = h_tensor_new,
    .tensor_retain = h_tensor_retain,
    .tensor_release = h_tensor_release,
    .tensor_dtype = h_tensor_dtype,
    .tensor_shape = h_tensor_shape,
    .tensor_nbytes = h_tensor_nbytes,
    .tensor_data = h_tensor_data,
};

/* ---- the target -------------------------------------------------------- */

static const wf_reader_def *reader;
static int memfd = -1;
static char path[64];

static void setup(void) {
  const wf_plugin_desc *d = weft_plugin();
  wf_status st = {0};
  void *state = NULL;
  CHECK(d && d->readers && d->readers[0]);
  CHECK(d->init(&host, &state, &st) == 0);
  reader = d->readers[0];
  memfd = memfd_create("fuzz.tfrecord", 0);
  CHECK(memfd >= 0);
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
}

static void check_message(const wf_status *st) {
  CHECK(st->code != 0);
  CHECK(st->msg[0] != '\0');
  /* Errors about the data name the file. */
  if (st->code == WF_DATA_LOSS || st->code == WF_INVALID_ARGUMENT)
    CHECK(strstr(st->msg, path) != NULL);
}

static void release_all(wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    h_tensor_release(f[i]);
    f[i] = NULL;
  }
}

/* Fields must agree with the schema: dtype, rank, every known dim. */
static void check_fields(void *rd, wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_reader_field fd;
    CHECK(f[i] != NULL);
    reader->field(rd, i, &fd);
    CHECK(fd.dtype == f[i]->dtype);
    CHECK(fd.shape.rank == f[i]->shape.rank);
    for (int k = 0; k < fd.shape.rank; k++)
      CHECK(fd.shape.dims[k] < 0 || fd.shape.dims[k] == f[i]->shape.dims[k]);
  }
}

/* validate: the options ask count to check data CRCs. */
static void exercise(const wf_attr_item *opts, int nopts, int validate) {
  wf_status st = {0};
  wf_tensor *f[16] = {0};
  uint64_t told[8];
  int ntold = 0;
  void *rd = NULL;
  int nfields, rc = 0, crc_bad = 0;
  int64_t framed = 0, count;
  uint64_t pos = 0;

  if (reader->open(path, opts, nopts, &rd, &st) != 0) {
    CHECK(rd == NULL);
    check_message(&st);
    return;
  }
  nfields = reader->num_fields(rd);
  CHECK(nfields >= 0 && nfields <= 16);
  CHECK(reader->tell(rd) == 0);
  for (int i = 0; i < MAX_RECORDS; i++) {
    uint64_t before = reader->tell(rd);
    st.code = 0;
    rc = reader->next(rd, f, &st);
    if (rc == WF_READER_END)
      break;
    if (rc == WF_READER_RECORD) {
      check_fields(rd, f, nfields);
      release_all(f, nfields);
      if (ntold < 8)
        told[ntold++] = before;
    } else {
      CHECK(rc < 0 && -rc == st.code);
      check_message(&st);
      for (int k = 0; k < nfields; k++)
        CHECK(f[k] == NULL);
      if (rc == -WF_DATA_LOSS && strstr(st.msg, "data CRC mismatch"))
        crc_bad = 1;
      if (rc != -WF_DATA_LOSS) {
        /* Fatal: the reader stays where it was and says it again. */
        wf_status again = {0};
        CHECK(reader->tell(rd) == before);
        CHECK(reader->next(rd, f, &again) == rc);
        CHECK(strcmp(again.msg, st.msg) == 0);
        break;
      }
    }
    framed++;
    CHECK(reader->tell(rd) > before);
    CHECK(reader->tell(rd) > pos || pos == 0);
    pos = reader->tell(rd);
  }

  /* Count walks the same framing. */
  st.code = 0;
  count = reader->count(rd, &st);
  if (rc == WF_READER_END && validate && crc_bad)
    CHECK(count == -1 && st.code == WF_DATA_LOSS);
  else if (rc == WF_READER_END)
    CHECK(count == framed);
  if (count < 0)
    check_message(&st);

  /* Every told position leads back to the record read there. */
  for (int k = ntold - 1; k >= 0; k--) {
    st.code = 0;
    CHECK(reader->seek(rd, told[k], &st) == 0);
    CHECK(reader->tell(rd) == told[k]);
    CHECK(reader->next(rd, f, &st) == WF_READER_RECORD);
    check_fields(rd, f, nfields);
    release_all(f, nfields);
  }
  /* A position inside the first record is refused without moving. */
  if (ntold > 0 && told[0] == 0) {
    uint64_t here = reader->tell(rd);
    st.code = 0;
    CHECK(reader->seek(rd, 1, &st) != 0);
    check_message(&st);
    CHECK(reader->tell(rd) == here);
  }
  reader->close(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const specs[] = {
      "image:float32:-1,2:0.5,1.5", "label:int64::7", "name:string:-1:none",
      "tokens:int64:-1:", "record:float32:2,2:1,2,3,4"};
  wf_attr_item inferred[] = {
      {"validate", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}}};
  wf_attr_item explicit_[] = {
      {"features",
       {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = 5, .u.strings = specs}},
      {"max_record_bytes", {.type = WF_ATTR_INT, .count = 1, .u.i = 1 << 20}}};
  wf_attr_item raw[] = {{"raw", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}}};

  if (!reader)
    setup();
  CHECK(ftruncate(memfd, 0) == 0);
  CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);
  exercise(inferred, 1, 1);
  exercise(explicit_, 2, 0);
  exercise(raw, 1, 0);
  return 0;
}
