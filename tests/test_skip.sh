# test_skip.sh - sourced by the shell tests. `test_skip REASON` ends a test
# whose check cannot run because something outside the project is missing
# (node, npm packages, tmux, numpy...). A developer's run skips it (exit 77,
# automake's SKIP); in CI (CI=true) the check must run, so it is a failure.
# A failure of the project's own commands (synth, convert, serve) is never
# a skip: call the test's fail function instead.
test_skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $* (CI=true: a check that cannot run is a failure)"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}
