/* plugins/readers/tfrecord/tfr_crc32c.c — the tfrecord reader's CRC-32C
 * (Castagnoli, reflected polynomial 0x82F63B78) for its framing: a portable
 * slicing-by-8 version and, on x86 CPUs with SSE4.2, one built on the crc32
 * instruction. The plugin's own (the core keeps another for checkpoints):
 * no plugin compiles a core source.
 *
 * It does not combine CRCs of separate pieces, interleave streams or mask
 * CRCs (TFRecord's masking is the reader's). */
#include <config.h>

#include "tfr_crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86_CRC 1
#include <cpuid.h>
#include <nmmintrin.h>
#endif

#define POLY UINT32_C(0x82F63B78)

/* table[k][b]: the CRC state after byte b followed by k zero bytes, so
 * eight table lookups advance the state by eight bytes at once. */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_fill(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    table[0][b] = c;
  }
  for (int k = 1; k < 8; k++)
    for (uint32_t b = 0; b < 256; b++)
      table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

uint32_t tfr_crc32c_portable(uint32_t crc, const void *data, size_t n) {
  const uint8_t *p = data;
  uint32_t c = ~crc;

  pthread_once(&table_once, table_fill);
  /* Byte at a time up to an 8-byte boundary, then eight at a time. */
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    n--;
  }
  while (n >= 8) {
    uint32_t lo = load_le32(p) ^ c;
    uint32_t hi = load_le32(p + 4);
    c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
        table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
        table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
        table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0)
    c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
  return ~c;
}

#ifdef HAVE_X86_CRC
int tfr_crc32c_hw_available(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return 0;
  return (c & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2"))) uint32_t
tfr_crc32c_hw(uint32_t crc, const void *data, size_t n) {
  const uint8_t *p = data;
  uint32_t c = ~crc;

  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8(c, *p++);
    n--;
  }
#ifdef __x86_64__
  {
    uint64_t c64 = c;
    while (n >= 8) {
      uint64_t v;
      memcpy(&v, p, 8);
      c64 = _mm_crc32_u64(c64, v);
      p += 8;
      n -= 8;
    }
    c = (uint32_t)c64;
  }
#endif
  while (n >= 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    c = _mm_crc32_u32(c, v);
    p += 4;
    n -= 4;
  }
  while (n-- > 0)
    c = _mm_crc32_u8(c, *p++);
  return ~c;
}
#else
int tfr_crc32c_hw_available(void) { return 0; }

uint32_t tfr_crc32c_hw(uint32_t crc, const void *data, size_t n) {
  return tfr_crc32c_portable(crc, data, n);
}
#endif

/* Chosen once: the instruction when the CPU has it. */
static uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_choose(void) {
  crc_fn = tfr_crc32c_hw_available() ? tfr_crc32c_hw : tfr_crc32c_portable;
}

uint32_t tfr_crc32c(uint32_t crc, const void *data, size_t n) {
  pthread_once(&crc_once, crc_choose);
  return crc_fn(crc, data, n);
}
