#!/bin/sh
# warm_decode.sh - decode speed with every expert in RAM on a GLM-5-shaped
# slice (the compute side of a step), f32 against q8 activations, next to
# the machine's memory bandwidth (STREAM-style triad).
#
#   bench/warm_decode.sh [--work DIR] [--runs N] [--threads N] [--coli PATH]
#
# The slice: coli synth --preset glm5-slice --layers 3 --dense-layers 1
# --experts 16 --dtype fp8 --vocab 4096, converted to int4-g64 (1.3 GB; the
# per-token work of glm5_slice.sh's 64-expert slice, a quarter of its
# experts), kept in WORK (default /var/tmp/coli-warm) for the next run.
# Each run: coli bench --no-kernels --prompt 16 --gen 64 --expert-cache 100%
# --act-quant MODE, the modes interleaved. Prints a markdown table with the
# weights streamed per token (from the manifest: the tensors the forward
# pass reads, top-k expert records per MoE layer) as GB/s and as a ratio
# to the triad.
# Run it alone: a neighbour's load changes every figure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-warm runs=3 threads=0 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args warm_decode.sh 2,17 '--work=work --runs=runs --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli warm_decode.sh
bench_bin=$(dirname "$coli")/tests/quant_bench
mkdir -p "$work/results"
if [ ! -f "$work/model/manifest.json" ]; then
	"$coli" synth "$work/hf" --preset glm5-slice --layers 3 --dense-layers 1 --experts 16 \
		--dtype fp8 --vocab 4096 >/dev/null
	"$coli" convert "$work/hf" "$work/model" --quant int4-g64 >/dev/null 2>"$work/convert.log"
	rm -rf "$work/hf"
fi
targs="--no-kernels --prompt 16 --gen 64 --expert-cache 100%"
[ "$threads" -gt 0 ] && targs="$targs --threads $threads"
triad=
if [ -x "$bench_bin" ]; then
	qt=$threads
	[ "$qt" -gt 0 ] || qt=$(nproc)
	"$bench_bin" 3 "$qt" > "$work/results/kernels.json" 2>/dev/null || true
	triad=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["triad"]["gbps"])' \
		"$work/results/kernels.json" 2>/dev/null || true)
fi
i=1
while [ "$i" -le "$runs" ]; do
	for a in f32 q8; do
		# shellcheck disable=SC2086
		"$coli" bench "$work/model" $targs --act-quant $a > "$work/results/warm-$a-$i.json" \
			2>>"$work/results/stderr.log" ||
			{ echo "warm_decode.sh: coli bench failed, see $work/results/stderr.log" >&2; exit 1; }
	done
	i=$((i + 1))
done
/usr/bin/python3 - "$work/results" "$runs" "${triad:-}" "$work/model/manifest.json" <<'EOF'
import json, os, sys
res, runs, triad, manifest = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# Weight bytes a decode step streams: every resident tensor the forward pass
# uses (the DSA indexer's are loaded but unused; the embedding is one row),
# plus top-k routed expert records per MoE layer (their parts, not padding).
m = json.load(open(manifest))
cfg = m["config"]
step = 0
for t in m["tensors"]:
    name = t["name"]
    if ".indexer." in name or name.startswith("model.layers.%d." % cfg["num_hidden_layers"]):
        continue  # unused here: DSA indexer, MTP layer
    step += t["nbytes"] // cfg["vocab_size"] if "embed_tokens" in name else t["nbytes"]
# bytes per 64 weights of each format (quant.h's block layouts)
block = {"int4-g64": 36, "int8": 68, "f32": 256}[m["experts"]["qtype"]]
rec = sum(p["rows"] * p["cols"] // 64 * block for p in m["experts"]["parts"])
moe = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
step += cfg["num_experts_per_tok"] * moe * rec
print("triad: %s GB/s; weights streamed per token: %.0f MB\n" % (
    triad or "n/a (tests/quant_bench not built)", step / 1e6))
print("| activations | run | tok/s | weights GB/s | /triad | CPU ms/token | CPU share | attention ms | MoE ms | dense FFN ms | other ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for a in ("f32", "q8"):
    for i in range(1, runs + 1):
        d = json.load(open(os.path.join(res, "warm-%s-%d.json" % (a, i))))["decode"]
        t = d["time_split"]
        gbs = step * d["tokens_per_s"] / 1e9
        print("| %s | %d | %.2f | %.1f | %s | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f |" % (
            a, i, d["tokens_per_s"], gbs, "%.2f" % (gbs / float(triad)) if triad else "n/a",
            d["cpu_ms_per_token"], d["cpu_share"], t["attention_ms"], t["moe_ms"],
            t["dense_ffn_ms"], t["other_ms"]))
EOF
