#!/bin/sh
# convert_delete_source.sh - `coli convert --delete-source`: a source shard
# is freed (its data blocks returned, header kept) once every container file
# reading it is written, the freeing survives a kill -9 and the rerun, the
# shards are removed at the end, and the container equals a plain
# conversion; a rewrite that would need a freed shard is refused naming it.
set -u
: "${COLI:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S1=model-00001-of-00004.safetensors

"$COLI" synth "$T/ck" --preset tiny --dtype fp8 --shards 4 >/dev/null 2>&1 || fail "coli synth"
"$COLI" convert "$T/ck" "$T/ref" >/dev/null 2>&1 || fail "reference conversion"
blocks() { du -k "$1" | cut -f1; }

cp -r "$T/ck" "$T/src"
# Files in order: embed, layer-000, layer-001, experts/shard-001 (the last
# reader of shard 1), layer-002, experts/shard-002.
COLI_CONVERT_FAIL_AFTER_FILES=6 "$COLI" convert "$T/src" "$T/out" --delete-source \
	>/dev/null 2>"$T/err1"
if [ -f "$T/out/manifest.json" ]; then
	. "${top_srcdir:-.}/tests/test_skip.sh"
	test_skip "built without COLI_FAULT_INJECTION (configure --enable-fault-injection)"
fi
grep -q "$S1: converted, its data freed" "$T/err1" || fail "shard 1 not freed: $(cat "$T/err1")"
[ "$(blocks "$T/src/$S1")" -lt 64 ] || fail "shard 1 still holds $(blocks "$T/src/$S1") KiB"
[ "$(stat -c %s "$T/src/$S1")" = "$(stat -c %s "$T/ck/$S1")" ] || fail "freed shard changed size"
[ "$(blocks "$T/src/model-00004-of-00004.safetensors")" -gt 64 ] || fail "shard 4 freed too early"

# A finished file that no longer verifies and reads the freed shard: refused.
cp "$T/out/dense/layer-000.bin" "$T/keep"
printf 'X' | dd of="$T/out/dense/layer-000.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
"$COLI" convert "$T/src" "$T/out" --delete-source >/dev/null 2>"$T/err2"
[ $? = 1 ] || fail "rewrite from a freed shard: not refused"
grep -q "dense/layer-000.bin: must be written again but reads .*$S1, whose data --delete-source" \
	"$T/err2" || fail "refusal: $(tail -1 "$T/err2")"
cp "$T/keep" "$T/out/dense/layer-000.bin"

"$COLI" convert "$T/src" "$T/out" --delete-source >/dev/null 2>"$T/err3" ||
	{ cat "$T/err3" >&2; fail "resumed run"; }
ls "$T/src"/*.safetensors >/dev/null 2>&1 && fail "shards left after completion"
[ -f "$T/src/config.json" ] || fail "config.json removed"
diff -r -x manifest.json "$T/ref" "$T/out" || fail "container differs"
sed 's/"name": "src"/"name": "ck"/' "$T/out/manifest.json" | cmp -s - "$T/ref/manifest.json" ||
	fail "manifest differs beyond source.name"
echo ok
