# server/server.mk: owned by its module; appends to the lists in Makefile.am.
# The HTTP server (OpenAI/Anthropic-compatible endpoint) and `coli serve`.
libcoliserver_a_SOURCES += \
	server/server.h server/server_internal.h \
	server/server_util.c server/server_parse.c server/server_anthropic.c \
	server/server_openai.c server/server_stop.c server/server_gen.c \
	server/server_metrics.c server/server_handlers.c server/server_http.c server/server_guard.c server/server_head.c server/server_door.c server/server_structured.c \
	server/server_logprobs.c server/server_think.c
# The Responses API (issue 31).
libcoliserver_a_SOURCES += server/server_responses.h server/server_responses.c server/server_responses_out.c \
	server/server_responses_stream.c server/server_responses_store.c
# Tool calls: tool_choice forcing, and calls parsed as they are generated.
libcoliserver_a_SOURCES += server/server_tool_choice.c server/server_toolcall.c
check_PROGRAMS += tests/server_test_toolcall tests/server_test_reasoning
TESTS += tests/server_test_toolcall tests/server_test_reasoning
tests_server_test_toolcall_SOURCES = tests/server_test_toolcall.c
tests_server_test_toolcall_LDADD = $(COLI_SERVER_LDADD)
tests_server_test_reasoning_SOURCES = tests/server_test_reasoning.c
tests_server_test_reasoning_LDADD = $(COLI_SERVER_LDADD)
TESTS += tests/server_agents.sh
EXTRA_DIST += tests/server_agents.sh tests/server_agents_wire.py
# The real Claude Code CLI (tests/node) in a loopback-only network namespace.
SLOW_TESTS += tests/agents_claude_code.sh
EXTRA_DIST += tests/agents_claude_code.sh tests/agents_proxy.py

# Unit tests of the pure parts (parsing, formatting, stop strings, tools).
check_PROGRAMS += tests/server_test_parse tests/server_test_format tests/server_test_gen \
	tests/server_fuzz_corpus tests/server_test_head
TESTS += tests/server_test_parse tests/server_test_format tests/server_test_gen \
	tests/server_fuzz_corpus tests/server_test_head
tests_server_test_parse_SOURCES = tests/server_test_parse.c
tests_server_test_parse_LDADD = $(COLI_SERVER_LDADD)
tests_server_test_head_SOURCES = tests/server_test_head.c
tests_server_test_head_LDADD = $(COLI_SERVER_LDADD)
tests_server_test_format_SOURCES = tests/server_test_format.c
tests_server_test_format_LDADD = $(COLI_SERVER_LDADD)
# server_test_gen plays scripted engine events: it defines the engine entry
# points itself, so the real engine objects are not pulled from libcoli.a.
tests_server_test_gen_SOURCES = tests/server_test_gen.c
tests_server_test_gen_LDADD = $(COLI_SERVER_LDADD)
# The request fuzzer (tests/fuzz/fuzz_request.c, run by
# tests/fuzz/run-fuzz.sh with clang) over its seed corpus.
tests_server_fuzz_corpus_SOURCES = tests/server_fuzz_corpus.c tests/fuzz/fuzz_request.c
tests_server_fuzz_corpus_LDADD = $(COLI_SERVER_LDADD)
EXTRA_DIST += tests/fuzz/request.dict tests/fuzz/corpus-request

# End to end against a live `coli serve` on a tiny synthesized model: the
# curl bad-input battery, and the official SDKs (npm openai,
# @anthropic-ai/sdk from tests/node) plus a Python httpx client.
# tests/server_load.py and bench/server_siege.sh (64 streams under a
# slowloris attack) are manual benchmarks, not part of the suite.
TESTS += tests/server_badinput.sh tests/server_sdk.sh tests/server_hardening.sh \
	tests/server_protocol.sh tests/server_signals.sh tests/server_slowloris.sh tests/server_vocab.sh
EXTRA_DIST += tests/server_vocab.sh tests/server_badinput.sh tests/server_sdk.sh tests/server_hardening.sh tests/server_common.sh \
	tests/server_protocol.sh tests/server_protocol_cases.py tests/server_signals.sh tests/server_signals_clients.py \
	tests/server_slowloris.sh tests/server_slowloris_clients.py \
	tests/server_sdk.js tests/sdk_clients.js tests/server_httpx.py tests/server_load.py \
	bench/server_siege.sh bench/server_siege.py

man_MANS += man/coli-serve.1
EXTRA_DIST += man/coli-serve.1.in
# The "draft" request field and the speculative-decoding metrics (issue 14).
TESTS += tests/server_draft.sh
EXTRA_DIST += tests/server_draft.sh

# Structured output and reasoning over HTTP (the wire and the official
# SDKs); reasoning split out of answers (server_think.c).
check_PROGRAMS += tests/server_test_think
TESTS += tests/server_structured.sh tests/server_structured_sdk.sh tests/server_thinking.sh tests/server_test_think
tests_server_test_think_SOURCES = tests/server_test_think.c
tests_server_test_think_LDADD = $(COLI_SERVER_LDADD)
EXTRA_DIST += tests/server_structured.sh tests/server_structured_wire.py tests/server_structured_sdk.sh \
	tests/server_structured_sdk.js tests/server_thinking.sh tests/server_thinking_wire.py tests/server_thinking_sdk.js

# `coli batch` (Batch API lines through the server's own request code,
# in-process; the command and its I/O are in cli/).

SLOW_TESTS += tests/batch_run.sh tests/batch_identity.sh
TESTS += tests/batch_guard.sh
EXTRA_DIST += tests/batch_run.sh tests/batch_identity.sh tests/batch_mkinput.py tests/batch_guard.sh
# A batch file written for a cloud endpoint (its model names) runs unchanged.
TESTS += tests/batch_cloud_model.sh
EXTRA_DIST += tests/batch_cloud_model.sh

man_MANS += man/coli-batch.1
EXTRA_DIST += man/coli-batch.1.in

# Benchmarks (not in the suite): tok/s and disk bytes per token vs
# --parallel, the extraction workload, the GLM-5.2 projection.
EXTRA_DIST += bench/batch_parallel.sh bench/batch_extract.sh bench/batch_projection.py

# The Responses API (issue 31): the wire, stored responses across a restart.
check_PROGRAMS += tests/server_test_responses
TESTS += tests/server_test_responses
tests_server_test_responses_SOURCES = tests/server_test_responses.c
tests_server_test_responses_LDADD = $(COLI_SERVER_LDADD)
SLOW_TESTS += tests/agent_codex.sh
TESTS += tests/server_responses.sh tests/server_responses_sdk.sh
EXTRA_DIST += tests/server_responses.sh tests/server_responses_wire.py tests/server_responses_sdk.sh tests/server_responses_sdk.js \
	tests/agent_codex.sh tests/agent_codex_proxy.py

# Admission by memory: --parallel x --ctx far beyond a small cgroup
# answers every request without an OOM kill (issue 30).
SLOW_TESTS += tests/server_memory.sh
EXTRA_DIST += tests/server_memory.sh
