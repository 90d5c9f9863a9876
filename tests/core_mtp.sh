#!/bin/sh
# The MTP module (multi-token prediction head) against the independent
# reference: draft logits of an f32 container agree within 2e-6 of the
# largest logit at every position (README: 6.1e-7; the margin, as in
# tests/ref/compare.py, covers the other kernel paths' summation order); an int8 head (the default) reports its
# agreement; a model without MTP refuses clearly; coli bench --mtp reports
# an acceptance rate; a DSA model's MTP layer (its own indexer) agrees too.
set -u
: "${COLI:?}"
PY=${PYTHON3:-/usr/bin/python3}
. "${top_srcdir:-.}/tests/test_skip.sh"
"$PY" -c 'import numpy' 2>/dev/null || test_skip "numpy missing"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 9 --mtp 1 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/f32" --quant f32 --mtp-quant f32 >/dev/null 2>&1 || exit 1
"$COLI" convert "$tmp/hf" "$tmp/int8" --quant f32 --mtp-quant int8 >/dev/null 2>&1 || exit 1
toks=0,72,101,300,17,259,44,3,9,120
"$PY" "$top_srcdir/tests/ref/ref_logits.py" "$tmp/hf" --tokens $toks --mtp >"$tmp/ref.json" || exit 1
"$COLI" logits "$tmp/f32" --tokens $toks --mtp >"$tmp/f32.json" || exit 1
"$COLI" logits "$tmp/int8" --tokens $toks --mtp >"$tmp/int8.json" || exit 1
"$PY" - "$tmp" <<'PYEOF' || exit 1
import json, sys
import numpy as np
d = sys.argv[1]
ref = np.array(json.load(open(d + "/ref.json"))["logits"])
f32 = np.array(json.load(open(d + "/f32.json"))["logits"])
q8 = np.array(json.load(open(d + "/int8.json"))["logits"])
assert ref.shape == f32.shape == q8.shape and ref.shape[0] == 9, (ref.shape, f32.shape)
rel = np.abs(f32 - ref).max(axis=1) / np.abs(ref).max(axis=1)
assert rel.max() <= 2e-6, rel
def ls(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
kl = (np.exp(ls(ref)) * (ls(ref) - ls(q8))).sum(axis=1)
top1 = (ref.argmax(1) == q8.argmax(1)).mean()
print(json.dumps({"mtp_f32_worst_rel": float(rel.max()), "mtp_int8_kl_mean": float(kl.mean()),
                  "mtp_int8_top1": float(top1)}))
PYEOF
"$COLI" bench "$tmp/int8" --mtp --no-kernels --prompt 8 --gen 8 >"$tmp/bench.json" || exit 1
"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1]))["mtp"]; assert a["drafts"]==8 and 0<=a["acceptance"]<=1, a' "$tmp/bench.json" || exit 1
"$COLI" synth "$tmp/hf0" --preset tiny --seed 9 --mtp 0 >/dev/null || exit 1
"$COLI" convert "$tmp/hf0" "$tmp/nomtp" --quant f32 >/dev/null 2>&1 || exit 1
if "$COLI" logits "$tmp/nomtp" --tokens 1,2,3 --mtp >/dev/null 2>"$tmp/err"; then
	echo "FAIL: --mtp accepted on a model without MTP"; exit 1
fi
grep -q "no MTP module" "$tmp/err" || { echo "FAIL: unclear: $(cat "$tmp/err")"; exit 1; }
# DSA: the MTP layer runs its own indexer over its own keys (index_topk 5
# over 32 positions, so most draft rows attend to a selection).
"$COLI" synth "$tmp/hfd" --preset glm5-tiny --seed 19 --index-topk 5 --indexer-types FS --layers 2 >/dev/null || exit 1
"$COLI" convert "$tmp/hfd" "$tmp/dsa" --quant f32 --mtp-quant f32 >/dev/null 2>&1 || exit 1
toks=0,72,101,300,17,259,44,3,9,120,33,480,95,5,260,411,12,77,301,150,2,499,64,128,9,333,71,18,222,400,6,190
"$PY" "$top_srcdir/tests/ref/ref_logits.py" "$tmp/hfd" --tokens $toks --mtp >"$tmp/refd.json" || exit 1
"$COLI" logits "$tmp/dsa" --tokens $toks --mtp >"$tmp/dsa.json" || exit 1
"$PY" - "$tmp" <<'PYEOF' || exit 1
import json, sys
import numpy as np
d = sys.argv[1]
ref = np.array(json.load(open(d + "/refd.json"))["logits"])
got = np.array(json.load(open(d + "/dsa.json"))["logits"])
assert ref.shape == got.shape and ref.shape[0] == 31, (ref.shape, got.shape)
rel = np.abs(got - ref).max(axis=1) / np.abs(ref).max(axis=1)
assert rel.max() <= 2e-6, rel
print(json.dumps({"mtp_dsa_f32_worst_rel": float(rel.max())}))
PYEOF
echo "mtp: draft logits match the reference"
