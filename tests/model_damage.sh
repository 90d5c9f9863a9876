#!/bin/sh
# Damaged or inconsistent containers are refused with one line naming the
# file and tensor, exit status 1, by `coli generate` (at open, or for an
# expert record when it is read) and by `coli doctor` (which runs the same
# tensor binding as open; --verify also checksums the expert shards). A
# server whose expert record turns out damaged fails that request and
# keeps serving. The damage is done by tests/damage_container.py.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-python3}
DMG="$top_srcdir/tests/damage_container.py"
. "$top_srcdir/tests/server_common.sh"
srv_setup
T=$SRV_TMP
export COLI_CACHE_DIR="$T/cache"
"$COLI" convert "$T/hf" "$T/good" >/dev/null 2>&1 || srv_fail "convert (int4)"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# gen DIR: generate greedily into gen.out / gen.err with a fresh cache
# (routing heat of an earlier container would add a warning line)
gen() {
	rm -rf "$COLI_CACHE_DIR"
	"$COLI" generate "$1" -p "hello world" -n 4 --temp 0 >"$T/gen.out" 2>"$T/gen.err"
}
# expect_gen DIR MESSAGE: generate exits 1 with exactly "coli generate: MESSAGE"
expect_gen() {
	gen "$1"
	rc=$?
	[ $rc = 1 ] || bad "$1: generate exit $rc, want 1"
	[ "$(cat "$T/gen.err")" = "coli generate: $2" ] ||
		bad "$1: generate said '$(cat "$T/gen.err")', want 'coli generate: $2'"
	[ ! -s "$T/gen.out" ] || bad "$1: generate printed output: $(cat "$T/gen.out")"
}
# expect_doctor DIR CHECK MESSAGE [--verify]: doctor exits 1 with that FAIL line
expect_doctor() {
	"$COLI" doctor "$1" ${4:-} >"$T/doc.out" 2>&1
	rc=$?
	[ $rc = 1 ] || bad "$1: doctor ${4:-} exit $rc, want 1"
	line=$(printf 'FAIL     %-14s %s' "$2" "$3")
	grep -qxF "$line" "$T/doc.out" || { bad "$1: doctor ${4:-} lacks '$line'"; cat "$T/doc.out"; }
}

# item 9: containers that cannot run, as doctor sees them
M=$T/m
for case in "drop:model.layers.1.self_attn.kv_a_layernorm.weight|tensor model.layers.1.self_attn.kv_a_layernorm.weight is missing" \
	"config:vocab_size=513|tensor model.embed_tokens.weight is [512, 128], the config implies [513, 128]" \
	"config:kv_lora_rank=129|tensor model.layers.0.self_attn.kv_a_proj_with_mqa.weight is [96, 128], the config implies [161, 128]" \
	"config:num_attention_heads=3|tensor model.layers.0.self_attn.q_b_proj.weight is [256, 64], the config implies [192, 64]" \
	"config:q_lora_rank=0|tensor model.layers.0.self_attn.q_proj.weight is missing"; do
	kind=${case%%|*}
	msg="$M/manifest.json: ${case#*|}"
	"$PY" "$DMG" "$T/good" "$M" "$kind" || srv_fail "damage $kind"
	expect_doctor "$M" tensors "$msg"
	expect_gen "$M" "$msg"
done

# item 8: poisoned scales in a dense int4 tensor, the int8 embedding, an f32 norm
why="(damaged file; coli doctor --verify compares the sha256)"
"$PY" "$DMG" "$T/good" "$M" nan-int4 model.layers.1.self_attn.q_a_proj.weight >/dev/null || srv_fail damage
expect_gen "$M" "$M/dense/layer-001.bin: tensor model.layers.1.self_attn.q_a_proj.weight, row 1: a scale is NaN, Inf or negative $why"
expect_doctor "$M" container "$M/dense/layer-001.bin: sha256 $(sha256sum "$M/dense/layer-001.bin" | cut -c1-64), manifest.json says $(sha256sum "$T/good/dense/layer-001.bin" | cut -c1-64)" --verify
"$PY" "$DMG" "$T/good" "$M" inf-int8 model.embed_tokens.weight >/dev/null || srv_fail damage
expect_gen "$M" "$M/dense/embed.bin: tensor model.embed_tokens.weight, row 1: a scale is NaN, Inf or negative $why"
"$PY" "$DMG" "$T/good" "$M" nan-f32 model.layers.2.input_layernorm.weight >/dev/null || srv_fail damage
expect_gen "$M" "$M/dense/layer-002.bin: tensor model.layers.2.input_layernorm.weight, element 1: a value is NaN or Inf $why"

# random bytes over a whole dense file: refused at open, whichever tensor it hits first
"$PY" "$DMG" "$T/good" "$M" random dense/layer-002.bin || srv_fail damage
gen "$M"
rc=$?
[ $rc = 1 ] || bad "random dense file: generate exit $rc, want 1"
# (or its CRC-32C first, when the first tensor's random values are all finite)
grep -qE "^coli generate: $M/dense/layer-002\.bin: tensor [^ ]+(, (row|element) [0-9]+: a (scale|value) is NaN| at offset [0-9]+: CRC-32C [0-9a-f]{8}, manifest\.json says [0-9a-f]{8} )" "$T/gen.err" ||
	bad "random dense file: generate said '$(cat "$T/gen.err")'"

# a poisoned expert record: found when the store reads it; doctor --verify checksums the shards
"$PY" "$DMG" "$T/good" "$M" nan-expert 2 >/dev/null || srv_fail damage
gen "$M"
rc=$?
[ $rc = 1 ] || bad "damaged expert: generate exit $rc, want 1"
grep -qxE "coli generate: expert store: reading layer 2 expert [0-9]+ from $M/experts/shard-002\.bin: a scale is NaN, Inf or negative \(damaged file; coli doctor --verify compares the sha256\)" "$T/gen.err" ||
	bad "damaged expert: generate said '$(cat "$T/gen.err")'"
expect_doctor "$M" expert-sha256 "$M/experts/shard-002.bin: sha256 $(sha256sum "$M/experts/shard-002.bin" | cut -c1-64), manifest.json says $(sha256sum "$T/good/experts/shard-002.bin" | cut -c1-64)" --verify
"$COLI" doctor "$T/good" --verify >"$T/doc.out" 2>&1 || { bad "doctor --verify fails a good container"; cat "$T/doc.out"; }
grep -q "^ok       expert-sha256  3 expert shard(s) match" "$T/doc.out" || bad "doctor --verify did not check the expert shards"

# tokenizer damage the manifest's checksums do not see
"$PY" "$DMG" "$T/good" "$M" empty-vocab || srv_fail damage
msg="$M/tokenizer/tokenizer.json: the vocabulary is empty (model.vocab and added_tokens)"
expect_gen "$M" "$msg"
expect_doctor "$M" tokenizer "$msg"
"$PY" "$DMG" "$T/good" "$M" bad-bos || srv_fail damage
msg="$M/tokenizer/tokenizer_config.json: bos_token \"<|no-such-token|>\" is not in the vocabulary of the tokenizer in $M/tokenizer"
expect_gen "$M" "$msg"
expect_doctor "$M" tokenizer "$msg"

# the server: a damaged expert fails the request that reads it, then it keeps serving
"$PY" "$DMG" "$SRV_MODEL" "$T/fm" nan-expert 2 >/dev/null || srv_fail damage
SRV_MODEL=$T/fm
srv_start damaged
for n in 1 2; do
	code=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
		"$URL/completions" -d '{"prompt":"hello world","max_tokens":4,"temperature":0}')
	[ "$code" = 500 ] || bad "damaged expert over HTTP: status $code, want 500"
	grep -q "reading layer 2 expert [0-9]* from .*shard-002.bin: a value is NaN or Inf" "$T/body" ||
		bad "damaged expert over HTTP: body $(cat "$T/body")"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")
	[ "$code" = 200 ] || bad "/health after a damaged expert: $code"
done
srv_stop
[ $fail = 0 ] && echo "model_damage: 5 inconsistent and 8 damaged containers refused with the expected lines"
exit $fail
