#!/bin/sh
# profile_decode.sh - the decode step with routing profiles on (the
# default) and with --no-profiles, interleaved round by round in one
# invocation (issue 29's "the decode step's time is unchanged within
# noise"). Runs profile_decode_bench on the default model
# (data/default-model: 4 layers, 16 experts, top-4; a step takes under a
# millisecond, so the counting's share of it is as large as it gets) or
# on --model DIR; prints its JSON line.
#
#   bench/profile_decode.sh [--model DIR] [--rounds N] [--tokens N]
#                           [--threads N] [--coli PATH]
#
# Defaults: 9 rounds of 512 tokens, 1 thread. Run it alone, under
# `nice -n -10`: a neighbour's load changes the figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
model=$top/data/default-model rounds=9 tokens=512 threads=1 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args profile_decode.sh 2,14 '--model=model --rounds=rounds --tokens=tokens --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli profile_decode.sh
bin=$(dirname "$coli")/bench/profile_decode_bench
[ -x "$bin" ] || { echo "profile_decode.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$model" "$tmp/cache" "$rounds" "$tokens" "$threads"
