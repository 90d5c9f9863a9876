#!/bin/sh
# Runs core_batch_test on a synthesized model (int4 and f32 containers).
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 11 >/dev/null || exit 1
for q in f32 int4-g64; do
	"$COLI" convert "$tmp/hf" "$tmp/$q" --quant $q >/dev/null 2>&1 || exit 1
	"$top_builddir/tests/core_batch_test" "$tmp/$q" || exit 1
done
