#!/bin/sh
# indexer_precision.sh - selection agreement of the DSA indexer at int4-g64
# and int8 projections against f32 (issue 30, defect 13).
#
#   bench/indexer_precision.sh [--work DIR] [--points 2048,4096,8192] [--window N]
#                              [--gen N] [--threads N] [--coli PATH]
#
# coli synth --preset glm5-tiny (index_topk 2048, 4 index heads x 32), then
# three conversions differing only in --indexer-quant (f32, int8,
# int4-g64; everything else --quant f32), then bench/indexer_precision
# feeds one token sequence to each and compares every layer's selected
# key set at rows P..P+N-1 of each point with the f32 container's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-indexer-precision points=2048,4096,8192 window=16 gen=32 threads=1
coli=${COLI:-}
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--points) points=$2; shift ;;
	--window) window=$2; shift ;;
	--gen) gen=$2; shift ;;
	--threads) threads=$2; shift ;;
	--coli) coli=$2; shift ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "indexer_precision.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
. "$top/bench/find_coli.sh"
find_coli indexer_precision.sh
bench=$(dirname "$coli")/bench/indexer_precision
[ -x "$bench" ] || { echo "indexer_precision.sh: $bench not built" >&2; exit 1; }
mkdir -p "$work"
rm -rf "$work/hf" "$work/f32" "$work/int8" "$work/int4-g64"
"$coli" synth "$work/hf" --preset glm5-tiny >/dev/null
for q in f32 int8 int4-g64; do
	"$coli" convert "$work/hf" "$work/$q" --quant f32 --indexer-quant $q >/dev/null 2>&1
done
"$bench" "$work/f32" "$work/int8" "$work/int4-g64" -p "$points" -w "$window" -g "$gen" -t "$threads"
