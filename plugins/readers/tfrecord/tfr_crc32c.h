/* plugins/readers/tfrecord/tfr_crc32c.h — CRC-32C (Castagnoli), as
 * TFRecord's framing uses it (unmasked: masking is record.c's). Depends on
 * nothing but the C library. */
#ifndef TFR_CRC32C_H
#define TFR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC-32C over n more bytes: crc is the CRC of what came before
 * (0 to start), the result is the CRC of everything. Thread-safe. */
uint32_t tfr_crc32c(uint32_t crc, const void *data, size_t n);
/* The two implementations tfr_crc32c chooses between. The second uses
 * SSE4.2's crc32 instruction and may only be called when
 * tfr_crc32c_hw_available() is 1 (elsewhere it is the first). */
uint32_t tfr_crc32c_portable(uint32_t crc, const void *data, size_t n);
uint32_t tfr_crc32c_hw(uint32_t crc, const void *data, size_t n);
int tfr_crc32c_hw_available(void);

#endif
