#!/bin/sh
# The DSA lightning indexer through the engine (index_topk 6, so the
# indexer's selection decides almost every step here):
# - a session written past index_topk, ended and resumed twice, continues
#   with the tokens of one uninterrupted run (index keys of the full
#   indexer layers only persisted, KV format 3, no
#   re-prefill), also when the resumed turn keeps only 32 rows in RAM
#   (--kv-ram: older rows and their index keys read back from the file);
# - the uninterrupted run gives the same tokens with 1 thread and with
#   prefill chunks of 5 (also with --act-quant q8);
# - a format 2 session file (a key in every layer) refused with the reason;
# - the converted indexer: class "indexer" in quant_error, shared layer's
#   tensors left out;
# - bad input, each one line naming the field or tensor: index_topk <= 0,
#   an unknown indexer_types entry, a full layer without indexer weights
#   (at convert, and at open of a container whose schedule was edited),
#   a container converted before the indexer ran (no schedule recorded),
#   indexer shapes that disagree with the config.
set -u
: "${COLI:?}"
PY=${PYTHON3:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
fail=0
"$COLI" synth "$tmp/hf" --preset tiny --seed 7 --layers 3 --index-topk 6 --indexer-types FSF >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || exit 1
# indexer weights: quantized like attention (class "indexer" published),
# weights_proj and k_norm exact, nothing stored for the shared layer 1
"$PY" - "$tmp/m/manifest.json" <<'PYEOF' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
qe = m["quant_error"]["indexer"]
q = {t["name"]: t["qtype"] for t in m["tensors"]}
p = "model.layers.%d.self_attn.indexer."
ok = qe["qtype"] == "int8" and 0 < qe["rel_rms"] < 0.02
ok = ok and q.get(p % 0 + "wq_b.weight") == "int8" and q.get(p % 2 + "wk.weight") == "int8"
ok = ok and q.get(p % 2 + "weights_proj.weight") == "f32" and q.get(p % 0 + "k_norm.bias") == "f32"
ok = ok and not [n for n in q if n.startswith(p % 1)]
if not ok:
    print("FAIL: indexer tensors in the manifest: %s" % qe)
    sys.exit(1)
PYEOF
gen() { "$COLI" generate "$tmp/m" --ids --ignore-eos -n 12 "$@"; }
p1=1,5,9,33,480,95,5,260,411,12,77,301,150,2,499,64,128,9,333,71
t1=$(gen --tokens $p1 --session chat) || exit 1
t2=$(gen --tokens 40,41,42,43,44 --session chat --stats 2>"$tmp/err2") || exit 1
cp "$tmp/cache/kv/chat.kv" "$tmp/chat2.kv"
t3=$(gen --tokens 77,78,79 --session chat) || exit 1
cp "$tmp/chat2.kv" "$tmp/cache/kv/chat.kv"
t3s=$(gen --tokens 77,78,79 --session chat --kv-ram 32 --prefill-batch 8) || exit 1
hist="$p1,$(echo $t1 | tr ' ' ','),40,41,42,43,44"
u2=$(gen --tokens "$hist") || exit 1
[ "$u2" = "$t2" ] || { echo "FAIL: turn 2 after restart '$t2' != uninterrupted '$u2'"; fail=1; }
grep -q "prompt 37 tokens (32 cached)" "$tmp/err2" || { echo "FAIL: turn 2 was not resumed: $(cat "$tmp/err2")"; fail=1; }
hist="$hist,$(echo $t2 | tr ' ' ','),77,78,79"
u3=$(gen --tokens "$hist") || exit 1
[ "$u3" = "$t3" ] || { echo "FAIL: turn 3 after restart '$t3' != uninterrupted '$u3'"; fail=1; }
[ "$u3" = "$t3s" ] || { echo "FAIL: turn 3 with 32 rows in RAM '$t3s' != uninterrupted '$u3'"; fail=1; }
a=$(gen --tokens "$hist" --threads 1) || exit 1
b=$(gen --tokens "$hist" --prefill-batch 5 --threads 2) || exit 1
[ "$a" = "$u3" ] && [ "$b" = "$u3" ] || { echo "FAIL: threads/chunks changed the tokens: '$a' '$b' '$u3'"; fail=1; }
a=$(gen --tokens "$hist" --threads 1 --act-quant q8) || exit 1
b=$(gen --tokens "$hist" --prefill-batch 5 --threads 2 --act-quant q8) || exit 1
[ "$a" = "$b" ] || { echo "FAIL: q8 activations: threads/chunks changed the tokens: '$a' '$b'"; fail=1; }
"$COLI" sessions "$tmp/m" show chat >"$tmp/show" 2>&1 || { echo "FAIL: sessions show: $(cat "$tmp/show")"; fail=1; }
# index keys for the two full layers only (layer 1 shares layer 0's
# selection): (3 x 96 + 2 x 64) x 4 bytes a token
grep -q "version 3" "$tmp/show" && grep -q "3 layers x 96 numbers per token + 2 layers' DSA indexer keys x 64" "$tmp/show" &&
	grep -q "per token    1664 bytes of KV" "$tmp/show" ||
	{ echo "FAIL: sessions show: $(cat "$tmp/show")"; fail=1; }

# a format 2 session (an index key in every layer's row) is refused with
# the reason, in one line; the file is left as it was
"$PY" - "$tmp/cache/kv/chat.kv" <<'PYEOF' || exit 1
import struct, sys
def crc32c(b):
    crc = 0xffffffff
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff
p = sys.argv[1]
h = bytearray(open(p, "rb").read(128))
struct.pack_into("<I", h, 8, 2)
struct.pack_into("<I", h, 124, crc32c(bytes(h[:124])))
with open(p, "r+b") as f:
    f.write(h)
PYEOF
sum0=$(cksum <"$tmp/cache/kv/chat.kv")
expect_line() { # name pattern command...
	name=$1 pat=$2
	shift 2
	if "$@" >/dev/null 2>"$tmp/err"; then
		echo "FAIL: $name accepted"; fail=1; return
	fi
	grep -q -- "$pat" "$tmp/err" && [ "$(grep -c . "$tmp/err")" = 1 ] || { echo "FAIL: $name: $(cat "$tmp/err")"; fail=1; }
}
expect_line "format 2 session" "KV format 2 keeps a DSA index key in every layer's row" gen --tokens 5 --session chat
[ "$(cksum <"$tmp/cache/kv/chat.kv")" = "$sum0" ] || { echo "FAIL: the format 2 session was modified"; fail=1; }

# bad input: one line each, naming what is wrong
edit() { # src dst python-statement-on-c
	rm -rf "$2"; cp -r "$1" "$2"
	"$PY" -c 'import json,sys; p=sys.argv[1]; c=json.load(open(p)); exec(sys.argv[2]); json.dump(c, open(p, "w"))' \
		"$2/config.json" "$3"
}
expect() { # name pattern command...
	name=$1 pat=$2
	shift 2
	if "$@" >/dev/null 2>"$tmp/err"; then
		echo "FAIL: $name accepted"; fail=1; return
	fi
	lines=$(grep -c . "$tmp/err")
	grep -q -- "$pat" "$tmp/err" && [ "$lines" = 1 ] || { echo "FAIL: $name: $(cat "$tmp/err")"; fail=1; }
}
edit "$tmp/hf" "$tmp/b1" 'c["index_topk"] = 0'
expect "index_topk 0" "index_topk = 0 must be positive" "$COLI" convert "$tmp/b1" "$tmp/o1"
edit "$tmp/hf" "$tmp/b2" 'c["indexer_types"][1] = "half"'
expect "indexer_types entry" "indexer_types\[1\] = 'half'" "$COLI" convert "$tmp/b2" "$tmp/o2"
edit "$tmp/hf" "$tmp/b3" 'c["indexer_types"][1] = "full"'
expect "full layer without weights" "no tensor model.layers.1.self_attn.indexer.wq_b.weight" \
	"$COLI" convert "$tmp/b3" "$tmp/o3"
edit "$tmp/hf" "$tmp/b4" 'c["index_head_dim"] = 96'
expect "indexer shape" "model.layers.0.self_attn.indexer.wq_b.weight: shape" "$COLI" convert "$tmp/b4" "$tmp/o4"
edit "$tmp/hf" "$tmp/b5" 'c["indexer_types"][0] = "shared"'
expect "first layer shared" "layer 0 is a shared indexer layer" "$COLI" convert "$tmp/b5" "$tmp/o5"
# a container whose schedule says full where nothing was converted
cp -r "$tmp/m" "$tmp/m6"
"$PY" -c 'import json,sys; p=sys.argv[1]; m=json.load(open(p)); m["config"]["indexer_types"][1] = "full"; json.dump(m, open(p, "w"))' \
	"$tmp/m6/manifest.json" || exit 1
expect "open: full layer without weights" "tensor model.layers.1.self_attn.indexer.wq_b.weight is missing" \
	"$COLI" logits "$tmp/m6" --tokens 1,2
# a container converted before the indexer ran (no schedule recorded)
cp -r "$tmp/m" "$tmp/m7"
"$PY" -c 'import json,sys; p=sys.argv[1]; m=json.load(open(p)); del m["config"]["indexer_types"]; json.dump(m, open(p, "w"))' \
	"$tmp/m7/manifest.json" || exit 1
expect "open: container from before the indexer" "converted before the DSA indexer was supported" \
	"$COLI" logits "$tmp/m7" --tokens 1,2
[ $fail = 0 ] && echo "dsa: sessions past index_topk resume exactly; bad input refused in one line"
exit $fail
