#!/usr/bin/python3
"""Variants of a synthesized FP8 checkpoint (coli synth --dtype fp8: 128x128
weight_scale_inv block scales) under the other FP8 conventions, for
tests/convert_fp8_scales.sh.

usage: convert_fp8_variants.py MODE SRC OUT [OUT2]
  rename   OUT: every <w>_scale_inv renamed <w>_scale, quantization_config
           compressed-tensors (float 8 bits, strategy block [128, 128]):
           the same numbers under the compressed-tensors names
  channel  OUT: every FP8 weight keeps its bytes with one scale per output
           channel (<w>_scale [rows, 1], varied per row), compressed-tensors
           strategy channel; OUT2: the same weights dequantized here
           (fp8 * scale in float32, as the converter multiplies) as F32,
           no quantization_config: both must convert to the same container
  noscale  OUT: the first <w>_scale_inv removed (an FP8 weight without scale)
"""
import json
import os
import shutil
import struct
import sys

import numpy as np


def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    meta = hdr.pop("__metadata__", None)
    out = []
    for name, e in sorted(hdr.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = e["data_offsets"]
        out.append([name, e["dtype"], e["shape"], data[a:b]])
    return out, meta


def write_st(path, tensors, meta):
    hdr, off = {}, 0
    for name, dtype, shape, raw in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    if meta is not None:
        hdr["__metadata__"] = meta
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for t in tensors:
            f.write(t[3])


def e4m3(raw):
    """F8_E4M3 bytes to float32, exactly."""
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.int32)
    s = np.where(b & 0x80, -1.0, 1.0)
    e, m = (b >> 3) & 15, b & 7
    v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    return (s * v).astype(np.float32)


def shards(src):
    return sorted(n for n in os.listdir(src) if n.endswith(".safetensors"))


def copy_small(src, out):
    os.makedirs(out, exist_ok=True)
    for n in os.listdir(src):
        if not n.endswith(".safetensors") and n != "model.safetensors.index.json":
            shutil.copy(os.path.join(src, n), os.path.join(out, n))


def finish(out, files, qc):
    wm = {name: fn for fn, ts in files.items() for name, *_ in ts}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f)
    p = os.path.join(out, "config.json")
    cfg = json.load(open(p))
    if qc is None:
        cfg.pop("quantization_config", None)
    else:
        cfg["quantization_config"] = qc
    json.dump(cfg, open(p, "w"))


def ct(strategy):
    w = {"num_bits": 8, "type": "float", "symmetric": True, "dynamic": False,
         "strategy": strategy}
    if strategy == "block":
        w["block_structure"] = [128, 128]
    return {"quant_method": "compressed-tensors", "format": "float-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": w,
                                          "input_activations": None}},
            "ignore": ["lm_head"]}


def main():
    mode, src, out = sys.argv[1:4]
    copy_small(src, out)
    files = {fn: read_st(os.path.join(src, fn)) for fn in shards(src)}
    new = {}
    if mode == "rename":
        for fn, (ts, meta) in files.items():
            for t in ts:
                if t[0].endswith("_scale_inv"):
                    t[0] = t[0][:-len("_inv")]
            new[fn] = ts
            write_st(os.path.join(out, fn), ts, meta)
        finish(out, new, ct("block"))
    elif mode == "channel":
        out2 = sys.argv[4]
        copy_small(src, out2)
        new2 = {}
        # a weight's scale may be in the next shard
        by = {t[0]: t for ts, _ in files.values() for t in ts}
        for fn, (ts, meta) in files.items():
            a, b = [], []
            for name, dtype, shape, raw in ts:
                if name.endswith("_scale_inv"):
                    continue
                if dtype != "F8_E4M3":
                    a.append([name, dtype, shape, raw])
                    b.append([name, dtype, shape, raw])
                    continue
                rows, cols = shape
                blk = np.frombuffer(by[name + "_scale_inv"][3], dtype=np.float32)
                r = np.arange(rows)
                sc = (blk.reshape(-1, (cols + 127) // 128)[r // 128, 0] *
                      (1 + (r % 7) / 8.0)).astype(np.float32)
                w = (e4m3(raw).reshape(rows, cols) * sc[:, None]).astype(np.float32)
                a.append([name, dtype, shape, raw])
                a.append([name + "_scale", "F32", [rows, 1], sc.tobytes()])
                b.append([name, "F32", shape, w.tobytes()])
            new[fn], new2[fn] = a, b
            write_st(os.path.join(out, fn), a, meta)
            write_st(os.path.join(out2, fn), b, meta)
        finish(out, new, ct("channel"))
        finish(out2, new2, None)
    elif mode == "noscale":
        gone = False
        for fn, (ts, meta) in files.items():
            keep = []
            for t in ts:
                if not gone and t[0].endswith("_scale_inv"):
                    gone = True
                    print(t[0][:-len("_scale_inv")])
                    continue
                keep.append(t)
            new[fn] = keep
            write_st(os.path.join(out, fn), keep, meta)
        finish(out, new, json.load(open(os.path.join(src, "config.json")))["quantization_config"])
    else:
        sys.exit("unknown mode " + mode)


main()
