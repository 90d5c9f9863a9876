#!/bin/sh
# convert_badinput.sh - bad checkpoints make `coli convert` exit 1 with one
# line naming the key, file or tensor at fault, writing nothing; usage
# errors exit 2.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bad() { # kind expected-substring...
	kind=$1
	shift
	rm -rf "$T/ck" "$T/out"
	"$PY" "$top_srcdir/tests/convert_mkckpt.py" "$T/ck" --bad "$kind" || fail "mkckpt $kind"
	"$COLI" convert "$T/ck" "$T/out" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 1 ] || { cat "$T/err" >&2; fail "$kind: exit $rc, want 1"; }
	line=$(grep '^coli convert: ' "$T/err")
	[ "$(grep -c '^coli convert: ' "$T/err")" = 1 ] || fail "$kind: not one error line: $(cat "$T/err")"
	for s in "$@"; do
		case $line in *"$s"*) ;; *) fail "$kind: '$line' lacks '$s'" ;; esac
	done
	[ -e "$T/out/manifest.json" ] && fail "$kind: a manifest was written"
	:
}
bad missing-key kv_lora_rank config.json
bad model-type llama
bad truncated model-00002-of-00002.safetensors
bad shape model.layers.1.self_attn.kv_b_proj.weight "[100, 64]" "[112, 64]" .safetensors
bad dtype model.layers.0.mlp.up_proj.weight I32 .safetensors
bad missing-tensor model.layers.2.self_attn.kv_a_layernorm.weight
rm -rf "$T/ck"
"$COLI" convert "$T/nonexistent" "$T/out" >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q nonexistent "$T/err" || fail "missing SRC: $(cat "$T/err")"

usage() { # expected-status args...
	want=$1
	shift
	"$COLI" "$@" >/dev/null 2>&1
	rc=$?
	[ $rc = "$want" ] || fail "coli $*: exit $rc, want $want"
}
usage 2 convert
usage 2 convert only-one
usage 2 convert a b c
usage 2 convert a b --quant int3
usage 2 convert a b --mtp-quant q2
usage 2 convert a b --bogus
usage 2 convert a b --threads many
usage 2 convert a b --embed-quant int2
usage 0 convert --help
usage 2 info --bogus
usage 2 info a b
usage 0 info --help
usage 1 info "$T/nonexistent"
echo "ok"
