/* matmul_rows_peak.h - the one-thread int8 peaks matmul_rows_bench's gemm
 * mode divides by: a tight loop of the instruction each q8 path sums
 * with, on operands held in registers (no loads, no float work), as
 * int8 ops per second (2 per multiply-add).
 *   vpdpbusd zmm: 12 independent accumulators (more than latency x
 *     throughput on the cores measured), 64 multiply-adds each;
 *   vpmaddubsw ymm (the AVX2 paths' instruction): 12 independent chains,
 *     32 multiply-adds each. It is the multiply-add rate alone: the
 *     widening of its int16 pair sums to int32 (vpmaddwd, once per 8
 *     vpmaddubsw for int4 weights, once per one for int8) is work of the
 *     kernel, counted against it;
 *   tdpbusd: 4 accumulator tiles C = A.B from 2 A and 2 B tiles, each
 *     16 x 16 x 64 multiply-adds, after the kernel's permission for the
 *     tile data (0 where the CPU or the kernel has no AMX).
 * Header-only, for matmul_rows_bench.c alone; x86-64 GCC/clang. */
#ifndef COLI_BENCH_MATMUL_ROWS_PEAK_H
#define COLI_BENCH_MATMUL_ROWS_PEAK_H

#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util_time.h"

__attribute__((target("avx512f,avx512vnni"))) static double peak_vpdpbusd_run(long iters)
{
	__m512i acc[12];
	__m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x05060708);
	for (int j = 0; j < 12; j++)
		acc[j] = _mm512_set1_epi32(j);
	double t0 = coli_thread_cpu_s();
	for (long i = 0; i < iters; i++) {
		/* the operands opaque, so nothing is folded or hoisted */
		__asm__ volatile("" : "+v"(a), "+v"(b));
#pragma GCC unroll 12
		for (int j = 0; j < 12; j++)
			acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
	}
	double t = coli_thread_cpu_s() - t0;
	__m512i s = acc[0];
	for (int j = 1; j < 12; j++)
		s = _mm512_add_epi32(s, acc[j]);
	volatile int sink = _mm512_reduce_add_epi32(s);
	(void)sink;
	return (double)iters * 12 * 64 * 2 / t;
}

/* The best of 3 runs of 2e7 passes. */
static double peak_best(double (*run)(long))
{
	double best = 0;
	for (int r = 0; r < 3; r++) {
		double v = run(20L * 1000 * 1000);
		best = v > best ? v : best;
	}
	return best;
}

static double bench_peak_vpdpbusd(void)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vnni"))
		return 0;
	return peak_best(peak_vpdpbusd_run);
}

__attribute__((target("avx2"))) static double peak_vpmaddubsw_run(long iters)
{
	__m256i b = _mm256_set1_epi32(0x05060708);
	__m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2);
	__m256i c3 = _mm256_set1_epi32(3), c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5);
	__m256i c6 = _mm256_set1_epi32(6), c7 = _mm256_set1_epi32(7), c8 = _mm256_set1_epi32(8);
	__m256i c9 = _mm256_set1_epi32(9), c10 = _mm256_set1_epi32(10), c11 = _mm256_set1_epi32(11);
	double t0 = coli_thread_cpu_s();
	/* written out: as C, the compiler stored the chains to the stack on
	 * every pass; each chain feeds its own result back as the unsigned
	 * operand, so no product is folded into another */
	for (long i = 0; i < iters; i++)
		__asm__ volatile("vpmaddubsw %12, %0, %0\n\tvpmaddubsw %12, %1, %1\n\t"
				 "vpmaddubsw %12, %2, %2\n\tvpmaddubsw %12, %3, %3\n\t"
				 "vpmaddubsw %12, %4, %4\n\tvpmaddubsw %12, %5, %5\n\t"
				 "vpmaddubsw %12, %6, %6\n\tvpmaddubsw %12, %7, %7\n\t"
				 "vpmaddubsw %12, %8, %8\n\tvpmaddubsw %12, %9, %9\n\t"
				 "vpmaddubsw %12, %10, %10\n\tvpmaddubsw %12, %11, %11"
				 : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5),
				   "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11)
				 : "x"(b));
	double t = coli_thread_cpu_s() - t0;
	__m256i s = _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(c0, c1), _mm256_add_epi16(c2, c3)),
				     _mm256_add_epi16(_mm256_add_epi16(c4, c5), _mm256_add_epi16(c6, c7)));
	s = _mm256_add_epi16(s, _mm256_add_epi16(_mm256_add_epi16(c8, c9), _mm256_add_epi16(c10, c11)));
	volatile int sink = _mm256_extract_epi32(s, 0);
	(void)sink;
	return (double)iters * 12 * 32 * 2 / t;
}

static double bench_peak_vpmaddubsw(void)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		return 0;
	return peak_best(peak_vpmaddubsw_run);
}

struct peak_tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

__attribute__((target("amx-tile,amx-int8"))) static double peak_tdpbusd_run(long iters)
{
	struct peak_tilecfg cfg;
	_Alignas(64) static int8_t src[16 * 64];
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = 16;
	}
	for (int i = 0; i < 16 * 64; i++)
		src[i] = (int8_t)(i % 7 - 3);
	__asm__ volatile("" : : "r"(&cfg), "r"(src) : "memory");
	_tile_loadconfig(&cfg);
	_tile_loadd(4, src, 64);
	_tile_loadd(5, src, 64);
	_tile_loadd(6, src, 64);
	_tile_loadd(7, src, 64);
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	double t0 = coli_thread_cpu_s();
	for (long i = 0; i < iters; i++) {
		_tile_dpbusd(0, 4, 6);
		_tile_dpbusd(1, 4, 7);
		_tile_dpbusd(2, 5, 6);
		_tile_dpbusd(3, 5, 7);
	}
	double t = coli_thread_cpu_s() - t0;
	_Alignas(64) static int32_t out[16 * 16];
	_tile_stored(0, out, 64);
	__asm__ volatile("" : : "r"(out) : "memory");
	_tile_release();
	return (double)iters * 4 * 16 * 16 * 64 * 2 / t;
}

static double bench_peak_tdpbusd(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1) || !((d >> 25) & 1))
		return 0;
	/* ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA */
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0)
		return 0;
	double best = 0;
	for (int r = 0; r < 3; r++) {
		double v = peak_tdpbusd_run(2L * 1000 * 1000);
		best = v > best ? v : best;
	}
	return best;
}

#endif
