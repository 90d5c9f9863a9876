#!/usr/bin/python3
"""bpe.py - a small byte-level BPE tokenizer in Hugging Face format.

  bpe.py train CORPUS_DIR OUT_DIR [--vocab 4096]
      learn merges on CORPUS_DIR/train.jsonl (prompts and answers) and write
      OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json
  bpe.py encode TOK_DIR TEXT
      print {"ids": [...]} (special tokens recognised in TEXT, no BOS added:
      the chat template writes it as text, as `coli tokenize` does)

Ids: 0 <｜begin▁of▁sentence｜>, 1 <｜end▁of▁sentence｜>, 2..257 the 256 byte
tokens (byte b -> 2 + b), then the learned merges in order, then
<｜User｜> and <｜Assistant｜> as the last two ids.

Pre-tokenization is the DeepSeek-V3 one (the same Split regexes as its
tokenizer.json: digits in runs of at most 3, CJK/kana runs isolated, then a
GPT-style word/punctuation/space split), followed by the GPT-2 byte-to-
unicode map. Learning is plain BPE over pre-token counts: the most frequent
adjacent pair is merged (ties: the smaller pair of strings), counts are
updated incrementally with a lazy max-heap so a few thousand merges over a
few MB take seconds, not hours.
"""
import argparse
import heapq
import json
import os
import sys
from collections import Counter

import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from byte_alphabet import bytes_to_unicode  # noqa: E402

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
SPECIALS = [BOS, EOS]
TAIL_SPECIALS = [USER, ASSISTANT]

SPLITS = [
    r"\p{N}{1,3}",
    r"[一-龥぀-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
]
_SPLIT_RE = [regex.compile(p) for p in SPLITS]
_SPECIAL_RE = regex.compile("|".join(regex.escape(s) for s in SPECIALS + TAIL_SPECIALS))
HERE = os.path.dirname(os.path.abspath(__file__))


B2U = bytes_to_unicode()


def pretokenize(text):
    """Pre-tokens of special-free text, as byte-level strings."""
    pieces = [text]
    for rx in _SPLIT_RE:
        out = []
        for p in pieces:
            pos = 0
            for m in rx.finditer(p):
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    return ["".join(B2U[b] for b in p.encode("utf-8")) for p in pieces]


def train(texts, vocab_size):
    n_merges = vocab_size - len(SPECIALS) - 256 - len(TAIL_SPECIALS)
    counts = Counter()
    for t in texts:
        for part in _SPECIAL_RE.split(t):
            counts.update(pretokenize(part))
    words = [list(w) for w in counts]
    freq = [counts[w] for w in counts]
    pairs = Counter()
    where = {}
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += freq[i]
            where.setdefault((a, b), set()).add(i)
    # Max-heap on (count, then the lexicographically smaller pair first).
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        c, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -c:
            if pairs.get(p, 0) > 0:
                heapq.heappush(heap, (-pairs[p], p))
            continue
        if -c < 2:
            break
        merges.append(p)
        a, b = p
        ab = a + b
        changed = set()
        for i in list(where.get(p, ())):
            w = words[i]
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= freq[i]
                changed.add((x, y))
            nw = []
            j = 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    nw.append(ab)
                    j += 2
                else:
                    nw.append(w[j])
                    j += 1
            words[i] = nw
            for x, y in zip(nw, nw[1:]):
                pairs[(x, y)] += freq[i]
                where.setdefault((x, y), set()).add(i)
                changed.add((x, y))
        pairs.pop(p, None)
        where.pop(p, None)
        for q in changed:
            if q != p and pairs.get(q, 0) > 0:
                heapq.heappush(heap, (-pairs[q], q))
    return merges


def build_vocab(merges):
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for b in range(256):
        vocab[B2U[b]] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    for s in TAIL_SPECIALS:
        vocab[s] = len(vocab)
    return vocab


def tokenizer_json(merges):
    vocab = build_vocab(merges)
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": True, "special": True} for s in SPECIALS + TAIL_SPECIALS]
    pre = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
           for r in SPLITS]
    pre.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False})
    bos = {"SpecialToken": {"id": BOS, "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos,
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS: {"id": BOS, "ids": [0], "tokens": [BOS]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": ["%s %s" % m for m in merges]},
    }


def tokenizer_config():
    with open(os.path.join(HERE, "chat_template.jinja"), encoding="utf-8") as f:
        tpl = f.read()

    def tok(s):
        return {"__type": "AddedToken", "content": s, "lstrip": False, "normalized": True,
                "rstrip": False, "single_word": False}
    return {"add_bos_token": True, "add_eos_token": False, "bos_token": tok(BOS),
            "clean_up_tokenization_spaces": False, "eos_token": tok(EOS), "legacy": True,
            "model_max_length": 256, "pad_token": tok(EOS), "sp_model_kwargs": {},
            "unk_token": None, "tokenizer_class": "LlamaTokenizerFast", "chat_template": tpl}


class Tokenizer:
    """Encoder/decoder for a tokenizer.json written by this file."""

    def __init__(self, tok_dir):
        with open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8") as f:
            j = json.load(f)
        self.vocab = j["model"]["vocab"]
        self.inv = {i: s for s, i in self.vocab.items()}
        self.ranks = {tuple(m.split(" ")): r for r, m in enumerate(j["model"]["merges"])}
        self.special = {s: self.vocab[s] for s in SPECIALS + TAIL_SPECIALS}
        self.u2b = {u: b for b, u in B2U.items()}
        self.cache = {}
        self.bos, self.eos = self.special[BOS], self.special[EOS]

    def _bpe(self, w):
        if w in self.cache:
            return self.cache[w]
        sym = list(w)
        while len(sym) > 1:
            best = min(range(len(sym) - 1), key=lambda i: self.ranks.get((sym[i], sym[i + 1]), 1 << 30))
            pair = (sym[best], sym[best + 1])
            if pair not in self.ranks:
                break
            out = []
            i = 0
            while i < len(sym):
                if i + 1 < len(sym) and (sym[i], sym[i + 1]) == pair:
                    out.append(sym[i] + sym[i + 1])
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            sym = out
        ids = [self.vocab[s] for s in sym]
        self.cache[w] = ids
        return ids

    def encode(self, text):
        ids = []
        pos = 0
        for m in _SPECIAL_RE.finditer(text):
            for w in pretokenize(text[pos:m.start()]):
                ids += self._bpe(w)
            ids.append(self.special[m.group()])
            pos = m.end()
        for w in pretokenize(text[pos:]):
            ids += self._bpe(w)
        return ids

    def decode(self, ids, skip_special=False):
        out = []
        for i in ids:
            s = self.inv[i]
            if s in self.special:
                if not skip_special:
                    out.append(s.encode("utf-8"))
                continue
            out.append(bytes(self.u2b[c] for c in s))
        return b"".join(out).decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus")
    t.add_argument("out")
    t.add_argument("--vocab", type=int, default=4096)
    e = sub.add_parser("encode")
    e.add_argument("tok")
    e.add_argument("text")
    a = ap.parse_args()
    if a.cmd == "encode":
        print(json.dumps({"ids": Tokenizer(a.tok).encode(a.text)}))
        return 0
    texts = []
    with open(os.path.join(a.corpus, "train.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            texts.append(r["text"])
    merges = train(texts, a.vocab)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(merges), f, ensure_ascii=False, indent=1)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, ensure_ascii=False, indent=2)
    print("merges: %d, vocab: %d" % (len(merges), len(build_vocab(merges))), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
