# src/quant.mk: owned by its module; appends to the lists in Makefile.am.
# Weight formats, matrix kernels, compute pool, kernel benchmark.
libcoli_a_SOURCES += \
	src/quant.c src/quant.h \
	src/quant_kernels.c src/quant_kernels_group.c src/quant_kernels_avx2.c src/quant_kernels_avx512.c src/quant_kernels.h src/quant_kernels_tiling.h src/quant_kernels_cpu.h \
	src/quant_kernels_rows.h \
	src/quant_kernels_avx512_inline.h \
	src/quant_pool.c \
	src/quant_kernel_bench.c src/quant_kernel_bench.h

# int8 activations (opt-in --act-quant q8): quant_kernels_q8.h
libcoli_a_SOURCES += \
	src/quant_kernels_q8.c src/quant_kernels_q8.h src/quant_kernels_q8_avx512.c src/quant_kernels_q8_avx2.c \
	src/quant_kernels_q8_avx2_gemm.c src/quant_kernels_q8_avx512_blocks.h \
	src/quant_kernels_q8_avxvnni.c src/quant_kernels_q8_avx2_rows.h src/quant_kernels_q8_amx.c
check_PROGRAMS += tests/quant_q8act_test tests/quant_group_test
TESTS += tests/quant_q8act_test tests/quant_group_test
tests_quant_group_test_SOURCES = tests/quant_group.c tests/test_util.h
tests_quant_group_test_LDADD = libcoli.a $(COLI_LIBS)
tests_quant_q8act_test_SOURCES = tests/quant_q8act.c tests/test_util.h
tests_quant_q8act_test_LDADD = libcoli.a $(COLI_LIBS)
# the AVX-VNNI q8 kernels on CPUs without AVX-VNNI (vpdpbusd emulated)
check_PROGRAMS += tests/quant_q8act_vnniemu_test
TESTS += tests/quant_q8act_vnniemu_test
tests_quant_q8act_vnniemu_test_SOURCES = tests/quant_q8act_vnniemu.c tests/test_util.h
tests_quant_q8act_vnniemu_test_LDADD = libcoli.a $(COLI_LIBS)
# the AMX q8 kernels on the real tiles and, on any AVX-512 CPU, emulated ones
check_PROGRAMS += tests/quant_q8act_amx_test
TESTS += tests/quant_q8act_amx_test
tests_quant_q8act_amx_test_SOURCES = tests/quant_q8act_amx.c tests/quant_q8act_amxemu.c \
	tests/quant_q8act_amx.h tests/test_util.h
tests_quant_q8act_amx_test_LDADD = libcoli.a $(COLI_LIBS)
# --act-quant q8 in the engine: determinism, flag and environment handling
TESTS += tests/quant_q8act_engine.sh
EXTRA_DIST += tests/quant_q8act_engine.sh

check_PROGRAMS += tests/quant_format_test tests/quant_kernels_test tests/quant_pool_test
TESTS += tests/quant_format_test tests/quant_kernels_test tests/quant_pool_test
# the code path choice ($COLI_KERNELS_ISA); runs tests/quant_kernels_test
TESTS += tests/avx512_env.sh
EXTRA_DIST += tests/avx512_env.sh
tests_quant_format_test_SOURCES = tests/quant_format.c
tests_quant_format_test_LDADD = libcoli.a $(COLI_LIBS)
tests_quant_kernels_test_SOURCES = tests/quant_kernels.c
tests_quant_kernels_test_LDADD = libcoli.a $(COLI_LIBS)
tests_quant_pool_test_SOURCES = tests/quant_pool.c
tests_quant_pool_test_LDADD = libcoli.a $(COLI_LIBS)

# Not a test (it measures, it asserts nothing): `tests/quant_bench [SECONDS]
# [THREADS]` prints coli_bench_kernels() as JSON.
noinst_PROGRAMS += tests/quant_bench
tests_quant_bench_SOURCES = tests/quant_bench.c
tests_quant_bench_LDADD = libcoli.a $(COLI_LIBS)

# per-input cost of the matmul kernels for n = 1..8 inputs, q8 GEMM rates
# per path against the int8 peaks (bench/README.md)
noinst_PROGRAMS += bench/matmul_rows_bench
bench_matmul_rows_bench_SOURCES = bench/matmul_rows_bench.c bench/matmul_rows_peak.h
bench_matmul_rows_bench_LDADD = libcoli.a $(COLI_LIBS)
