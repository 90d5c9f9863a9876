# find_coli.sh - sourced by the bench scripts: set $coli to the coli binary
# to measure: --coli PATH or $COLI when given, else the in-tree build, else
# the first build directory's. Exits 1 with a message when there is none.
#   . "$top/bench/find_coli.sh"; find_coli SCRIPT_NAME
find_coli() {
	if [ -z "$coli" ]; then
		for c in "$top/coli" "$top"/build/*/coli; do
			[ -x "$c" ] && { coli=$c; break; }
		done
	fi
	[ -n "$coli" ] && [ -x "$coli" ] || { echo "$1: coli not found (build first or pass --coli)" >&2; exit 1; }
}
