/* quant_q8act_amxemu.c - the AMX q8 row kernels (quant_kernels_q8_amx.c) checked
 * on CPUs without AMX: the file is included here with its tile
 * instructions (ldtilecfg, tileloadd, tilestored, tilezero, tdpbssd,
 * tdpbsud, tilerelease) replaced by an exact emulation in portable C, so
 * everything else in it (the weight transposes, the loop over panels,
 * chunks and tiles, the ragged tiles, and the float part whose bits must
 * be the portable kernels') is the real code, run with AVX-512. The
 * emulation also checks the file's use of the tiles: a configuration
 * loaded first, shapes that agree (A: M x 4K, B: K x 4N, C: M x 4N bytes)
 * and no tile used after the release. quant_q8act_amx.c (the other half of
 * this test program) runs the same file on the real tiles where the CPU
 * has them. */
#include "config.h"

#include "quant_q8act_amx.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <stdint.h>
#include <string.h>

#include <immintrin.h>

struct emu_tiles {
	int configured;
	uint8_t rows[8];
	uint16_t colsb[8];
	uint8_t t[8][16][64];
};
static _Thread_local struct emu_tiles emu;
static int emu_misuse;

static int emu_tile_ok(int t)
{
	if (!emu.configured || t < 0 || t > 7 || emu.rows[t] > 16 || emu.colsb[t] > 64 ||
	    !emu.rows[t] || !emu.colsb[t]) {
		emu_misuse++;
		return 0;
	}
	return 1;
}

static void emu_loadconfig(const void *cfg)
{
	const uint8_t *c = cfg;
	memset(&emu, 0, sizeof emu);
	if (c[0] != 1) {
		emu_misuse++;
		return;
	}
	for (int t = 0; t < 8; t++) {
		emu.rows[t] = c[48 + t];
		emu.colsb[t] = (uint16_t)(c[16 + 2 * t] | c[17 + 2 * t] << 8);
	}
	emu.configured = 1;
}

static void emu_release(void)
{
	memset(&emu, 0, sizeof emu);
}

static void emu_loadd(int t, const void *base, long stride)
{
	if (!emu_tile_ok(t))
		return;
	memset(emu.t[t], 0, sizeof emu.t[t]);
	for (int r = 0; r < emu.rows[t]; r++)
		memcpy(emu.t[t][r], (const uint8_t *)base + (long)r * stride, emu.colsb[t]);
}

static void emu_stored(int t, void *base, long stride)
{
	if (!emu_tile_ok(t))
		return;
	for (int r = 0; r < emu.rows[t]; r++)
		memcpy((uint8_t *)base + (long)r * stride, emu.t[t][r], emu.colsb[t]);
}

static void emu_zero(int t)
{
	if (emu_tile_ok(t))
		memset(emu.t[t], 0, sizeof emu.t[t]);
}

/* C[m][n] += sum_{k, i < 4} A[m][4k + i] * B[k][4n + i], bytes signed or
 * unsigned as asked, summed into int32 with wraparound (as the
 * instruction does; the file's sums never come near it) */
static void emu_dp(int c, int a, int b, int a_signed, int b_signed)
{
	if (!emu_tile_ok(c) || !emu_tile_ok(a) || !emu_tile_ok(b))
		return;
	const int M = emu.rows[c], N = emu.colsb[c] / 4, K = emu.colsb[a] / 4;
	if (emu.rows[a] != M || emu.rows[b] != K || emu.colsb[b] != emu.colsb[c] ||
	    emu.colsb[a] % 4 || emu.colsb[c] % 4) {
		emu_misuse++;
		return;
	}
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			int32_t acc;
			memcpy(&acc, &emu.t[c][m][4 * n], 4);
			uint32_t u = (uint32_t)acc;
			for (int k = 0; k < K; k++)
				for (int i = 0; i < 4; i++) {
					uint8_t x = emu.t[a][m][4 * k + i], y = emu.t[b][k][4 * n + i];
					int32_t xv = a_signed ? (int8_t)x : x, yv = b_signed ? (int8_t)y : y;
					u += (uint32_t)(xv * yv);
				}
			memcpy(&emu.t[c][m][4 * n], &u, 4);
		}
}

/* immintrin.h is in already (its guard keeps it from coming again): the
 * file's tile operations are renamed to the emulation, and its exported
 * function too, so the real one in libcoli.a stays as it is */
#undef _tile_loadconfig
#undef _tile_release
#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#define _tile_loadconfig(cfg) emu_loadconfig(cfg)
#define _tile_release() emu_release()
#define _tile_loadd(t, base, stride) emu_loadd(t, base, stride)
#define _tile_stored(t, base, stride) emu_stored(t, base, stride)
#define _tile_zero(t) emu_zero(t)
#define _tile_dpbssd(c, a, b) emu_dp(c, a, b, 1, 1)
#define _tile_dpbsud(c, a, b) emu_dp(c, a, b, 1, 0)
#define coli_kernels_q8_amx_rows emu_kernels_q8_amx_rows
#include "quant_kernels_q8_amx.c"
#undef coli_kernels_q8_amx_rows

coli_q8_rows_fn amx_emu_rows(int qtype)
{
	/* the file's float part is AVX-512 (F, BW, VL, DQ, F16C, FMA): the
	 * f32 kernels' check */
	if (!coli_kernels_avx512_rows(COLI_Q_F32))
		return NULL;
	return qtype == COLI_Q_INT8 ? rows_q8_amx : qtype == COLI_Q_INT4 ? rows_q4_amx : NULL;
}

int amx_emu_misuse(void)
{
	return emu_misuse;
}

#else

coli_q8_rows_fn amx_emu_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

int amx_emu_misuse(void)
{
	return 0;
}

#endif
