#!/usr/bin/env python3
"""tiktoken_mk.py TOKENIZER_JSON OUT_DIR [--pat-str P] - a tiktoken-format
tokenizer (tiktoken.model + tokenizer_config.json, laid out as Kimi-K2 ships
them) made from a real byte-level BPE tokenizer.json, for testing the
tiktoken loader against the reference js-tiktoken.

Ranks: the 256 single bytes first (in byte order), then each merge's
result in merge order, then the remaining vocabulary strings; a token's id
is its rank. Special tokens: the reserved range n..n+255, a few named in
added_tokens_decoder ([BOS], [EOS], <|im_user|>, <|im_end|>), the rest
unnamed (the loader names them <|reserved_token_ID|>). Without --pat-str
the config names tokenizer_class TikTokenTokenizer, i.e. Kimi's pattern."""
import base64, json, os, sys

# the byte alphabet lives with the tokenizer trainer (tools/train)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "train"))
from byte_alphabet import unicode_to_bytes  # noqa: E402


def main():
    args = sys.argv[1:]
    pat = None
    if "--pat-str" in args:
        i = args.index("--pat-str")
        pat = args[i + 1]
        del args[i:i + 2]
    src, out = args
    tj = json.load(open(src, encoding="utf-8"))
    dec = unicode_to_bytes()
    special = {t["content"] for t in tj.get("added_tokens", [])}

    def raw(s):
        try:
            return bytes(dec[c] for c in s)
        except KeyError:
            return None

    ranked, order = set(), []

    def add(b):
        if b and b not in ranked:
            ranked.add(b)
            order.append(b)

    for b in range(256):
        add(bytes([b]))
    for m in tj["model"]["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        ra, rb = raw(a), raw(b)
        if ra is not None and rb is not None:
            add(ra + rb)
    for s in sorted(tj["model"]["vocab"], key=lambda s: tj["model"]["vocab"][s]):
        if s not in special:
            add(raw(s))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tiktoken.model"), "w") as f:
        for r, b in enumerate(order):
            f.write("%s %d\n" % (base64.b64encode(b).decode(), r))
    n = len(order)
    names = {n: "[BOS]", n + 1: "[EOS]", n + 3: "<|im_user|>", n + 4: "<|im_end|>"}
    cfg = {"added_tokens_decoder": {str(i): {"content": c, "special": True} for i, c in names.items()},
           "bos_token": "[BOS]", "eos_token": "[EOS]"}
    if pat is None:
        cfg["tokenizer_class"] = "TikTokenTokenizer"
    else:
        cfg["pat_str"] = pat
    json.dump(cfg, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=1)
    print(n)


main()
