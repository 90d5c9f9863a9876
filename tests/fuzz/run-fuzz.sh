#!/bin/sh
# run-fuzz.sh OUTDIR - build the ingest libFuzzer target with clang and run
# it for a bounded time (COLI_FUZZ_SECONDS, default 30) from a copy of the
# seed corpus. New inputs stay in OUTDIR (nothing is merged back into the
# source tree). Writes OUTDIR/fuzz.trs (automake-style, ":test-result:
# PASS|FAIL|SKIP") for tools/summarize-tests.sh and OUTDIR/fuzz.log; exits
# non-zero when the fuzzer finds a crash, leak or sanitizer report.
set -u
out=${1:?usage: run-fuzz.sh OUTDIR}
secs=${COLI_FUZZ_SECONDS:-30}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
CLANG=${CLANG:-clang}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
trs="$out/fuzz.trs"
log="$out/fuzz.log"

result() { # PASS|FAIL|SKIP
	printf ':test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: no\n' \
		"$1" "$1" >"$trs"
}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		echo "run-fuzz: $CLANG not found; failing (CI=true: the fuzzers must run)" | tee "$log"
		result FAIL
		exit 1
	fi
	echo "run-fuzz: $CLANG not found; skipped" | tee "$log"
	result SKIP
	exit 0
fi

# The engine sources expect config.h from configure; the few definitions
# they need here are spelled out.
mkdir -p "$out/include" "$out/corpus" "$out/crashes"
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "fuzz"\n' >"$out/include/config.h"
cp "$here"/corpus/* "$out/corpus/" 2>/dev/null

if ! $CLANG -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$out/include" -I"$src" $(pkg-config --cflags jansson) \
	-o "$out/fuzz_ingest" "$here/fuzz_ingest.c" \
	"$src/safetensors.c" "$src/safetensors_dir.c" "$src/dtype.c" \
	"$src/hf_config.c" "$src/hf_config_write.c" "$src/coli_err.c" "$src/coli_log.c" \
	$(pkg-config --libs jansson) -lm -pthread >"$log" 2>&1; then
	echo "run-fuzz: build failed (see $log)"
	cat "$log"
	result FAIL
	exit 1
fi

echo "run-fuzz: fuzzing for ${secs}s"
UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	"$out/fuzz_ingest" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$out/crashes/" -print_final_stats=1 -dict="$here/ingest.dict" \
	"$out/corpus" >>"$log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	tail -n 3 "$log" | sed 's/^/run-fuzz: /'
	result PASS
	exit 0
fi
echo "run-fuzz: fuzzer failed with status $rc; reproducers in $out/crashes (log: $log)"
grep -m 5 -E 'ERROR|SUMMARY|runtime error' "$log"
result FAIL
exit 1
