#!/bin/sh
# stalled_client.sh - decode rate of one request while the request beside
# it is never read, against the same run with it read (and alone): is a
# slow consumer isolated from the other slots? Runs
# stalled_client_bench on a synthesized tiny model (random weights, int8:
# every token has text, so an unread stream fills its buffer quickly), two
# slots, context 2048, B = 900 tokens, the three situations interleaved
# ROUNDS times (default 5); prints its JSON line. The claim
# (README/bench/README.md): ratio_stalled_to_reading >= 0.90.
#
#   bench/stalled_client.sh [--rounds N] [--threads N] [--coli PATH]
#
# Run it under `nice -n -10` and alone: a neighbour's load changes figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=5 threads=2 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args stalled_client.sh 2,14 '--rounds=rounds --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli stalled_client.sh
bin=$(dirname "$coli")/bench/stalled_client_bench
[ -x "$bin" ] || { echo "stalled_client.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$coli" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null
"$coli" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1
"$bin" "$tmp/m" "$tmp/cache" "$rounds" "$threads"
