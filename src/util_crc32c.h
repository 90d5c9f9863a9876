/* util_crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Used by the on-disk formats (colitop-kv(5)) to detect torn and corrupted
 * records. Uses the SSE4.2 crc32 instruction when the CPU has it, otherwise
 * a slicing-by-8 table; both give identical results. Thread-safe. */
#ifndef COLI_CRC32C_H
#define COLI_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 for the first chunk, then the previous result.
 * crc32c_update(0, "123456789", 9) == 0xE3069283. */
uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len);

/* Same, forcing the portable table implementation (tests compare both). */
uint32_t crc32c_update_sw(uint32_t crc, const void *buf, size_t len);

/* 1 when the hardware path is used. */
int crc32c_hw_available(void);

#endif
