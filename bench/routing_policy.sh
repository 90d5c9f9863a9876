#!/bin/sh
# routing_policy.sh - the expert cache against the offline optimum (Belady)
# on the routing of a trained router: the embedded default model, whose
# 48 expert records (3 MoE layers x 16) are made to exceed the cache.
#
#   bench/routing_policy.sh [--coli PATH] [--model DIR] [--gen N] [--records N,...]
#
# For each budget (in records of the model's record size) it runs
#   coli bench MODEL --no-kernels --prompt 32 --gen N --expert-cache BYTES
# with the default prefetch and with --no-prefetch, and prints a markdown
# table: our hit rate (prefetched records count as hits: the prediction is
# knowledge of the near future), the RAM-only hit rate, the simulated
# policies on the same trace (LRU, LFU with decay, the best fixed set in
# hindsight) and Belady's hit rate at the same capacity, as ratios.
# The synthesized GLM-5 slice of glm5_slice.sh has a random router, whose
# routing has no structure for any policy to learn; this one is learnt.
# A few seconds; no root, nothing written outside a temporary directory.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
coli=${COLI:-} model=$top/data/default-model gen=512 records=8,12,16,24,32
while [ $# -gt 0 ]; do
	case $1 in
	--coli) coli=$2; shift ;;
	--model) model=$2; shift ;;
	--gen) gen=$2; shift ;;
	--records) records=$2; shift ;;
	-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "routing_policy.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
. "$top/bench/find_coli.sh"
find_coli routing_policy.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# The record size: one run with everything cached reports it.
"$coli" bench "$model" --no-kernels --prompt 8 --gen 8 > "$tmp/probe.json"
rec=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["experts"]["record_bytes"])' "$tmp/probe.json")

for n in $(echo "$records" | tr ',' ' '); do
	"$coli" bench "$model" --no-kernels --prompt 32 --gen "$gen" --expert-cache $((n * rec)) > "$tmp/pf-$n.json"
	"$coli" bench "$model" --no-kernels --prompt 32 --gen "$gen" --expert-cache $((n * rec)) --no-prefetch > "$tmp/np-$n.json"
done
/usr/bin/python3 - "$tmp" "$records" "$gen" "$model" <<'EOF'
import json, os, sys
tmp, records, gen, model = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
print("Routing of %s, %s decoded tokens after a 32-token prompt; budget in expert records.\n" % (model, gen))
print("| records (of working set) | hit incl. prefetched | /Belady | RAM hit, --no-prefetch | /Belady | LRU | LFU-decay | best fixed set | Belady | prefetch precision / recall |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n in records:
    pf = json.load(open(os.path.join(tmp, "pf-%s.json" % n)))
    np_ = json.load(open(os.path.join(tmp, "np-%s.json" % n)))
    p, e, e0 = np_["policy"], pf["experts"], np_["experts"]
    b = p["belady"]
    print("| %s (of %d) | %.3f | %.2f | %.3f | %.2f | %.3f | %.3f | %.3f | %.3f | %.2f / %.2f |" % (
        n, p["working_set_records"], e["hit_rate"], e["hit_rate"] / b, e0["cache_hit_rate"],
        e0["cache_hit_rate"] / b, p["lru"], p["lfu-decay"], p["static_best"], b,
        e["prefetch_precision"] or 0.0, e["prefetch_recall"]))
EOF
