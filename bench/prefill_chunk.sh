#!/bin/sh
# prefill_chunk.sh - prefill speed against the prompt chunk size (issue 21,
# "prefill that computes like a GEMM"): a chunk's positions share every
# weight matrix (the dense ones as int4 x f32 tiles, each routed expert
# for the positions that chose it), so CPU time per prompt token should
# fall as the chunk grows and the prefill-vs-decode ratio rise.
#
#   bench/prefill_chunk.sh [--model DIR] [--prompt N] [--gen N] [--threads N]
#                          [--rounds N] [--chunks "1 2 4 ..."] [--coli PATH]
#                          [--extra "ENGINE ARGS"]
#
# Runs `coli bench --prefill-batch C` for every chunk size C, ROUNDS times
# interleaved (C1 C2 ... C1 C2 ...), and prints per chunk the median CPU
# ms per prompt token (all threads: on a shared machine wall time also
# counts what other processes took), the same for decode, their ratio
# (decode / prefill: how much cheaper a prompt token is than a generated
# one) and the median wall tokens/s. The decode figure does not depend on
# C; it is measured in every run so each ratio has its own baseline.
# Every run is `coli bench --warmup` (the prompt once untimed first), so
# no chunk size pays for reading the experts into the process; --extra
# adds engine options (e.g. "--act-quant q8 --expert-cache 100%").
# Default: the default model, a 512-token prompt, 32 generated, 1 thread.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
model='' extra='' prompt=512 gen=32 threads=1 rounds=3 chunks="1 2 4 8 16 32 64 128 512"
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args prefill_chunk.sh 2,22 '--model=model --prompt=prompt --gen=gen --threads=threads --rounds=rounds
	--chunks=chunks --coli=coli --extra=extra' "$@"
. "$top/bench/find_coli.sh"
find_coli prefill_chunk.sh
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
r=0
while [ "$r" -lt "$rounds" ]; do
	for c in $chunks; do
		# shellcheck disable=SC2086
		"$coli" bench $model --prompt "$prompt" --gen "$gen" --prefill-batch "$c" \
			--no-kernels --no-heat --warmup --threads "$threads" $extra 2>/dev/null |
			/usr/bin/python3 -c 'import json, sys
j = json.load(sys.stdin); p = j["prefill"]; d = j["decode"]
print(p["chunk"], p["cpu_ms_per_token"], d["cpu_ms_per_token"], p["tokens_per_s"])' >>"$out" || {
			echo "prefill_chunk.sh: coli bench --prefill-batch $c failed" >&2; exit 1; }
	done
	r=$((r + 1))
done
/usr/bin/python3 - "$out" "$prompt" "$gen" "$threads" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, p, d, tps = line.split()
    rows.setdefault(int(c), []).append((float(p), float(d), float(tps)))
print("prompt %s, gen %s, threads %s, medians of %d rounds" % (sys.argv[2], sys.argv[3], sys.argv[4],
      len(next(iter(rows.values())))))
print()
print("| chunk | prefill CPU ms/token | decode CPU ms/token | decode / prefill | prefill tok/s (wall) |")
print("| --- | --- | --- | --- | --- |")
for c in sorted(rows):
    p = statistics.median(v[0] for v in rows[c])
    d = statistics.median(v[1] for v in rows[c])
    t = statistics.median(v[2] for v in rows[c])
    print("| %d | %.3f | %.3f | %.2f | %.0f |" % (c, p, d, d / p, t))
PYEOF
