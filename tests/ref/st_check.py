#!/usr/bin/env python3
"""st_check.py HF_DIR: validate the safetensors files of a checkpoint
directory independently of the C code, and print a JSON summary
{"files": N, "bytes": B, "tensors": {name: [dtype, shape]}}.

Checks: header length a multiple of 8 and valid JSON; tensors back to back
from offset 0 to the end of the file (no gap, no overlap, no tail); byte
size = element size x shape; for a sharded directory, the index maps every
tensor to the file that holds it and total_size matches; every F8_E4M3
tensor has an F32 "<name>_scale_inv" of shape ceil(rows/128) x
ceil(cols/128) with positive finite scales. Exit 0 valid, 1 invalid."""
import json
import os
import sys

import numpy as np

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
         "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def fail(msg):
    print("st_check: " + msg, file=sys.stderr)
    sys.exit(1)


def scan(fp):
    size = os.path.getsize(fp)
    with open(fp, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if n % 8 or 8 + n > size:
            fail("%s: bad header length %d" % (fp, n))
        hdr = json.loads(f.read(n))
    ents = []
    for name, d in hdr.items():
        if name == "__metadata__":
            continue
        b, e = d["data_offsets"]
        numel = int(np.prod(d["shape"])) if d["shape"] else 1
        if d["dtype"] not in SIZES or numel * SIZES[d["dtype"]] != e - b:
            fail("%s: %s size %d does not match %s %s" % (fp, name, e - b, d["dtype"], d["shape"]))
        ents.append((b, e, name, d))
    ents.sort()
    at = 0
    for b, e, name, _ in ents:
        if b != at:
            fail("%s: %s starts at %d, expected %d" % (fp, name, b, at))
        at = e
    if 8 + n + at != size:
        fail("%s: data ends at %d but file has %d bytes" % (fp, 8 + n + at, size))
    return {name: (d, fp, 8 + n + b) for b, e, name, d in ents}, at


def main():
    if len(sys.argv) != 2:
        fail("usage: st_check.py HF_DIR")
    d = sys.argv[1]
    idx = os.path.join(d, "model.safetensors.index.json")
    tensors, total, files = {}, 0, []
    if os.path.exists(idx):
        with open(idx) as f:
            ix = json.load(f)
        wm = ix["weight_map"]
        files = sorted(set(wm.values()))
        for fn in files:
            t, nb = scan(os.path.join(d, fn))
            total += nb
            for name in t:
                if wm.get(name) != fn:
                    fail("index maps %s to %s but it is in %s" % (name, wm.get(name), fn))
            tensors.update(t)
        if set(wm) != set(tensors):
            fail("index and files disagree on %d tensors" % len(set(wm) ^ set(tensors)))
        if ix.get("metadata", {}).get("total_size") != total:
            fail("index total_size %r != %d" % (ix.get("metadata", {}).get("total_size"), total))
        if os.path.exists(os.path.join(d, "model.safetensors")):
            fail("both model.safetensors and an index")
    else:
        files = ["model.safetensors"]
        tensors, total = scan(os.path.join(d, "model.safetensors"))
    for name, (dd, fp, off) in tensors.items():
        if dd["dtype"] != "F8_E4M3":
            continue
        s = name + "_scale_inv"
        if s not in tensors or tensors[s][0]["dtype"] != "F32":
            fail("%s has no F32 %s" % (name, s))
        r, c = dd["shape"]
        want = [(r + 127) // 128, (c + 127) // 128]
        sd, sfp, soff = tensors[s]
        if sd["shape"] != want:
            fail("%s shape %s, expected %s" % (s, sd["shape"], want))
        sc = np.fromfile(sfp, dtype=np.float32, count=want[0] * want[1], offset=soff)
        if not (np.all(np.isfinite(sc)) and np.all(sc > 0)):
            fail("%s has non-positive or non-finite scales" % s)
    out = {"files": len(files), "bytes": total,
           "tensors": {k: [v[0]["dtype"], v[0]["shape"]] for k, v in sorted(tensors.items())}}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
