#!/bin/sh
# dsa_decode.sh - decode cost of the DSA lightning indexer on a GLM-5-shaped
# slice (issue 13, benchmark part): ms/token split into indexer, attention
# and experts at several contexts, next to dense MLA over the same context
# in the same process (bench/dsa_bench.c), and the crossover.
#
#   bench/dsa_decode.sh [--work DIR] [--reuse] [--ctx "1024 8192 32768"]
#                       [--gen N] [--threads N] [--layers N] [--coli PATH]
#
# 1. coli synth --preset glm5-slice --layers 2 --dense-layers 1 --experts 16
#    --vocab 4096 (GLM-5.2 attention and indexer shapes: 64 heads, q_lora
#    2048, kv_lora 512, index 32 heads x 128, index_topk 2048), convert
#    int4-g64.
# 2. per context: bench/dsa_bench MODEL CTX GEN THREADS fills the KV cache
#    with CTX random rows (no prefill) and decodes GEN tokens with the
#    indexer, then with it switched off (dense MLA), alternating, twice each
#    (the faster run of each counts); one JSON line each in
#    WORK/results.jsonl.
# 3. prints per context dense/sparse (above 1: the sparse path is faster),
#    the attention+indexer share of a token, and the first context where
#    sparse wins.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-dsa-bench reuse=0 ctxs="1024 8192 32768" gen=4 threads=0 layers=2 coli=${COLI:-}
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--reuse) reuse=1 ;;
	--ctx) ctxs=$2; shift ;;
	--gen) gen=$2; shift ;;
	--threads) threads=$2; shift ;;
	--layers) layers=$2; shift ;;
	--coli) coli=$2; shift ;;
	-h|--help) sed -n '2,22p' "$0"; exit 0 ;;
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
cross = None
for r in rows:
    s, d = r["sparse"], r["dense"]
    att_s = s["indexer_ms"] + s["attention_ms"]
    print("ctx %6d: sparse %8.1f ms/token (indexer %7.1f, attention %7.1f, experts %6.1f), "
          "dense %8.1f (attention %7.1f); dense/sparse %.2f, attention dense/sparse %.2f"
          % (r["ctx"], s["ms_per_token"], s["indexer_ms"], s["attention_ms"], s["experts_ms"],
             d["ms_per_token"], d["attention_ms"], r["dense_over_sparse"], d["attention_ms"] / att_s))
    if cross is None and r["dense_over_sparse"] > 1.0:
        cross = r["ctx"]
print("sparse faster from ctx %s on (of those measured); peak RSS %s MiB"
      % (cross, max(r["peak_rss_mib"] for r in rows)))
EOF
