#!/usr/bin/python3
"""plot.py LOG.json OUT.png - training and validation loss against tokens
seen (main next-token loss; MTP loss dashed)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    log = json.load(open(sys.argv[1]))
    st, va = log["steps"], log["val"]
    fig, ax = plt.subplots(figsize=(6, 3.4), dpi=80)
    # Smooth the per-step training loss over 5 steps: batches are small.
    k = 5
    tr = [sum(s[3] for s in st[max(0, i - k + 1):i + 1]) / len(st[max(0, i - k + 1):i + 1]) for i in range(len(st))]
    ax.plot([s[2] / 1e3 for s in st], tr, lw=1, label="train")
    ax.plot([v[2] / 1e3 for v in va], [v[3] for v in va], "o-", ms=3, label="validation")
    ax.plot([v[2] / 1e3 for v in va], [v[4] for v in va], "o--", ms=3, label="validation, MTP (t+2)")
    ax.set_xlabel("training tokens (thousands)")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title("default model: %.1fM params, %.0f min on 2 shared cores" %
                 (log["params"] / 1e6, log["wall_s"] / 60), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
