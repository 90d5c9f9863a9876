#!/bin/sh
# Checksums of container format 2 (colitop-model(5)): convert writes the
# CRC-32C of every resident tensor and expert record (checked here against
# an independent Python CRC-32C); a flipped bit that every cheap check
# passes is refused at load (dense) or fails the request that reads it
# (expert record: 500, reported once, counted in /metrics) while the
# server keeps serving; the byte restored, or a truncated shard restored,
# serves again with the same tokens, without a restart; a container
# without checksums (format 1) still runs and says so.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-python3}
DMG="$top_srcdir/tests/damage_container.py"
. "$top_srcdir/tests/server_common.sh"
srv_setup
T=$SRV_TMP
export COLI_CACHE_DIR="$T/cache"
G=$SRV_MODEL
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# the manifest's checksums, recomputed by a table-driven CRC-32C in Python
"$PY" - "$G" <<'PYEOF' || bad "manifest checksums"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
T = []
for b in range(256):
    c = b
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T.append(c)
def crc(data):
    c = 0xFFFFFFFF
    for x in data:
        c = (c >> 8) ^ T[(c ^ x) & 0xFF]
    return c ^ 0xFFFFFFFF
assert crc(b"123456789") == 0xE3069283
assert m["version"] == 2, m["version"]
for t in m["tensors"]:
    with open(os.path.join(d, t["file"]), "rb") as f:
        f.seek(t["offset"])
        assert t["crc32c"] == "%08x" % crc(f.read(t["nbytes"])), t["name"]
e = m["experts"]
for sh in e["shards"]:
    hexes = sh["record_crc32c"]
    assert len(hexes) == 8 * sh["count"]
    data = open(os.path.join(d, sh["file"]), "rb").read()
    for r in range(sh["count"]):
        rs = e["record_size"]
        assert hexes[8 * r:8 * r + 8] == "%08x" % crc(data[r * rs:(r + 1) * rs]), (sh["file"], r)
PYEOF
"$COLI" info "$G" | grep -qx "checksums     CRC-32C of every expert record and resident tensor, verified when read" ||
	bad "coli info does not report the checksums"

# flip BYTE BIT: xor one byte of a file in place
flip() {
	"$PY" -c "
import sys
p, off, x = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(p, 'r+b') as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ x]))" "$1" "$2" "$3"
}
gen() {
	rm -rf "$COLI_CACHE_DIR"
	"$COLI" generate "$1" -p "hello world" -n 4 --temp 0 --expert-cache 0 >"$T/gen.out" 2>"$T/gen.err"
}
gen "$G" || { cat "$T/gen.err"; srv_fail "generate on the good model"; }
cp "$T/gen.out" "$T/good.out"

# a flipped bit (an f32 mantissa bit: finite, so no scale check sees it)
# in one record of layer 1 that this prompt reads: the first expert whose
# damage fails generate
RS=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['experts']['record_size'])" "$G/manifest.json")
SH=$G/experts/shard-001.bin
E=
for e in $(seq 0 15); do
	flip "$SH" $((e * RS + 10)) 16
	gen "$G"
	rc=$?
	if [ $rc = 1 ]; then E=$e; break; fi
	flip "$SH" $((e * RS + 10)) 16
done
[ -n "$E" ] || srv_fail "no record of layer 1 is read by the prompt"
grep -qxF "coli: error: expert store: layer 1 expert $E: CRC-32C mismatch in $SH at offset $((E * RS)) ($RS bytes): read $(grep -o 'read [0-9a-f]*' "$T/gen.err" | head -1 | cut -c6-), manifest.json says $(grep -o 'says [0-9a-f]*' "$T/gen.err" | head -1 | cut -c6-); not cached, read again when next needed" "$T/gen.err" ||
	bad "flipped bit: no error line naming layer 1 expert $E and its offset: $(cat "$T/gen.err")"
[ "$(grep -c "CRC-32C mismatch" "$T/gen.err")" = 1 ] || bad "flipped bit reported $(grep -c "CRC-32C mismatch" "$T/gen.err") times"
grep -qxF "coli generate: expert store: reading layer 1 expert $E from $SH: the record fails its CRC-32C (damaged file or a bad read; not cached, read again when next needed)" "$T/gen.err" ||
	bad "flipped bit: generate said $(tail -1 "$T/gen.err")"
"$COLI" doctor "$G" --verify >"$T/doc.out" 2>&1
grep -qxF "FAIL     expert-crc32c  $SH: 1 of 16 records fail their CRC-32C, the first expert $E of layer 1 at offset $((E * RS))" "$T/doc.out" ||
	{ bad "doctor --verify does not name the record"; cat "$T/doc.out"; }
# the switch turns the check off: the damaged record is served
rm -rf "$COLI_CACHE_DIR"
"$COLI" generate "$G" -p "hello world" -n 4 --temp 0 --expert-cache 0 --no-verify-checksums >"$T/off.out" 2>"$T/off.err" ||
	bad "--no-verify-checksums: generate failed: $(cat "$T/off.err")"
flip "$SH" $((E * RS + 10)) 16

# the server, every record read from disk: damaged, then restored, then a
# shard truncated and restored, each without a restart
post() {
	curl -s -o "$T/body" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
		"$URL/completions" -d '{"prompt":"hello world","max_tokens":4,"temperature":0}'
}
text() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['choices'][0]['text'])" "$T/body"; }
srv_start good --expert-cache 0 --no-prefetch
[ "$(post)" = 200 ] || srv_fail "good model: $(cat "$T/body")"
text >"$T/srv.good"
srv_stop
flip "$SH" $((E * RS + 10)) 16
srv_start damaged --expert-cache 0 --no-prefetch
for n in 1 2; do
	code=$(post)
	[ "$code" = 500 ] || bad "damaged record, request $n: status $code, want 500"
	grep -q "reading layer 1 expert $E from .*shard-001.bin: the record fails its CRC-32C" "$T/body" ||
		bad "damaged record, request $n: body $(cat "$T/body")"
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")" = 200 ] || bad "/health after a damaged record"
done
curl -s --max-time 10 "$BASE/metrics" >"$T/metrics"
grep -qx "coli_expert_checksum_errors_total 2" "$T/metrics" ||
	bad "metrics: $(grep checksum "$T/metrics")"
[ "$(grep -c "CRC-32C mismatch" "$T/damaged.log")" = 1 ] || bad "the server reported the damage $(grep -c "CRC-32C mismatch" "$T/damaged.log") times, want once"
flip "$SH" $((E * RS + 10)) 16
code=$(post)
[ "$code" = 200 ] || bad "restored byte: status $code: $(cat "$T/body")"
[ "$code" = 200 ] && { [ "$(text)" = "$(cat "$T/srv.good")" ] || bad "restored byte: '$(text)', before the damage '$(cat "$T/srv.good")'"; }
cp "$SH" "$T/shard.bak"
: >"$SH"
code=$(post)
[ "$code" = 500 ] || bad "truncated shard: status $code, want 500"
cp "$T/shard.bak" "$SH"
code=$(post)
[ "$code" = 200 ] || bad "restored shard: status $code: $(cat "$T/body")"
[ "$code" = 200 ] && { [ "$(text)" = "$(cat "$T/srv.good")" ] || bad "restored shard: '$(text)', before '$(cat "$T/srv.good")'"; }
srv_stop

# a flipped exponent bit in a dense f32 tensor: finite, refused at load by its CRC-32C
M=$T/m
"$PY" "$DMG" "$G" "$M" flip-f32 model.layers.2.input_layernorm.weight >/dev/null || srv_fail damage
gen "$M"
rc=$?
[ $rc = 1 ] || bad "flipped dense bit: generate exit $rc, want 1"
grep -qxE "coli generate: $M/dense/layer-002\.bin: tensor model\.layers\.2\.input_layernorm\.weight at offset 0: CRC-32C [0-9a-f]{8}, manifest\.json says [0-9a-f]{8} \(damaged file; coli doctor --verify compares the sha256\)" "$T/gen.err" ||
	bad "flipped dense bit: generate said '$(cat "$T/gen.err")'"

# a container without checksums (format 1) still runs, the same tokens, and says so
"$PY" "$DMG" "$G" "$M" strip-checksums >/dev/null || srv_fail damage
gen "$M" || bad "format 1: generate failed: $(cat "$T/gen.err")"
cmp -s "$T/gen.out" "$T/good.out" || bad "format 1: other tokens"
"$COLI" info "$M" >"$T/info.out" || bad "format 1: coli info failed"
grep -q "^checksums     no checksums (format v1, converted before them)" "$T/info.out" || bad "coli info: $(cat "$T/info.out")"
"$COLI" info "$M" --json | grep -q '"checksums": "none"' || bad "coli info --json lacks checksums none"
"$COLI" doctor "$M" >"$T/doc.out" 2>&1
grep -q "^warning  checksums      no checksums (format v1" "$T/doc.out" || { bad "doctor: no checksums warning"; cat "$T/doc.out"; }
[ $fail = 0 ] && echo "model_checksums: record and tensor CRC-32C verified; damage refused, restored bytes served again"
exit $fail
