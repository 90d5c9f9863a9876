#!/bin/sh
# Runs core_kv_budget on a synthesized tiny model (random weights: every
# token has text, so an unread stream fills its buffer and pauses).
set -u
: "${COLI:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLI" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
"$top_builddir/tests/core_kv_budget" "$tmp/m" "$tmp/cache"
