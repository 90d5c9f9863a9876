#!/usr/bin/env python3
"""ref_selftest.py COLI WORKDIR: checks of the reference forward pass that
need no C forward pass (only `coli synth`).

1. incremental (absorbed MLA over the compressed cache) == full pass, for
   models with/without q LoRA, YaRN, groups, norm_topk_prob, MTP, shards;
2. BF16 / F16 / FP8 checkpoints of the same seed decode to the F32 weights
   within their precision, and give nearly the same logits (this checks the
   dtype decoding and the 128x128 block scales on both sides);
3. RoPE: the interleaved pairing gives the same q.k as transformers'
   de-interleave + rotate_half formulation; YaRN correction range for
   DeepSeek-V3's parameters is [10, 23].
Prints one JSON line per check; exit 1 on the first failure."""
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_model  # noqa: E402

COLI, WORK = sys.argv[1], sys.argv[2]
TOKENS = [0, 72, 101, 300, 17, 259, 511, 42, 7, 130]


def synth(name, *flags):
    out = os.path.join(WORK, name)
    r = subprocess.run([COLI, "synth", out, "--preset", "tiny"] + list(flags),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail("coli synth %s: %s" % (" ".join(flags), r.stderr.strip()))
    return out


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def kl(p_logits, q_logits):
    p, q = softmax(p_logits), softmax(q_logits)
    return (p * (np.log(p) - np.log(q))).sum(axis=-1)


def check_incremental():
    variants = {
        "default": [],
        "noqlora_noyarn": ["--q-lora", "0", "--no-yarn"],
        "flat_routing": ["--groups", "1", "--topk-groups", "1", "--no-norm-topk", "--scaling", "1.7"],
        "groups8": ["--experts", "32", "--groups", "8", "--topk-groups", "3", "--topk", "6", "--seed", "5"],
        "sharded_mtp2": ["--shards", "4", "--mtp", "2", "--dense-layers", "2", "--seed", "9"],
        "dsa_shared": ["--index-topk", "4", "--layers", "3", "--indexer-types", "FSF", "--seed", "10"],
    }
    for name, flags in variants.items():
        m = ref_model.Model(synth("inc_" + name, *flags))
        a = m.forward(TOKENS)
        b = m.forward_incremental(TOKENS)
        rel = float(np.abs(a - b).max() / np.abs(a).max())
        print(json.dumps({"check": "incremental", "model": name, "max_rel": rel, "stats": m.stats}))
        if not rel < 1e-9:
            fail("incremental != full for %s (%g)" % (name, rel))


def check_dtypes():
    base = ref_model.Model(synth("dt_f32", "--seed", "3"))
    ref = base.forward(TOKENS)
    # weight tolerance (relative Frobenius) and logit KL bound per dtype
    for dt, wtol, kl_max, top1_min in (("bf16", 2 ** -8, 1e-3, 0.8), ("f16", 2 ** -11, 1e-5, 0.9),
                                       ("fp8", 0.04, 0.03, 0.5)):
        m = ref_model.Model(synth("dt_" + dt, "--seed", "3", "--dtype", dt))
        worst = 0.0
        for name in base.ck.names():
            w32 = base.w(name)
            w = m.w(name)
            worst = max(worst, float(np.linalg.norm(w - w32) / np.linalg.norm(w32)))
        lg = m.forward(TOKENS)
        # Median, not max: a rounding change may flip one routing choice,
        # which moves that position's logits a lot without any bug.
        k = float(np.median(kl(ref, lg)))
        top1 = float((ref.argmax(-1) == lg.argmax(-1)).mean())
        print(json.dumps({"check": "dtype", "dtype": dt, "weight_rel_err": worst, "kl_median": k,
                          "top1": top1}))
        if not (worst < wtol and k < kl_max and top1 >= top1_min):
            fail("%s decode: weight error %g (limit %g), median KL %g (limit %g), top-1 %g"
                 % (dt, worst, wtol, k, kl_max, top1))


def check_rope():
    rng = np.random.default_rng(1)
    d = 16
    q, k = rng.normal(size=(5, d)), rng.normal(size=(5, d))

    class C:
        rope, nope, theta, rope_scaling = d, 16, 10000.0, None
    cos, sin, _ = ref_model.rope_tables(C, np.arange(5))
    s1 = ref_model.apply_rope(q, cos, sin, True) @ ref_model.apply_rope(k, cos, sin, True).T

    def hf(x):  # transformers: de-interleave, then rotate halves
        x = x.reshape(5, d // 2, 2).transpose(0, 2, 1).reshape(5, d)
        c2, s2 = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
        rot = np.concatenate([-x[:, d // 2:], x[:, :d // 2]], -1)
        return x * c2 + rot * s2
    s2 = hf(q) @ hf(k).T
    err = float(np.abs(s1 - s2).max())

    def corr(nrot):
        return 64 * math.log(4096 / (nrot * 2 * math.pi)) / (2 * math.log(10000.0))
    lo, hi = math.floor(corr(32)), math.ceil(corr(1))
    print(json.dumps({"check": "rope", "interleave_vs_hf": err, "yarn_range": [lo, hi]}))
    if err > 1e-12 or (lo, hi) != (10, 23):
        fail("rope formulations disagree (%g) or yarn range %s" % (err, (lo, hi)))


check_rope()
check_incremental()
check_dtypes()
print("ref_selftest: all checks passed")
