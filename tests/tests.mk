# tests/tests.mk: what the tests of every module share, and the tests of no
# single module. Each module's tests are listed in its own fragment
# (src/<module>.mk, cli/cli.mk, tui/tui.mk) beside its sources.
# test_skip (a missing outside tool skips, fails in CI), the C tests' CHECK
# macros and the corpus walker:
EXTRA_DIST += tests/test_skip.sh tests/tiny_model.sh tests/test_util.h tests/engine_test.h tests/fuzz_corpus.h
# tools/summarize-tests.sh counts each test once per configuration.
TESTS += tests/tools_summary.sh
EXTRA_DIST += tests/tools_summary.sh
# tools/check-claims.sh fails when a README figure is edited to a wrong value
TESTS += tests/tools_check_claims.sh
EXTRA_DIST += tests/tools_check_claims.sh
# Seeds of the file-parser fuzz targets (tests/fuzz/run-fuzz.sh fuzzes
# them with clang): each corpus runs through its target's invariant checks.
FUZZ_CORPUS_TESTS = tests/fuzz_manifest_corpus tests/fuzz_kv_corpus tests/fuzz_tokenizer_corpus
check_PROGRAMS += $(FUZZ_CORPUS_TESTS)
TESTS += $(FUZZ_CORPUS_TESTS)
tests_fuzz_manifest_corpus_SOURCES = tests/fuzz_corpus.c tests/fuzz/fuzz_manifest.c tests/fuzz/fuzz_util.h
tests_fuzz_manifest_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-manifest"'
tests_fuzz_manifest_corpus_LDADD = libcoli.a $(COLI_LIBS)
tests_fuzz_kv_corpus_SOURCES = tests/fuzz_corpus.c tests/fuzz/fuzz_kv.c tests/fuzz/fuzz_util.h
tests_fuzz_kv_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-kv"'
tests_fuzz_kv_corpus_LDADD = libcoli.a $(COLI_LIBS)
tests_fuzz_tokenizer_corpus_SOURCES = tests/fuzz_corpus.c tests/fuzz/fuzz_tokenizer.c tests/fuzz/fuzz_util.h
tests_fuzz_tokenizer_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-tokenizer"'
tests_fuzz_tokenizer_corpus_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += tests/fuzz/corpus-manifest tests/fuzz/corpus-kv tests/fuzz/corpus-tokenizer
