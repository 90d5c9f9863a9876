# Core engine library and the `coli` command.
noinst_LIBRARIES += libcoli.a
libcoli_a_SOURCES = \
	src/coli_err.c src/coli_err.h \
	src/coli_log.c src/coli_log.h \
	src/model_config.h src/tokenizer.h src/chat_template.h \
	src/cli.h src/cli_util.c src/cli_util.h src/cli_json.c src/cli_json.h \
	src/model.c src/model_bind.c src/model.h \
	src/state.c src/state.h \
	src/forward.c src/forward_ops.h src/indexer.c src/indexer.h src/vec_ops.c src/vec_ops.h \
	src/moe.c src/moe.h \
	src/sampler.c src/sampler.h src/logprob.c \
	src/json_schema.c src/grammar.c src/grammar.h src/grammar_impl.h src/grammar_regex.c \
	src/grammar_mask.c src/grammar_mask.h \
	src/stop_match.c src/stop_match.h \
	src/model_dir.c src/model_dir.h \
	src/engine.c src/engine.h \
	src/engine_request.c src/engine_request.h \
	src/engine_flags.c src/engine_flags.h \
	src/engine_session.c src/engine_slot.c src/engine_grammar.c src/engine_internal.h \
	src/engine_draft.c src/engine_draft.h src/engine_draft_mode.c src/engine_draft_auto.c src/engine_draft_auto.h \
	src/bench_draft.c src/bench_draft.h \
	src/chat_transcript.c src/chat_transcript.h src/chat_think.c src/chat_think.h \
	src/cmd_logits.c src/cmd_generate.c src/cmd_bench.c src/cmd_doctor.c

bin_PROGRAMS += coli
coli_SOURCES = src/coli_main.c
coli_LDADD = libcoli.a $(COLI_LIBS)

EXTRA_DIST += tools/install-deps.sh tools/run.sh tools/test.sh tools/summarize-tests.sh tools/check-claims.sh .ci/run

# attention loops (vec_ops.h)
check_PROGRAMS += tests/core_vec_ops
TESTS += tests/core_vec_ops
tests_core_vec_ops_SOURCES = tests/core_vec_ops.c tests/test_util.h
tests_core_vec_ops_LDADD = libcoli.a $(COLI_LIBS)

# DSA indexer decode figures (sparse vs dense MLA); bench/dsa_decode.sh runs it.
noinst_PROGRAMS += bench/dsa_bench
bench_dsa_bench_SOURCES = bench/dsa_bench.c
bench_dsa_bench_LDADD = libcoli.a $(COLI_LIBS)
EXTRA_DIST += bench/dsa_decode.sh
EXTRA_DIST += bench/draft.sh bench/prefill_chunk.sh

# per-input cost of the matmul kernels for n = 1..8 inputs (bench/README.md)
noinst_PROGRAMS += bench/matmul_rows_bench
bench_matmul_rows_bench_SOURCES = bench/matmul_rows_bench.c
bench_matmul_rows_bench_LDADD = libcoli.a $(COLI_LIBS)
