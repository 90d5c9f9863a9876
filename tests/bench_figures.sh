#!/bin/sh
# bench_figures.sh - `coli bench` separates the bytes the routed misses
# need from the bytes wasted on prefetched records never used (together
# exactly the bytes read, each a whole number of records), reports the
# step against max(io, compute) (never below 1: both parts fit in a step),
# and with --iobench the ceiling from the needed bytes; its automatic
# expert budget counts the KV and the step state it allocates; its decode
# breakdown gives each part the weight bytes of its tensors; --warmup and
# the prefill's time split.
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$COLI" ] && [ -x "$COLI" ] || fail "\$COLI not built"
PYTHON3=${PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$COLI" synth "$T/hf" --preset tiny >/dev/null 2>"$T/synth.log" &&
	"$COLI" convert "$T/hf" "$T/model" --quant f32 >/dev/null 2>"$T/convert.log" ||
	{ cat "$T"/*.log; fail "cannot make the tiny model"; }
"$COLI" bench "$T/model" --prompt 4 --gen 6 --no-kernels --threads 1 --expert-cache 0 --iobench \
	>"$T/out.json" 2>"$T/bench.log" || { cat "$T/bench.log"; fail "coli bench"; }
"$PYTHON3" - "$T/out.json" <<'PY' || fail "bench figures: $(cat "$T/out.json")"
import json, sys
j = json.load(open(sys.argv[1]))
ex, io = j["experts"], j["io"]
rec = ex["record_bytes"]
need, waste, read = ex["needed_bytes_per_token"], ex["wasted_prefetch_bytes_per_token"], ex["bytes_read_per_token"]
assert need > 0, "no needed bytes with --expert-cache 0"
assert abs(need + waste - read) < 1e-6 * read, (need, waste, read)
assert abs(need * 6 / rec - round(need * 6 / rec)) < 1e-9 and abs(waste * 6 / rec - round(waste * 6 / rec)) < 1e-9
assert ex["step_over_max_io_compute"] >= 1.0 - 1e-9, ex["step_over_max_io_compute"]
gbps = io["iobench_gbps_at_record_size"] * 1e9
assert abs(io["ceiling_tokens_per_s"] - gbps / need) < 1e-6 * io["ceiling_tokens_per_s"]
assert "read_ratio_to_iobench" in io
PY
# the automatic budget subtracts the KV this command allocates: one
# sequence of prompt + gen + 1 tokens, 4 layers x (64 + 32) floats each
# = 16.5 KiB (not the engine's 4096-token context x slots, 24 MiB), and
# reserves the step state it allocates, measured: it grows with the rows
# per forward call (--prefill-batch), where the old rule kept a fixed
# 64 MiB margin whatever the command allocated
for b in 1 64; do
	COLI_LOG_LEVEL=info "$COLI" bench "$T/model" --prompt 4 --gen 6 --no-kernels --threads 1 \
		--prefill-batch "$b" >/dev/null 2>"$T/auto$b.log" ||
		{ cat "$T/auto$b.log"; fail "coli bench with the automatic budget"; }
	grep -q "automatic budget .* - KV 16.5 KiB - reserve .*, in whole records (reserve: the step state's scratch, measured; store " \
		"$T/auto$b.log" || fail "automatic budget terms: $(grep budget "$T/auto$b.log")"
done
r1=$(sed -n 's/.* - reserve \([0-9.]* [KMG]*i*B\), in whole records.*/\1/p' "$T/auto1.log")
r64=$(sed -n 's/.* - reserve \([0-9.]* [KMG]*i*B\), in whole records.*/\1/p' "$T/auto64.log")
"$PYTHON3" - "$r1" "$r64" <<'PY' || fail "reserve at batch 1 ($r1) and 64 ($r64)"
import sys
u = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
def b(s):
    v, unit = s.split()
    return float(v) * u[unit]
r1, r64 = b(sys.argv[1]), b(sys.argv[2])
assert 0 < r1 < r64 < 64 * (1 << 20), (r1, r64)
PY
# the per-part breakdown: every part named, its weight bytes those of the
# manifest's tensors (kv_b split per head into W_UK and W_UV rows), its
# times non-negative and together within the step's total
"$PYTHON3" - "$T/out.json" "$T/model/manifest.json" <<'PY' || fail "decode breakdown: $(cat "$T/out.json")"
import json, re, sys
j = json.load(open(sys.argv[1]))
man = json.load(open(sys.argv[2]))
cfg, bd = man["config"], j["decode"]["breakdown"]
parts = bd["parts"]
names = ["q_a_kv_a", "indexer", "q_b", "absorb", "attend", "w_uv", "o_proj", "dense_ffn", "router",
         "experts", "lm_head"]
assert list(parts) == names, list(parts)
want = dict.fromkeys(names, 0)
cls = {"q_a_proj": "q_a_kv_a", "kv_a_proj_with_mqa": "q_a_kv_a", "q_b_proj": "q_b", "o_proj": "o_proj",
       "mlp.gate_proj": "dense_ffn", "mlp.up_proj": "dense_ffn", "mlp.down_proj": "dense_ffn",
       "mlp.gate.weight": "router", "shared_experts": "experts"}
L = cfg["num_hidden_layers"]
for t in man["tensors"]:
    m = re.match(r"model\.layers\.(\d+)\.(.*)", t["name"])
    if not m or int(m.group(1)) >= L or "norm" in t["name"] or "bias" in t["name"]:
        continue
    rest = m.group(2)
    if "kv_b_proj" in rest:
        nope, v = cfg["qk_nope_head_dim"], cfg["v_head_dim"]
        want["absorb"] += t["nbytes"] * nope // (nope + v)
        want["w_uv"] += t["nbytes"] * v // (nope + v)
        continue
    for k, part in cls.items():
        if k in rest:
            want[part] += t["nbytes"]
            break
    else:
        raise AssertionError("tensor of no part: " + t["name"])
moe_layers = L - cfg["first_k_dense_replace"]
want["experts"] += moe_layers * cfg["num_experts_per_tok"] * man["experts"]["record_size"]
want["lm_head"] = next(t["nbytes"] for t in man["tensors"] if t["name"] == "lm_head.weight")
got = {k: v["weight_bytes"] for k, v in parts.items()}
assert got == want, (got, want)
ms = [v["cpu_ms_per_token"] for v in parts.values()]
# the parts' process CPU clock runs inside the decode's getrusage window
assert min(ms) >= 0 and sum(ms) <= bd["total_cpu_ms_per_token"] * 1.02 + 0.05, (ms, bd["total_cpu_ms_per_token"])
for k in ("q_a_kv_a", "q_b", "absorb", "attend", "w_uv", "o_proj", "router", "experts", "lm_head"):
    assert parts[k]["cpu_ms_per_token"] > 0, k
PY
# --warmup: the timed prefill comes after an untimed one and still
# reports its parts (time_split, as decode does)
"$COLI" bench "$T/model" --prompt 8 --gen 2 --no-kernels --threads 1 --warmup \
	>"$T/warm.json" 2>"$T/warm.log" || { cat "$T/warm.log"; fail "coli bench --warmup"; }
"$PYTHON3" - "$T/warm.json" <<'PY' || fail "prefill time_split: $(cat "$T/warm.json")"
import json, sys
p = json.load(open(sys.argv[1]))["prefill"]
t = p["time_split"]
assert p["tokens"] == 8 and p["tokens_per_s"] > 0
assert set(t) == {"attention_ms", "indexer_ms", "moe_ms", "disk_wait_ms", "dense_ffn_ms", "other_ms"}, t
assert t["attention_ms"] > 0 and t["moe_ms"] > 0, t
PY
echo "ok: needed + wasted = read, step/max(io,compute) >= 1, ceiling from needed bytes, bench's KV and measured step state in the budget ($r1 at batch 1, $r64 at 64), per-part breakdown, prefill split"
