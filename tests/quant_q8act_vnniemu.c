/* quant_q8act_vnniemu.c - the AVX-VNNI q8 row kernels (quant_kernels_q8_avxvnni.c)
 * checked on any x86-64 CPU with AVX2, FMA and F16C: few of the machines
 * that build and test colitop have AVX-VNNI (AMD before Zen 5 lacks it),
 * so quant_q8act_test skips that path there and it would otherwise only
 * ever be compiled. This file includes quant_kernels_q8_avxvnni.c with its one
 * AVX-VNNI instruction, vpdpbusd (_mm256_dpbusd_avx_epi32), replaced by an
 * exact AVX2 equivalent (u8 x s8 products of 4 bytes summed into int32,
 * wrapping as vpdpbusd does), and compares its row functions, bit for
 * bit, with the portable kernels (quant_kernels_q8.c, the definition) on the
 * shapes of quant_q8act.c, int8 weights holding -128 included. Everything
 * else in those functions is the real code. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_kernels.h"
#include "quant_kernels_q8.h"
#include "quant.h"
#include "test_util.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

/* vpdpbusd: acc + sum over each dword's 4 bytes of u8(a) * s8(b); the
 * products and their sums fit int16 x int16 -> int32 vpmaddwd exactly */
static inline __attribute__((always_inline, target("avx2"))) __m256i
emu_dpbusd(__m256i acc, __m256i a, __m256i b)
{
	__m256i ae = _mm256_and_si256(a, _mm256_set1_epi16(0x00ff)), ao = _mm256_srli_epi16(a, 8);
	__m256i be = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), bo = _mm256_srai_epi16(b, 8);
	__m256i pe = _mm256_madd_epi16(ae, be), po = _mm256_madd_epi16(ao, bo);
	/* opaque to the compiler: in a function compiled for AVX-VNNI, clang
	 * would fuse vpmaddwd + vpaddd into vpdpwssd, itself AVX-VNNI */
	__asm__("" : "+x"(pe), "+x"(po));
	return _mm256_add_epi32(acc, _mm256_add_epi32(pe, po));
}

/* immintrin.h is in already (its guard keeps it from coming again): only
 * the file's uses are renamed; its exported function too, so the real one
 * in libcoli.a stays as it is */
#define _mm256_dpbusd_avx_epi32 emu_dpbusd
#define coli_kernels_q8_avxvnni_rows emu_kernels_q8_avxvnni_rows
#include "quant_kernels_q8_avxvnni.c"
#undef _mm256_dpbusd_avx_epi32
#undef coli_kernels_q8_avxvnni_rows

struct shape {
	int rows, cols, n;
};

static const struct shape shapes[] = {
	{ 1, 64, 1 },    { 3, 64, 2 },   { 5, 128, 9 },    { 13, 640, 4 },
	{ 37, 2048, 5 }, { 7, 18432, 2 }, { 96, 2048, 3 }, { 301, 1024, 9 },
	{ 19, 6144, 7 }, { 130, 4096, 1 }, { 700, 512, 18 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void check_shape(int qtype, struct shape sh)
{
	const int nb = sh.cols / 64;
	size_t nw = (size_t)sh.rows * sh.cols, ny = (size_t)sh.n * sh.rows;
	float *wf = malloc(nw * sizeof *wf), *x = malloc((size_t)sh.n * sh.cols * sizeof *x);
	float *y0 = malloc(ny * sizeof *y0), *y = malloc(ny * sizeof *y);
	void *wq = malloc(coli_qtype_bytes(qtype, sh.rows, sh.cols));
	coli_q8act a = { 0 };
	REQUIRE(wf && x && y0 && y && wq && !coli_q8act_init(&a, sh.n, sh.cols, NULL), "memory");
	for (size_t i = 0; i < nw; i++)
		wf[i] = frand() * 0.05f + (i % 64 == 3 ? 0.02f : 0.0f);
	for (size_t i = 0; i < (size_t)sh.n * sh.cols; i++)
		x[i] = frand() * (float)(1 + i / 64 % 5);
	if ((size_t)sh.n * sh.cols >= 128)
		memset(x + 64, 0, 64 * sizeof *x); /* a zero block (d = 0) */
	CHECK(coli_quantize_rows(qtype, wf, sh.rows, sh.cols, wq) == 0, "quantize weights");
	if (qtype == COLI_Q_INT8) /* the extreme weight vpdpbusd's offset form must take */
		for (int r = 0; r < sh.rows; r++) {
			coli_block_q8 *blk = (coli_block_q8 *)wq + (size_t)r * nb;
			blk[0].q[r % 64] = -128;
			blk[nb - 1].q[63 - r % 64] = -128;
		}
	coli_qmat w = { qtype, sh.rows, sh.cols, wq };
	coli_kernels_q8_force_path("generic");
	CHECK(coli_q8act_quantize(&a, x, sh.n, sh.cols) == 0, "quantize x");
	coli_matmul_q8_rows(&w, &a, 0, sh.rows, y0);
	coli_kernels_q8_force_path(NULL);
	/* the file's row functions, whatever this CPU has */
	coli_q8_rows_fn f = qtype == COLI_Q_INT8 ? rows_q8_avxvnni : rows_q4_avxvnni;
	/* whole, and in pieces of 8 rows plus ragged ones (as the pool and
	 * coli_matmul_q8_rows may split) */
	memset(y, 0xff, ny * sizeof *y);
	f(&w, &a, sh.n, 0, sh.rows, y);
	CHECK(!memcmp(y, y0, ny * sizeof *y), "avxvnni (emulated) differs from generic: %s %dx%d n%d",
	      coli_qtype_name(qtype), sh.rows, sh.cols, sh.n);
	memset(y, 0xff, ny * sizeof *y);
	for (int r0 = 0; r0 < sh.rows;) {
		int r1 = r0 + (r0 % 3 ? 8 : 13);
		r1 = r1 < sh.rows ? r1 : sh.rows;
		f(&w, &a, sh.n, r0, r1, y);
		r0 = r1;
	}
	CHECK(!memcmp(y, y0, ny * sizeof *y), "avxvnni (emulated) in pieces differs: %s %dx%d n%d",
	      coli_qtype_name(qtype), sh.rows, sh.cols, sh.n);
	coli_q8act_free(&a);
	free(wf);
	free(x);
	free(y0);
	free(y);
	free(wq);
}

int main(int argc, char **argv)
{
	(void)argc;
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
	    !coli_kernels_q8_avx2_rows(COLI_Q_INT4)) {
		/* 77: automake's SKIP, so a run where nothing was checked does
		 * not read as a pass */
		printf("no AVX2 + FMA + F16C here: the emulation cannot run, skipped\n");
		/* a machine that must run it (.ci/run) fails instead */
		return test_isa_required("avxvnni-emu") ? 1 : 77;
	}
	for (int s = 0; s < N_SHAPES; s++) {
		check_shape(COLI_Q_INT4, shapes[s]);
		check_shape(COLI_Q_INT8, shapes[s]);
	}
	return test_summary(argv[0]);
}

#else

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("not x86-64: no AVX-VNNI path to check, skipped\n");
	return test_isa_required("avxvnni-emu") ? 1 : 77;
}

#endif
