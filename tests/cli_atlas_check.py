#!/usr/bin/python3
"""cli_atlas_check.py - the independent side of tests/cli_atlas.sh (stdlib only).

  inputs VAL OUTDIR          write the zh/ru batch input from data/eval/val.txt
                             (a record is zh when its answer has CJK, ru when
                             Cyrillic) and one text file per record
  check OUTDIR CACHE         every check of the test, on what the shell left
                             in OUTDIR (coli's JSON outputs, raw routing of
                             each record from `coli perplexity --routing`)

The profile file is read here from its documented layout (colitop-kv(5)),
the PNG decoded with zlib, the scores recomputed from the counts."""
import json
import math
import os
import re
import struct
import sys
import zlib

BOS = "<｜begin▁of▁sentence｜>"


def lang(rec):
    ans = rec.split("<｜Assistant｜>", 1)[1]
    if re.search("[\u4e00-\u9fff]", ans):
        return "zh"
    if re.search("[\u0400-\u04ff]", ans):
        return "ru"
    return None


def inputs(val, out):
    text = open(val, encoding="utf-8").read()
    recs = [BOS + r for r in text.split(BOS) if r]
    n = 0
    with open(os.path.join(out, "in.jsonl"), "w", encoding="utf-8") as f:
        for i, r in enumerate(recs):
            lg = lang(r)
            if not lg:
                continue
            open(os.path.join(out, "rec%d.%s.txt" % (i, lg)), "w", encoding="utf-8").write(r)
            body = {"prompt": r, "max_tokens": 1, "temperature": 0}
            f.write(json.dumps({"custom_id": "r%d" % i, "method": "POST", "url": "/v1/completions",
                                "lang": lg, "body": body}, ensure_ascii=False) + "\n")
            n += 1
    assert n >= 10, n


def read_prof(path):
    b = open(path, "rb").read()
    assert b[:8] == b"COLIPROF", path
    ver, L, E, K = struct.unpack_from("<4I", b, 8)
    tokens, requests = struct.unpack_from("<2Q", b, 24)
    assert ver == 1 and len(b) == 168 + 8 * L * E + 4, (path, ver, len(b))
    crc = struct.unpack_from("<I", b, len(b) - 4)[0]
    assert crc == crc32c(b[:-4]), path + ": CRC"
    c = struct.unpack_from("<%dQ" % (L * E), b, 168)
    return {"L": L, "E": E, "K": K, "tokens": tokens, "requests": requests,
            "c": [list(c[l * E:(l + 1) * E]) for l in range(L)]}


def crc32c(data):
    crc = 0xFFFFFFFF
    for x in data:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def score(a, na, b, nb):
    a0, b0 = na - a, nb - b
    d = math.log((a + .5) * (b0 + .5) / ((a0 + .5) * (b + .5)))
    return d, d / math.sqrt(1 / (a + .5) + 1 / (a0 + .5) + 1 / (b + .5) + 1 / (b0 + .5))


def png_gray(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", None
    while pos < len(b):
        n, = struct.unpack_from(">I", b, pos)
        kind, data = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, inter = struct.unpack(">IIBBBBB", data)
            assert depth == 8 and ctype == 0 and inter == 0, (depth, ctype, inter)
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w)
    for y in range(h):
        f, line = raw[y * (w + 1)], bytearray(raw[y * (w + 1) + 1:(y + 1) * (w + 1)])
        for x in range(w):
            a = line[x - 1] if x else 0
            up, c = prev[x], prev[x - 1] if x else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + up) & 255
            elif f == 3:
                line[x] = (line[x] + (a + up) // 2) & 255
            elif f == 4:
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, rows


def check(out, cache):
    J = lambda name: json.load(open(os.path.join(out, name)))
    prof = {lg: read_prof(os.path.join(cache, "profiles", lg + ".prof")) for lg in ("zh", "ru")}
    allp = read_prof(os.path.join(cache, "profiles", "_all.prof"))
    L, E, K = allp["L"], allp["E"], allp["K"]

    # 1. the profile's rows are the evaluated prompt rows the answers report
    # (prompt - cached; max_tokens 1 evaluates no generated token)
    want = {"zh": 0, "ru": 0}
    reqs = {"zh": 0, "ru": 0}
    inp = {json.loads(l)["custom_id"]: json.loads(l)["lang"] for l in open(os.path.join(out, "in.jsonl"))}
    for line in open(os.path.join(out, "out1.jsonl")):
        o = json.loads(line)
        u = o["response"]["body"]["usage"]
        want[inp[o["custom_id"]]] += u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"]
        reqs[inp[o["custom_id"]]] += 1
    for lg in want:
        p = prof[lg]
        assert p["tokens"] == want[lg] and p["requests"] == reqs[lg], (lg, p["tokens"], want[lg])
        for l in range(L):
            s = sum(p["c"][l])
            assert s in (0, K * p["tokens"]), (lg, l, s)
    for l in range(L):
        for e in range(E):
            assert allp["c"][l][e] == prof["zh"]["c"][l][e] + prof["ru"]["c"][l][e], (l, e)
    print("profiles: zh %d rows, ru %d rows = prompt - cached tokens of the answers; _all = zh + ru"
          % (want["zh"], want["ru"]))

    # 2. a lone request's profile equals the raw routing of its text
    one = read_prof(os.path.join(out, "one.prof"))
    raw1 = J("one.ppl.json")["routing"]
    moe = [l for l in range(L) if sum(one["c"][l])]
    assert [one["c"][l] for l in moe] == raw1, (one["c"], raw1)
    print("one request: its profile = coli perplexity --routing of its text, %d MoE layers" % len(moe))

    # 3. raw routing per language, collected record by record, independently
    raw = {"zh": [[0] * E for _ in moe], "ru": [[0] * E for _ in moe]}
    ntok = {"zh": 0, "ru": 0}
    for name in sorted(os.listdir(out)):
        m = re.match(r"rec\d+\.(zh|ru)\.ppl\.json$", name)
        if not m:
            continue
        d = J(name)
        ntok[m.group(1)] += d["tokens"]
        for i, row in enumerate(d["routing"]):
            for e in range(E):
                raw[m.group(1)][i][e] += row[e]
    cmp = J("compare.json")
    assert cmp["a"] == "zh" and cmp["b"] == "ru"
    for side, sign in (("a_specific", 1), ("b_specific", -1)):
        named = cmp[side]
        assert len(named) >= 3, (side, named)
        for x in named:
            l, e = x["layer"], x["expert"]
            # the score, recomputed from the profile's counts
            pa, pb = prof["zh"]["c"][l][e], prof["ru"]["c"][l][e]
            d, z = score(pa, prof["zh"]["tokens"], pb, prof["ru"]["tokens"])
            assert x["a_count"] == pa and x["b_count"] == pb, x
            assert abs(d - x["log_odds"]) < 1e-9 and abs(z - x["z"]) < 1e-9, (x, d, z)
        # the top three named, against the raw counts
        for x in named[:3]:
            i = moe.index(x["layer"])
            d, z = score(raw["zh"][i][x["expert"]], ntok["zh"], raw["ru"][i][x["expert"]], ntok["ru"])
            assert sign * z > 3.3, ("raw counts do not confirm", side, x, z)
        # the most specific expert by the raw counts is the one named first
        best = max(((sign * score(raw["zh"][i][e], ntok["zh"], raw["ru"][i][e], ntok["ru"])[1], moe[i], e)
                    for i in range(len(moe)) for e in range(E)))
        assert (best[1], best[2]) == (named[0]["layer"], named[0]["expert"]), (side, best, named[0])
        print("%s: layer %d expert %d first (z %.1f from the profile, %.1f from the raw counts); "
              "top 3 confirmed at |z| > 3.3" % (side, named[0]["layer"], named[0]["expert"],
                                                named[0]["z"], sign * best[0]))

    # 4. show: concentration and entropy from the counts
    show = J("show.json")
    for ly in show["layers"]:
        c = prof["zh"]["c"][ly["layer"]]
        t = sum(c)
        conc = sum(sorted(c, reverse=True)[:K]) / t
        h = -sum(x / t * math.log2(x / t) for x in c if x)
        assert abs(conc - ly["concentration"]) < 1e-9 and abs(h - ly["entropy_bits"]) < 1e-9, ly
        assert [x["expert"] for x in ly["top"]] == sorted(range(E), key=lambda e: (-c[e], e))[:len(ly["top"])]
    print("show: concentration and entropy of %d layers recomputed" % len(show["layers"]))

    # 5. the PNG: one band per routed layer, columns in the cluster order
    cl = J("cluster1.json")
    order = cl["order"]
    w, h, rows = png_gray(os.path.join(out, "atlas.png"))
    S = 4
    assert w == E * S and h == len(moe) * S, (w, h)
    vmax = max(max(allp["c"][l]) for l in moe)
    for r, l in enumerate(moe):
        assert sorted(order[l]) == list(range(E)), order[l]
        for j, e in enumerate(order[l]):
            want_px = int(math.floor(255 * allp["c"][l][e] / vmax + 0.5))
            for y in range(r * S, (r + 1) * S):
                for x in range(j * S, (j + 1) * S):
                    assert rows[y][x] == want_px, (l, e, y, x, rows[y][x], want_px)
        # columns follow the clusters: cluster ids never decrease along a band
        cid = {(m[0], m[1]): c["id"] for c in cl["clusters"] for m in c["members"]}
        ids = [cid[(l, e)] for e in order[l]]
        assert ids == sorted(ids), ids
    print("png: %d x %d, every pixel = round(255 x count / max) in cluster order" % (w, h))
    print("cluster: %d clusters, favoured by %s" % (len(cl["clusters"]),
                                                    ", ".join(c["favours"] for c in cl["clusters"])))


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        inputs(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3])
