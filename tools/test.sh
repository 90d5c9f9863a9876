#!/bin/bash
# The whole test suite from scratch: install dependencies (Debian packages,
# then the npm packages of tests/node), build warning-free (-Werror), run
# `make check`, run tools/check-claims.sh --quick (the README's figures),
# run the suite again under ASan+UBSan, run the threaded tests under
# ThreadSanitizer, run the fuzzers for a bounded time,
# and check `make distcheck`. Results are summarised per configuration
# by tools/summarize-tests.sh; a failed install, build or distcheck counts
# as a failure in the last line ("N passed, N failed, N skipped").
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
mkdir -p build
stages="$top/build/stages.txt"
: >"$stages"
t_last=$(date +%s)
slowest() { # DIR: the ten longest tests, from each log's birth to its result
	find "$1" -name '*.trs' -not -path '*/colitop-*/*' 2>/dev/null | while read -r t; do
		l=${t%.trs}.log
		[ -f "$l" ] && echo "$(($(stat -c %Y "$t") - $(stat -c %W "$l"))) $(basename "$l" .log)"
	done | sort -rn | head -10 | awk '{ printf "  %5d s  %s\n", $1, $2 }'
}
lap() { # NAME STATUS: how long since the previous lap, on the log only
	local now; now=$(date +%s)
	echo "stage $1: $([ "$2" = 0 ] && echo ok || echo failed) after $((now - t_last)) s"
	t_last=$now
}
stage() { # NAME STATUS: a stage that counts, one failure if it failed
	lap "$1" "$2"
	if [ "$2" = 0 ]; then echo "$1 ok" >>"$stages"; else echo "$1 failed" >>"$stages"; fi
}
finish() {
	./tools/summarize-tests.sh "$stages" release=build/release asan=build/asan tsan=build/tsan fuzz=build/fuzz
	grep -q failed "$stages" && exit 1
	exit "$status"
}
status=0
./tools/install-deps.sh; rc=$?; stage install-deps $rc
[ $rc = 0 ] || finish
if [ -f tests/node/package.json ]; then
	(cd tests/node && npm ci --no-audit --no-fund --loglevel=error); rc=$?; stage npm-ci $rc
	[ $rc = 0 ] || finish
fi
./autogen.sh >/dev/null 2>&1; rc=$?; stage autogen $rc
[ $rc = 0 ] || finish
jobs=$(nproc)

run_build() { # name configure-flags...
	local name=$1; shift
	rm -rf "build/$name"; mkdir -p "build/$name"
	(cd "build/$name" && "$top/configure" -q "$@" && make -s -j"$jobs")
	local rc=$?
	stage "build-$name" $rc
	[ $rc = 0 ] || { echo "build $name failed"; return 1; }
	(cd "build/$name" && make -s -j"$jobs" check)
	rc=$?
	lap "check-$name" $rc
	slowest "build/$name"
	return $rc
}

run_build release --enable-werror --enable-fault-injection || status=1
# README's quick figures, recomputed by the commands the README names
# (tiny models, a few minutes; the speed figures need a quiet machine and
# are left to `tools/check-claims.sh --all`).
if [ -x build/release/coli ]; then
	./tools/check-claims.sh --quick --coli "$top/build/release/coli" >build/release/check-claims.log 2>&1
	rc=$?
	cat build/release/check-claims.log
else
	rc=1
fi
stage check-claims $rc
[ $rc = 0 ] || status=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	COLI_TEST_SANITIZED=1 run_build asan --enable-werror --enable-sanitizers --enable-fault-injection || status=1
# ThreadSanitizer over the threaded code: the seqlock, the log ring and
# its writer, the compute pool,
# the heat writer, the store's telemetry, the prefix index and its
# watcher, the engine's slots (batched decode, a stalled reader, grammars
# shared between submitters and the engine), the session writer (two
# slots spilling side by side, long context), the routing profile writer
# (1,000 sessions), colitop's history clusterer, the server's front door
# and guard (hardening, slowloris) and coli batch's workers. Only what these tests need is built: about 2 minutes on this
# project's shared 2-core machine, the tests 3.5 (batch_run.sh 92 s with
# COLI_TEST_TSAN=1, the prefix index, stalled reader and batched decode
# 64 s, the rest 12 s or less each). A report fails the stage even where
# the test itself passed (they are collected from TSAN_OPTIONS' log_path).
TSAN_PROGS="coli tests/util_seqlock tests/util_log_ring tests/quant_pool_test tests/store_heat tests/store_stats
	tests/kv_prefix_watch tests/core_prefix_index tests/core_batch_test tests/core_stalled_client
	tests/core_session_writer tests/core_session_bind tests/core_prefix_adopt tests/engine_grammar_submit
	tests/engine_profile_sessions tests/tui_atlas_test"
TSAN_TESTS="tests/util_seqlock tests/util_log_ring tests/quant_pool_test tests/store_heat tests/store_stats
	tests/kv_prefix_watch tests/core_prefix_index.sh tests/core_stalled_client.sh tests/core_batch.sh
	tests/core_parallel.sh tests/server_hardening.sh tests/server_slowloris.sh tests/batch_run.sh
	tests/core_session_writer.sh tests/core_session_bind.sh tests/core_prefix_adopt.sh tests/core_long_context.sh
	tests/engine_grammar_submit.sh
	tests/engine_profile_sessions.sh tests/tui_atlas_test"
rm -rf build/tsan; mkdir -p build/tsan
# shellcheck disable=SC2086
(cd build/tsan && "$top/configure" -q --enable-werror --enable-tsan --enable-fault-injection &&
	make -s -j"$jobs" $TSAN_PROGS)
rc=$?
stage build-tsan $rc
if [ $rc = 0 ]; then
	(cd build/tsan && COLI_TEST_SANITIZED=1 COLI_TEST_TSAN=1 \
		TSAN_OPTIONS="log_path=$top/build/tsan/tsan-report second_deadlock_stack=1" \
		make -s check-TESTS TESTS="$(echo $TSAN_TESTS)")
	rc=$?
	if ls build/tsan/tsan-report.* >/dev/null 2>&1; then
		echo "ThreadSanitizer reports:"
		cat build/tsan/tsan-report.*
		rc=1
	fi
	stage tsan-reports $rc
	[ $rc = 0 ] || status=1
else
	status=1
fi
if [ -x tests/fuzz/run-fuzz.sh ]; then
	tests/fuzz/run-fuzz.sh "$top/build/fuzz"
	rc=$?
	lap fuzz $rc
	[ $rc = 0 ] || status=1
fi
# distcheck proves the tarball builds and passes from scratch; its copy has
# no tests/node/node_modules, so the checks that need the npm packages skip
# there (CI unset): they ran, and must pass, in the release and asan runs.
# It runs every test but SLOW_TESTS (Makefile.am), which ran twice above.
if [ -f build/release/Makefile ]; then
	quick=$(make -s -C build/release print-quick-tests)
	(cd build/release && env -u CI make -s distcheck TESTS="$quick" \
		DISTCHECK_CONFIGURE_FLAGS="--enable-werror --enable-fault-injection" >distcheck.log 2>&1)
	rc=$?
else
	rc=1
fi
stage distcheck $rc
[ $rc = 0 ] || { echo "distcheck failed (see build/release/distcheck.log)"; tail -30 build/release/distcheck.log 2>/dev/null; status=1; }
finish
