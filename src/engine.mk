# src/engine.mk: owned by its module; appends to the lists in Makefile.am.
# The engine thread: requests, slots, sessions, batching, speculative
# decoding, stop strings, engine flags shared by coli and colitop.
libcoli_a_SOURCES += \
	src/engine.c src/engine.h \
	src/engine_request.c src/engine_request.h \
	src/engine_flags.c src/engine_flags.h \
	src/engine_model.c src/engine_model.h \
	src/engine_session.c src/engine_session_writer.c src/engine_slot.c src/engine_step.c src/engine_kv.c src/engine_grammar.c src/engine_internal.h \
	src/engine_draft.c src/engine_draft.h src/engine_draft_mode.c src/engine_draft_auto.c src/engine_draft_auto.h \
	src/engine_stop_match.c src/engine_stop_match.h \
	src/engine_profile.c src/engine_profile.h src/engine_profile_writer.c \
	src/engine_atlas.c src/engine_atlas.h

EXTRA_DIST += bench/draft.sh bench/prefill_chunk.sh

# Engine tests: stop strings, batched decode, MTP drafting (through the
# engine and its auto rule), sessions, parallel slots, long context, DSA
# through the engine, a stalled reader, heat and the cache directory.
check_PROGRAMS += tests/core_stop_match_test tests/core_batch_test tests/core_draft_test tests/core_draft_auto_test \
	tests/core_stalled_client tests/core_kv_budget
SLOW_TESTS += tests/core_draft.sh
TESTS += tests/core_stop_match_test tests/core_draft_auto_test tests/core_session_resume.sh \
	tests/core_batch.sh tests/core_parallel.sh tests/core_long_context.sh tests/core_dsa.sh \
	tests/core_dsa_spill.sh tests/core_stalled_client.sh tests/engine_no_heat.sh tests/engine_cache_dir.sh \
	tests/core_kv_budget.sh
tests_core_stop_match_test_SOURCES = tests/core_stop_match_test.c
tests_core_stop_match_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_batch_test_SOURCES = tests/core_batch_test.c
tests_core_batch_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_draft_test_SOURCES = tests/core_draft_test.c
tests_core_draft_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_draft_auto_test_SOURCES = tests/core_draft_auto_test.c tests/test_util.h
tests_core_draft_auto_test_LDADD = libcoli.a $(COLI_LIBS)
tests_core_stalled_client_SOURCES = tests/core_stalled_client.c
tests_core_stalled_client_LDADD = libcoli.a $(COLI_LIBS)
tests_core_kv_budget_SOURCES = tests/core_kv_budget.c tests/engine_test.h tests/test_util.h
tests_core_kv_budget_LDADD = libcoli.a $(COLI_LIBS)
# the routing profile file (engine_profile.h)
check_PROGRAMS += tests/engine_profile_test
TESTS += tests/engine_profile_test
tests_engine_profile_test_SOURCES = tests/engine_profile_test.c tests/test_util.h
tests_engine_profile_test_LDADD = libcoli.a $(COLI_LIBS)
# 1,000 sessions' routing profiles in memory that does not grow (issue 29)
check_PROGRAMS += tests/engine_profile_sessions
TESTS += tests/engine_profile_sessions.sh
EXTRA_DIST += tests/engine_profile_sessions.sh
tests_engine_profile_sessions_SOURCES = tests/engine_profile_sessions.c tests/test_util.h
tests_engine_profile_sessions_LDADD = libcoli.a $(COLI_LIBS)
# sessions saved by the writer thread beside another slot's decode
check_PROGRAMS += tests/core_session_writer
TESTS += tests/core_session_writer.sh
EXTRA_DIST += tests/core_session_writer.sh
tests_core_session_writer_SOURCES = tests/core_session_writer.c tests/test_util.h
tests_core_session_writer_LDADD = libcoli.a $(COLI_LIBS)
check_PROGRAMS += tests/core_session_bind
TESTS += tests/core_session_bind.sh
EXTRA_DIST += tests/core_session_bind.sh
tests_core_session_bind_SOURCES = tests/core_session_bind.c tests/test_util.h
tests_core_session_bind_LDADD = libcoli.a $(COLI_LIBS)
# prompt caching from saved sessions with the kept prefix index
check_PROGRAMS += tests/core_prefix_index
TESTS += tests/core_prefix_index.sh
EXTRA_DIST += tests/core_prefix_index.sh
tests_core_prefix_index_SOURCES = tests/core_prefix_index.c tests/test_util.h
tests_core_prefix_index_LDADD = libcoli.a $(COLI_LIBS)
# prefix reuse from a saved session read by the session writer thread
check_PROGRAMS += tests/core_prefix_adopt
TESTS += tests/core_prefix_adopt.sh
EXTRA_DIST += tests/core_prefix_adopt.sh
tests_core_prefix_adopt_SOURCES = tests/core_prefix_adopt.c tests/test_util.h
tests_core_prefix_adopt_LDADD = libcoli.a $(COLI_LIBS)
# structured output compiled by the submitter, never the engine thread
check_PROGRAMS += tests/engine_grammar_submit
TESTS += tests/engine_grammar_submit.sh
EXTRA_DIST += tests/engine_grammar_submit.sh
tests_engine_grammar_submit_SOURCES = tests/engine_grammar_submit.c tests/test_util.h
tests_engine_grammar_submit_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += tests/core_draft.sh tests/core_session_resume.sh tests/core_batch.sh tests/core_parallel.sh \
	tests/core_long_context.sh tests/core_dsa.sh tests/core_dsa_spill.sh tests/core_stalled_client.sh \
	tests/engine_no_heat.sh tests/engine_cache_dir.sh tests/core_kv_budget.sh
# a stalled reader vs the other slots' decode rate, and admission beside
# 10..1,000 saved sessions (bench/README.md); built, never run by make check
noinst_PROGRAMS += bench/stalled_client_bench bench/session_admission_bench bench/session_save_bench \
	bench/session_resume_bench
bench_stalled_client_bench_SOURCES = bench/stalled_client_bench.c
bench_stalled_client_bench_LDADD = libcoli.a $(COLI_LIBS)
bench_session_admission_bench_SOURCES = bench/session_admission_bench.c
bench_session_admission_bench_LDADD = libcoli.a $(COLI_LIBS)
# a running slot's largest token gap beside another slot's session saves
bench_session_save_bench_SOURCES = bench/session_save_bench.c
bench_session_save_bench_LDADD = libcoli.a $(COLI_LIBS)
bench_session_resume_bench_SOURCES = bench/session_resume_bench.c
bench_session_resume_bench_LDADD = libcoli.a $(COLI_LIBS)
# the decode step with routing profiles on and off (bench/README.md)
noinst_PROGRAMS += bench/profile_decode_bench
bench_profile_decode_bench_SOURCES = bench/profile_decode_bench.c
bench_profile_decode_bench_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/stalled_client.sh bench/session_admission.sh bench/session_save.sh bench/session_resume.sh \
	bench/profile_decode.sh
# another slot's token gaps while a schema-constrained request is
# admitted (bench/README.md); built, never run by make check
noinst_PROGRAMS += bench/grammar_admission_bench
bench_grammar_admission_bench_SOURCES = bench/grammar_admission_bench.c
bench_grammar_admission_bench_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/grammar_admission.sh
