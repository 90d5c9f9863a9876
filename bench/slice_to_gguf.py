#!/usr/bin/python3
"""slice_to_gguf.py HF_DIR OUT.gguf --gguf-py DIR [--quant q4_0|f32]

The Hugging Face checkpoint that `coli synth` wrote (GLM-5 / DeepSeek-V3
layout: safetensors in F32, BF16 or FP8-e4m3 with 128x128 weight_scale_inv
blocks) as a GGUF file that llama.cpp loads, for bench/peer_llamacpp.sh.
Writes through gguf-py (the GGUF library that ships inside llama.cpp's
source; pass its directory) and numpy (Debian: python3-numpy); no torch.

  --quant q4_0 (default): every matrix whose rows are a multiple of 32 in
      Q4_0 (symmetric 4-bit, one f16 scale per 32 weights: 4.5 bits per
      weight, the llama.cpp type closest to colitop's int4-g64 with its f32
      scale per 64, also 4.5 bits); norms, biases and the routers
      (ffn_gate_inp, as llama-quantize keeps them) in F32.
  --quant f32: everything F32 (for a logits comparison against an f32
      container).

The layout follows what llama.cpp's loader expects for its deepseek2 /
glm-dsa architectures: MLA stored as MQA (one KV head of kv_lora_rank +
rope dims), kv_b_proj split per head into k_b (transposed) and v_b, the
routed experts of a layer stacked into one 3-D tensor per projection, the
model's MTP layers left out (llama-bench does not run them). The tokenizer
is the checkpoint's byte-level BPE (tokens, merges), padded to vocab_size.
The file is streamed tensor by tensor: RAM stays near one layer's experts.
"""
import argparse
import json
import os
import re
import struct
import sys

import numpy as np


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
    ap.add_argument("--quant", choices=("q4_0", "f32"), default="q4_0")
    return ap.parse_args()


class Checkpoint:
    """The safetensors files of HF_DIR: name -> (file, dtype, shape, offset)."""

    def __init__(self, d):
        self.d = d
        self.index = {}
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".safetensors"):
                continue
            path = os.path.join(d, fn)
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                head = json.loads(f.read(n))
            for name, t in head.items():
                if name == "__metadata__":
                    continue
                self.index[name] = (path, t["dtype"], t["shape"], 8 + n + t["data_offsets"][0],
                                    t["data_offsets"][1] - t["data_offsets"][0])
        self.fp8 = self._fp8_table()

    @staticmethod
    def _fp8_table():
        # e4m3 (no infinities, 0x7f/0xff NaN): 1 sign, 4 exponent (bias 7), 3 mantissa
        v = np.arange(256, dtype=np.uint32)
        s = np.where(v & 0x80, -1.0, 1.0)
        e = (v >> 3) & 0xF
        m = (v & 7).astype(np.float64)
        val = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1.0 + m / 8.0) * 2.0 ** (e.astype(np.float64) - 7))
        val = s * val
        val[(v & 0x7F) == 0x7F] = np.nan
        return val.astype(np.float32)

    def has(self, name):
        return name in self.index

    def raw(self, name):
        path, dtype, shape, off, nbytes = self.index[name]
        mm = np.memmap(path, dtype=np.uint8, mode="r", offset=off, shape=(nbytes,))
        return dtype, shape, mm

    def f32(self, name):
        """The tensor as float32, FP8 blocks multiplied by their scales."""
        dtype, shape, mm = self.raw(name)
        if dtype == "F32":
            a = mm.view(np.float32).reshape(shape).copy()
        elif dtype == "BF16":
            a = (mm.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
        elif dtype == "F16":
            a = mm.view(np.float16).astype(np.float32).reshape(shape)
        elif dtype == "F8_E4M3":
            a = self.fp8[mm].reshape(shape)
            sname = name[: -len(".weight")] + ".weight_scale_inv"
            s = self.f32(sname)
            rows, cols = shape
            if rows % 128 == 0 and cols % 128 == 0:
                # one broadcast pass over 128 x 128 blocks
                a = (a.reshape(rows // 128, 128, cols // 128, 128) * s[:, None, :, None]).reshape(rows, cols)
            else:
                a = a * np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:rows, :cols]
        else:
            raise SystemExit("slice_to_gguf.py: %s: dtype %s not handled" % (name, dtype))
        return np.ascontiguousarray(a, dtype=np.float32)


# the worker processes' view (fork: inherited from main); experts are
# converted two or more at a time, each from the memory-mapped checkpoint
_JOB = {}


def _quantize_one(name):
    ck, qt, quants = _JOB["ck"], _JOB["qt"], _JOB["quants"]
    a = ck.f32(name)
    return quants.quantize(a, qt) if qt is not None else a


def main():
    a = parse_args()
    sys.path.insert(0, a.gguf_py)
    import gguf  # noqa: E402 (from the llama.cpp source being measured)

    cfg = json.load(open(os.path.join(a.hf_dir, "config.json")))
    ck = Checkpoint(a.hf_dir)
    L = cfg["num_hidden_layers"]
    dsa = cfg.get("model_type") == "glm_moe_dsa" or "index_topk" in cfg
    arch = gguf.MODEL_ARCH.GLM_DSA if dsa else gguf.MODEL_ARCH.DEEPSEEK2
    q4 = a.quant == "q4_0"
    w = gguf.GGUFWriter(a.out, gguf.MODEL_ARCH_NAMES[arch])
    tmap = gguf.get_tensor_name_map(arch, L)

    # --- hyperparameters (the keys llama.cpp's deepseek2/glm-dsa loaders read)
    nh = cfg["num_attention_heads"]
    nope, rope, vdim = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kvr = cfg["kv_lora_rank"]
    w.add_name("colitop synth slice")
    w.add_block_count(L)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(1)  # MLA as MQA over the latent
    w.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    w.add_vocab_size(cfg["vocab_size"])
    w.add_leading_dense_block_count(cfg.get("first_k_dense_replace", 0))
    if cfg.get("q_lora_rank"):
        w.add_q_lora_rank(cfg["q_lora_rank"])
    w.add_kv_lora_rank(kvr)
    w.add_key_length(kvr + rope)
    w.add_value_length(kvr)
    w.add_key_length_mla(nope + rope)
    w.add_value_length_mla(vdim)
    w.add_rope_dimension_count(rope)
    w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    w.add_expert_count(cfg["n_routed_experts"])
    w.add_expert_used_count(cfg["num_experts_per_tok"])
    w.add_expert_shared_count(cfg.get("n_shared_experts", 0))
    w.add_expert_weights_scale(float(cfg.get("routed_scaling_factor", 1.0)))
    w.add_expert_weights_norm(bool(cfg.get("norm_topk_prob", False)))
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID
                             if cfg.get("scoring_func", "sigmoid") == "sigmoid"
                             else gguf.ExpertGatingFuncType.SOFTMAX)
    if cfg.get("n_group"):
        w.add_expert_group_count(cfg["n_group"])
        w.add_expert_group_used_count(cfg.get("topk_group", cfg["n_group"]))
    if dsa:
        w.add_indexer_head_count(cfg["index_n_heads"])
        w.add_indexer_key_length(cfg["index_head_dim"])
        w.add_indexer_top_k(cfg["index_topk"])
        if "indexer_types" in cfg:
            w.add_indexer_types([t == "full" for t in cfg["indexer_types"]])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0 if q4 else gguf.LlamaFileType.ALL_F32)

    # --- tokenizer: byte-level BPE from tokenizer.json, padded to vocab_size
    tj = json.load(open(os.path.join(a.hf_dir, "tokenizer.json")))
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    special = {}
    for t in tj.get("added_tokens", []):
        by_id[t["id"]] = t["content"]
        special[t["id"]] = t.get("special", True)
    tokens, types = [], []
    for i in range(cfg["vocab_size"]):
        if i in by_id:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.CONTROL if special.get(i) else gguf.TokenType.NORMAL)
        else:
            tokens.append("[PAD%d]" % i)
            types.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"].get("merges", [])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg.get("bos_token_id", 0))
    eos = cfg.get("eos_token_id", 1)
    w.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)
    w.add_add_bos_token(True)

    # --- the tensor plan: (gguf name, numpy shape, producer)
    def qtype_for(gname, shape):
        if not q4 or len(shape) < 2 or shape[-1] % 32 or "ffn_gate_inp" in gname:
            return gguf.GGMLQuantizationType.F32
        return gguf.GGMLQuantizationType.Q4_0

    def gname_of(hf):
        if hf.endswith("e_score_correction_bias"):
            g = tmap.get_name(hf[: -len("_bias")])
            return g + ".bias" if g else None
        return tmap.get_name(hf, try_suffixes=(".weight", ".bias"))

    plan = []  # (gname, shape, fn)
    done = set()
    n_exp = cfg["n_routed_experts"]
    for name in sorted(ck.index, key=lambda n: (int(m.group(1)) if (m := re.match(r"model\.layers\.(\d+)\.", n))
                                                  else -1 if "embed" in n else 1 << 30, n)):
        if name in done or name.endswith("weight_scale_inv"):
            continue
        m = re.match(r"model\.layers\.(\d+)\.", name)
        bid = int(m.group(1)) if m else None
        if bid is not None and bid >= L:
            continue  # MTP head
        shape = ck.index[name][2]
        me = re.match(r"(model\.layers\.\d+\.mlp\.experts)\.\d+\.(\w+)\.weight$", name)
        if me:
            for proj in ("gate_proj", "up_proj", "down_proj"):
                names = ["%s.%d.%s.weight" % (me.group(1), e, proj) for e in range(n_exp)]
                done.update(names)
                g = "blk.%d.ffn_%s_exps.weight" % (bid, proj.split("_")[0])
                plan.append((g, [n_exp] + ck.index[names[0]][2], ("stack", names)))
            continue
        if name.endswith("kv_b_proj.weight"):
            plan.append(("blk.%d.attn_k_b.weight" % bid, [nh, kvr, nope], ("kb", name)))
            plan.append(("blk.%d.attn_v_b.weight" % bid, [nh, vdim, kvr], ("vb", name)))
            continue
        g = gname_of(name)
        if g is None:
            raise SystemExit("slice_to_gguf.py: no GGUF name for %s" % name)
        plan.append((g, shape, ("one", name)))

    for g, shape, _ in plan:
        qt = qtype_for(g, shape)
        n = int(np.prod(shape))
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        w.add_tensor_info(g, shape, np.float32, n // bs * ts, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()

    def enc(g, arr):
        qt = qtype_for(g, arr.shape)
        return gguf.quants.quantize(arr, qt) if qt != gguf.GGMLQuantizationType.F32 else arr

    import multiprocessing
    pool = None
    for i, (g, shape, (kind, src)) in enumerate(plan):
        if kind == "stack":
            qt = qtype_for(g, shape[1:])
            _JOB.update(ck=ck, qt=None if qt == gguf.GGMLQuantizationType.F32 else qt, quants=gguf.quants)
            if pool is None:
                pool = multiprocessing.get_context("fork").Pool(max(2, os.cpu_count() or 2))
            out = np.stack(pool.map(_quantize_one, src, chunksize=4))
        elif kind in ("kb", "vb"):
            kv = ck.f32(src).reshape(nh, nope + vdim, kvr)
            t = np.ascontiguousarray(kv[:, :nope, :].transpose(0, 2, 1) if kind == "kb" else kv[:, nope:, :])
            out = enc(g, t)
        else:
            out = enc(g, ck.f32(src).reshape(shape))
        w.write_tensor_data(out)
        print("[%d/%d] %s %s" % (i + 1, len(plan), g, "x".join(map(str, shape))), file=sys.stderr)
    if pool is not None:
        pool.close()
        pool.join()
    w.close()


if __name__ == "__main__":
    main()
