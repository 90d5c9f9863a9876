#!/usr/bin/python3
"""train.py CORPUS_DIR TOK_DIR OUT_DIR [--minutes M] [--seed S] ...

Trains the default model (model.py) on the chat exchanges of corpus.py,
tokenized with the BPE of bpe.py, and writes:
  OUT_DIR/hf/            the Hugging Face checkpoint (config.json, F32
                         model.safetensors, tokenizer files)
  OUT_DIR/log.json       hyper-parameters, seed, the loss curve
                         (train loss per step, validation loss at intervals)
  OUT_DIR/model.pt       the final state dict (to resume or inspect)

Sequences: whole exchanges (each starting with BOS at position 0) are packed
greedily into windows of --ctx tokens, padding masked out of the loss. Loss
= next-token cross-entropy + --mtp-weight * the MTP head's cross-entropy
(token i+2). AdamW, linear warm-up then cosine decay to 10%, for a fixed
wall-time budget (the schedule follows elapsed time, as the speed of a
step on shared cores is not known in advance). The routing bias follows the auxiliary-loss-free
rule after each step (--gamma).
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import model as M  # noqa: E402


def load_split(corpus, name, tok):
    rows = []
    with open(os.path.join(corpus, name + ".jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            r["ids"] = tok.encode(r["text"])
            rows.append(r)
    return rows


def pack(rows, ctx, rng, pad):
    """Windows [N, ctx] of whole exchanges, target mask (1 = predict)."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    wins, cur = [], []
    for i in order:
        ids = rows[i]["ids"]
        if len(ids) > ctx:
            continue
        if len(cur) + len(ids) > ctx:
            wins.append(cur)
            cur = []
        cur = cur + ids
    if cur:
        wins.append(cur)
    x = torch.full((len(wins), ctx), pad, dtype=torch.long)
    m = torch.zeros((len(wins), ctx), dtype=torch.bool)
    for k, w in enumerate(wins):
        x[k, :len(w)] = torch.tensor(w)
        m[k, :len(w)] = True
    return x, m


def losses(model, x, m, mtp_weight):
    logits, mlog = model(x, mtp=mtp_weight > 0)
    V = logits.shape[-1]
    tgt = x[:, 1:]
    mask = m[:, 1:].float()
    ce = F.cross_entropy(logits[:, :-1].reshape(-1, V), tgt.reshape(-1), reduction="none").view(tgt.shape)
    main = (ce * mask).sum() / mask.sum()
    if mlog is None:
        return main, None
    t2 = x[:, 2:]
    m2 = m[:, 2:].float()
    ce2 = F.cross_entropy(mlog[:, :-1].reshape(-1, V), t2.reshape(-1), reduction="none").view(t2.shape)
    return main, (ce2 * m2).sum() / m2.sum()


@torch.no_grad()
def evaluate(model, x, m, bs=16):
    model.eval()
    tot = tot2 = n = n2 = 0.0
    for i in range(0, len(x), bs):
        xb, mb = x[i:i + bs], m[i:i + bs]
        a, b = losses(model, xb, mb, 1.0)
        k = mb[:, 1:].sum().item()
        k2 = mb[:, 2:].sum().item()
        tot += a.item() * k
        n += k
        tot2 += b.item() * k2
        n2 += k2
    model.train()
    return tot / n, tot2 / n2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("tok")
    ap.add_argument("out")
    ap.add_argument("--minutes", type=float, default=40)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--gamma", type=float, default=1e-3)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--val-windows", type=int, default=16, help="validation windows used during training")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    tok = bpe.Tokenizer(a.tok)
    train_rows = load_split(a.corpus, "train", tok)
    val_rows = load_split(a.corpus, "val", tok)
    vx, vm = pack(val_rows, a.ctx, random.Random(0), tok.eos)
    vx, vm = vx[:a.val_windows], vm[:a.val_windows]
    model = M.DeepSeekV3()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    log = {"args": vars(a), "config": model.c, "params": sum(p.numel() for p in model.parameters()),
           "train_tokens_per_epoch": sum(len(r["ids"]) for r in train_rows), "steps": [], "val": []}
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    budget = a.minutes * 60
    step = 0
    seen = 0
    epoch = 0
    done = False
    while not done:
        x, m = pack(train_rows, a.ctx, rng, tok.eos)
        perm = torch.randperm(len(x))
        for i in range(0, len(x) - a.batch + 1, a.batch):
            idx = perm[i:i + a.batch]
            xb, mb = x[idx], m[idx]
            # The schedule runs on wall time, not steps: the 2 cores are
            # shared, so the speed of a step is not known in advance.
            frac = min(1.0, (time.time() - t0) / budget)
            if step < a.warmup:
                lr = a.lr * (step + 1) / a.warmup
            else:
                lr = a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
            for g in opt.param_groups:
                g["lr"] = lr
            main_loss, mtp_loss = losses(model, xb, mb, a.mtp_weight)
            loss = main_loss + a.mtp_weight * mtp_loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            model.balance(a.gamma)
            step += 1
            seen += int(mb.sum())
            log["steps"].append([step, round(time.time() - t0, 1), seen, round(main_loss.item(), 4),
                                 round(mtp_loss.item(), 4)])
            if step % 10 == 0:
                print("step %d ep %d tok %d lr %.2e loss %.3f mtp %.3f %.0fs" %
                      (step, epoch, seen, lr, main_loss.item(), mtp_loss.item(), time.time() - t0), flush=True)
            last = time.time() - t0 >= budget
            if step % a.eval_every == 0 or last:
                vl, vl2 = evaluate(model, vx, vm)
                log["val"].append([step, round(time.time() - t0, 1), seen, round(vl, 4), round(vl2, 4)])
                print("  val %.4f (ppl %.2f) mtp %.4f" % (vl, math.exp(vl), vl2), flush=True)
            if last:
                done = True
                break
        epoch += 1
    log["wall_s"] = round(time.time() - t0, 1)
    log["epochs"] = seen / log["train_tokens_per_epoch"]
    torch.save(model.state_dict(), os.path.join(a.out, "model.pt"))
    M.export_hf(model, os.path.join(a.out, "hf"), a.tok)
    with open(os.path.join(a.out, "log.json"), "w") as f:
        json.dump(log, f)
    print("done: %d steps, %d tokens, %.1f min" % (step, seen, log["wall_s"] / 60))


if __name__ == "__main__":
    main()
