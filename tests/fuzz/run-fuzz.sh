#!/bin/sh
# run-fuzz.sh OUTDIR - build the libFuzzer targets with clang and run each
# for a bounded time (COLI_FUZZ_SECONDS per target, default 25), as many at
# once as there are cores (COLI_FUZZ_JOBS), each from a copy of its seed
# corpus. The targets are the parsers that read files from outside:
#   ingest     safetensors headers + config.json   (corpus/, ingest.dict)
#   manifest   a container's manifest.json         (corpus-manifest/)
#   kv         KV session files                    (corpus-kv/)
#   tokenizer  tokenizer.json + tokenizer_config.json (corpus-tokenizer/)
# With 4 targets on 2 cores the stage takes about 2 x 25 s plus the builds.
# New inputs stay in OUTDIR (nothing is merged back into the source tree).
# Writes OUTDIR/fuzz-NAME.trs per target (automake-style ":test-result:
# PASS|FAIL|SKIP") for tools/summarize-tests.sh and OUTDIR/NAME.log; exits
# non-zero when a fuzzer finds a crash, leak or sanitizer report (the
# reproducer is in OUTDIR/crashes-NAME/).
set -u
out=${1:?usage: run-fuzz.sh OUTDIR}
secs=${COLI_FUZZ_SECONDS:-25}
jobs=${COLI_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
CLANG=${CLANG:-clang}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
rm -f "$out"/*.trs

# Each target: NAME|CORPUS_DIR|DICT (or -)|MAX_LEN|SOURCES (in src/, besides coli_err.c and
# coli_log.c)|PKG-CONFIG MODULES
TARGETS='ingest|corpus|ingest.dict|65536|safetensors.c safetensors_dir.c ingest_dtype.c hf_config.c hf_config_write.c|jansson
manifest|corpus-manifest|-|65536|model_container.c model_dir.c model_manifest.c hf_config.c util_sha256.c quant.c model_weight_mem.c model_bind.c|jansson
kv|corpus-kv|-|65536|kv_file.c kv_session.c kv_store.c util_crc32c.c kv_cache_dir.c model_manifest.c util_sha256.c|jansson
tokenizer|corpus-tokenizer|-|65536|tokenizer.c tokenizer_bpe.c tokenizer_decode.c tokenizer_load.c tokenizer_map.c tokenizer_pretok.c tokenizer_tiktoken.c util_unicode.c|jansson libpcre2-8 libutf8proc'

result() { # NAME PASS|FAIL|SKIP
	printf ':test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: no\n' \
		"$2" "$2" >"$out/fuzz-$1.trs"
}
names=$(echo "$TARGETS" | cut -d'|' -f1)

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

# The engine sources expect config.h from configure; the few definitions
# they need here are spelled out.
mkdir -p "$out/include"
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "fuzz"\n#define COLI_SRCDIR "/nonexistent"\n#define COLI_DATADIR "/nonexistent"\n' >"$out/include/config.h"

build() { # NAME SOURCES MODULES
	set -- "$1" "$2" "$3"
	files=
	for f in $2 coli_err.c coli_log.c; do files="$files $src/$f"; done
	# shellcheck disable=SC2086
	$CLANG -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I"$out/include" -I"$src" $(pkg-config --cflags $3) \
		-o "$out/fuzz_$1" "$here/fuzz_$1.c" $files \
		$(pkg-config --libs $3) -lm -pthread >"$out/$1.log" 2>&1
}

run() { # NAME CORPUS DICT MAX_LEN
	n=$1
	mkdir -p "$out/corpus-$n" "$out/crashes-$n"
	cp "$here/$2"/* "$out/corpus-$n/" 2>/dev/null
	dict=
	[ "$3" = - ] || dict="-dict=$here/$3"
	UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
		"$out/fuzz_$n" -max_total_time="$secs" -max_len="$4" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/crashes-$n/" -print_final_stats=1 $dict \
		"$out/corpus-$n" >>"$out/$n.log" 2>&1
}

# one target: build, fuzz, record the result
one() { # the TARGETS line
	IFS='|' read -r n corpus dict maxlen srcs mods <<EOF
$1
EOF
	if ! build "$n" "$srcs" "$mods"; then
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
