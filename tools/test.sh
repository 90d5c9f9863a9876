#!/bin/bash
# The whole test suite from scratch: install dependencies, build warning-free
# (-Werror), run `make check`, run it again under ASan+UBSan, run the fuzzer
# for a bounded time, and check `make distcheck`. Results are summarised by
# tools/summarize-tests.sh.
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
./tools/install-deps.sh || exit 1
if [ -f tests/node/package.json ]; then
	(cd tests/node && npm ci --no-audit --no-fund --loglevel=error) || exit 1
fi
./autogen.sh >/dev/null 2>&1 || { echo "autogen failed"; exit 1; }
status=0
jobs=$(nproc)

run_build() { # name configure-flags...
	local name=$1; shift
	rm -rf "build/$name"; mkdir -p "build/$name"
	(cd "build/$name" && "$top/configure" -q "$@" && make -s -j"$jobs") || { echo "build $name failed"; return 1; }
	(cd "build/$name" && make -s -j"$jobs" check) || return 1
}

run_build release --enable-werror || status=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	COLI_TEST_SANITIZED=1 run_build asan --enable-werror --enable-sanitizers || status=1
if [ -x tests/fuzz/run-fuzz.sh ]; then
	tests/fuzz/run-fuzz.sh "$top/build/fuzz" || status=1
fi
(cd build/release && make -s distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror >distcheck.log 2>&1) \
	|| { echo "distcheck failed (see build/release/distcheck.log)"; tail -30 build/release/distcheck.log; status=1; }
./tools/summarize-tests.sh build/release build/asan build/fuzz
exit $status
