#!/bin/sh
# Runs core_batch_test on a synthesized model (int4 and f32 containers) and
# on a DSA one (index_topk 4).
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
# DSA indexer with index_topk 4: batches mix rows that attend to every key
# with rows that attend to their own selection (and a shared layer)
"$COLI" synth "$tmp/hfd" --preset tiny --seed 12 --layers 3 --index-topk 4 --indexer-types FSF >/dev/null || exit 1
"$COLI" convert "$tmp/hfd" "$tmp/dsa" --quant f32 >/dev/null 2>&1 || exit 1
"$top_builddir/tests/core_batch_test" "$tmp/dsa" || exit 1
