#!/bin/sh
# run-fuzz-request.sh OUTDIR - build the request libFuzzer target
# (fuzz_request.c: the OpenAI/Anthropic request parsers, the chat templates,
# error text, tool-call markup, the request head check) with clang and run it for a bounded time
# (COLI_FUZZ_SECONDS, default 30) from a copy of the seed corpus. New inputs
# stay in OUTDIR. Writes OUTDIR/fuzz-request.trs (automake-style) for
# tools/summarize-tests.sh and OUTDIR/fuzz-request.log; exits non-zero when
# the fuzzer finds a crash, a leak, a sanitizer report or a broken invariant.
set -u
out=${1:?usage: run-fuzz-request.sh OUTDIR}
secs=${COLI_FUZZ_SECONDS:-30}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
CLANG=${CLANG:-clang}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
trs="$out/fuzz-request.trs"
log="$out/fuzz-request.log"

result() { # PASS|FAIL|SKIP
	printf ':test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: no\n' \
		"$1" "$1" >"$trs"
}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "run-fuzz-request: $CLANG not found" | tee "$log"
	if [ "${CI:-}" = true ]; then result FAIL; exit 1; fi
	result SKIP
	exit 0
fi

mkdir -p "$out/include" "$out/corpus" "$out/crashes"
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "fuzz"\n' >"$out/include/config.h"
cp "$here"/corpus-request/* "$out/corpus/" 2>/dev/null

# the parsers, the formatters they share error helpers with, the chat
# templates and the tokenizer the template detection links against
if ! $CLANG -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$out/include" -I"$src" $(pkg-config --cflags jansson libpcre2-8 libutf8proc) \
	-o "$out/fuzz_request" "$here/fuzz_request.c" \
	"$src/server_parse.c" "$src/server_anthropic.c" "$src/server_util.c" \
	"$src/server_openai.c" "$src/server_stop.c" "$src/chat_template.c" \
	"$src/server_head.c" "$src/server_logprobs.c" "$src/server_structured.c" "$src"/grammar*.c \
	"$src/engine_draft_mode.c" "$src/model_manifest.c" "$src/util_sha256.c" \
	"$src"/tokenizer*.c "$src/util_unicode.c" "$src/coli_err.c" "$src/coli_log.c" \
	$(pkg-config --libs jansson libpcre2-8 libutf8proc) -lm -pthread >"$log" 2>&1; then
	echo "run-fuzz-request: build failed (see $log)"
	cat "$log"
	result FAIL
	exit 1
fi

echo "run-fuzz-request: fuzzing for ${secs}s"
UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	"$out/fuzz_request" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$out/crashes/" -print_final_stats=1 -dict="$here/request.dict" \
	"$out/corpus" >>"$log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	tail -n 3 "$log" | sed 's/^/run-fuzz-request: /'
	result PASS
	exit 0
fi
echo "run-fuzz-request: fuzzer failed with status $rc; reproducers in $out/crashes (log: $log)"
grep -m 5 -E 'ERROR|SUMMARY|runtime error|deadly signal' "$log"
result FAIL
exit 1
