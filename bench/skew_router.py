#!/usr/bin/python3
"""skew_router.py HF_DIR [--hot N] [--boost B] [--seed S]

Give a synthesized Hugging Face checkpoint a skewed expert popularity, in
place: every MoE layer's `mlp.gate.e_score_correction_bias` (F32) becomes B
for N experts of that layer (a seeded choice) and 0 for the others. The
bias only enters expert *selection* (DeepSeek-V3 routing), so the routing
weights stay the router's own; with the router's scores spread as
sigmoid(N(0, 1)) (synth's router rows have unit norm), N=12, B=0.5 sends
about 90% of the top-8 routings of a 64-expert layer to those 12 experts,
the kind of skew a real conversation shows, where a random model's routing
is near-uniform. Idempotent (values are set, not added). Only the header
and those few bytes are read and written.
"""
import argparse
import json
import os
import random
import struct
import sys

ap = argparse.ArgumentParser()
ap.add_argument("hf_dir")
ap.add_argument("--hot", type=int, default=12)
ap.add_argument("--boost", type=float, default=0.5)
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()

index = os.path.join(a.hf_dir, "model.safetensors.index.json")
if os.path.exists(index):
    files = sorted(set(json.load(open(index))["weight_map"].values()))
else:
    files = [f for f in os.listdir(a.hf_dir) if f.endswith(".safetensors")]
done = 0
for name in files:
    path = os.path.join(a.hf_dir, name)
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        for key, t in header.items():
            if not key.endswith("mlp.gate.e_score_correction_bias"):
                continue
            if t["dtype"] != "F32" or len(t["shape"]) != 1:
                sys.exit("skew_router.py: %s: expected a 1-D F32 bias, got %s %s" % (key, t["dtype"], t["shape"]))
            n_exp = t["shape"][0]
            layer = int(key.split(".")[2])
            hot = set(random.Random(a.seed * 1000003 + layer).sample(range(n_exp), min(a.hot, n_exp)))
            vals = [a.boost if e in hot else 0.0 for e in range(n_exp)]
            f.seek(8 + n + t["data_offsets"][0])
            f.write(struct.pack("<%df" % n_exp, *vals))
            done += 1
if not done:
    sys.exit("skew_router.py: no e_score_correction_bias tensor in %s" % a.hf_dir)
print("skew_router.py: %d layers: %d hot experts each, selection bias %.3f" % (done, a.hot, a.boost))
