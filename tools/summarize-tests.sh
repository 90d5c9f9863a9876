#!/bin/sh
# Sum automake's per-test results (*.trs) over the given build directories
# and print one line "N passed, N failed, N skipped". XFAIL counts as passed,
# XPASS and ERROR as failed.
pass=0 fail=0 skip=0
for d in "$@"; do
	[ -d "$d" ] || continue
	for t in $(find "$d" -name '*.trs' -not -path '*/colitop-*/*'); do
		r=$(sed -n 's/^:test-result: //p' "$t")
		for x in $r; do
			case $x in
			PASS|XFAIL) pass=$((pass + 1)) ;;
			SKIP) skip=$((skip + 1)) ;;
			*) fail=$((fail + 1)) ;;
			esac
		done
	done
done
echo "$pass passed, $fail failed, $skip skipped"
