#!/bin/sh
# synth_cli.sh - `coli synth` usage: bad flags and impossible shapes exit 2
# with a message and write nothing; --help exits 0; the glm5-slice and
# dsv3-slice presets carry the real dimensions (checked on a dry run, which
# writes config + tokenizer only) and the expert bytes scale with --experts.
set -u
: "${COLI:?COLI must point to the built coli}"
PY=${PYTHON3:-/usr/bin/python3}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

expect_usage() {
	"$COLI" synth "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "coli synth $* exited $rc, expected 2"
	[ -s "$tmp/err" ] || fail "coli synth $*: no error message"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "coli synth $*: error is not one line"
}
expect_usage
expect_usage "$tmp/a" --preset huge
expect_usage "$tmp/a" --experts 10 --groups 4
expect_usage "$tmp/a" --topk 0
expect_usage "$tmp/a" --topk 9            # 2 of 4 groups of 4 experts: 8 reachable
expect_usage "$tmp/a" --topk-groups 5
expect_usage "$tmp/a" --groups 16         # one expert per group
expect_usage "$tmp/a" --q-lora 100
expect_usage "$tmp/a" --dtype int3
expect_usage "$tmp/a" --layers 0
expect_usage "$tmp/a" --layers abc
expect_usage "$tmp/a" --dense-layers 9
expect_usage "$tmp/a" --vocab 100
expect_usage "$tmp/a" --shards 0
expect_usage "$tmp/a" --scaling -1
expect_usage "$tmp/a" --scaling x
expect_usage "$tmp/a" --seed -3
expect_usage "$tmp/a" --mtp 9
expect_usage "$tmp/a" --bogus
expect_usage "$tmp/a" --seed
expect_usage "$tmp/a" "$tmp/b"
[ ! -e "$tmp/a" ] || fail "a refused synth created its directory"

# A directory coli synth did not write is never overwritten.
mkdir -p "$tmp/real" && echo '{"model_type":"deepseek_v3"}' >"$tmp/real/config.json" && : >"$tmp/real/model.safetensors"
"$COLI" synth "$tmp/real" >/dev/null 2>"$tmp/err" && fail "synth overwrote a foreign directory"
grep -q "refusing" "$tmp/err" || fail "no refusal message: $(cat "$tmp/err")"
[ -e "$tmp/real/model.safetensors" ] || fail "foreign weights removed"

# A model larger than any test machine's disk (~4.8 TB) is refused before
# anything is written; one with millions of tensors is a usage error.
expect_usage "$tmp/huge" --preset glm5-slice --layers 1000 --experts 4096
"$COLI" synth "$tmp/huge" --preset glm5-slice --layers 1000 --experts 64 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "oversized model: exit $rc, expected 1"
grep -q "GB needed" "$tmp/err" || fail "oversized model: $(cat "$tmp/err")"
ls "$tmp/huge" 2>/dev/null | grep -q . && fail "oversized model wrote files"

# Before writing: the size and, as it goes, progress (on standard error;
# standard output keeps its one JSON line).
"$COLI" synth "$tmp/small" --preset tiny >"$tmp/out" 2>"$tmp/err" || fail "tiny synth"
grep -Eq "^coli synth: $tmp/small: [0-9]+ tensors, [0-9.]+ GB \([0-9]+ layers, [0-9]+ experts, vocab [0-9]+\)" "$tmp/err" ||
	fail "no size estimate: $(cat "$tmp/err")"
grep -Eq "^coli synth: ([0-9]+)/\1 tensors, ~[0-9.]+ of [0-9.]+ GB" "$tmp/err" || fail "no progress: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "stdout is not one JSON line"
"$COLI" synth "$tmp/big" --preset glm5-slice --dry-run >/dev/null 2>"$tmp/err" || fail "dry run"
[ -s "$tmp/err" ] && fail "a dry run printed: $(cat "$tmp/err")"

"$COLI" synth --help >"$tmp/help" || fail "--help exit status"
grep -q "usage: coli synth" "$tmp/help" || fail "--help text"

"$COLI" synth "$tmp/glm" --preset glm5-slice --dry-run >"$tmp/glm.json" || fail "glm5-slice dry run"
"$COLI" synth "$tmp/glm8" --preset glm5-slice --experts 8 --dry-run >"$tmp/glm8.json" || fail "glm5-slice --experts 8"
"$COLI" synth "$tmp/ds" --preset dsv3-slice --dry-run >"$tmp/ds.json" || fail "dsv3-slice dry run"
ls "$tmp/glm" | grep -q safetensors && fail "dry run wrote weights"

"$PY" - "$tmp" <<'EOF' || fail "preset configs"
import json, sys
t = sys.argv[1]
def load(p):
    with open(p) as f:
        return json.load(f)
glm = load(t + "/glm/config.json")
want = dict(model_type="glm_moe_dsa", hidden_size=6144, intermediate_size=12288,
            moe_intermediate_size=2048, n_routed_experts=256, num_experts_per_tok=8,
            n_group=1, topk_group=1, q_lora_rank=2048, kv_lora_rank=512,
            qk_rope_head_dim=64, qk_nope_head_dim=192, v_head_dim=256,
            num_attention_heads=64, rms_norm_eps=1e-5, routed_scaling_factor=2.5,
            norm_topk_prob=True, n_shared_experts=1, first_k_dense_replace=1,
            num_hidden_layers=4, vocab_size=4096, index_topk=2048, index_head_dim=128,
            index_n_heads=32, rope_scaling=None, scoring_func="sigmoid")
bad = {k: (glm.get(k), v) for k, v in want.items() if glm.get(k) != v}
assert not bad, "glm5-slice config: %s" % bad
ds = load(t + "/ds/config.json")
want = dict(model_type="deepseek_v3", hidden_size=7168, intermediate_size=18432,
            num_attention_heads=128, q_lora_rank=1536, qk_nope_head_dim=128,
            v_head_dim=128, n_group=8, topk_group=4, n_routed_experts=256)
bad = {k: (ds.get(k), v) for k, v in want.items() if ds.get(k) != v}
assert not bad, "dsv3-slice config: %s" % bad
y = ds["rope_scaling"]
assert y["factor"] == 40 and y["original_max_position_embeddings"] == 4096 and \
    y["beta_fast"] == 32 and y["beta_slow"] == 1 and y["mscale_all_dim"] == 1, y
# bytes: 3 MoE layers x (256 - 8) experts x (3 matrices of 2048 x 6144 BF16
# + a BF16 router row of 6144 + an F32 bias)
b256, b8 = load(t + "/glm.json")["bytes"], load(t + "/glm8.json")["bytes"]
assert b256 - b8 == 3 * 248 * (3 * 2048 * 6144 * 2 + 6144 * 2 + 4), (b256, b8)
assert load(t + "/glm.json")["written"] is False
tok = load(t + "/glm/tokenizer.json")
assert tok["model"]["type"] == "BPE" and len(tok["model"]["vocab"]) == 512, len(tok["model"]["vocab"])
assert len(tok["model"]["merges"]) == 250
specials = {a["content"]: a["id"] for a in tok["added_tokens"]}
assert specials["<｜begin▁of▁sentence｜>"] == 0 and specials["<｜end▁of▁sentence｜>"] == 1, specials
assert sorted(tok["model"]["vocab"].values()) == list(range(512))
assert tok["decoder"]["type"] == "ByteLevel"
tc = load(t + "/glm/tokenizer_config.json")
assert "<｜Assistant｜>" in tc["chat_template"] and tc["bos_token"]["content"] == "<｜begin▁of▁sentence｜>"
print("preset configs ok: glm5-slice %.1f GB BF16, dsv3-slice %.1f GB" % (b256 / 1e9, load(t + "/ds.json")["bytes"] / 1e9))
EOF
echo "synth_cli: ok"
