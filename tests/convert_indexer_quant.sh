#!/bin/sh
# --indexer-quant sets the DSA indexer's wq_b / wk apart from --quant, and
# the default is int8 (f32 with --quant f32); a model without an indexer
# records no quant.indexer.
. "${srcdir:-.}/tests/test_skip.sh"
COLI=${COLI:-./coli}
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
command -v jq >/dev/null || test_skip "jq not installed"
fail() { echo "FAIL: $*"; exit 1; }
"$COLI" synth "$T/hf" --preset glm5-tiny >/dev/null 2>&1 || fail synth
qtype() { # qtype of the layer-1 indexer tensor NAME in container $1
	jq -r --arg n "model.layers.1.self_attn.indexer.$2.weight" \
		'.tensors[] | select(.name == $n) | .qtype' "$1/manifest.json"
}
"$COLI" convert "$T/hf" "$T/def" >/dev/null 2>&1 || fail "convert default"
[ "$(jq -r .quant.indexer "$T/def/manifest.json")" = int8 ] || fail "default not int8"
[ "$(qtype "$T/def" wq_b)" = int8 ] || fail "default wq_b: $(qtype "$T/def" wq_b)"
[ "$(qtype "$T/def" wk)" = int8 ] || fail "default wk"
[ "$(qtype "$T/def" weights_proj)" = f32 ] || fail "weights_proj not f32"
"$COLI" convert "$T/hf" "$T/f" --indexer-quant f32 >/dev/null 2>&1 || fail "convert f32"
[ "$(qtype "$T/f" wq_b)" = f32 ] && [ "$(qtype "$T/f" wk)" = f32 ] || fail "--indexer-quant f32"
[ "$(jq -r .quant.dense "$T/f/manifest.json")" = int4-g64 ] || fail "--quant changed"
"$COLI" convert "$T/hf" "$T/i4" --indexer-quant int4-g64 >/dev/null 2>&1 || fail "convert int4"
[ "$(qtype "$T/i4" wk)" = int4-g64 ] || fail "--indexer-quant int4-g64"
"$COLI" convert "$T/hf" "$T/a" --quant f32 >/dev/null 2>&1 || fail "convert --quant f32"
[ "$(qtype "$T/a" wq_b)" = f32 ] || fail "--quant f32 indexer not f32"
"$COLI" convert "$T/hf" "$T/x" --indexer-quant int2 >/dev/null 2>&1
[ $? = 2 ] || fail "bad --indexer-quant not a usage error"
"$COLI" synth "$T/hn" --preset tiny >/dev/null 2>&1 || fail "synth tiny"
"$COLI" convert "$T/hn" "$T/n" >/dev/null 2>&1 || fail "convert tiny"
[ "$(jq -r '.quant | has("indexer")' "$T/n/manifest.json")" = false ] || fail "indexer key without DSA"
exit 0
