"""container_weights.py - the weights of a colitop container (what `coli
convert` wrote), decoded to float64 by this file alone from the byte layout
that colitop-model(5) specifies, never by the C decoder: f32; int8 (68-byte
blocks: float32 d, 64 signed bytes q; d*q); int4-g64 (36-byte blocks:
binary16 d, binary16 m, 32 bytes; element j the low nibble of byte j,
element j+32 the high one; d*nibble + m). Routed experts are read from
their shard records (gate, up, down at the manifest's part offsets).

ContainerCheckpoint has the interface of ref_model.Checkpoint, so
ref_model.Model(hf_dir, ck=ContainerCheckpoint(container, like)) runs the
float64 reference on exactly the numbers the engine multiplies with: a
quantized container's logits then agree with the engine as tightly as an
f32 container's do, whatever the quantization error."""
import json
import os
import re

import numpy as np

_EXPERT = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$")


def decode(buf, qtype, rows, cols):
    """bytes -> float64 [rows, cols] of one matrix in QTYPE."""
    if qtype == "f32":
        return np.frombuffer(buf, dtype="<f4", count=rows * cols).astype(np.float64).reshape(rows, cols)
    if cols % 64:
        raise ValueError("%s matrix with %d columns (not a multiple of 64)" % (qtype, cols))
    nb = rows * (cols // 64)
    if qtype == "int8":
        blk = np.frombuffer(buf, dtype=np.uint8, count=nb * 68).reshape(nb, 68)
        d = blk[:, :4].copy().view("<f4").astype(np.float64)
        q = blk[:, 4:].view(np.int8).astype(np.float64)
        return (d * q).reshape(rows, cols)
    if qtype == "int4-g64":
        blk = np.frombuffer(buf, dtype=np.uint8, count=nb * 36).reshape(nb, 36)
        d = blk[:, 0:2].copy().view("<f2").astype(np.float64)
        m = blk[:, 2:4].copy().view("<f2").astype(np.float64)
        q = blk[:, 4:]
        nib = np.concatenate([q & 0x0F, q >> 4], axis=1).astype(np.float64)
        return (d * nib + m).reshape(rows, cols)
    raise ValueError("unknown qtype %r" % qtype)


def qbytes(qtype, rows, cols):
    return {"f32": 4 * cols, "int8": 68 * (cols // 64), "int4-g64": 36 * (cols // 64)}[qtype] * rows


class ContainerCheckpoint:
    """Tensors of a container by their Hugging Face names, as float64 in
    the shapes of LIKE (the source ref_model.Checkpoint: the container
    stores vectors as [n, 1]); without LIKE, [n, 1] becomes [n]."""

    def __init__(self, model_dir, like=None):
        self.dir = model_dir
        self.like = like
        with open(os.path.join(model_dir, "manifest.json")) as f:
            self.man = json.load(f)
        self.tensors = {t["name"]: t for t in self.man["tensors"]}
        ex = self.man.get("experts") or {}
        self.parts = {p["name"]: p for p in ex.get("parts", [])}
        self.shards = {s["layer"]: s for s in ex.get("shards", [])}
        self.ex = ex

    def _read(self, file, offset, nbytes):
        with open(os.path.join(self.dir, file), "rb") as f:
            f.seek(offset)
            b = f.read(nbytes)
        if len(b) != nbytes:
            raise ValueError("%s: short read at %d" % (file, offset))
        return b

    def _expert(self, name):
        m = _EXPERT.match(name)
        if not m or int(m.group(1)) not in self.shards:
            return None
        layer, e, part = int(m.group(1)), int(m.group(2)), self.parts[m.group(3)]
        s = self.shards[layer]
        if e >= s["count"]:
            return None
        q = self.ex["qtype"]
        off = e * self.ex["record_size"] + part["offset"]
        return decode(self._read(s["file"], off, qbytes(q, part["rows"], part["cols"])), q,
                      part["rows"], part["cols"])

    def names(self):
        if self.like is None:
            return sorted(self.tensors)
        return sorted(n for n in self.like.names() if n in self)

    def __contains__(self, name):
        if name in self.tensors:
            return True
        m = _EXPERT.match(name)
        return bool(m) and int(m.group(1)) in self.shards and int(m.group(2)) < self.shards[int(m.group(1))]["count"]

    def get(self, name):
        t = self.tensors.get(name)
        if t is not None:
            rows, cols = t["shape"]
            x = decode(self._read(t["file"], t["offset"], t["nbytes"]), t["qtype"], rows, cols)
        else:
            x = self._expert(name)
            if x is None:
                raise KeyError("%s: not in the container %s" % (name, self.dir))
        if self.like is not None and name in self.like:
            x = x.reshape(self.like.index[name][2])
        elif self.like is None and x.shape[1] == 1:
            x = x.reshape(-1)
        return x
