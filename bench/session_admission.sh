#!/bin/sh
# session_admission.sh - time to first token of a request without a
# session, with prefix sharing on, beside 10, 100 and 1,000 saved sessions
# (three engines on the default model, the requests interleaved ROUNDS
# times, default 30), and the prefix-index lookup alone; prints the
# figures, the 1,000 / 10 ratio against its bound, then
# session_admission_bench's JSON line. The claim (bench/README.md): flat,
# i.e. TTFT beside 1,000 sessions <= 1.2 x TTFT beside 10.
#
#   bench/session_admission.sh [--rounds N] [--threads N] [--coli PATH]
#
# Run it under `nice -n -10` and alone: a neighbour's load changes figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=30 threads=2 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args session_admission.sh 2,12 '--rounds=rounds --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli session_admission.sh
bin=$(dirname "$coli")/bench/session_admission_bench
[ -x "$bin" ] || { echo "session_admission.sh: $bin not built (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$top/data/default-model" "$tmp/work" "$rounds" "$threads" >"$tmp/out" || exit 1
# the figures in words, then the JSON line (last, for tools/check-claims.sh)
/usr/bin/python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, l = d["ttft_ms"], d["lookup_us"]
print("saved sessions         10 / 100 / 1000")
print("TTFT, ms (median)      %.3f / %.3f / %.3f" % tuple(t))
print("index lookup, us       %.2f / %.2f / %.2f" % tuple(l))
print("TTFT 1000 / 10 = %.3f, bound <= %.1f: %s" % (d["ttft_ratio_1000_to_10"], d["flat_bound"],
      "FLAT" if d["flat"] else "NOT flat"))
PY
cat "$tmp/out"
