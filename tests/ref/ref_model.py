"""Independent reference forward pass for DeepSeek-V3-architecture models.

Written from the architecture definition (the Hugging Face transformers
DeepSeek-V3 / GLM-MoE-DSA modeling code and DeepSeek's own inference code),
not from colitop's C sources. numpy only, float64 throughout, so it serves
as the oracle for the C engine's logits.

Loads a Hugging Face checkpoint directory directly: config.json plus
model.safetensors or model.safetensors.index.json + shards; F32, F16, BF16
and F8_E4M3 with 128x128 block scales ("<name>_scale_inv", dequantized
weight = fp8 value * scale_inv).

Choices where public implementations differ (see doc/DESIGN):
- q_a_layernorm / kv_a_layernorm use rms_norm_eps (vLLM, Megatron);
  transformers hard-codes 1e-6. Identical for eps 1e-6 configs.
- Expert groups dropped by group-limited routing are masked with 0.0 before
  the top-k (transformers DeepseekV3); DeepSeek's inference code and
  transformers' GLM-MoE-DSA use -inf. They differ only when a kept expert's
  biased score is negative; `stats["mask_disagreements"]` counts such
  tokens so a mismatch can be explained.
- RoPE pairs dims (2i, 2i+1) (DeepSeek's complex rotation; transformers'
  rope_interleave=True de-interleaves q_pe/k_pe and rotates halves, which
  is the same rotation up to a permutation applied to both q and k, so the
  attention scores are identical). rope_interleave=false selects the
  half-split (NeoX) pairing (i, i + d/2).
- YaRN follows transformers / DeepSeek's HF modeling code: inv_freq blends
  interpolated and extrapolated frequencies with a linear ramp between
  floor/ceil of the beta_fast/beta_slow correction dims; cos/sin are scaled
  by yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor,
  mscale_all_dim) (mscale default 1, mscale_all_dim default 0); the softmax
  scale is qk_head_dim^-0.5 * yarn_get_mscale(factor, mscale_all_dim)^2
  when mscale_all_dim is set. DeepSeek's own inference code applies YaRN
  only when its max_seq_len exceeds the original context; we always apply
  it, as transformers does.
- The DSA lightning indexer (GLM-5 glm_moe_dsa, DeepSeek-V3.2
  deepseek_v32) follows transformers' GlmMoeDsa semantics in float64: no
  Hadamard rotation (orthogonal, scores unchanged) and no fp8 rounding of
  q/k (the public kernels' precision shortcut). Index heads are laid out
  [rope | nope]; the rope half uses interleaved pairs when
  indexer_rope_interleave is true, NeoX halves otherwise (the default).
  Ties between equal scores keep the earlier position. Layers are "full"
  or "shared" (indexer_types, else index_topk_pattern F/S, else full iff
  max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0); a shared
  layer reuses the selection of the nearest earlier full layer. The MTP
  layer runs its own indexer over its own keys (its weights are stored in
  GLM-5's checkpoints; index_share_for_mtp_iteration concerns chained
  draft iterations, which this reference does not model).
"""

import json
import math
import os

import numpy as np

_DT = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2),
       "F8_E4M3": (np.uint8, 1), "F64": (np.float64, 8)}


def _fp8_e4m3_table():
    """Value of every OCP e4m3fn byte: bias 7, no infinities, 0x7f/0xff NaN."""
    t = np.zeros(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> 3) & 0xF
        m = b & 0x7
        if e == 0xF and m == 0x7:
            t[b] = np.nan
        elif e == 0:
            t[b] = sign * (m / 8.0) * 2.0 ** -6
        else:
            t[b] = sign * (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return t


FP8_E4M3 = _fp8_e4m3_table()


class Checkpoint:
    """Tensors of a safetensors checkpoint directory, read on demand."""

    def __init__(self, path):
        self.dir = path
        self.index = {}  # name -> (file, dtype, shape, begin, end)
        idx = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(idx):
            with open(idx) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        else:
            files = ["model.safetensors"]
        for fn in files:
            self._scan(os.path.join(path, fn))

    def _scan(self, fp):
        with open(fp, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            hdr = json.loads(f.read(n))
        size = os.path.getsize(fp)
        for name, d in hdr.items():
            if name == "__metadata__":
                continue
            b, e = d["data_offsets"]
            if 8 + n + e > size:
                raise ValueError("%s: %s beyond end of file" % (fp, name))
            self.index[name] = (fp, d["dtype"], tuple(d["shape"]), 8 + n + b, 8 + n + e)

    def names(self):
        return sorted(self.index)

    def __contains__(self, name):
        return name in self.index

    def raw(self, name):
        fp, dt, shape, b, e = self.index[name]
        npdt, es = _DT[dt]
        count = (e - b) // es
        a = np.fromfile(fp, dtype=npdt, count=count, offset=b)
        return dt, a.reshape(shape)

    def get(self, name):
        """The tensor as float64, FP8 block scales applied."""
        dt, a = self.raw(name)
        if dt == "BF16":
            x = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        elif dt == "F8_E4M3":
            x = FP8_E4M3[a]
            sname = name + "_scale_inv"
            if sname in self.index:
                s = self.get(sname)
                r, c = x.shape
                sb = np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:r, :c]
                x = x * sb
        else:
            x = a.astype(np.float64)
        return x


def yarn_get_mscale(scale, mscale=1.0):
    if scale <= 1.0:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


class Config:
    def __init__(self, d):
        self.raw = d
        g = d.get
        self.model_type = g("model_type")
        self.V = g("vocab_size")
        self.H = g("hidden_size")
        self.inter = g("intermediate_size")
        self.moe_inter = g("moe_intermediate_size")
        self.L = g("num_hidden_layers")
        self.first_dense = g("first_k_dense_replace", 0)
        self.moe_freq = g("moe_layer_freq", 1) or 1
        self.nh = g("num_attention_heads")
        self.q_lora = g("q_lora_rank") or 0
        self.kv_lora = g("kv_lora_rank")
        self.nope = g("qk_nope_head_dim")
        self.rope = g("qk_rope_head_dim")
        self.vdim = g("v_head_dim")
        self.E = g("n_routed_experts") or 0
        self.n_shared = g("n_shared_experts") or 0
        self.topk = g("num_experts_per_tok")
        self.n_group = g("n_group") or 1
        self.topk_group = g("topk_group") or 1
        self.scaling = float(g("routed_scaling_factor", 1.0))
        self.norm_topk = bool(g("norm_topk_prob", False))
        self.eps = float(g("rms_norm_eps", 1e-6))
        self.attn_eps = self.eps  # project decision, see module docstring
        rp = g("rope_parameters") or {}
        self.theta = float(g("rope_theta", rp.get("rope_theta", 10000.0)))
        self.interleave = bool(g("rope_interleave", True))
        self.tie = bool(g("tie_word_embeddings", False))
        rs = g("rope_scaling")
        if rs is None and rp.get("rope_type", "default") not in ("default", None):
            rs = rp
        self.rope_scaling = rs
        if g("scoring_func", "sigmoid") != "sigmoid":
            raise ValueError("only sigmoid scoring is supported")
        self.index_topk = g("index_topk") or 0
        self.ihd = g("index_head_dim") or 0
        self.inh = g("index_n_heads") or 0
        self.idx_interleave = bool(g("indexer_rope_interleave", False))
        self.index_full = [True] * self.L
        if self.index_topk > 0:
            types = g("indexer_types")
            pat = g("index_topk_pattern")
            if types is not None:
                for t in types:
                    if t not in ("full", "shared"):
                        raise ValueError("indexer_types entry %r" % t)
                self.index_full = [t == "full" for t in types[:self.L]]
            elif pat is not None:
                self.index_full = [ch in ("F", "f") for ch in list(pat)[:self.L]]
            else:
                freq = g("index_topk_freq", 1) or 1
                off = g("index_skip_topk_offset", 2)
                self.index_full = [max(i - off + 1, 0) % freq == 0 for i in range(self.L)]
            if len(self.index_full) != self.L or not self.index_full[0]:
                raise ValueError("indexer schedule must cover every layer and start with a full layer")

    def layer_index_full(self, i):
        """Whether layer i runs its own indexer (MTP layers always do)."""
        return i >= self.L or self.index_full[i]

    def is_moe(self, i):
        return self.E > 0 and i >= self.first_dense and i % self.moe_freq == 0


def rope_tables(cfg, positions):
    """cos, sin of shape [T, rope/2] (already multiplied by the YaRN
    attention factor) and the softmax scale."""
    dim = cfg.rope
    base = cfg.theta
    scale = (cfg.nope + cfg.rope) ** -0.5
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    att = 1.0
    rs = cfg.rope_scaling
    if rs is not None:
        kind = rs.get("rope_type", rs.get("type"))
        if kind != "yarn":
            raise ValueError("unsupported rope_scaling %r" % kind)
        factor = float(rs["factor"])
        orig = float(rs.get("original_max_position_embeddings", 4096))
        beta_fast = float(rs.get("beta_fast", 32.0))
        beta_slow = float(rs.get("beta_slow", 1.0))
        mscale = float(rs.get("mscale", 1.0))
        mscale_all = float(rs.get("mscale_all_dim", 0.0))

        def corr_dim(nrot):
            return dim * math.log(orig / (nrot * 2 * math.pi)) / (2 * math.log(base))

        low = max(math.floor(corr_dim(beta_fast)), 0)
        high = min(math.ceil(corr_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        extra = 1.0 - ramp  # 1 = keep the original (extrapolated) frequency
        inv = (inv / factor) * (1.0 - extra) + inv * extra
        att = yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all)
        if mscale_all:
            m = yarn_get_mscale(factor, mscale_all)
            scale = scale * m * m
    ang = np.outer(np.asarray(positions, dtype=np.float64), inv)
    return np.cos(ang) * att, np.sin(ang) * att, scale


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def topk_select(score, t, k):
    """Positions (ascending) of the k highest scores among 0..t; ties keep
    the earlier position."""
    if t + 1 <= k:
        return np.arange(t + 1)
    order = np.argsort(-score[:t + 1], kind="stable")[:k]
    return np.sort(order)


def apply_rope(x, cos, sin, interleave):
    """x [..., T, (heads,) rope]: cos/sin [T, rope/2] broadcast over heads."""
    if x.ndim == 3:  # [T, heads, rope]
        cos = cos[:, None, :]
        sin = sin[:, None, :]
    y = np.empty_like(x)
    if interleave:
        a, b = x[..., 0::2], x[..., 1::2]
        y[..., 0::2] = a * cos - b * sin
        y[..., 1::2] = a * sin + b * cos
    else:
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        y[..., :h] = a * cos - b * sin
        y[..., h:] = a * sin + b * cos
    return y


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


class Model:
    def __init__(self, path, cache_limit=1 << 22, ck=None):
        """cache_limit: tensors with more elements are re-read from disk at
        each use instead of kept (as float64) in memory, so GLM-5-sized
        slices fit in a few GB. ck: where the weights come from instead of
        the checkpoint at PATH (its config.json still gives the shape),
        e.g. a container_weights.ContainerCheckpoint."""
        with open(os.path.join(path, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.ck = ck if ck is not None else Checkpoint(path)
        self._cache = {}
        self.cache_limit = cache_limit
        self.stats = {"mask_disagreements": 0}

    def w(self, name):
        if name in self._cache:
            return self._cache[name]
        x = self.ck.get(name)
        if x.size <= self.cache_limit:
            self._cache[name] = x
        return x

    # ---- blocks ----

    def _qr(self, p, h):
        c = self.cfg
        return rms_norm(h @ self.w(p + "q_a_proj.weight").T, self.w(p + "q_a_layernorm.weight"), c.attn_eps)

    def _q(self, p, h):
        c = self.cfg
        if c.q_lora:
            q = self._qr(p, h) @ self.w(p + "q_b_proj.weight").T
        else:
            q = h @ self.w(p + "q_proj.weight").T
        q = q.reshape(h.shape[0], c.nh, c.nope + c.rope)
        return q[..., :c.nope], q[..., c.nope:]

    # ---- DSA lightning indexer ----

    def index_keys(self, p, h, cos, sin):
        """One index key per token [T, ihd]: LayerNorm(wk h), rope half first."""
        c = self.cfg
        ip = p + "indexer."
        k = layer_norm(h @ self.w(ip + "wk.weight").T, self.w(ip + "k_norm.weight"),
                       self.w(ip + "k_norm.bias"), 1e-6)
        k[:, :c.rope] = apply_rope(k[:, :c.rope], cos, sin, c.idx_interleave)
        return k

    def index_queries(self, p, h, cos, sin):
        """Index queries [T, inh, ihd] and head weights [T, inh]."""
        c = self.cfg
        ip = p + "indexer."
        q = (self._qr(p, h) @ self.w(ip + "wq_b.weight").T).reshape(h.shape[0], c.inh, c.ihd)
        q[..., :c.rope] = apply_rope(q[..., :c.rope], cos, sin, c.idx_interleave)
        w = (h @ self.w(ip + "weights_proj.weight").T) * c.inh ** -0.5
        return q, w

    def index_scores(self, q, w, K):
        """score[j] = sum_h w_h relu(ihd^-0.5 q_h . K_j) for q [inh, ihd]."""
        d = (K @ q.T) * self.cfg.ihd ** -0.5  # [S, inh]
        return np.maximum(d, 0.0) @ w

    def index_select(self, i, p, h, positions, cos, sin, sel):
        """Selections (ascending positions) for every row of a full causal
        pass at layer i: computed when the layer is full, else the
        previous full layer's `sel`. None when the model has no indexer."""
        c = self.cfg
        if c.index_topk <= 0:
            return None
        if not c.layer_index_full(i):
            return sel
        K = self.index_keys(p, h, cos, sin)
        q, w = self.index_queries(p, h, cos, sin)
        T = h.shape[0]
        self.stats.setdefault("index_sparse_rows", 0)
        out = []
        for t in range(T):
            sc = self.index_scores(q[t], w[t], K[:t + 1])
            out.append(topk_select(sc, t, c.index_topk))
            if t + 1 > c.index_topk:
                self.stats["index_sparse_rows"] += 1
        return out

    def _kv_latent(self, p, h):
        c = self.cfg
        ckv = h @ self.w(p + "kv_a_proj_with_mqa.weight").T
        lat = rms_norm(ckv[:, :c.kv_lora], self.w(p + "kv_a_layernorm.weight"), c.attn_eps)
        return lat, ckv[:, c.kv_lora:]

    def attention(self, i, h, positions, sel=None):
        """Full causal MLA over the sequence h [T, H]; with an indexer,
        each row attends only to its selected keys. Returns the output and
        the selection in force after this layer."""
        c = self.cfg
        p = "model.layers.%d.self_attn." % i
        T = h.shape[0]
        cos, sin, scale = rope_tables(c, positions)
        sel = self.index_select(i, p, h, positions, cos, sin, sel)
        q_nope, q_pe = self._q(p, h)
        lat, k_pe = self._kv_latent(p, h)
        kv = (lat @ self.w(p + "kv_b_proj.weight").T).reshape(T, c.nh, c.nope + c.vdim)
        k_nope, v = kv[..., :c.nope], kv[..., c.nope:]
        q_pe = apply_rope(q_pe, cos, sin, c.interleave)
        k_pe = apply_rope(k_pe, cos, sin, c.interleave)
        s = np.einsum("thd,shd->hts", q_nope, k_nope) + np.einsum("thd,sd->hts", q_pe, k_pe)
        s = s * scale
        mask = np.triu(np.ones((T, T), dtype=bool), 1)
        if sel is not None:
            mask = np.ones((T, T), dtype=bool)
            for t in range(T):
                mask[t, sel[t]] = False
        s[:, mask] = -np.inf
        s = s - s.max(axis=-1, keepdims=True)
        pr = np.exp(s)
        pr /= pr.sum(axis=-1, keepdims=True)
        o = np.einsum("hts,shd->thd", pr, v).reshape(T, c.nh * c.vdim)
        return o @ self.w(p + "o_proj.weight").T, sel

    def mlp(self, p, h):
        g = h @ self.w(p + "gate_proj.weight").T
        u = h @ self.w(p + "up_proj.weight").T
        return (silu(g) * u) @ self.w(p + "down_proj.weight").T

    def route(self, i, x):
        """Experts and weights for one token x [H]."""
        c = self.cfg
        p = "model.layers.%d.mlp.gate." % i
        logits = self.w(p + "weight") @ x
        s = 1.0 / (1.0 + np.exp(-logits))
        biased = s + self.w(p + "e_score_correction_bias")
        choice = biased.copy()
        choice_inf = biased.copy()
        if c.n_group > 1:
            grp = biased.reshape(c.n_group, -1)
            gscore = np.sort(grp, axis=1)[:, -2:].sum(axis=1)
            keep = np.argsort(-gscore, kind="stable")[:c.topk_group]
            gmask = np.zeros(c.n_group, dtype=bool)
            gmask[keep] = True
            emask = np.repeat(gmask, c.E // c.n_group)
            choice[~emask] = 0.0        # transformers DeepseekV3
            choice_inf[~emask] = -np.inf  # DeepSeek inference code
        top = np.argsort(-choice, kind="stable")[:c.topk]
        top_inf = np.argsort(-choice_inf, kind="stable")[:c.topk]
        if set(top.tolist()) != set(top_inf.tolist()):
            self.stats["mask_disagreements"] += 1
        wts = s[top]
        if c.norm_topk:
            wts = wts / (wts.sum() + 1e-20)
        return top, wts * c.scaling

    def moe(self, i, h):
        c = self.cfg
        out = np.zeros_like(h)
        routed = {}  # expert -> [(token, weight)], so each expert loads once
        for t in range(h.shape[0]):
            top, wts = self.route(i, h[t])
            for e, wt in zip(top.tolist(), wts.tolist()):
                routed.setdefault(e, []).append((t, wt))
        for e in sorted(routed):
            toks = [t for t, _ in routed[e]]
            y = self.mlp("model.layers.%d.mlp.experts.%d." % (i, e), h[toks])
            for k, (t, wt) in enumerate(routed[e]):
                out[t] += wt * y[k]
        if c.n_shared:
            out += self.mlp("model.layers.%d.mlp.shared_experts." % i, h)
        return out

    def ffn(self, i, h):
        if self.cfg.is_moe(i):
            return self.moe(i, h)
        return self.mlp("model.layers.%d.mlp." % i, h)

    def head(self, x):
        c = self.cfg
        x = rms_norm(x, self.w("model.norm.weight"), c.eps)
        lm = self.w("model.embed_tokens.weight") if c.tie or "lm_head.weight" not in self.ck else \
            self.w("lm_head.weight")
        return x @ lm.T

    # ---- passes ----

    def forward(self, tokens):
        """Logits [T, V] of the whole sequence in one causal pass."""
        c = self.cfg
        lm = self.w("model.embed_tokens.weight") if c.tie or "lm_head.weight" not in self.ck else \
            self.w("lm_head.weight")
        return self.hidden(tokens) @ lm.T

    def hidden(self, tokens):
        """Main-model hidden states after the final norm, [T, H]."""
        c = self.cfg
        x = self.w("model.embed_tokens.weight")[np.asarray(tokens)]
        pos = np.arange(len(tokens))
        sel = None
        for i in range(c.L):
            pre = "model.layers.%d." % i
            a, sel = self.attention(i, rms_norm(x, self.w(pre + "input_layernorm.weight"), c.eps), pos, sel)
            x = x + a
            x = x + self.ffn(i, rms_norm(x, self.w(pre + "post_attention_layernorm.weight"), c.eps))
        return rms_norm(x, self.w("model.norm.weight"), c.eps)

    def forward_mtp(self, tokens, k=0):
        """Draft logits of MTP module k (stored as layer L + k), [T-1, V]:
        row i predicts token i+2 from the main hidden state at i and the
        embedding of token i+1, placed at position i (as vLLM's and
        SGLang's MTP proposers do). Choices, as in doc/DESIGN: the main
        hidden state is taken after the final norm; the projection input
        is [enorm(embedding); hnorm(hidden)] in that order (vLLM, SGLang);
        the module's own embed_tokens copy is used when present. Only
        module 0 is defined on main-model states; deeper modules chain on
        the previous module's output and are not modelled here."""
        c = self.cfg
        if k != 0 or c.raw.get("num_nextn_predict_layers", 0) < 1:
            raise ValueError("no MTP module %d" % k)
        li = c.L + k
        pre = "model.layers.%d." % li
        T = len(tokens)
        h = self.hidden(tokens)[:T - 1]
        emb_name = pre + "embed_tokens.weight"
        emb = self.w(emb_name if emb_name in self.ck else "model.embed_tokens.weight")
        e = emb[np.asarray(tokens[1:])]
        x = np.concatenate([rms_norm(e, self.w(pre + "enorm.weight"), c.eps),
                            rms_norm(h, self.w(pre + "hnorm.weight"), c.eps)], axis=-1)
        x = x @ self.w(pre + "eh_proj.weight").T
        pos = np.arange(T - 1)
        x = x + self.attention(li, rms_norm(x, self.w(pre + "input_layernorm.weight"), c.eps), pos)[0]
        x = x + self.ffn(li, rms_norm(x, self.w(pre + "post_attention_layernorm.weight"), c.eps))
        x = rms_norm(x, self.w(pre + "shared_head.norm.weight"), c.eps)
        return x @ self.w(pre + "shared_head.head.weight").T

    def forward_incremental(self, tokens):
        """Logits [T, V] feeding one token at a time through a compressed
        KV cache (normalized latent + roped key per token and layer), with
        the absorbed attention a decoder uses: q_nope is mapped into the
        latent space by kv_b_proj's key half, the attention output is
        mapped out by its value half. Must equal forward()."""
        c = self.cfg
        cache = [([], [], []) for _ in range(c.L)]
        rows = []
        for t, tok in enumerate(tokens):
            x = self.w("model.embed_tokens.weight")[[tok]]
            cos, sin, scale = rope_tables(c, [t])
            sel = None
            for i in range(c.L):
                pre = "model.layers.%d." % i
                p = pre + "self_attn."
                h = rms_norm(x, self.w(pre + "input_layernorm.weight"), c.eps)
                q_nope, q_pe = self._q(p, h)
                lat, k_pe = self._kv_latent(p, h)
                cache[i][0].append(lat[0])
                cache[i][1].append(apply_rope(k_pe, cos, sin, c.interleave)[0])
                if c.index_topk > 0 and c.layer_index_full(i):
                    # the index key is part of the cache: one per token
                    cache[i][2].append(self.index_keys(p, h, cos, sin)[0])
                    iq, iw = self.index_queries(p, h, cos, sin)
                    sc = self.index_scores(iq[0], iw[0], np.stack(cache[i][2]))
                    sel = topk_select(sc, t, c.index_topk)
                keep = np.arange(t + 1) if sel is None else sel
                C = np.stack(cache[i][0])[keep]  # [S, kv_lora]
                K = np.stack(cache[i][1])[keep]  # [S, rope]
                wkv = self.w(p + "kv_b_proj.weight").reshape(c.nh, c.nope + c.vdim, c.kv_lora)
                w_uk, w_uv = wkv[:, :c.nope, :], wkv[:, c.nope:, :]
                q_abs = np.einsum("hd,hdl->hl", q_nope[0], w_uk)
                q_pe = apply_rope(q_pe, cos, sin, c.interleave)[0]
                s = (q_abs @ C.T + q_pe @ K.T) * scale  # [nh, S]
                s = s - s.max(axis=-1, keepdims=True)
                pr = np.exp(s)
                pr /= pr.sum(axis=-1, keepdims=True)
                o_lat = pr @ C  # [nh, kv_lora]
                o = np.einsum("hl,hdl->hd", o_lat, w_uv).reshape(1, c.nh * c.vdim)
                x = x + o @ self.w(p + "o_proj.weight").T
                x = x + self.ffn(i, rms_norm(x, self.w(pre + "post_attention_layernorm.weight"), c.eps))
            rows.append(self.head(x)[0])
        return np.stack(rows)
