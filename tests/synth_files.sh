#!/bin/sh
# synth_files.sh - `coli synth` output: deterministic (same seed and flags
# give identical files, sha256), a different seed changes the weights but
# not the tokenizer, changing --layers leaves the shared tensors unchanged,
# tensor names/shapes/dtypes follow the flags, and the safetensors files
# (single, sharded with index, BF16, FP8 with block scales) are valid as
# parsed by an independent Python reader (tests/ref/st_check.py).
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
. "${top_srcdir:-.}/tests/test_skip.sh"
"$PY" -c 'import numpy' 2>/dev/null || test_skip "python3 numpy missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
sums() { (cd "$1" && sha256sum $(ls | sort)); }

synth() { "$COLI" synth "$@" >/dev/null || fail "coli synth $*"; }

synth "$tmp/a" --seed 7
synth "$tmp/b" --seed 7
sums "$tmp/a" >"$tmp/a.sum"
sums "$tmp/b" >"$tmp/b.sum"
cmp -s "$tmp/a.sum" "$tmp/b.sum" || fail "same seed, different files"
synth "$tmp/c" --seed 8
sums "$tmp/c" >"$tmp/c.sum"
grep model.safetensors "$tmp/a.sum" | cut -c1-64 >"$tmp/x"
grep model.safetensors "$tmp/c.sum" | cut -c1-64 >"$tmp/y"
cmp -s "$tmp/x" "$tmp/y" && fail "seed does not change the weights"
grep tokenizer "$tmp/a.sum" | cut -c1-64 >"$tmp/x"
grep tokenizer "$tmp/c.sum" | cut -c1-64 >"$tmp/y"
cmp -s "$tmp/x" "$tmp/y" || fail "seed changed the tokenizer"

# Sharded FP8 is deterministic too, and rewriting a directory replaces
# the earlier layout (no stale single file next to the index).
synth "$tmp/f1" --dtype fp8 --shards 3 --seed 2
synth "$tmp/f2" --dtype fp8 --shards 3 --seed 2
cp "$tmp/a/model.safetensors" "$tmp/f2/" || fail "cp"
synth "$tmp/f2" --dtype fp8 --shards 3 --seed 2
sums "$tmp/f1" >"$tmp/f1.sum"
sums "$tmp/f2" >"$tmp/f2.sum"
cmp -s "$tmp/f1.sum" "$tmp/f2.sum" || fail "fp8 sharded output differs or stale files remain"

synth "$tmp/s" --layers 3 --dense-layers 2 --experts 8 --topk 2 --groups 2 --topk-groups 1 \
	--q-lora 0 --no-yarn --no-norm-topk --scaling 1.5 --vocab 640 --mtp 0 --shards 2 --dtype bf16 --seed 7
synth "$tmp/l2" --seed 7 --layers 2 --mtp 0
for d in a f1 s l2; do
	"$PY" "$top_srcdir/tests/ref/st_check.py" "$tmp/$d" >"$tmp/$d.st" || fail "st_check $d"
done

"$PY" - "$tmp" <<'EOF' || fail "shapes"
import json, sys
sys.path.insert(0, sys.argv[0] and "")
t = sys.argv[1]
def load(p):
    with open(p) as f:
        return json.load(f)
s = load(t + "/s.st")
ts = s["tensors"]
assert s["files"] == 2, s["files"]
c = load(t + "/s/config.json")
for k, v in dict(num_hidden_layers=3, first_k_dense_replace=2, n_routed_experts=8,
                 num_experts_per_tok=2, n_group=2, topk_group=1, q_lora_rank=None,
                 rope_scaling=None, norm_topk_prob=False, routed_scaling_factor=1.5,
                 vocab_size=640, num_nextn_predict_layers=0, torch_dtype="bfloat16").items():
    assert c[k] == v, (k, c[k], v)
assert ts["model.embed_tokens.weight"] == ["BF16", [640, 128]]
assert ts["lm_head.weight"] == ["BF16", [640, 128]]
assert ts["model.layers.0.self_attn.q_proj.weight"] == ["BF16", [4 * 64, 128]]
assert "model.layers.0.self_attn.q_a_proj.weight" not in ts
assert ts["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"] == ["BF16", [64 + 32, 128]]
assert ts["model.layers.0.self_attn.kv_b_proj.weight"] == ["BF16", [4 * 64, 64]]
assert ts["model.layers.0.self_attn.o_proj.weight"] == ["BF16", [128, 4 * 32]]
assert ts["model.layers.1.mlp.gate_proj.weight"] == ["BF16", [256, 128]]
assert ts["model.layers.2.mlp.gate.weight"] == ["BF16", [8, 128]]
assert ts["model.layers.2.mlp.gate.e_score_correction_bias"] == ["F32", [8]]
assert ts["model.layers.2.mlp.experts.7.down_proj.weight"] == ["BF16", [128, 64]]
assert "model.layers.2.mlp.experts.8.down_proj.weight" not in ts
assert ts["model.layers.2.mlp.shared_experts.up_proj.weight"] == ["BF16", [64, 128]]
assert not any(n.startswith("model.layers.3.") for n in ts)
# default tiny: q LoRA, 1 MTP layer stored as layer 4
a = load(t + "/a.st")["tensors"]
assert a["model.layers.0.self_attn.q_a_proj.weight"] == ["F32", [64, 128]]
assert a["model.layers.0.self_attn.q_b_proj.weight"] == ["F32", [4 * 64, 64]]
for n in ("embed_tokens", "enorm", "hnorm", "eh_proj", "shared_head.norm", "shared_head.head"):
    assert "model.layers.4.%s.weight" % n in a, n
assert a["model.layers.4.eh_proj.weight"] == ["F32", [128, 256]]
assert "model.layers.4.mlp.experts.15.up_proj.weight" in a
# fp8: projections F8 with scales, norms/embeddings/router BF16, bias F32
f = load(t + "/f1.st")["tensors"]
assert f["model.layers.1.mlp.experts.3.gate_proj.weight"] == ["F8_E4M3", [64, 128]]
assert f["model.layers.1.mlp.experts.3.gate_proj.weight_scale_inv"] == ["F32", [1, 1]]
assert f["model.layers.0.self_attn.q_b_proj.weight_scale_inv"] == ["F32", [2, 1]]
assert f["model.layers.0.input_layernorm.weight"][0] == "BF16"
assert f["model.embed_tokens.weight"][0] == "BF16"
assert f["model.layers.1.mlp.gate.weight"][0] == "BF16"
assert f["model.layers.1.mlp.gate.e_score_correction_bias"][0] == "F32"
assert load(t + "/f1/config.json")["quantization_config"]["weight_block_size"] == [128, 128]
print("shapes ok: %d tensors (flags), %d (tiny), %d (fp8)" % (len(ts), len(a), len(f)))
EOF

# Fewer layers: the tensors both models have are bit-identical.
"$PY" - "$tmp/a" "$tmp/l2" "$top_srcdir/tests/ref" <<'EOF' || fail "per-tensor streams"
import sys
sys.path.insert(0, sys.argv[3])
import ref_model
a, b = ref_model.Checkpoint(sys.argv[1]), ref_model.Checkpoint(sys.argv[2])
common = set(a.names()) & set(b.names())
assert len(common) > 50, len(common)
for n in sorted(common):
    assert (a.raw(n)[1] == b.raw(n)[1]).all(), n
print("per-tensor streams ok: %d shared tensors identical" % len(common))
EOF
echo "synth_files: ok"
