# src/ingest.mk: owned by its module; appends to the lists in Makefile.am.
# Checkpoint ingestion: safetensors reader, dtype conversions, config.json
# parser (SHA-256 is in util.mk).
libcoli_a_SOURCES += \
	src/ingest_dtype.c src/ingest_dtype.h \
	src/safetensors.c src/safetensors_dir.c src/safetensors.h \
	src/hf_config.c src/hf_config_write.c src/hf_config.h

INGEST_TESTS = tests/ingest_dtype tests/ingest_sha256 tests/ingest_safetensors \
	tests/ingest_config tests/ingest_corpus
check_PROGRAMS += $(INGEST_TESTS)
TESTS += $(INGEST_TESTS)
tests_ingest_dtype_SOURCES = tests/ingest_dtype.c
tests_ingest_dtype_LDADD = libcoli.a $(COLI_LIBS)
tests_ingest_sha256_SOURCES = tests/ingest_sha256.c
tests_ingest_sha256_LDADD = libcoli.a $(COLI_LIBS)
tests_ingest_safetensors_SOURCES = tests/ingest_safetensors.c tests/ingest_util.h
tests_ingest_safetensors_LDADD = libcoli.a $(COLI_LIBS)
tests_ingest_config_SOURCES = tests/ingest_config.c tests/ingest_util.h
tests_ingest_config_LDADD = libcoli.a $(COLI_LIBS)
tests_ingest_corpus_SOURCES = tests/ingest_corpus.c tests/fuzz/fuzz_ingest.c
tests_ingest_corpus_LDADD = libcoli.a $(COLI_LIBS)

# libFuzzer target and seed corpus (built by tests/fuzz/run-fuzz.sh with clang)
EXTRA_DIST += tests/fuzz/run-fuzz.sh tests/fuzz/ingest.dict tests/fuzz/corpus

# Throughput figures for the record; built by `make check`, never run by it.
check_PROGRAMS += tests/ingest_bench
tests_ingest_bench_SOURCES = tests/ingest_bench.c tests/ingest_util.h
tests_ingest_bench_LDADD = libcoli.a $(COLI_LIBS)
