#!/bin/sh
# FP8 checkpoints under the conventions other than DeepSeek's
# "<w>_scale_inv" (issue 30, defect 12: renamed to compressed-tensors'
# "<w>_scale" they converted with exit 0, unscaled, into a garbage model):
#  - the same FP8 numbers with <w>_scale names and a compressed-tensors
#    block config convert byte for byte to the scale_inv conversion;
#  - per-channel scales ([rows, 1], strategy channel) convert byte for byte
#    to the same weights dequantized beforehand as F32 (and not to the
#    block-scaled reference: the scales are applied);
#  - refused, naming why: an FP8 weight without a scale, a quant_method
#    other than fp8 / compressed-tensors / fbgemm_fp8, strategy group,
#    block_structure [64, 64], int weights.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
VAR="$top_srcdir/tests/convert_fp8_variants.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
conv() { "$COLI" convert "$1" "$2" >/dev/null 2>"$T/err"; }
"$COLI" synth "$T/ck" --preset tiny --dtype fp8 --shards 2 >/dev/null 2>&1 || fail "coli synth"
conv "$T/ck" "$T/ref" || { cat "$T/err"; fail "reference conversion"; }

"$PY" "$VAR" rename "$T/ck" "$T/ren" || fail "rename variant"
conv "$T/ren" "$T/ren.out" || { cat "$T/err"; fail "convert the weight_scale names"; }
diff -r -x manifest.json "$T/ref" "$T/ren.out" >/dev/null ||
	fail "weight_scale names convert to another container than weight_scale_inv"
grep -q "not part of the known architecture" "$T/err" && fail "scales kept as unknown tensors: $(cat "$T/err")"
echo "compressed-tensors names (block 128x128): the same container as scale_inv"

"$PY" "$VAR" channel "$T/ck" "$T/ch" "$T/chf" || fail "channel variant"
conv "$T/ch" "$T/ch.out" || { cat "$T/err"; fail "convert per-channel scales"; }
conv "$T/chf" "$T/chf.out" || { cat "$T/err"; fail "convert the dequantized F32"; }
diff -r -x manifest.json "$T/ch.out" "$T/chf.out" >/dev/null ||
	fail "per-channel FP8 converts to another container than its F32 dequantization"
diff -r -x manifest.json "$T/ch.out" "$T/ref" >/dev/null && fail "per-channel scales were not applied"
echo "per-channel scales: the same container as the F32 dequantization"

"$PY" "$VAR" noscale "$T/ck" "$T/no" >"$T/gone" || fail "noscale variant"
conv "$T/no" "$T/no.out" && fail "an FP8 weight without a scale converted"
grep -q "tensor $(cat "$T/gone"): FP8 (F8_E4M3) without a scale" "$T/err" || fail "no scale: $(cat "$T/err")"
[ -f "$T/no.out/manifest.json" ] && fail "a manifest for a refused checkpoint"

# refuse CFG_EDIT NEEDLE: the renamed checkpoint with config.json edited
refuse() {
	rm -rf "$T/q" "$T/q.out"
	cp -r "$T/ren" "$T/q"
	"$PY" - "$T/q/config.json" "$1" <<'EOF' || fail "edit config"
import json, sys
p = sys.argv[1]
c = json.load(open(p))
q = c["quantization_config"]
w = q["config_groups"]["group_0"]["weights"]
exec(sys.argv[2])
json.dump(c, open(p, "w"))
EOF
	conv "$T/q" "$T/q.out" && fail "converted with: $1"
	grep -q "$2" "$T/err" || fail "$1: $(cat "$T/err")"
}
refuse 'q["quant_method"] = "gptq"' "quant_method 'gptq' is not supported"
refuse 'w["strategy"] = "group"' "weight strategy group is not supported"
refuse 'w["block_structure"] = [64, 64]' "block_structure other than \[128, 128\]"
refuse 'w["type"] = "int"' "weights of type int with 8 bits are not supported"
echo "refused: no scale, gptq, strategy group, 64x64 blocks, int weights"
