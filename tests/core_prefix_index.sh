#!/bin/sh
# Runs core_prefix_index (prompt caching from sessions saved by other
# processes, by the engine itself, and removed or replaced behind its
# back) on a synthesized tiny model.
set -u
: "${COLI:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLI" synth "$tmp/hf" --preset tiny --seed 9 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
"$top_builddir/tests/core_prefix_index" "$tmp/m" "$tmp" "$COLI"
