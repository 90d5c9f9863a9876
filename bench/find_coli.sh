# find_coli.sh - sourced by the bench scripts: set $coli to the coli binary
# to measure: --coli PATH or $COLI when given, else the in-tree build, else
# the most recently built one under build/ that is not a sanitizer build
# (an ASan binary measures the sanitizer). Exits 1 with a message when
# there is none; says which one it took.
#   . "$top/bench/find_coli.sh"; find_coli SCRIPT_NAME
find_coli() {
	if [ -z "$coli" ]; then
		if [ -x "$top/coli" ]; then
			coli=$top/coli
		else
			# shellcheck disable=SC2012
			coli=$(ls -t "$top"/build/*/coli 2>/dev/null | grep -v -- '-asan/' | head -1)
		fi
	fi
	[ -n "$coli" ] && [ -x "$coli" ] || { echo "$1: coli not found (build first or pass --coli)" >&2; exit 1; }
	echo "$1: using $coli" >&2
}
