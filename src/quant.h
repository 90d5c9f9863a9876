/* quant.h - weight formats of the model container, and quantizers.
 *
 * A quantized matrix W[rows][cols] is stored row-major; each row is a
 * sequence of blocks of QK = 64 consecutive input columns. cols must be a
 * multiple of 64 for the quantized types (otherwise the tensor stays f32).
 * The byte layout below is the on-disk layout AND the in-RAM layout: the
 * kernels compute straight from a read buffer, with no repacking.
 *
 *   COLI_Q_F32   plain little-endian float32, rows*cols*4 bytes.
 *   COLI_Q_INT8  block of 64: { float d; int8_t q[64]; }         68 bytes
 *                w[i] = d * q[i]                    (symmetric, per group)
 *   COLI_Q_INT4  block of 64: { uint16_t d, m (IEEE half); uint8_t q[32]; } 36 bytes
 *                element j   (0..31) = low nibble of q[j]
 *                element j+32        = high nibble of q[j]
 *                w = d * nibble + m                 (affine, per group)
 *
 * Why affine int4: on Gaussian-like weights the affine grid (min + 16 steps
 * over [min,max]) measured lower relative RMS error than a symmetric grid
 * of the same size; convert records both figures in the manifest. */
#ifndef COLI_QUANT_H
#define COLI_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define COLI_QK 64

enum coli_qtype { COLI_Q_F32 = 0, COLI_Q_INT8 = 1, COLI_Q_INT4 = 2 };

typedef struct {
	float d;
	int8_t q[COLI_QK];
} coli_block_q8;

typedef struct {
	uint16_t d;
	uint16_t m;
	uint8_t q[COLI_QK / 2];
} coli_block_q4;

_Static_assert(sizeof(coli_block_q8) == 68, "q8 block layout");
_Static_assert(sizeof(coli_block_q4) == 36, "q4 block layout");

/* A matrix view: data points into a resident buffer or an expert record. */
typedef struct coli_qmat {
	int qtype;   /* enum coli_qtype */
	int rows;    /* output dimension */
	int cols;    /* input dimension */
	const void *data;
} coli_qmat;

/* "f32", "int8", "int4-g64"; NULL for unknown. */
const char *coli_qtype_name(int qtype);
/* Parse a name as above (also accepts "int4"); -1 when unknown. */
int coli_qtype_parse(const char *name);

/* Bytes for one row / the whole matrix in the given type. */
size_t coli_qtype_row_bytes(int qtype, int cols);
size_t coli_qtype_bytes(int qtype, int rows, int cols);

/* Sanity of stored weights, cheap enough to run on every record read:
 * f32 values must be finite; an INT8 block's d and an INT4 block's d must
 * be finite and >= 0 (the quantizers write absmax/127 and (max-min)/15),
 * an INT4 block's m finite. Random bytes fail this with near certainty
 * within a few blocks (half their signs are negative), and a NaN or Inf
 * scale would otherwise turn every logit into NaN. Returns -1 when all
 * rows pass, else the first bad row. Reads only the scales of quantized
 * types (one word per 64 weights). */
int coli_quant_check_rows(int qtype, const void *data, int rows, int cols);

/* Quantize n_rows rows of f32 input (row-major, cols each) into dst,
 * which must hold coli_qtype_bytes(qtype, n_rows, cols). Returns 0,
 * -EINVAL (unknown type, cols % 64 for a quantized type) or -ERANGE (a
 * NaN/inf weight, or for INT4 a group whose min or step does not fit in a
 * half, |w| > 65504); dst is then partly written. INT8 uses d = absmax/127
 * and q = round(w/d); INT4 rounds d = (max-min)/15 and m = min to half
 * first, then q = round((w-m)/d) clamped to 0..15 (d == 0: all q = 0).
 * Rounding is to nearest, ties to even. */
int coli_quantize_rows(int qtype, const float *src, int n_rows, int cols, void *dst);
/* Inverse: expand rows back to f32 (for error measurement and tests). */
void coli_dequantize_rows(int qtype, const void *src, int n_rows, int cols, float *dst);

/* Relative RMS error of a round trip: ||W - deq(q(W))|| / ||W|| over the
 * rows x cols matrix w (computed in double). 0 for F32; -1 on bad
 * arguments (cols not a multiple of 64 for quantized types, weights the
 * type cannot hold, no memory). */
double coli_quant_rel_rms(int qtype, const float *w, int rows, int cols);
/* The same figure for a symmetric int4 grid with the same storage cost
 * (half scale d = signed absmax / -8, q in [-8, 7]), so convert can publish
 * why the affine layout was chosen. Not a container format. */
double coli_quant_rel_rms_int4_symmetric(const float *w, int rows, int cols);

/* Half-precision helpers (IEEE binary16 <-> float), round-to-nearest-even.
 * half -> float is exact and inline: the per-group scale loops of the
 * attention products (forward_vec_ops.c) call it twice per 64 weights. */
static inline float coli_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		/* zero or subnormal: mant * 2^-24 is exact in float */
		f = (float)mant * 0x1p-24f;
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (mant << 13);
	else
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	memcpy(&f, &bits, sizeof f);
	return f;
}
uint16_t coli_float_to_half(float f);

#endif
