#!/bin/sh
# tools_summary.sh - tools/summarize-tests.sh counts each test once per
# configuration, and a failed stage (a build, distcheck) makes the closing
# line report a failure even when every test that ran passed.
set -u
: "${top_srcdir:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
trs() { # DIR NAME RESULT
	mkdir -p "$1"
	printf ':test-result: %s\n:global-test-result: %s\n' "$3" "$3" >"$1/$2.trs"
}
trs "$tmp/release/tests" a PASS
trs "$tmp/release/tests" b SKIP
trs "$tmp/asan/tests" a PASS
trs "$tmp/asan/tests" b FAIL
printf 'build-release ok\nbuild-asan ok\n' >"$tmp/stages"
out=$(sh "$top_srcdir/tools/summarize-tests.sh" "$tmp/stages" release="$tmp/release" asan="$tmp/asan")
echo "$out" | grep -qx "release: 1 passed, 0 failed, 1 skipped" || { echo "FAIL: release line: $out"; fail=1; }
echo "$out" | grep -qx "asan: 1 passed, 1 failed, 0 skipped" || { echo "FAIL: asan line: $out"; fail=1; }
[ "$(echo "$out" | tail -n1)" = "2 passed, 1 failed, 1 skipped" ] || { echo "FAIL: last line: $out"; fail=1; }
# a broken build: no results for that configuration, and the stage counts
rm -rf "$tmp/asan"
printf 'build-release ok\nbuild-asan failed\ndistcheck failed\n' >"$tmp/stages"
out=$(sh "$top_srcdir/tools/summarize-tests.sh" "$tmp/stages" release="$tmp/release" asan="$tmp/asan")
[ "$(echo "$out" | tail -n1)" = "1 passed, 2 failed, 1 skipped" ] || { echo "FAIL: broken build: $out"; fail=1; }
[ $fail = 0 ] && echo "summary: per configuration, failed stages counted"
exit $fail
