#!/bin/sh
# ref_forward.sh - the C forward pass against the independent numpy
# reference (tests/ref/ref_model.py) on synthesized tiny models of the real
# architecture: for each variant, coli synth -> coli convert --quant f32 ->
# tests/ref/compare.py (max relative logit difference <= 2e-6 at every
# position, and incremental decode == full pass exactly, bit for bit). Then int8 and
# int4-g64 conversions: the reference run on the container's own weights
# (decoded from the documented byte layout by tests/ref/container_weights.py)
# must agree within 6e-6, and the quantization error against the
# source is reported as KL and top-1 agreement (int8 must agree on top-1
# for at least half the positions). Prints one JSON line per run.
# Variants: q LoRA on/off, YaRN on/off, n_group > 1 with topk_group <
# n_group, a single group, 1088 experts in 68 groups, norm_topk_prob off
# with routed_scaling_factor 1.7, two dense layers, sharded input, BF16 and
# FP8 inputs, the glm5-tiny preset (GLM-5 layout) in F32 and FP8, and DSA
# indexer variants over 44 tokens (also: greedy chains of 8 tokens equal).
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
. "${top_srcdir:-.}/tests/test_skip.sh"
"$PY" -c 'import numpy' 2>/dev/null || test_skip "python3 numpy missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
CMP="$top_srcdir/tests/ref/compare.py"
TOKENS=0,72,101,300,17,259,511,42,7,130,64,200
# 44 tokens: with index_topk 4-8 the indexer's selection decides most rows
TOKENS_LONG=0,72,101,300,17,259,511,42,7,130,64,200,33,480,95,5,260,411,12,77,301,150,2,499,64,128,9,333,71,18,222,400,6,190,87,310,45,503,11,276,60,141,399,23
failed=0

run() { # name quant [--max-rel X] [--long] synth-flags...
	name=$1 quant=$2
	shift 2
	maxrel= toks=$TOKENS extra=
	if [ "${1:-}" = --max-rel ]; then
		maxrel="--max-rel $2"
		shift 2
	fi
	if [ "${1:-}" = --long ]; then
		toks=$TOKENS_LONG extra="--greedy 8"
		shift
	fi
	hf="$tmp/hf-$name" out="$tmp/m-$name-$quant"
	if [ ! -d "$hf" ]; then
		"$COLI" synth "$hf" --preset tiny "$@" >/dev/null || { echo "FAIL: synth $name"; failed=1; return; }
	fi
	if ! "$COLI" convert "$hf" "$out" --quant "$quant" >"$tmp/convert.log" 2>&1; then
		echo "FAIL: coli convert $name --quant $quant: $(tail -n 3 "$tmp/convert.log")"
		failed=1
		return
	fi
	inc=
	[ "$quant" = f32 ] && inc=--incremental
	"$PY" "$CMP" --coli "$COLI" --hf "$hf" --model "$out" --tokens "$toks" \
		--quant "$quant" --name "$name" $inc $maxrel $extra || failed=1
	rm -rf "$out"
}

run base f32 --seed 11
run noqlora f32 --seed 12 --q-lora 0
run noyarn f32 --seed 13 --no-yarn
run groups f32 --seed 14 --experts 32 --groups 8 --topk-groups 3 --topk 6
run onegroup f32 --seed 15 --groups 1 --topk-groups 1
# more experts and groups than any fixed-size routing scratch would hold
run manyexperts f32 --seed 16 --experts 1088 --groups 68 --topk-groups 60 --topk 4 --layers 2 --dense-layers 1 --dtype bf16
run nonorm f32 --seed 16 --no-norm-topk --scaling 1.7
run neox f32 --seed 23 --no-rope-interleave
run dense2 f32 --seed 17 --layers 4 --dense-layers 2
run sharded f32 --seed 18 --shards 3
run bf16 f32 --seed 19 --dtype bf16
run fp8 f32 --seed 20 --dtype fp8 --shards 2
# GLM-5 keys, DSA indexer tensors, unequal nope/rope/v dims, eps 1e-5. The
# bound (2e-6, tests/ref/compare.py) pins the attention-norm epsilon to
# rms_norm_eps: using transformers' 1e-6 instead moves these logits by ~1e-5.
run glm5tiny f32 --seed 21 --preset glm5-tiny
run glm5tiny-fp8 f32 --seed 22 --preset glm5-tiny --dtype fp8
# DSA lightning indexer with a small index_topk (4-8), so the selection
# matters at most positions: both rope pairings, an explicit indexer_types
# list, an index_topk_pattern, the freq/offset rule, shared layers with and
# without stored indexer weights, YaRN, BF16 and FP8 inputs, the MTP layer
# (converted with its own indexer).
run dsa-glm f32 --long --seed 41 --preset glm5-tiny --index-topk 5
run dsa-types f32 --long --seed 42 --preset glm5-tiny --index-topk 7 --layers 5 --indexer-types FSFSS
run dsa-pattern f32 --long --seed 43 --preset glm5-tiny --index-topk 4 --layers 5 --index-pattern FFSSF \
	--shared-indexer-weights --indexer-rope neox
run dsa-freq f32 --long --seed 44 --index-topk 8 --layers 6 --index-freq 3 --index-offset 2 \
	--indexer-rope interleave --dtype bf16
run dsa-v32 f32 --long --seed 45 --index-topk 6 --layers 4 --indexer-types FSSS --shared-indexer-weights \
	--dtype fp8
run base int8
run base int4-g64
# int4 on the GLM-5 layout (DSA indexer weights quantized too) and from FP8
run glm5tiny int4-g64
run fp8 int4-g64
exit $failed
