#!/bin/sh
# cli_help.sh - every command in `coli --help`'s list answers --help and -h
# with its usage on stdout ("usage: coli CMD ..."), nothing on stderr and
# exit 0, before it reads anything else (compare used to crash here).
set -u
[ -x "${COLI:-}" ] || { echo "FAIL: COLI not built"; exit 1; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
status=0
"$COLI" --help >"$dir/list" 2>"$dir/err" || { echo "FAIL: coli --help"; exit 1; }
cmds=$(sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' "$dir/list")
[ -n "$cmds" ] || { echo "FAIL: no commands listed by coli --help"; exit 1; }
n=0
for c in $cmds; do
	for h in --help -h; do
		"$COLI" "$c" "$h" >"$dir/out" 2>"$dir/err" </dev/null
		rc=$?
		if [ $rc != 0 ] || [ -s "$dir/err" ] || ! head -n 1 "$dir/out" | grep -q "^usage: coli $c "; then
			echo "FAIL: coli $c $h: exit $rc, stdout '$(head -n 1 "$dir/out")', stderr '$(head -n 1 "$dir/err")'"
			status=1
		fi
		n=$((n + 1))
	done
done
[ $status = 0 ] && echo "ok: $n help invocations ($(echo $cmds | wc -w) commands)"
exit $status
