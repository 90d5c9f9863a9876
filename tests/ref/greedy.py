#!/usr/bin/env python3
"""greedy.py CONTAINER IDS N - the greedy continuation of the token ids IDS
(comma separated) by the float64 numpy reference (ref_model.py) run on the
container's own weights (container_weights.py, decoded from the documented
byte layout, independently of the C code): up to N tokens, stopping at the
end-of-sequence token (not printed). Prints the ids, space separated, as
`coli generate --ids` does. The independent check beside a golden answer
the engine itself produced (tests/model_default.sh)."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import container_weights  # noqa: E402
import ref_model  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    model, ids, n = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], int(sys.argv[3])
    with open(os.path.join(model, "manifest.json")) as f:
        cfg = json.load(f)["config"]
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        m = ref_model.Model(d, ck=container_weights.ContainerCheckpoint(model))
        chain, out = list(ids), []
        eos = cfg.get("eos_token_id")
        for _ in range(n):
            t = int(m.forward(chain)[-1].argmax())
            if t == eos:
                break
            out.append(t)
            chain.append(t)
    print(" ".join(map(str, out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
