# src/store.mk: owned by its module; appends to the lists in Makefile.am.
# Tiered expert store (pinned / cached / disk, io_uring, mirrors, heat),
# its telemetry block and the disk baseline of `coli iobench` (store_iobench.c).
libcoli_a_SOURCES += \
	src/expert_store_stats.c src/expert_store_stats.h \
	src/expert_store.h src/expert_store_int.h \
	src/expert_store.c src/expert_store_open.c src/expert_store_hot.c \
	src/expert_store_io.c src/expert_store_policy.c \
	src/expert_store_heat.c src/expert_store_heat_writer.c src/expert_store_opts.c \
	src/expert_store_budget.c src/expert_store_budget.h src/expert_store_verify.c \
	src/expert_store_mirror.c src/expert_store_mirror.h

check_PROGRAMS += tests/store_read
tests_store_read_SOURCES = tests/store_read.c tests/store_test.h
tests_store_read_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_read

# CRC-32C of records read, and failed reads that never stick
check_PROGRAMS += tests/store_checksum
tests_store_checksum_SOURCES = tests/store_checksum.c tests/store_test.h
tests_store_checksum_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_checksum

check_PROGRAMS += tests/store_heat tests/store_size
tests_store_heat_SOURCES = tests/store_heat.c tests/store_test.h
tests_store_heat_LDADD = libcoli.a $(COLI_LIBS)
tests_store_size_SOURCES = tests/store_size.c tests/store_test.h
tests_store_size_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_heat tests/store_size

# the automatic expert budget's derivation and cgroup files (fixtures)
check_PROGRAMS += tests/store_budget
tests_store_budget_SOURCES = tests/store_budget.c tests/store_test.h
tests_store_budget_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_budget

check_PROGRAMS += tests/store_policy tests/store_stats
tests_store_policy_SOURCES = tests/store_policy.c tests/store_test.h
tests_store_policy_LDADD = libcoli.a $(COLI_LIBS)
tests_store_stats_SOURCES = tests/store_stats.c tests/store_test.h
tests_store_stats_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_policy tests/store_stats

# scan resistance in steps of many sequences
check_PROGRAMS += tests/store_stream
tests_store_stream_SOURCES = tests/store_stream.c tests/store_test.h
tests_store_stream_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/store_stream

libcoli_a_SOURCES += src/store_iobench.c src/store_iobench.h
TESTS += tests/store_iobench.sh
EXTRA_DIST += tests/store_iobench.sh

man_MANS += man/coli-iobench.1
EXTRA_DIST += man/coli-iobench.1.in

# Measurement, not a test: store read throughput vs `coli iobench`.
noinst_PROGRAMS += bench/store_bench
bench_store_bench_SOURCES = bench/store_bench.c
bench_store_bench_LDADD = libcoli.a $(COLI_LIBS)

# The tiered store on a GLM-5-shaped slice (issue 4); results in bench/README.md.
EXTRA_DIST += bench/README.md bench/glm5_slice.sh bench/glm5_slice_report.py \
	bench/skew_router.py bench/routing_policy.sh bench/find_coli.sh bench/bench_args.sh bench/warm_decode.sh
# colitop against llama.cpp on the same slice (issue 21; never run by make check)
EXTRA_DIST += bench/peer_llamacpp.sh bench/slice_to_gguf.py bench/decode_parts.sh
# Cost of the per-record scale check next to the record's products (a
# measurement, never run by make check).
noinst_PROGRAMS += bench/scale_check_bench
bench_scale_check_bench_SOURCES = bench/scale_check_bench.c
bench_scale_check_bench_LDADD = libcoli.a $(COLI_LIBS)

# partial mirrors planned by `coli atlas --plan-mirror` (issue 29)
TESTS += tests/store_mirror_plan.sh
EXTRA_DIST += tests/store_mirror_plan.sh

# placement never changes the model; `coli bench`'s needed vs wasted bytes
TESTS += tests/core_placement.sh tests/bench_figures.sh
EXTRA_DIST += tests/core_placement.sh tests/bench_figures.sh
