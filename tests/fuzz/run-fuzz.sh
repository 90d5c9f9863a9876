#!/bin/sh
# run-fuzz.sh OUTDIR [NAME...] - build the libFuzzer targets with clang and
# run each for a bounded time (COLI_FUZZ_SECONDS per target, default 25), as
# many at once as there are cores (COLI_FUZZ_JOBS), each from a copy of its
# seed corpus. The targets are the parsers that see outside input:
#   ingest     safetensors headers + config.json   (corpus/, ingest.dict)
#   manifest   a container's manifest.json         (corpus-manifest/)
#   kv         KV session files                    (corpus-kv/)
#   tokenizer  tokenizer.json + tokenizer_config.json (corpus-tokenizer/)
#   request    the OpenAI/Anthropic request parsers, chat templates, error
#              text, tool-call markup               (corpus-request/, request.dict)
# NAMEs pick some of them (default: all). The targets link the engine
# library itself: configure runs once in OUTDIR/lib with clang and the
# sanitizer flags and builds the libraries (libcoliserver.a,
# libcoliconvert.a, libcoli.a), so no target lists the engine's
# sources by hand (such lists went stale whenever a parser grew a
# dependency). With 5 targets on 2 cores the stage takes about 3 x 25 s
# plus the library build.
# New inputs stay in OUTDIR (nothing is merged back into the source tree).
# Writes OUTDIR/fuzz-NAME.trs per target (automake-style ":test-result:
# PASS|FAIL|SKIP") for tools/summarize-tests.sh and OUTDIR/NAME.log; exits
# non-zero when a fuzzer finds a crash, leak or sanitizer report (the
# reproducer is in OUTDIR/crashes-NAME/).
set -u
out=${1:?usage: run-fuzz.sh OUTDIR [NAME...]}
shift
secs=${COLI_FUZZ_SECONDS:-25}
# A fixed seed: a run explores the same inputs in the same order, so a
# longer local run with the same seed (COLI_FUZZ_SECONDS=120) covers what
# CI's shorter one reaches, and a CI failure reproduces. COLI_FUZZ_SEED=0
# asks libFuzzer for a random one.
seed=${COLI_FUZZ_SEED:-1}
jobs=${COLI_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
CLANG=${CLANG:-clang}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

# Each target: NAME|CORPUS_DIR|DICT (or -)|MAX_LEN
ALL='ingest|corpus|ingest.dict|65536
manifest|corpus-manifest|-|65536
kv|corpus-kv|-|65536
tokenizer|corpus-tokenizer|-|65536
request|corpus-request|request.dict|16384'
TARGETS=
if [ $# -eq 0 ]; then
	TARGETS=$ALL
else
	for want in "$@"; do
		line=$(echo "$ALL" | grep "^$want|") || { echo "run-fuzz: no target $want" >&2; exit 2; }
		TARGETS="$TARGETS$line
"
	done
fi
names=$(echo "$TARGETS" | cut -d'|' -f1)
for n in $names; do rm -f "$out/fuzz-$n.trs"; done

result() { # NAME PASS|FAIL|SKIP
	printf ':test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: no\n' \
		"$2" "$2" >"$out/fuzz-$1.trs"
}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	for n in $names; do
		if [ "${CI:-}" = true ]; then result "$n" FAIL; else result "$n" SKIP; fi
	done
	if [ "${CI:-}" = true ]; then
		echo "run-fuzz: $CLANG not found; failing (CI=true: the fuzzers must run)"
		exit 1
	fi
	echo "run-fuzz: $CLANG not found; skipped"
	exit 0
fi

# The engine library, instrumented for coverage (fuzzer-no-link) and the
# sanitizers; its link flags come from the same Makefile.
lib="$out/lib"
mkdir -p "$lib"
echo "run-fuzz: building the libraries with $CLANG in $lib"
if ! (cd "$lib" && { [ -f Makefile ] || "$top/configure" -q CC="$CLANG" \
		CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $SAN"; } &&
		make -s -j"$jobs" libcoliserver.a libcoliconvert.a libcoli.a) >"$out/lib.log" 2>&1; then
	echo "run-fuzz: the library build failed (see $out/lib.log)"
	tail -n 20 "$out/lib.log"
	for n in $names; do result "$n" FAIL; done
	exit 1
fi
libs=$(printf 'print-libs:\n\t@echo "link: $(COLI_LIBS) $(LIBS)"\n' |
	make -s --no-print-directory -C "$lib" -f Makefile -f - print-libs 2>/dev/null | sed -n 's/^link: //p')

build() { # NAME
	# shellcheck disable=SC2086
	$CLANG -std=gnu11 -g -O1 -fsanitize=fuzzer $SAN -I"$lib" -I"$top/src" -I"$top/server" -I"$top/convert" -I"$here" \
		$(pkg-config --cflags jansson libpcre2-8 libutf8proc) \
		-o "$out/fuzz_$1" "$here/fuzz_$1.c" \
		"$lib/libcoliserver.a" "$lib/libcoliconvert.a" "$lib/libcoli.a" $libs -pthread >"$out/$1.log" 2>&1
}

run() { # NAME CORPUS DICT MAX_LEN
	n=$1
	mkdir -p "$out/corpus-$n" "$out/crashes-$n"
	cp "$here/$2"/* "$out/corpus-$n/" 2>/dev/null
	dict=
	[ "$3" = - ] || dict="-dict=$here/$3"
	UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
		"$out/fuzz_$n" -max_total_time="$secs" -seed="$seed" -max_len="$4" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/crashes-$n/" -print_final_stats=1 $dict \
		"$out/corpus-$n" >>"$out/$n.log" 2>&1
}

# one target: build, fuzz, record the result
one() { # the TARGETS line
	IFS='|' read -r n corpus dict maxlen <<EOF
$1
EOF
	if ! build "$n"; then
		echo "run-fuzz: $n: build failed (see $out/$n.log)"
		tail -n 20 "$out/$n.log"
		result "$n" FAIL
		return 1
	fi
	if run "$n" "$corpus" "$dict" "$maxlen"; then
		echo "run-fuzz: $n: $(grep -m1 -E '^Done [0-9]+ runs' "$out/$n.log")"
		result "$n" PASS
		return 0
	fi
	echo "run-fuzz: $n: fuzzer failed; reproducers in $out/crashes-$n (log: $out/$n.log)"
	grep -m 5 -E 'ERROR|SUMMARY|runtime error' "$out/$n.log"
	result "$n" FAIL
	return 1
}

echo "run-fuzz: $(echo "$names" | wc -l) targets, ${secs}s each, $jobs at a time"
pids= status=0 running=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	one "$line" &
	pids="$pids $!"
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		for p in $pids; do wait "$p" || status=1; done
		pids= running=0
	fi
done <<EOF
$TARGETS
EOF
for p in $pids; do wait "$p" || status=1; done
exit $status
