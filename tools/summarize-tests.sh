#!/bin/sh
# summarize-tests.sh STAGES_FILE CONFIG=DIR... - the suite's results, once
# per configuration.
#
# For each CONFIG=DIR it sums automake's per-test results (*.trs under DIR:
# XFAIL counts as passed, XPASS and ERROR as failed) and prints one line per
# configuration. STAGES_FILE holds one "NAME ok|failed" line per stage that
# is not a test (a build, distcheck): each failed stage counts as one
# failure, and a configuration whose build failed has no results to count,
# so the last line can never say "0 failed" after a broken build. The last
# line is "N passed, N failed, N skipped" over everything.
stages=${1:?usage: summarize-tests.sh STAGES_FILE CONFIG=DIR...}
shift
tp=0 tf=0 ts=0
for cd in "$@"; do
	name=${cd%%=*} d=${cd#*=}
	pass=0 fail=0 skip=0
	if [ -d "$d" ]; then
		for t in $(find "$d" -name '*.trs' -not -path '*/colitop-*/*'); do
			for x in $(sed -n 's/^:test-result: //p' "$t"); do
				case $x in
				PASS|XFAIL) pass=$((pass + 1)) ;;
				SKIP) skip=$((skip + 1)) ;;
				*) fail=$((fail + 1)); echo "  failed in $name: $(basename "$t" .trs)" ;;
				esac
			done
		done
	fi
	echo "$name: $pass passed, $fail failed, $skip skipped"
	tp=$((tp + pass)) tf=$((tf + fail)) ts=$((ts + skip))
done
if [ -f "$stages" ]; then
	while read -r sname sres; do
		[ "$sres" = ok ] && continue
		echo "stage $sname: $sres"
		tf=$((tf + 1))
	done <"$stages"
fi
echo "$tp passed, $tf failed, $ts skipped"
