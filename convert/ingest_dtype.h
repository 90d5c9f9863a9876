/* ingest_dtype.h - scalar conversions of checkpoint element types to float. */
#ifndef COLI_DTYPE_H
#define COLI_DTYPE_H

#include <stddef.h>
#include <stdint.h>

float dtype_bf16_to_f32(uint16_t v);
uint16_t dtype_f32_to_bf16(float f);          /* round to nearest even */
float dtype_f16_to_f32(uint16_t v);
uint16_t dtype_f32_to_f16(float f);
float dtype_fp8_e4m3_to_f32(uint8_t v);       /* OCP e4m3fn: no inf, 0x7f/0xff NaN */
uint8_t dtype_f32_to_fp8_e4m3(float f);       /* saturating, round nearest even */
float dtype_fp8_e5m2_to_f32(uint8_t v);       /* the top byte of an f16 */

/* Convert n elements of a checkpoint dtype (enum st_dtype in ingest_safetensors.h)
 * to f32. `src` and `dst` may alias when src == (char *)dst + n*4 - n*size
 * (raw bytes loaded at the tail of the output buffer): every element is read
 * before the output word that overlaps it is written. Returns 0, or -1 for
 * a dtype that has no float conversion. */
int dtype_to_f32(int st_dtype, const void *src, float *dst, size_t n);

/* Multiply a [rows][cols] f32 matrix in place by 128x128 block scales
 * scale_inv[ceil(rows/128)][ceil(cols/128)] (DeepSeek FP8 checkpoints). */
void dtype_apply_block_scales(float *w, int64_t rows, int64_t cols,
			      const float *scale_inv, int block);

#endif
