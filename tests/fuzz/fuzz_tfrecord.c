/* tests/fuzz/fuzz_tfrecord.c — fuzz target for the tfrecord reader. The
 * first input byte picks a mode; the rest is the file:
 *   bit 0  repair the framing first (lengths clamped to what remains, both
 *          CRCs recomputed), so that mutations reach the Example decoder
 *          instead of stopping at a CRC check;
 *   bit 1  compress the file before writing it (so the framing behind
 *          inflate sees arbitrary bytes too): gzip, or zlib with bit 2.
 * Corrupt gzip and zlib come from inputs that are compressed already with
 * bit 1 clear.
 *
 * Each file is read three times: schema from the first record (with
 * count validating data CRCs), explicit specs with defaults, and raw.
 * Beyond crashes and sanitizer reports it checks the reader's contracts:
 * fields agree with the schema, positions only grow, a fatal error leaves
 * the position alone and repeats, count agrees with the records seen, and
 * seek returns to every told position. */
#include <config.h>

#include <zlib.h>

#include "fuzz_common.h"
/* The plugin's CRC (tfr_crc32c.c, compiled in; tests/readers checks it
 * against a bitwise one) and TFRecord's masking. */
#include "tfrecord.h"

const wf_plugin_desc *reader_tfrecord_LTX_weft_plugin(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_setup(reader_tfrecord_LTX_weft_plugin());
  return 0;
}

/* ---- writing the file ---------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* Rewrites d as well-framed TFRecord data: each length clamped to what
 * remains, both CRCs right; a tail shorter than a whole record stays. */
static void repair_framing(uint8_t *d, size_t size) {
  size_t o = 0;
  while (size - o >= 16) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--)
      len = len << 8 | d[o + (size_t)i];
    if (len > size - o - 16) {
      len = size - o - 16;
      for (int i = 0; i < 8; i++)
        d[o + (size_t)i] = (uint8_t)(len >> (8 * i));
    }
    put_le32(d + o + 8, tfr_crc_mask(tfr_crc32c(0, d + o, 8)));
    put_le32(d + o + 12 + len,
             tfr_crc_mask(tfr_crc32c(0, d + o + 12, (size_t)len)));
    o += 16 + (size_t)len;
  }
}

/* Writes data to path, compressed as gzip (gz 1) or zlib (gz 2). */
static void write_file(const char *path, const uint8_t *data, size_t n,
                       int gz) {
  z_stream z;
  size_t cap;
  unsigned char *out;

  if (!gz) {
    fuzz_write(path, data, n);
    return;
  }
  memset(&z, 0, sizeof z);
  cap = compressBound((uLong)n) + 64;
  CHECK((out = malloc(cap)) != NULL);
  CHECK(deflateInit2(&z, 6, Z_DEFLATED, gz == 1 ? 16 + MAX_WBITS : MAX_WBITS,
                     8, Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in = (unsigned char *)data;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
  fuzz_write(path, out, cap - z.avail_out);
  deflateEnd(&z);
  free(out);
}

/* ---- reading it ---------------------------------------------------------- */

static void check_error(const char *path, const wf_status *st) {
  int code = (int)wf_status_code(st);
  CHECK(code != WF_OK);
  CHECK(*wf_status_message(st) != '\0');
  /* Errors about the data name the file. */
  if (code == WF_DATA_LOSS || code == WF_INVALID_ARGUMENT)
    CHECK(strstr(wf_status_message(st), path) != NULL);
}

static void release_all(wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(f[i]);
    f[i] = NULL;
  }
}

/* Fields agree with the schema: dtype, rank, every known dim. */
static void check_fields(void *rd, wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_reader_field fd;
    wf_shape s;
    CHECK(f[i] != NULL);
    fuzz_field_init(&fd);
    fuzz_reader->field(rd, i, &fd);
    wf_tensor_shape(f[i], &s);
    CHECK(fd.dtype == (int32_t)wf_tensor_dtype(f[i]));
    CHECK(fd.shape.rank == s.rank);
    for (int k = 0; k < s.rank; k++)
      CHECK(fd.shape.dims[k] < 0 || fd.shape.dims[k] == s.dims[k]);
  }
}

/* validate: the options make count check data CRCs. */
static void exercise(const char *path, const wf_attr_item *opts, int nopts,
                     int validate) {
  wf_status *st = wf_status_new();
  wf_status *again = wf_status_new();
  wf_tensor *f[64] = {0};
  uint64_t told[8];
  int ntold = 0, nfields = 0, rc = 0, crc_bad = 0;
  int64_t framed = 0, count;
  void *rd = NULL;

  if (fuzz_reader->open(path, opts, nopts, &rd, st) != 0) {
    CHECK(rd == NULL);
    check_error(path, st);
    goto done;
  }
  nfields = fuzz_reader->num_fields(rd);
  CHECK(nfields >= 0 && nfields <= 64);
  CHECK(fuzz_reader->tell(rd) == 0);
  for (int i = 0; i < FUZZ_MAX_RECORDS; i++) {
    uint64_t before = fuzz_reader->tell(rd);
    rc = fuzz_reader->next(rd, f, st);
    if (rc == WF_READER_END)
      break;
    if (rc == WF_READER_RECORD) {
      check_fields(rd, f, nfields);
      release_all(f, nfields);
      if (ntold < 8)
        told[ntold++] = before;
    } else {
      CHECK(rc < 0 && -rc == (int)wf_status_code(st));
      check_error(path, st);
      for (int k = 0; k < nfields; k++)
        CHECK(f[k] == NULL);
      if (rc != -WF_DATA_LOSS) {
        /* Fatal: the reader stays where it was and says it again. */
        CHECK(fuzz_reader->tell(rd) == before);
        CHECK(fuzz_reader->next(rd, f, again) == rc);
        CHECK(strcmp(wf_status_message(again), wf_status_message(st)) == 0);
        break;
      }
      if (strstr(wf_status_message(st), "data CRC mismatch"))
        crc_bad = 1;
    }
    framed++;
    CHECK(fuzz_reader->tell(rd) > before);
  }

  /* Count walks the same framing. */
  count = fuzz_reader->count(rd, st);
  if (rc == WF_READER_END && validate && crc_bad)
    CHECK(count == -1 && wf_status_code(st) == WF_DATA_LOSS);
  else if (rc == WF_READER_END)
    CHECK(count == framed);
  if (count < 0)
    check_error(path, st);

  /* Every told position leads back to the record read there. */
  for (int k = ntold - 1; k >= 0; k--) {
    CHECK(fuzz_reader->seek(rd, told[k], st) == 0);
    CHECK(fuzz_reader->tell(rd) == told[k]);
    CHECK(fuzz_reader->next(rd, f, st) == WF_READER_RECORD);
    check_fields(rd, f, nfields);
    release_all(f, nfields);
  }
  /* A position inside the first record is refused without moving. */
  if (ntold > 0 && told[0] == 0) {
    uint64_t here = fuzz_reader->tell(rd);
    CHECK(fuzz_reader->seek(rd, 1, st) != 0);
    check_error(path, st);
    CHECK(fuzz_reader->tell(rd) == here);
  }
  fuzz_reader->close(rd);
done:
  wf_status_free(again);
  wf_status_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const specs[] = {
      "image:float32:-1,2:0.5,1.5", "label:int64::7", "name:string:-1:none",
      "tokens:int64:-1:", "record:float32:2,2:1,2,3,4"};
  const wf_attr_item inferred[] = {
      {"validate", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}}};
  const wf_attr_item explicit_[] = {
      {"features",
       {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = 5, .u.strings = specs}},
      {"max_record_bytes", {.type = WF_ATTR_INT, .count = 1, .u.i = 1 << 20}}};
  const wf_attr_item raw[] = {
      {"raw", {.type = WF_ATTR_BOOL, .count = 1, .u.b = 1}}};
  const char *path = fuzz_path("input.tfrecord", 0);
  uint8_t mode, *copy;

  if (size < 1)
    return 0;
  mode = data[0];
  data++;
  size--;
  CHECK((copy = malloc(size ? size : 1)) != NULL);
  if (size)
    memcpy(copy, data, size);
  if (mode & 1)
    repair_framing(copy, size);
  write_file(path, copy, size, (mode & 2) ? ((mode & 4) ? 2 : 1) : 0);
  free(copy);

  exercise(path, inferred, 1, 1);
  exercise(path, explicit_, 2, 0);
  exercise(path, raw, 1, 0);
  return 0;
}
