"""model.py - the default model in PyTorch: the DeepSeek-V3 architecture
exactly as tests/ref/ref_model.py computes it (MLA with q/kv LoRA and
decoupled, interleaved RoPE; first layer dense; MoE layers with one shared
expert and sigmoid routing with e_score_correction_bias, norm_topk_prob and
routed_scaling_factor; no expert groups), plus one DeepSeek-V3 MTP layer.

The routing bias is a buffer, not a parameter: it is moved by the
auxiliary-loss-free balancing rule (bias += gamma * sign(mean_load - load))
after each optimizer step, from the loads the last forward pass counted.

MTP (depth 1): for position i, h'_i = eh_proj([enorm(embed(t_{i+1})),
hnorm(h_i)]), one MoE decoder block over h', then the shared head
(shared_head.norm, then the lm_head) predicts t_{i+2}. h_i is the main
model's hidden state after the final norm (as vLLM, SGLang and Megatron
feed it; see DESIGN.md). The MTP embedding and head share the main
model's weights (as in DeepSeek-V3) and are exported under both names.

export_hf() writes a Hugging Face checkpoint (config.json, F32
model.safetensors) with the tensor names of the official releases.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "vocab_size": 4096,
    "hidden_size": 256,
    "intermediate_size": 768,
    "moe_intermediate_size": 192,
    "num_hidden_layers": 4,
    "first_k_dense_replace": 1,
    "num_attention_heads": 4,
    "q_lora_rank": 128,
    "kv_lora_rank": 128,
    "qk_nope_head_dim": 64,
    "qk_rope_head_dim": 32,
    "v_head_dim": 64,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "num_experts_per_tok": 4,
    "n_group": 1,
    "topk_group": 1,
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 1024,
    "num_nextn_predict_layers": 1,
}


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def linear(n_out, n_in):
    return nn.Linear(n_in, n_out, bias=False)


def rope_tables(c, T, device):
    d = c["qk_rope_head_dim"]
    inv = 1.0 / c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    return torch.cos(ang).float().to(device), torch.sin(ang).float().to(device)


def apply_rope(x, cos, sin):
    """Interleaved pairs (2i, 2i+1); x [B, T, heads, rope], cos/sin [T, rope/2]."""
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


class MLA(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh = c["hidden_size"], c["num_attention_heads"]
        self.c = c
        self.nope, self.rope, self.vdim = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        self.kv_lora = c["kv_lora_rank"]
        self.q_a_proj = linear(c["q_lora_rank"], H)
        self.q_a_layernorm = RMSNorm(c["q_lora_rank"], c["rms_norm_eps"])
        self.q_b_proj = linear(nh * (self.nope + self.rope), c["q_lora_rank"])
        self.kv_a_proj_with_mqa = linear(self.kv_lora + self.rope, H)
        self.kv_a_layernorm = RMSNorm(self.kv_lora, c["rms_norm_eps"])
        self.kv_b_proj = linear(nh * (self.nope + self.vdim), self.kv_lora)
        self.o_proj = linear(H, nh * self.vdim)
        self.scale = (self.nope + self.rope) ** -0.5

    def forward(self, h, cos, sin):
        B, T, _ = h.shape
        nh = self.c["num_attention_heads"]
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(h))).view(B, T, nh, self.nope + self.rope)
        q_nope, q_pe = q[..., :self.nope], q[..., self.nope:]
        ckv = self.kv_a_proj_with_mqa(h)
        lat, k_pe = self.kv_a_layernorm(ckv[..., :self.kv_lora]), ckv[..., self.kv_lora:]
        kv = self.kv_b_proj(lat).view(B, T, nh, self.nope + self.vdim)
        k_nope, v = kv[..., :self.nope], kv[..., self.nope:]
        q_pe = apply_rope(q_pe, cos, sin)
        k_pe = apply_rope(k_pe[:, :, None, :], cos, sin).expand(B, T, nh, self.rope)
        qq = torch.cat((q_nope, q_pe), -1).transpose(1, 2)
        kk = torch.cat((k_nope, k_pe), -1).transpose(1, 2)
        o = self._attn(qq, kk, v.transpose(1, 2))
        return self.o_proj(o.transpose(1, 2).reshape(B, T, nh * self.vdim))

    def _attn(self, q, k, v):
        T = q.shape[2]
        s = (q @ k.transpose(-1, -2)) * self.scale
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v


class MLP(nn.Module):
    def __init__(self, H, inter):
        super().__init__()
        self.gate_proj = linear(inter, H)
        self.up_proj = linear(inter, H)
        self.down_proj = linear(H, inter)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(c["n_routed_experts"], c["hidden_size"]))
        nn.init.normal_(self.weight, std=0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros(c["n_routed_experts"]))


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I, E = c["hidden_size"], c["moe_intermediate_size"], c["n_routed_experts"]
        self.c = c
        self.gate = Router(c)
        # Experts stacked for speed; exported as experts.{e}.{gate,up,down}_proj.
        self.w_gate = nn.Parameter(torch.randn(E, I, H) / math.sqrt(H))
        self.w_up = nn.Parameter(torch.randn(E, I, H) / math.sqrt(H))
        self.w_down = nn.Parameter(torch.randn(E, H, I) / math.sqrt(I) * 0.5)
        self.shared_experts = MLP(H, I * c["n_shared_experts"])
        self.register_buffer("load", torch.zeros(E))  # token count of the last forward
        self.last_topk = None

    def forward(self, h):
        c = self.c
        shp = h.shape
        x = h.reshape(-1, shp[-1])
        s = torch.sigmoid(x @ self.gate.weight.t())
        biased = s.detach() + self.gate.e_score_correction_bias
        top = torch.topk(biased, c["num_experts_per_tok"], dim=-1, sorted=True).indices
        w = s.gather(1, top)
        if c["norm_topk_prob"]:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        w = w * c["routed_scaling_factor"]
        self.last_topk = top.detach()
        self.load = torch.bincount(top.flatten(), minlength=c["n_routed_experts"]).float()
        out = self.shared_experts(x)
        flat_tok = torch.arange(x.shape[0], device=x.device).repeat_interleave(top.shape[1])
        flat_e = top.flatten()
        flat_w = w.flatten()
        order = torch.argsort(flat_e)
        counts = self.load.long().tolist()
        # One gather and one scatter for all experts: the slots sorted by
        # expert are contiguous per expert, so each expert multiplies a
        # slice (a per-expert index_add would copy `out` 16 times).
        tok_sorted = flat_tok[order]
        xs = x[tok_sorted]
        # unbind: one stacked gradient per weight instead of a zero-filled
        # [E, I, H] gradient per expert from indexing.
        wg, wu, wd = self.w_gate.unbind(0), self.w_up.unbind(0), self.w_down.unbind(0)
        ys = []
        start = 0
        for e, n in enumerate(counts):
            if n == 0:
                continue
            xe = xs[start:start + n]
            start += n
            ys.append((F.silu(xe @ wg[e].t()) * (xe @ wu[e].t())) @ wd[e].t())
        y = torch.cat(ys) * flat_w[order, None]
        return out.index_add(0, tok_sorted, y).view(shp)


class Block(nn.Module):
    def __init__(self, c, moe):
        super().__init__()
        H = c["hidden_size"]
        self.input_layernorm = RMSNorm(H, c["rms_norm_eps"])
        self.self_attn = MLA(c)
        self.post_attention_layernorm = RMSNorm(H, c["rms_norm_eps"])
        self.mlp = MoE(c) if moe else MLP(H, c["intermediate_size"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class MTP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.enorm = RMSNorm(H, c["rms_norm_eps"])
        self.hnorm = RMSNorm(H, c["rms_norm_eps"])
        self.eh_proj = linear(H, 2 * H)
        self.block = Block(c, True)
        self.head_norm = RMSNorm(H, c["rms_norm_eps"])


class DeepSeekV3(nn.Module):
    def __init__(self, c=CONFIG):
        super().__init__()
        self.c = dict(c)
        V, H = c["vocab_size"], c["hidden_size"]
        self.embed_tokens = nn.Embedding(V, H)
        nn.init.normal_(self.embed_tokens.weight, std=0.02 * math.sqrt(H) / 4)
        self.layers = nn.ModuleList(Block(c, i >= c["first_k_dense_replace"])
                                    for i in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(H, c["rms_norm_eps"])
        self.lm_head = linear(V, H)
        self.mtp = MTP(c) if c["num_nextn_predict_layers"] else None
        for n, p in self.named_parameters():
            if p.dim() == 2 and n.endswith("proj.weight"):
                nn.init.normal_(p, std=1.0 / math.sqrt(p.shape[1]))
        for n, p in self.named_parameters():
            if n.endswith(("o_proj.weight", "down_proj.weight")):
                p.data.mul_(0.5 / math.sqrt(2 * c["num_hidden_layers"]))
        nn.init.normal_(self.lm_head.weight, std=0.5 / math.sqrt(H))

    def moes(self):
        out = [l.mlp for l in self.layers if isinstance(l.mlp, MoE)]
        if self.mtp is not None:
            out.append(self.mtp.block.mlp)
        return out

    def forward(self, ids, mtp=True):
        """Logits [B, T, V] and, with MTP, the MTP logits [B, T-1, V]
        (row i predicts t_{i+2})."""
        B, T = ids.shape
        cos, sin = rope_tables(self.c, T, ids.device)
        x = self.embed_tokens(ids)
        for l in self.layers:
            x = l(x, cos, sin)
        h = self.norm(x)
        logits = self.lm_head(h)
        if not mtp or self.mtp is None:
            return logits, None
        m = self.mtp
        e = m.enorm(self.embed_tokens(ids[:, 1:]))
        y = m.eh_proj(torch.cat((e, m.hnorm(h[:, :-1])), -1))
        y = m.block(y, cos[:T - 1], sin[:T - 1])
        return logits, self.lm_head(m.head_norm(y))

    @torch.no_grad()
    def balance(self, gamma):
        """Auxiliary-loss-free balancing after a step."""
        for moe in self.moes():
            load = moe.load
            moe.gate.e_score_correction_bias += gamma * torch.sign(load.mean() - load)

    # ---- Hugging Face export ----

    def hf_tensors(self):
        c = self.c
        t = {"model.embed_tokens.weight": self.embed_tokens.weight, "model.norm.weight": self.norm.weight,
             "lm_head.weight": self.lm_head.weight}

        def block(p, b):
            t[p + "input_layernorm.weight"] = b.input_layernorm.weight
            t[p + "post_attention_layernorm.weight"] = b.post_attention_layernorm.weight
            a = b.self_attn
            for n in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"):
                t[p + "self_attn.%s.weight" % n] = getattr(a, n).weight
            t[p + "self_attn.q_a_layernorm.weight"] = a.q_a_layernorm.weight
            t[p + "self_attn.kv_a_layernorm.weight"] = a.kv_a_layernorm.weight
            m = b.mlp
            if isinstance(m, MoE):
                t[p + "mlp.gate.weight"] = m.gate.weight
                t[p + "mlp.gate.e_score_correction_bias"] = m.gate.e_score_correction_bias
                for e in range(c["n_routed_experts"]):
                    q = p + "mlp.experts.%d." % e
                    t[q + "gate_proj.weight"] = m.w_gate[e]
                    t[q + "up_proj.weight"] = m.w_up[e]
                    t[q + "down_proj.weight"] = m.w_down[e]
                m = m.shared_experts
                p = p + "mlp.shared_experts."
            else:
                p = p + "mlp."
            for n in ("gate_proj", "up_proj", "down_proj"):
                t[p + n + ".weight"] = getattr(m, n).weight

        for i, b in enumerate(self.layers):
            block("model.layers.%d." % i, b)
        if self.mtp is not None:
            p = "model.layers.%d." % c["num_hidden_layers"]
            m = self.mtp
            t[p + "embed_tokens.weight"] = self.embed_tokens.weight
            t[p + "enorm.weight"] = m.enorm.weight
            t[p + "hnorm.weight"] = m.hnorm.weight
            t[p + "eh_proj.weight"] = m.eh_proj.weight
            t[p + "shared_head.norm.weight"] = m.head_norm.weight
            t[p + "shared_head.head.weight"] = self.lm_head.weight
            block(p, m.block)
        return t

    def hf_config(self):
        c = dict(self.c)
        c.update({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                  "num_key_value_heads": c["num_attention_heads"], "topk_method": "noaux_tc",
                  "moe_layer_freq": 1, "scoring_func": "sigmoid", "hidden_act": "silu",
                  "initializer_range": 0.02, "rope_scaling": None, "attention_bias": False,
                  "attention_dropout": 0.0, "tie_word_embeddings": False, "bos_token_id": 0,
                  "eos_token_id": 1, "use_cache": True, "torch_dtype": "float32"})
        return c


def write_safetensors(path, tensors):
    """F32 safetensors, tensors in name order."""
    hdr, blobs, off = {}, [], 0
    for name in sorted(tensors):
        b = tensors[name].detach().to(torch.float32).contiguous().cpu().numpy().tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def export_hf(model, out_dir, tok_dir):
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), model.hf_tensors())
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(model.hf_config(), f, indent=2)
    for n in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tok_dir, n), "rb") as src, open(os.path.join(out_dir, n), "wb") as dst:
            dst.write(src.read())


def load_hf(out_dir):
    """A DeepSeekV3 with the weights of an exported checkpoint (F32)."""
    with open(os.path.join(out_dir, "config.json")) as f:
        cfg = json.load(f)
    m = DeepSeekV3({k: cfg[k] for k in CONFIG})
    with open(os.path.join(out_dir, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    own = m.hf_tensors()
    with torch.no_grad():
        for name, d in hdr.items():
            if name == "__metadata__":
                continue
            b, e = d["data_offsets"]
            x = torch.frombuffer(bytearray(data[b:e]), dtype=torch.float32).view(d["shape"])
            own[name].copy_(x)
    return m
