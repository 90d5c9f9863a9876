/* util_crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Used by the on-disk formats (colitop-kv(5)) to detect torn and corrupted
 * records, and by the model container (colitop-model(5)) to verify every
 * tensor and expert record it reads. Uses the SSE4.2 crc32 instruction
 * when the CPU has it (and, for buffers of 1 KiB and more, carry-less
 * multiplication folding where it has AVX-512 and VPCLMULQDQ), otherwise a
 * slicing-by-8 table; all give identical results. Chosen at run time.
 * Thread-safe. */
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
/* 1 when long buffers use the VPCLMULQDQ folding path as well. */
int crc32c_fold_available(void);

#endif
