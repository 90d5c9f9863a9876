#!/bin/sh
# Runs core_session_writer on a synthesized tiny model; then a save that
# fails (test builds: a full disk on the first append) is reported by the
# turn's end, as before the writer thread: `coli generate --session`
# prints it.
set -u
: "${COLI:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLI" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
"$top_builddir/tests/core_session_writer" "$tmp/m" "$tmp/cache" || exit 1
grep -q 'define COLI_FAULT_INJECTION 1' "$top_builddir/config.h" || exit 0
COLI_CACHE_DIR="$tmp/cache2" COLI_FAULT_KV_WRITE=2 "$COLI" generate "$tmp/m" --ids --tokens 5,6,7 -n 4 \
	--session full >/dev/null 2>"$tmp/err" || { echo "FAIL: generate: $(cat "$tmp/err")"; exit 1; }
grep -q 'No space left on device' "$tmp/err" ||
	{ echo "FAIL: the failed save was not reported: $(cat "$tmp/err")"; exit 1; }
echo "a failed save is reported at the turn's end"
