#!/usr/bin/python3
"""analyze.py --hf HF --tok TOK --corpus CORPUS --f32 C_F32 --int4 C_INT4
              --coli COLI --data DATA_DIR --out RESULTS.json

The quality figures of the default model, in PyTorch and in the engine:

- the held-out sample DATA_DIR/eval/val.txt (10 validation exchanges per
  language, chat-rendered, concatenated) and its loss computed exactly as
  `coli perplexity` does (whole-file tokenization, non-overlapping windows
  of 256 from an empty cache): PyTorch on the trained f32 weights and on the
  weights read back from the int4 container, the engine on the f32 and the
  int4 containers;
- MTP draft acceptance on all validation exchanges: how often the MTP
  head's argmax at position i equals the main model's argmax at i+1 (both
  predict token i+2);
- routing specialisation: per language (validation answers only, as plain
  text), per MoE layer, the share of routed slots that go to the language's
  own top-4 experts (uniform routing: 4/16 = 25%), in PyTorch and from the
  engine (`coli perplexity --routing`);
- greedy answers of the int4 container to one prompt per language.

Writes DATA_DIR/eval/{val.txt, tokenizer.jsonl, expected.json} (the test
fixtures) and RESULTS.json (everything, for the README).
"""
import argparse
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import container  # noqa: E402
import corpus as CORPUS  # noqa: E402
import model as M  # noqa: E402
import train as TR  # noqa: E402

LANGS = list(CORPUS.PACKAGES)
WINDOW = 256
PER_LANG = 10


def rows_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f]


def with_container_weights(model, path):
    w = container.read_container(path)
    with torch.no_grad():
        for n, t in model.hf_tensors().items():
            t.copy_(torch.from_numpy(w[n]).view(t.shape))
    return model


@torch.no_grad()
def windowed(model, ids, routing=False):
    """Summed NLL and scored count as `coli perplexity`; optional expert
    counts per MoE layer of the main model."""
    nll, scored = 0.0, 0
    moes = [l.mlp for l in model.layers if isinstance(l.mlp, M.MoE)]
    E = model.c["n_routed_experts"]
    counts = torch.zeros(len(moes), E, dtype=torch.long)
    for w0 in range(0, len(ids), WINDOW):
        x = torch.tensor([ids[w0:w0 + WINDOW]])
        lg, _ = model(x, mtp=False)
        if x.shape[1] > 1:
            nll += F.cross_entropy(lg[0, :-1], x[0, 1:], reduction="sum").item()
            scored += x.shape[1] - 1
        if routing:
            for k, m in enumerate(moes):
                counts[k] += torch.bincount(m.last_topk.flatten(), minlength=E)
    return nll, scored, counts


@torch.no_grad()
def mtp_acceptance(model, tok, rows):
    x, m = TR.pack(rows, WINDOW, __import__("random").Random(0), tok.eos)
    acc = n = 0
    for i in range(0, len(x), 8):
        xb, mb = x[i:i + 8], m[i:i + 8]
        lg, ml = model(xb)
        main_next = lg[:, 1:-1].argmax(-1)    # prediction of token i+2 at i+1
        draft = ml[:, :-1].argmax(-1)         # MTP at i: token i+2
        valid = mb[:, 2:]
        acc += ((main_next == draft) & valid).sum().item()
        n += valid.sum().item()
    return acc / n


def specialisation(counts):
    """Per layer: share of slots in the language's own top-4 experts."""
    out = []
    for row in counts:
        tot = row.sum().item()
        top = torch.topk(row, 4).indices.tolist()
        out.append({"top4": sorted(top), "share": row[top].sum().item() / tot if tot else 0.0})
    return out


def coli_json(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr))
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    for k in ("hf", "tok", "corpus", "f32", "int4", "coli", "data", "out"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tok = bpe.Tokenizer(a.tok)
    val = rows_of(os.path.join(a.corpus, "val.jsonl"))
    for r in val:
        r["ids"] = tok.encode(r["text"])
    ev = os.path.join(a.data, "eval")
    os.makedirs(ev, exist_ok=True)
    # The held-out sample: PER_LANG exchanges per language, interleaved.
    per = {l: [r for r in val if r["lang"] == l][:PER_LANG] for l in LANGS}
    sample = [per[l][i] for i in range(PER_LANG) for l in LANGS]
    val_txt = os.path.join(ev, "val.txt")
    with open(val_txt, "w", encoding="utf-8") as f:
        f.write("".join(r["text"] for r in sample))
    with open(val_txt, encoding="utf-8") as f:
        sample_ids = tok.encode(f.read())
    # Tokenizer fixture: held-out strings and their ids from this tokenizer.
    fx = [r["answer"] for l in LANGS for r in per[l][:3]] + [r["text"] for r in sample[:7]] + [
        "Numbers 1234567 and 3.14159, 2026-11-30!", "  spaces   and\ttabs\n\nnew lines  ",
        "Mixed: Hello, мир, 世界, Grüße, ¿qué?", "emoji 🙂 and symbols €£¥ ™",
        "<｜User｜>Erzähl mir einen Spruch.<｜Assistant｜>"]
    with open(os.path.join(ev, "tokenizer.jsonl"), "w", encoding="utf-8") as f:
        for s in fx:
            f.write(json.dumps({"text": s, "ids": tok.encode(s)}, ensure_ascii=False) + "\n")

    res = {"window": WINDOW, "sample_tokens": len(sample_ids), "sample_exchanges": len(sample)}
    f32 = M.load_hf(a.hf).eval()
    q = with_container_weights(M.load_hf(a.hf), a.int4).eval()
    for name, mdl in (("pytorch_f32", f32), ("pytorch_int4", q)):
        nll, sc, _ = windowed(mdl, sample_ids)
        res["loss_" + name] = nll / sc
    for name, path in (("engine_f32", a.f32), ("engine_int4", a.int4)):
        j = coli_json([a.coli, "perplexity", path, val_txt, "--json"])
        res["loss_" + name] = j["loss"]
        res["engine_tokens_" + name] = j["tokens"]
        res["engine_tokens_per_s_" + name] = j["tokens_per_s"]
    res["mtp_acceptance_f32"] = mtp_acceptance(f32, tok, val)
    res["mtp_acceptance_int4_int8mtp"] = mtp_acceptance(q, tok, val)
    # Routing: validation answers per language as plain text.
    res["routing"] = {}
    for l in LANGS:
        txt = "\n".join(r["answer"] for r in val if r["lang"] == l)
        p = os.path.join(os.path.dirname(os.path.abspath(a.out)), "answers-%s.txt" % l)
        with open(p, "w", encoding="utf-8") as f:
            f.write(txt)
        _, _, cf = windowed(f32, tok.encode(txt), routing=True)
        _, _, cq = windowed(q, tok.encode(txt), routing=True)
        je = coli_json([a.coli, "perplexity", a.int4, p, "--json", "--routing"])
        ce = torch.tensor(je["routing"])
        res["routing"][l] = {"pytorch_f32": specialisation(cf), "pytorch_int4": specialisation(cq),
                             "engine_int4": specialisation(ce), "engine_counts": je["routing"],
                             "pytorch_int4_counts": cq.tolist()}
    # Greedy answers of the shipped container.
    gold = []
    for l in LANGS:
        prompt = CORPUS.PROMPTS[l][0]
        r = subprocess.run([a.coli, "generate", a.int4, "-p", bpe.USER + prompt + bpe.ASSISTANT, "-n", "48"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr)
        gold.append({"lang": l, "prompt": prompt, "text": r.stdout})
    res["golden"] = gold
    exp = {k: res[k] for k in ("window", "sample_tokens", "loss_pytorch_f32", "loss_pytorch_int4")}
    exp["tolerance"] = 0.02
    exp["golden"] = gold
    with open(os.path.join(ev, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(exp, f, ensure_ascii=False, indent=1)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, ensure_ascii=False, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k not in ("routing", "golden")}, indent=1))
    for l in LANGS:
        rr = res["routing"][l]
        print(l, " ".join("L%d %s %.0f%%/%.0f%%" % (i + 1, x["top4"], 100 * x["share"], 100 * y["share"])
                          for i, (x, y) in enumerate(zip(rr["pytorch_f32"], rr["engine_int4"]))))
    for g in gold:
        print(g["lang"], repr(g["text"][:100]))
    print("ppl f32 %.3f" % math.exp(res["loss_pytorch_f32"]))


if __name__ == "__main__":
    main()
