#!/bin/sh
# grammar_admission.sh - the largest gap between two tokens of a slot
# already decoding while a schema-constrained request is admitted beside
# it, against the same run with an unconstrained one (issue 28: the
# engine thread compiles nothing). Runs grammar_admission_bench on a
# synthesized tiny model with a GLM-5-sized vocabulary (--vocab, default
# 154880: the mask's table is built for the first constrained request),
# two slots, context 1024, B = 400 tokens, A (8 tokens, a 48-property
# schema as text) submitted by a second thread at B's 100th token, a fresh
# engine per run, the two situations interleaved ROUNDS times (default 7);
# prints its JSON line.
#
#   bench/grammar_admission.sh [--rounds N] [--threads N] [--vocab N] [--coli PATH]
#                              [--bin PATH]
# --bin: the grammar_admission_bench to run (default: the one beside coli),
# e.g. one linked against an older libcoli.a to compare engines.
#
# Run it alone: a neighbour's load lengthens gaps in both situations.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=7 threads=1 vocab=154880 coli=${COLI:-} bin=
. "$top/bench/bench_args.sh"
bench_args grammar_admission.sh 2,18 '--rounds=rounds --threads=threads --vocab=vocab --coli=coli --bin=bin' "$@"
. "$top/bench/find_coli.sh"
find_coli grammar_admission.sh
[ -n "$bin" ] || bin=$(dirname "$coli")/bench/grammar_admission_bench
[ -x "$bin" ] || { echo "grammar_admission.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$coli" synth "$tmp/hf" --preset tiny --seed 5 --vocab "$vocab" --mtp 0 >/dev/null 2>&1
"$coli" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1
"$bin" "$tmp/m" "$tmp/cache" "$rounds" "$threads"
