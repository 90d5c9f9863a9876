#!/bin/sh
# routing_policy.sh - the expert cache against the offline optimum (Belady)
# on the routing of a trained router: the embedded default model, whose
# 48 expert records (3 MoE layers x 16) are made to exceed the cache.
#
#   bench/routing_policy.sh [--coli PATH] [--model DIR] [--gen N] [--records N,...]
#                           [--seed N]
#
# For each budget (in records of the model's record size) it runs
#   coli bench MODEL --no-kernels --prompt 32 --gen N --seed S --expert-cache BYTES
# with the default prefetch and with --no-prefetch, and once more as the
# default was before lfu-next (--cache-policy lfu-decay, half the budget
# pinned), and prints a markdown table: our hit rate (prefetched records
# count as hits: the prediction is knowledge of the near future), the
# RAM-only hit rate, the old default's hit rate, the simulated policies on
# the same trace (LRU, LFU with decay, the best fixed set in hindsight)
# and Belady's hit rate at the same capacity, as ratios. Prefetch runs
# ungated (COLI_PREFETCH=always unless set): the gate pauses it while decode
# waits for the drive, which depends on timing (a busy machine), and this
# script measures hit rates; on an idle machine the gate stays open here.
# The synthesized GLM-5 slice of glm5_slice.sh has a random router, whose
# routing has no structure for any policy to learn; this one is learnt.
# A few seconds; no root, nothing written outside a temporary directory.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
coli=${COLI:-} model=$top/data/default-model gen=512 records=8,12,16,24,32 seed=1
. "$top/bench/bench_args.sh"
bench_args routing_policy.sh 2,23 '--coli=coli --model=model --gen=gen --records=records --seed=seed' "$@"
. "$top/bench/find_coli.sh"
export COLI_PREFETCH=${COLI_PREFETCH:-always}
find_coli routing_policy.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# The record size: one run with everything cached reports it.
"$coli" bench "$model" --no-kernels --prompt 8 --gen 8 > "$tmp/probe.json"
rec=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["experts"]["record_bytes"])' "$tmp/probe.json")

for n in $(echo "$records" | tr ',' ' '); do
	run="$coli bench $model --no-kernels --prompt 32 --gen $gen --seed $seed --expert-cache $((n * rec))"
	$run > "$tmp/pf-$n.json"
	$run --no-prefetch > "$tmp/np-$n.json"
	$run --cache-policy lfu-decay --pin-budget $((n * rec / 2)) > "$tmp/old-$n.json"
done
/usr/bin/python3 - "$tmp" "$records" "$gen" "$model" "$seed" <<'EOF'
import json, os, sys
tmp, records, gen, model, seed = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4], sys.argv[5]
print("Routing of %s, %s decoded tokens after a 32-token prompt (seed %s); budget in expert records.\n" % (model, gen, seed))
print("| records (of working set) | hit incl. prefetched | /Belady | RAM hit, --no-prefetch | /Belady | old default /Belady | LRU | LFU-decay | best fixed set | Belady | prefetch precision / recall |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n in records:
    pf = json.load(open(os.path.join(tmp, "pf-%s.json" % n)))
    np_ = json.load(open(os.path.join(tmp, "np-%s.json" % n)))
    old = json.load(open(os.path.join(tmp, "old-%s.json" % n)))
    p, e, e0 = np_["policy"], pf["experts"], np_["experts"]
    b = p["belady"]
    print("| %s (of %d) | %.3f | %.2f | %.3f | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f | %.2f / %.2f |" % (
        n, p["working_set_records"], e["hit_rate"], e["hit_rate"] / b, e0["cache_hit_rate"],
        e0["cache_hit_rate"] / b, old["experts"]["hit_rate"] / b, p["lru"], p["lfu-decay"],
        p["static_best"], b, e["prefetch_precision"] or 0.0, e["prefetch_recall"]))
EOF
