#!/bin/sh
# dsa_decode.sh - decode cost of the DSA lightning indexer on a GLM-5-shaped
# slice (issue 13, benchmark part): ms/token split into indexer, attention
# and experts at several contexts, next to dense MLA over the same context
# in the same process (bench/dsa_bench.c), and the crossover.
#
#   bench/dsa_decode.sh [--work DIR] [--reuse] [--ctx "1024 2048 4096 8192 16384 32768"]
#                       [--gen N] [--threads N] [--layers N] [--coli PATH]
#
# 1. coli synth --preset glm5-slice --layers 2 --dense-layers 1 --experts 16
#    --vocab 4096 (GLM-5.2 attention and indexer shapes: 64 heads, q_lora
#    2048, kv_lora 512, index 32 heads x 128, index_topk 2048), convert
#    int4-g64.
# 2. per context: bench/dsa_bench MODEL CTX GEN THREADS fills two KV caches
#    with the same CTX random rows (no prefill) and decodes GEN tokens on
#    each, with the indexer and with it switched off (dense MLA),
#    interleaved token by token; each side's fastest token counts (the
#    medians are in the JSON too);
#    one JSON line each in WORK/results.jsonl.
# 3. prints per context each side's fastest token split into indexer /
#    attention / experts, each side's least CPU time for a token and their
#    ratio dense/sparse (above 1: the sparse path is faster; with one
#    thread, the default, CPU time is the work, which other processes'
#    time slices do not inflate), the crossover (the context from which on
#    every measured one has sparse faster by more than 5% of CPU time, and
#    the last before it), and at the largest
#    context the peak RSS next to its bound: dense weights + expert store
#    budget + KV in RAM, plus 10% ("ok" or "EXCEEDED").
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-dsa-bench reuse=0 ctxs="1024 2048 4096 8192 16384 32768" gen=31 threads=1 layers=2
coli=${COLI:-}
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--reuse) reuse=1 ;;
	--ctx) ctxs=$2; shift ;;
	--gen) gen=$2; shift ;;
	--threads) threads=$2; shift ;;
	--layers) layers=$2; shift ;;
	--coli) coli=$2; shift ;;
	-h|--help) sed -n '2,28p' "$0"; exit 0 ;;
	*) echo "dsa_decode.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
. "$top/bench/find_coli.sh"
find_coli dsa_decode.sh
bench=$(dirname "$coli")/bench/dsa_bench
[ -x "$bench" ] || { echo "dsa_decode.sh: $bench not built (make bench/dsa_bench)" >&2; exit 1; }
mkdir -p "$work"
if [ $reuse = 0 ] || [ ! -f "$work/m/manifest.json" ]; then
	rm -rf "$work/hf" "$work/m"
	"$coli" synth "$work/hf" --preset glm5-slice --layers "$layers" --dense-layers 1 --experts 16 \
		--vocab 4096 >/dev/null
	"$coli" convert "$work/hf" "$work/m" --quant int4-g64 >/dev/null 2>&1
	rm -rf "$work/hf"
fi
: >"$work/results.jsonl"
for ctx in $ctxs; do
	"$bench" "$work/m" "$ctx" "$gen" "$threads" | tee -a "$work/results.jsonl"
done
/usr/bin/python3 - "$work/results.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("fastest token, wall ms: sparse total (indexer, attention, experts) | dense total (attention) | "
      "least CPU ms sparse / dense, dense/sparse")
below = above = None
for r in rows:
    s, d = r["sparse"], r["dense"]
    print("%6d: %7.1f (%6.1f %7.1f %6.1f) | %7.1f (%7.1f) | %7.1f / %7.1f  %.2f"
          % (r["ctx"], s["ms_per_token"], s["indexer_ms"], s["attention_ms"], s["experts_ms"],
             d["ms_per_token"], d["attention_ms"], r["sparse_cpu_ms"], r["dense_cpu_ms"],
             r["dense_over_sparse_cpu"]))
    # faster: by more than 5% of CPU time (at index_topk and below both
    # sides run the same dense loop)
    if r["dense_over_sparse_cpu"] > 1.05:
        above = r["ctx"] if above is None else above
    else:
        above, below = None, r["ctx"]
if above is None:
    print("crossover: sparse not faster (by more than 5% CPU) at the largest context measured")
else:
    print("crossover: sparse faster (by more than 5%% CPU) from ctx %d on%s" % (above, "" if below is None else
          "; not at %d" % below))
big = max(rows, key=lambda r: r["ctx"])
print("peak RSS at ctx %d: %d MiB, bound %d MiB (dense %d + expert budget %d + KV in RAM %d, +10%%): %s"
      % (big["ctx"], big["peak_rss_mib"], big["rss_bound_mib"], big["dense_mib"], big["expert_budget_mib"],
         big["kv_ram_mib"], "ok" if big["rss_within_bound"] else "EXCEEDED"))
EOF
