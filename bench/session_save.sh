#!/bin/sh
# session_save.sh - the largest gap between two tokens of a running slot
# while the other slot's turns end with a session save (append + fsync by
# the session writer), against the same turns without a session: does a
# save stall the other slots? Runs session_save_bench on a synthesized
# tiny model (int8), two slots, B = 600 tokens read one event per token,
# A = 8-token turns one after another, the two situations interleaved
# ROUNDS times (default 5); prints its JSON line. The session files go
# under --dir (default a temporary directory below $TMPDIR): give a
# directory on the disk whose fsync you want to see.
#
#   bench/session_save.sh [--rounds N] [--threads N] [--dir DIR] [--coli PATH]
#
# Run it under `nice -n -10` and alone: a neighbour's load changes figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=5 threads=2 dir=${TMPDIR:-/tmp} coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args session_save.sh 2,14 '--rounds=rounds --threads=threads --dir=dir --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli session_save.sh
bin=$(dirname "$coli")/bench/session_save_bench
[ -x "$bin" ] || { echo "session_save.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d "$dir/session_save.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$coli" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null
"$coli" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1
"$bin" "$tmp/m" "$tmp/cache" "$rounds" "$threads"
