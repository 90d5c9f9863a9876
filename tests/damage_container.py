#!/usr/bin/python3
"""damage_container.py SRC DST KIND - copy the container SRC to DST and damage it
one way (for tests/model_damage.sh). Prints what the damage touched as
"FILE TENSOR" when there is one. Kinds:
  config:KEY=VALUE  a manifest config key set to an integer
  drop:TENSOR       the tensor removed from the manifest's index
  nan-int4 / inf-int8 / nan-f32 TENSOR  one scale (or f32 value) poisoned
  random FILE       the file overwritten with random bytes (same size)
  nan-expert LAYER  every record of the layer's shard gets a NaN scale in
                    its down part (an f32 container: a NaN value)
  flip-f32 TENSOR   the lowest exponent bit of element 1 of an f32 tensor
                    flipped (a finite value: only the CRC-32C sees it)
  strip-checksums   the CRC-32C keys removed and version 1: a container
                    written before checksums existed
  empty-vocab, bad-bos  tokenizer damage; the manifest's size and sha256 of
                    the tokenizer files follow, so only content checks can
                    catch it."""
import hashlib, json, os, shutil, struct, sys

src, dst, kind = sys.argv[1:4]
arg = sys.argv[4] if len(sys.argv) > 4 else None
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
mpath = os.path.join(dst, "manifest.json")
m = json.load(open(mpath))


def poke(rel, off, data):
    with open(os.path.join(dst, rel), "r+b") as f:
        f.seek(off)
        f.write(data)


def tensor(name):
    return [t for t in m["tensors"] if t["name"] == name][0]


if kind.startswith("config:"):
    key, val = kind[7:].split("=")
    m["config"][key] = int(val)
elif kind.startswith("drop:"):
    m["tensors"] = [t for t in m["tensors"] if t["name"] != kind[5:]]
elif kind in ("nan-int4", "inf-int8", "nan-f32"):
    t = tensor(arg)
    # row 1, block 0: int4 blocks are 36 bytes {half d, half m, q}, int8 68 {float d, q}
    row = t["nbytes"] // t["shape"][0]
    if kind == "nan-int4":
        poke(t["file"], t["offset"] + row, b"\x00\x7e")
    elif kind == "inf-int8":
        poke(t["file"], t["offset"] + row, struct.pack("<f", float("inf")))
    else:
        poke(t["file"], t["offset"] + 4, struct.pack("<f", float("nan")))
    print(t["file"], t["name"])
elif kind == "flip-f32":
    t = tensor(arg)
    with open(os.path.join(dst, t["file"]), "r+b") as f:
        f.seek(t["offset"] + 4 + 2)
        b = f.read(1)
        f.seek(t["offset"] + 4 + 2)
        f.write(bytes([b[0] ^ 0x80]))
    print(t["file"], t["name"])
elif kind == "strip-checksums":
    m["version"] = 1
    for t in m["tensors"]:
        del t["crc32c"]
    for sh in m["experts"]["shards"]:
        del sh["record_crc32c"]
elif kind == "random":
    n = os.path.getsize(os.path.join(dst, arg))
    poke(arg, 0, os.urandom(n))
elif kind == "nan-expert":
    e = m["experts"]
    sh = [s for s in e["shards"] if s["layer"] == int(arg)][0]
    down = e["parts"][2]["offset"]
    bad = struct.pack("<f", float("nan")) if e["qtype"] == "f32" else b"\x00\x7c"
    for x in range(sh["count"]):
        poke(sh["file"], x * e["record_size"] + down, bad)
    print(sh["file"])
elif kind in ("empty-vocab", "bad-bos"):
    tdir = os.path.join(dst, "tokenizer")
    if kind == "empty-vocab":
        p = os.path.join(tdir, "tokenizer.json")
        j = json.load(open(p))
        j["model"]["vocab"] = {}
        j["model"]["merges"] = []
        j["added_tokens"] = []
    else:
        p = os.path.join(tdir, "tokenizer_config.json")
        j = json.load(open(p))
        j["bos_token"] = "<|no-such-token|>"
    json.dump(j, open(p, "w"))
    for f in m["files"]:
        if f["path"].startswith("tokenizer/"):
            b = open(os.path.join(dst, f["path"]), "rb").read()
            f["size"] = len(b)
            f["sha256"] = hashlib.sha256(b).hexdigest()
else:
    sys.exit("damage_container.py: unknown kind " + kind)
json.dump(m, open(mpath, "w"), indent=1)
