/* quant_kernels_cpu.h - the CPU feature tests the x86 kernel files share
 * (quant_kernels_avx2.c, quant_kernels_avx512.c, quant_kernels_q8_avxvnni.c):
 * F16C, which not every compiler's __builtin_cpu_supports can name, so it
 * is asked of cpuid (leaf 1, ecx bit 29), and the once-per-process cache
 * of a path's answer. Whether the OS saves the vector registers is part
 * of the "avx2" / "avx512f" answers. x86 with GCC or clang only. */
#ifndef COLI_KERNELS_CPU_H
#define COLI_KERNELS_CPU_H

#include <cpuid.h>
#include <stdatomic.h>

static inline int coli_cpu_has_f16c(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (int)((c >> 29) & 1);
}

/* test()'s answer, asked once and kept in *have (-1 until then). Every
 * thread computes the same answer, so relaxed order is enough. */
static inline int coli_cpu_once(_Atomic int *have, int (*test)(void))
{
	int h = atomic_load_explicit(have, memory_order_relaxed);
	if (h < 0) {
		__builtin_cpu_init();
		h = test();
		atomic_store_explicit(have, h, memory_order_relaxed);
	}
	return h;
}

#endif
