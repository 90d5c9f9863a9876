# convert/ingest.mk: owned by its module; appends to the lists in Makefile.am.
# Checkpoint ingestion: safetensors reader and writer, dtype conversions
# (the config.json parser is the model's, src/model_hf_config.c; SHA-256 is
# in util.mk).
libcoliconvert_a_SOURCES += \
	convert/ingest_dtype.c convert/ingest_dtype.h \
	convert/ingest_safetensors.c convert/ingest_safetensors_dir.c convert/ingest_safetensors.h \
	convert/ingest_safetensors_write.c convert/ingest_safetensors_write.h

INGEST_TESTS = tests/ingest_dtype tests/ingest_sha256 tests/ingest_safetensors \
	tests/ingest_config tests/ingest_corpus
check_PROGRAMS += $(INGEST_TESTS)
TESTS += $(INGEST_TESTS)
tests_ingest_dtype_SOURCES = tests/ingest_dtype.c
tests_ingest_dtype_LDADD = $(COLI_CONVERT_LDADD)
tests_ingest_sha256_SOURCES = tests/ingest_sha256.c
tests_ingest_sha256_LDADD = $(COLI_CONVERT_LDADD)
tests_ingest_safetensors_SOURCES = tests/ingest_safetensors.c tests/ingest_util.h
tests_ingest_safetensors_LDADD = $(COLI_CONVERT_LDADD)
tests_ingest_config_SOURCES = tests/ingest_config.c tests/ingest_util.h
tests_ingest_config_LDADD = $(COLI_CONVERT_LDADD)
tests_ingest_corpus_SOURCES = tests/ingest_corpus.c tests/fuzz/fuzz_ingest.c
tests_ingest_corpus_LDADD = $(COLI_CONVERT_LDADD)

# libFuzzer target and seed corpus (built by tests/fuzz/run-fuzz.sh with clang)
EXTRA_DIST += tests/fuzz/run-fuzz.sh tests/fuzz/ingest.dict tests/fuzz/corpus

# Throughput figures for the record; built by `make check`, never run by it.
check_PROGRAMS += tests/ingest_bench
tests_ingest_bench_SOURCES = tests/ingest_bench.c tests/ingest_util.h
tests_ingest_bench_LDADD = $(COLI_CONVERT_LDADD)
