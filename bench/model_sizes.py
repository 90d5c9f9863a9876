#!/usr/bin/python3
"""Sizes of the real models, computed from their public configs (the
reference-shapes table of doc/DESIGN.md): the FP8 checkpoint to download,
the colitop container `coli convert` / `coli pull` write with the default
policy, split into the dense part (resident in RAM), the MTP layer (int8,
its experts included; resident when speculative decoding uses it) and the
routed experts (read from disk).

Counting rules (those of convert/convert_plan.c and src/quant.h):
  checkpoint: matrices FP8 (1 byte) + f32 128x128 block scales; embed_tokens,
    lm_head, norms, routers BF16; the e_score_correction_bias f32.
  container: matrices int4-g64 (36 bytes per 64 columns), embed_tokens and
    lm_head int8 (68 bytes per 64), router, norms and biases f32, the MTP
    layer at int8 (its experts too). GLM-5's DSA indexer: wq_b and wk like
    attention (FP8 in the checkpoint), weights_proj and k_norm f32 (BF16 in
    the checkpoint), in every layer (the schedule when the config names no
    shared layers; shared layers would store none: an upper bound).
  MTP layer: the decoder layer plus eh_proj [H, 2H] and enorm/hnorm/
    shared_head.norm; DeepSeek-V3 also ships embed_tokens and shared_head.head
    inside it (counted, int8); GLM-5's (if any) are not counted.
  64-byte alignment of each tensor in the container files is ignored (< 1 MB).
usage: bench/model_sizes.py [--markdown]
"""
import sys

MODELS = [
    # name, V, H, layers, first dense, I, MI, heads, q_lora, kv_lora, nope,
    # rope, v_head, routed, shared, MTP layers, MTP copies embed/head, indexer
    ("GLM-5.2", 154880, 6144, 78, 3, 12288, 2048, 64, 2048, 512, 192, 64, 256,
     256, 1, 1, False, (32, 128)),
    ("DeepSeek-V3", 129280, 7168, 61, 3, 18432, 2048, 128, 1536, 512, 128, 64,
     128, 256, 1, 1, True, None),
    ("Kimi-K2", 163840, 7168, 61, 1, 18432, 2048, 64, 1536, 512, 128, 64, 128,
     384, 1, 0, False, None),
]


def q4(rows, cols):
    return rows * cols // 64 * 36


def q8(rows, cols):
    return rows * cols // 64 * 68


def fp8(rows, cols):
    return rows * cols + 4 * (-(-rows // 128)) * (-(-cols // 128))


def sizes(m):
    (name, V, H, L, K, I, MI, NH, QL, KVL, NOPE, ROPE, VH, E, S, MTP, MTP_EH,
     IDX) = m
    attn = [(QL, H), (NH * (NOPE + ROPE), QL), (KVL + ROPE, H),
            (NH * (NOPE + VH), KVL), (H, NH * VH)]
    attn_vec = QL + KVL + 2 * H              # q_a / kv_a layernorms, 2 layer norms
    idx = [(IDX[0] * IDX[1], QL), (IDX[1], H)] if IDX else []   # wq_b, wk
    idx_f32 = IDX[0] * H + 2 * IDX[1] if IDX else 0             # weights_proj, k_norm
    dense_ffn = [(I, H), (I, H), (H, I)]
    shared = [(S * MI, H), (S * MI, H), (H, S * MI)]
    expert = [(MI, H), (MI, H), (H, MI)]

    def layer(moe, quant, ckpt):
        mats = attn + idx + (shared + expert * E if moe else dense_ffn)
        c = sum(fp8(r, c_) for r, c_ in mats) + 2 * attn_vec + 2 * idx_f32
        if moe:
            c += 2 * E * H + 4 * E           # router BF16, bias f32
        d = sum(quant(r, c_) for r, c_ in attn + idx + (shared if moe else dense_ffn))
        d += 4 * attn_vec + 4 * idx_f32
        if moe:
            d += 4 * E * H + 4 * E
        x = sum(quant(r, c_) for r, c_ in expert) * E if moe else 0
        return c, d, x

    ck = 2 * V * H * 2 + 2 * H               # embed, lm_head, final norm
    dense = 2 * q8(V, H) + 4 * H
    experts = 0
    for li in range(L):
        c, d, x = layer(li >= K, q4, True)
        ck, dense, experts = ck + c, dense + d, experts + x
    mtp_ck = mtp = 0
    for _ in range(MTP):
        c, d, x = layer(True, q8, True)
        mtp_ck += c + fp8(H, 2 * H) + 2 * 3 * H
        mtp += d + x + q8(H, 2 * H) + 4 * 3 * H
        if MTP_EH:
            mtp_ck += 2 * 2 * V * H
            mtp += 2 * q8(V, H)
    per_expert = sum(q4(r, c) for r, c in expert)
    return {
        "name": name, "checkpoint": ck + mtp_ck, "dense": dense, "mtp": mtp,
        "experts": experts, "container": dense + mtp + experts,
        "n_experts": (L - K) * E, "per_expert": per_expert,
    }


def gb(b):
    return "%.0f GB" % (b / 1e9) if b >= 100e9 else "%.1f GB" % (b / 1e9)


def main():
    md = "--markdown" in sys.argv
    rows = [sizes(m) for m in MODELS]
    if md:
        print("| model | FP8 checkpoint | container | dense part (RAM) | MTP layer | "
              "routed experts (disk) |")
        print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        mtp = gb(r["mtp"]) if r["mtp"] else "none"
        if md:
            print("| %s | %s | %s | %s | %s | %s (%d x %.1f MB) |" % (
                r["name"], gb(r["checkpoint"]), gb(r["container"]), gb(r["dense"]), mtp,
                gb(r["experts"]), r["n_experts"], r["per_expert"] / 1e6))
        else:
            print("%-12s checkpoint %s  container %s  dense %s  mtp %s  experts %s "
                  "(%d x %.1f MB)" % (r["name"], gb(r["checkpoint"]), gb(r["container"]),
                                      gb(r["dense"]), mtp, gb(r["experts"]), r["n_experts"],
                                      r["per_expert"] / 1e6))


main()
