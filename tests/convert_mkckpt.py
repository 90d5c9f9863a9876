#!/usr/bin/python3
"""Write a tiny Hugging Face checkpoint of the DeepSeek-V3 architecture for
the convert tests: config.json, two safetensors shards + index (F32, BF16,
F16 tensors), tokenizer files. Independent of `coli synth` on purpose.

usage: convert_mkckpt.py OUT_DIR [--bad KIND] [--seed N] [--lite]
KIND: missing-key, model-type, truncated, shape, dtype, missing-tensor
--lite: the other shape of the architecture: q_lora_rank 0 (q_proj), tied
embeddings (no lm_head), no MTP layer, FP8-e4m3 weights with 128x128
weight_scale_inv block scales (layer 1 experts, layer 0 q_proj), and a
tensor the converter does not know (a GLM-5 style indexer weight).
"""
import json
import os
import struct
import sys

import numpy as np

H, V, I, MI = 128, 320, 192, 64
LAYERS, FIRST_DENSE, HEADS = 3, 1, 2
QL, KVL, NOPE, ROPE, VH = 64, 64, 32, 16, 24   # o_proj cols = 48: kept f32
E, SHARED, TOPK = 8, 1, 2


def config():
    return {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "vocab_size": V, "hidden_size": H, "intermediate_size": I,
        "moe_intermediate_size": MI, "num_hidden_layers": LAYERS,
        "first_k_dense_replace": FIRST_DENSE, "moe_layer_freq": 1,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
        "q_lora_rank": QL, "kv_lora_rank": KVL, "qk_nope_head_dim": NOPE,
        "qk_rope_head_dim": ROPE, "v_head_dim": VH, "n_routed_experts": E,
        "n_shared_experts": SHARED, "num_experts_per_tok": TOPK, "n_group": 1,
        "topk_group": 1, "routed_scaling_factor": 2.5, "norm_topk_prob": True,
        "scoring_func": "sigmoid", "topk_method": "noaux_tc", "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "max_position_embeddings": 512,
        "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
        "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": "bfloat16",
    }


LITE = "--lite" in sys.argv


def tensors(rng):
    t = {}

    def mat(name, rows, cols, scale=0.05):
        w = rng.standard_normal((rows, cols)).astype(np.float32) * scale
        w[rng.integers(0, rows), rng.integers(0, cols)] *= 8.0   # an outlier
        t[name] = w

    def vec(name, n, base=1.0):
        t[name] = (base + 0.1 * rng.standard_normal(n)).astype(np.float32)

    mat("model.embed_tokens.weight", V, H, 1.0)
    for L in range(LAYERS + (0 if LITE else 1)):   # layer LAYERS is the MTP layer
        p = "model.layers.%d." % L
        vec(p + "input_layernorm.weight", H)
        vec(p + "post_attention_layernorm.weight", H)
        if LITE:
            mat(p + "self_attn.q_proj.weight", HEADS * (NOPE + ROPE), H)
        else:
            mat(p + "self_attn.q_a_proj.weight", QL, H)
            vec(p + "self_attn.q_a_layernorm.weight", QL)
            mat(p + "self_attn.q_b_proj.weight", HEADS * (NOPE + ROPE), QL)
        mat(p + "self_attn.kv_a_proj_with_mqa.weight", KVL + ROPE, H)
        vec(p + "self_attn.kv_a_layernorm.weight", KVL)
        mat(p + "self_attn.kv_b_proj.weight", HEADS * (NOPE + VH), KVL)
        mat(p + "self_attn.o_proj.weight", H, HEADS * VH)
        if L < FIRST_DENSE:
            mat(p + "mlp.gate_proj.weight", I, H)
            mat(p + "mlp.up_proj.weight", I, H)
            mat(p + "mlp.down_proj.weight", H, I)
            continue
        mat(p + "mlp.gate.weight", E, H, 0.1)
        vec(p + "mlp.gate.e_score_correction_bias", E, 0.0)
        mat(p + "mlp.shared_experts.gate_proj.weight", MI * SHARED, H)
        mat(p + "mlp.shared_experts.up_proj.weight", MI * SHARED, H)
        mat(p + "mlp.shared_experts.down_proj.weight", H, MI * SHARED)
        for e in range(E):
            mat(p + "mlp.experts.%d.gate_proj.weight" % e, MI, H)
            mat(p + "mlp.experts.%d.up_proj.weight" % e, MI, H)
            mat(p + "mlp.experts.%d.down_proj.weight" % e, H, MI)
    vec("model.norm.weight", H)
    if LITE:
        mat("model.layers.0.self_attn.indexer.wk.weight", 64, H)
        return t
    p = "model.layers.%d." % LAYERS
    vec(p + "enorm.weight", H)
    vec(p + "hnorm.weight", H)
    mat(p + "eh_proj.weight", H, 2 * H)
    vec(p + "shared_head.norm.weight", H)
    mat(p + "shared_head.head.weight", V, H)
    mat("lm_head.weight", V, H)
    return t


def e4m3_table():
    v = np.zeros(256, dtype=np.float64)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        x = (m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
        v[c] = -x if s else x
    v[0x7F] = v[0xFF] = np.inf      # NaN codes: never chosen
    return v


def to_fp8(a):
    """FP8-e4m3 codes + 128x128 block scales (weight = code * scale_inv)."""
    rows, cols = a.shape
    br, bc = -(-rows // 128), -(-cols // 128)
    scale = np.zeros((br, bc), dtype=np.float32)
    codes = np.zeros(a.shape, dtype=np.uint8)
    tab = e4m3_table()
    for i in range(br):
        for j in range(bc):
            blk = a[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            s = max(float(np.abs(blk).max()) / 448.0, 1e-12)
            scale[i, j] = s
            x = (blk / s).astype(np.float64)
            codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = \
                np.abs(x[..., None] - tab[None, None, :]).argmin(axis=-1)
    return codes, scale


def is_fp8(name):
    return LITE and (name.startswith("model.layers.1.mlp.experts.") or
                     name == "model.layers.0.self_attn.q_proj.weight")


def to_bf16(a):
    b = a.astype(np.float32).view(np.uint32)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16      # round to nearest even
    return b.astype(np.uint16)


def encode(name, a, i):
    """Mix dtypes deterministically: most BF16, some F32, some F16."""
    if a.dtype == np.int32:
        return "I32", a.tobytes()
    if a.dtype == np.uint8:
        return "F8_E4M3", a.tobytes()
    k = i % 5
    if k == 0 or name.endswith("_scale_inv"):
        return "F32", a.astype("<f4").tobytes()
    if k == 1:
        return "F16", a.astype("<f2").tobytes()
    return "BF16", to_bf16(a).astype("<u2").tobytes()


def write_shard(path, items):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, data) in items:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    args = sys.argv[1:]
    out = args[0]
    bad = args[args.index("--bad") + 1] if "--bad" in args else None
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 1
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    cfg = config()
    t = tensors(rng)
    if LITE:
        cfg.update(q_lora_rank=None, tie_word_embeddings=True, num_nextn_predict_layers=0)
        for n in [n for n in t if is_fp8(n)]:
            t[n], t[n + "_scale_inv"] = to_fp8(t[n])
    if bad == "missing-key":
        del cfg["kv_lora_rank"]
    elif bad == "model-type":
        cfg["model_type"] = "llama"
    elif bad == "shape":
        t["model.layers.1.self_attn.kv_b_proj.weight"] = t["model.layers.1.self_attn.kv_b_proj.weight"][:100]
    elif bad == "dtype":
        t["model.layers.0.mlp.up_proj.weight"] = np.zeros((I, H), dtype=np.int32)
    elif bad == "missing-tensor":
        del t["model.layers.2.self_attn.kv_a_layernorm.weight"]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    names = sorted(t)
    shards = [[], []]
    for i, n in enumerate(names):
        dtype, data = encode(n, t[n], i)
        shards[0 if i < len(names) // 2 else 1].append((n, (dtype, t[n].shape, data)))
    wmap = {}
    for k, items in enumerate(shards):
        fn = "model-%05d-of-00002.safetensors" % (k + 1)
        write_shard(os.path.join(out, fn), items)
        for n, _ in items:
            wmap[n] = fn
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wmap}, f, indent=1)
    if bad == "truncated":
        fn = os.path.join(out, "model-00002-of-00002.safetensors")
        os.truncate(fn, os.path.getsize(fn) - 1000)
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}, f)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>"}, f)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump({"bos_token": "<s>"}, f)


main()
