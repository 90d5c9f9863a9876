# Core tests (forward pass helpers, engine pieces).
check_PROGRAMS += tests/core_stop_match_test tests/core_sampler_test tests/core_batch_test tests/core_draft_test tests/core_draft_auto_test
TESTS += tests/core_stop_match_test tests/core_sampler_test
tests_core_stop_match_test_SOURCES = tests/core_stop_match_test.c
tests_core_stop_match_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_sampler_test_SOURCES = tests/core_sampler_test.c
tests_core_sampler_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_batch_test_SOURCES = tests/core_batch_test.c
tests_core_batch_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_draft_test_SOURCES = tests/core_draft_test.c
tests_core_draft_test_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/core_draft.sh tests/core_draft_auto_test
tests_core_draft_auto_test_SOURCES = tests/core_draft_auto_test.c tests/test_util.h
tests_core_draft_auto_test_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += tests/core_draft.sh
TESTS += tests/core_placement.sh tests/core_session_resume.sh tests/core_doctor.sh tests/core_batch.sh \
	tests/core_parallel.sh tests/core_long_context.sh tests/core_mtp.sh tests/core_dsa.sh
EXTRA_DIST += tests/test_skip.sh tests/tools_summary.sh
TESTS += tests/tools_summary.sh
check_PROGRAMS += tests/core_stalled_client
tests_core_stalled_client_SOURCES = tests/core_stalled_client.c
tests_core_stalled_client_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/core_stalled_client.sh
EXTRA_DIST += tests/core_stalled_client.sh
EXTRA_DIST += tests/core_placement.sh tests/core_session_resume.sh tests/core_doctor.sh tests/core_batch.sh \
	tests/core_parallel.sh tests/core_long_context.sh tests/core_mtp.sh tests/core_dsa.sh

# Structured output: the schema grammar and its token mask
check_PROGRAMS += tests/grammar_test
TESTS += tests/grammar_test tests/grammar_fuzz.sh tests/grammar_conformance.sh tests/grammar_cli.sh tests/grammar_mask.sh \
	tests/server_structured.sh tests/server_structured_sdk.sh tests/server_thinking.sh
EXTRA_DIST += tests/grammar_fuzz.sh tests/grammar_fuzz_schemas.py tests/grammar_conformance.sh tests/grammar_cli.sh tests/grammar_conformance_check.py \
	tests/grammar_mask.sh tests/server_structured.sh tests/server_structured_wire.py tests/server_structured_sdk.sh \
	tests/server_structured_sdk.js tests/server_thinking.sh tests/server_thinking_wire.py tests/server_thinking_sdk.js bench/grammar_mask.sh
tests_grammar_test_SOURCES = tests/grammar_test.c tests/test_util.h
tests_grammar_test_LDADD = libcoli.a $(COLI_LIBS)
# reasoning split out of answers (server_think.c)
check_PROGRAMS += tests/server_test_think
TESTS += tests/server_test_think
tests_server_test_think_SOURCES = tests/server_test_think.c
tests_server_test_think_LDADD = libcoli.a $(COLI_LIBS)
# mask cost per token (bench/grammar_mask.sh); built, never run by make check
noinst_PROGRAMS += bench/grammar_bench
bench_grammar_bench_SOURCES = bench/grammar_bench.c
bench_grammar_bench_LDADD = libcoli.a $(COLI_LIBS)
# a stalled reader vs the other slots' decode rate, and admission beside
# 10..1,000 saved sessions (bench/README.md); built, never run by make check
noinst_PROGRAMS += bench/stalled_client_bench bench/session_admission_bench
bench_stalled_client_bench_SOURCES = bench/stalled_client_bench.c
bench_stalled_client_bench_LDADD = libcoli.a $(COLI_LIBS)
bench_session_admission_bench_SOURCES = bench/session_admission_bench.c
bench_session_admission_bench_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/stalled_client.sh bench/session_admission.sh
# --no-heat / COLI_NO_HEAT / bench --cold: no routing heat loaded or saved;
# the default cache directory keyed by the container fingerprint.
TESTS += tests/engine_no_heat.sh tests/engine_cache_dir.sh
EXTRA_DIST += tests/engine_no_heat.sh tests/engine_cache_dir.sh
# coli bench: needed vs wasted bytes, step/max(io, compute), ceiling.
TESTS += tests/bench_figures.sh
EXTRA_DIST += tests/bench_figures.sh
# Damaged and inconsistent containers (issue 20, items 8-9).
TESTS += tests/model_damage.sh
EXTRA_DIST += tests/model_damage.sh tests/damage_container.py
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
EXTRA_DIST += tests/test_util.h tests/fuzz_corpus.h
