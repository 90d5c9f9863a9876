#!/usr/bin/env python3
"""ref_logits.py HF_DIR --tokens 1,2,3 [--incremental]

Print {"logits": [[...] one row per position]} computed by the numpy
reference (ref_model.py) from a Hugging Face checkpoint directory, in the
same shape as `coli logits`."""
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
    a = ap.parse_args()
    m = ref_model.Model(a.dir)
    toks = parse_tokens(a.tokens)
    bad = [t for t in toks if not 0 <= t < m.cfg.V]
    if bad:
        print("ref_logits: token %d out of range 0..%d" % (bad[0], m.cfg.V - 1), file=sys.stderr)
        return 2
    lg = m.forward_incremental(toks) if a.incremental else m.forward(toks)
    json.dump({"logits": lg.tolist()}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
