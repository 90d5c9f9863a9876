/* quant_kernels_cpu.h - the CPU feature test the x86 kernel files share
 * (quant_kernels_avx2.c, quant_kernels_avx512.c): F16C, which not every compiler's
 * __builtin_cpu_supports can name, so it is asked of cpuid (leaf 1, ecx
 * bit 29). Whether the OS saves the vector registers is part of the
 * "avx2" / "avx512f" answers. x86 with GCC or clang only. */
#ifndef COLI_KERNELS_CPU_H
#define COLI_KERNELS_CPU_H

#include <cpuid.h>

static inline int coli_cpu_has_f16c(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (int)((c >> 29) & 1);
}

#endif
