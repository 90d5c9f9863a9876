"""container.py - read the weights of a colitop model container back into
float32 arrays (for the PyTorch figures on exactly the quantized weights
the engine runs). Follows the layouts documented in src/quant.h:

  f32        little-endian float32
  int8       blocks of 64: {float d; int8 q[64]}            w = d * q
  int4-g64   blocks of 64: {half d, m; uint8 q[32]}         w = d * nibble + m
             (element j: low nibble of q[j]; element j+32: high nibble)

and the manifest: "tensors" (name, file, offset, nbytes, qtype, shape) for
resident tensors, "experts" (record_size, parts gate/up/down with their
offsets, one shard per MoE layer, record e at e * record_size).
"""
import json
import os

import numpy as np


def dequant(raw, qtype, rows, cols):
    if qtype == "f32":
        return np.frombuffer(raw, dtype="<f4", count=rows * cols).reshape(rows, cols).copy()
    nb = cols // 64
    if qtype == "int8":
        blk = np.frombuffer(raw, dtype=np.dtype([("d", "<f4"), ("q", "i1", 64)]), count=rows * nb)
        w = blk["d"][:, None].astype(np.float32) * blk["q"].astype(np.float32)
        return w.reshape(rows, cols)
    if qtype in ("int4-g64", "int4"):
        blk = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("m", "<f2"), ("q", "u1", 32)]), count=rows * nb)
        lo = (blk["q"] & 0xF).astype(np.float32)
        hi = (blk["q"] >> 4).astype(np.float32)
        nib = np.concatenate((lo, hi), axis=1)
        w = blk["d"].astype(np.float32)[:, None] * nib + blk["m"].astype(np.float32)[:, None]
        return w.reshape(rows, cols)
    raise ValueError("unknown qtype %r" % qtype)


def qbytes(qtype, rows, cols):
    return rows * cols * 4 if qtype == "f32" else rows * (cols // 64) * (68 if qtype == "int8" else 36)


def read_container(path):
    """{hf tensor name: float32 array (2-D, or as the manifest's shape)}."""
    with open(os.path.join(path, "manifest.json")) as f:
        man = json.load(f)
    out = {}
    for t in man["tensors"]:
        with open(os.path.join(path, t["file"]), "rb") as f:
            f.seek(t["offset"])
            raw = f.read(t["nbytes"])
        shape = t["shape"]
        rows, cols = shape[0], shape[1] if len(shape) > 1 else 1
        out[t["name"]] = dequant(raw, t["qtype"], rows, cols)
    ex = man.get("experts")
    if ex:
        for sh in ex["shards"]:
            with open(os.path.join(path, sh["file"]), "rb") as f:
                data = f.read()
            for e in range(sh["count"]):
                base = e * ex["record_size"]
                for p in ex["parts"]:
                    n = qbytes(ex["qtype"], p["rows"], p["cols"])
                    raw = data[base + p["offset"]:base + p["offset"] + n]
                    out["model.layers.%d.mlp.experts.%d.%s_proj.weight" % (sh["layer"], e, p["name"])] = \
                        dequant(raw, ex["qtype"], p["rows"], p["cols"])
    return out
