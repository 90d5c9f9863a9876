#!/bin/sh
# session_resume.sh - the largest gap between two tokens of a running slot
# while the other slot's turns resume a long saved session each (open +
# read of all its rows), against the same turns without a session: does
# a resume stall the other slots? Runs session_resume_bench on a
# synthesized tiny model (int8), two slots, two saved sessions of LONG
# tokens (default 4000) that A's one-token turns alternate between, B =
# 400 tokens read one event per token, the two situations interleaved
# ROUNDS times (default 3); prints its JSON line. The session files go
# under --dir (default a temporary directory below $TMPDIR).
#
#   bench/session_resume.sh [--rounds N] [--threads N] [--long N] [--dir DIR] [--coli PATH]
#
# Run it under `nice -n -10` and alone: a neighbour's load changes figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 threads=2 long=4000 dir=${TMPDIR:-/tmp} coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args session_resume.sh 2,14 '--rounds=rounds --threads=threads --long=long --dir=dir --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli session_resume.sh
bin=$(dirname "$coli")/bench/session_resume_bench
[ -x "$bin" ] || { echo "session_resume.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d "$dir/session_resume.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$coli" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null
"$coli" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1
"$bin" "$tmp/m" "$tmp/cache" "$rounds" "$threads" "$long"
