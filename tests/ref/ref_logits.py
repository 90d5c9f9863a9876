#!/usr/bin/env python3
"""ref_logits.py HF_DIR --tokens 1,2,3 [--incremental | --mtp]

Print {"logits": [[...] one row per position]} computed by the numpy
reference (ref_model.py) from a Hugging Face checkpoint directory, in the
same shape as `coli logits`. With --mtp, the first MTP module's draft
logits instead: T-1 rows, row i predicting token i+2."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_model  # noqa: E402


def parse_tokens(s):
    return [int(t) for t in s.replace(",", " ").split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--incremental", action="store_true",
                    help="one token at a time through the compressed KV cache")
    ap.add_argument("--mtp", action="store_true", help="draft logits of MTP module 0")
    a = ap.parse_args()
    m = ref_model.Model(a.dir)
    toks = parse_tokens(a.tokens)
    bad = [t for t in toks if not 0 <= t < m.cfg.V]
    if bad:
        print("ref_logits: token %d out of range 0..%d" % (bad[0], m.cfg.V - 1), file=sys.stderr)
        return 2
    if a.mtp:
        if len(toks) < 2:
            print("ref_logits: --mtp needs at least 2 tokens", file=sys.stderr)
            return 2
        lg = m.forward_mtp(toks)
    else:
        lg = m.forward_incremental(toks) if a.incremental else m.forward(toks)
    json.dump({"logits": lg.tolist()}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
