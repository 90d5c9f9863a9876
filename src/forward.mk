# src/forward.mk: owned by its module; appends to the lists in Makefile.am.
# The forward pass: attention (MLA, the DSA indexer), MoE layers, the
# per-sequence state and the attention vector loops.
libcoli_a_SOURCES += \
	src/forward.c src/forward_ops.h \
	src/forward_attn.c src/forward_attn.h \
	src/forward_matmul.c src/forward_matmul.h \
	src/forward_parts.c \
	src/forward_rows.c \
	src/forward_state.c src/forward_state.h \
	src/forward_indexer.c src/forward_indexer.h \
	src/forward_vec_ops.c src/forward_vec_ops.h \
	src/forward_moe.c src/forward_moe.h

# attention loops (forward_vec_ops.h)
check_PROGRAMS += tests/core_vec_ops
TESTS += tests/core_vec_ops
tests_core_vec_ops_SOURCES = tests/core_vec_ops.c tests/test_util.h
tests_core_vec_ops_LDADD = libcoli.a $(COLI_LIBS)

# DSA indexer decode figures (sparse vs dense MLA); bench/dsa_decode.sh runs it.
noinst_PROGRAMS += bench/dsa_bench
bench_dsa_bench_SOURCES = bench/dsa_bench.c
bench_dsa_bench_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/dsa_decode.sh

# indexer selection at int4 / int8 / f32 projections; bench/indexer_precision.sh runs it.
noinst_PROGRAMS += bench/indexer_precision
bench_indexer_precision_SOURCES = bench/indexer_precision.c
bench_indexer_precision_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/indexer_precision.sh

# the MTP head against the independent reference
TESTS += tests/core_mtp.sh
EXTRA_DIST += tests/core_mtp.sh
