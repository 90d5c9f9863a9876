# src/grammar.mk: owned by its module; appends to the lists in Makefile.am.
# Structured output: JSON Schema and regex compiled to a grammar, the token
# mask.
libcoli_a_SOURCES += \
	src/grammar.c src/grammar.h src/grammar_impl.h src/grammar_number.c src/grammar_matcher.c \
	src/grammar_json_schema.c src/grammar_productive.c src/grammar_regex.c src/grammar_ref.c \
	src/grammar_mask.c src/grammar_mask.h
# Agent tools' schema shapes rewritten into the subset (issue 31).
libcoli_a_SOURCES += src/grammar_schema_prep.c src/grammar_schema_scalar.c

check_PROGRAMS += tests/grammar_test
TESTS += tests/grammar_test tests/grammar_fuzz.sh tests/grammar_conformance.sh tests/grammar_cli.sh tests/grammar_mask.sh
EXTRA_DIST += tests/grammar_fuzz.sh tests/grammar_fuzz_schemas.py tests/grammar_conformance.sh tests/grammar_cli.sh \
	tests/grammar_conformance_check.py tests/grammar_mask.sh bench/grammar_mask.sh
tests_grammar_test_SOURCES = tests/grammar_test.c tests/test_util.h
tests_grammar_test_LDADD = libcoli.a $(COLI_LIBS)
# mask cost per token (bench/grammar_mask.sh); built, never run by make check
noinst_PROGRAMS += bench/grammar_bench
bench_grammar_bench_SOURCES = bench/grammar_bench.c
bench_grammar_bench_LDADD = libcoli.a $(COLI_LIBS)
