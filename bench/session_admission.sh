#!/bin/sh
# session_admission.sh - time to first token of a request without a
# session, with prefix sharing on, beside 10, 100 and 1,000 saved sessions
# (three engines on the default model, the requests interleaved ROUNDS
# times, default 30), and the prefix-index lookup alone; prints
# session_admission_bench's JSON line. The claim (bench/README.md): flat,
# ttft_ratio_1000_to_10 near 1.
#
#   bench/session_admission.sh [--rounds N] [--threads N] [--coli PATH]
#
# Run it under `nice -n -10` and alone: a neighbour's load changes figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=30 threads=2 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args session_admission.sh 2,11 '--rounds=rounds --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli session_admission.sh
bin=$(dirname "$coli")/bench/session_admission_bench
[ -x "$bin" ] || { echo "session_admission.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$top/data/default-model" "$tmp/work" "$rounds" "$threads"
