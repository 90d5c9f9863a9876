#!/usr/bin/python3
"""batch_projection.py - what `coli batch` at --parallel B would do for
GLM-5.2 on a small box, projected from the GLM-5 slice's measured costs.
A projection, not a measurement.

    bench/batch_projection.py --row-ms MS [--slice-config PATH]
        [--disk-gbps 7] [--ram-gb 25 128] [--prompt 450] [--gen 200]
        [--cores 16] [--measured-cores 2]

Inputs measured on this machine (bench/batch_parallel.sh prints them):
  --row-ms   compute per row on the slice at large --parallel: the run's
             compute seconds (wall minus disk wait) / (prompt + completion
             rows), in ms. It is scaled to GLM-5.2 by the ratio of the
             multiply-accumulates a row costs in each (counted below from
             the two configs), so the per-MAC speed is the slice's, and
             by --measured-cores / --cores (the projected box's cores, at
             this machine's per-core speed: linear scaling assumed).
Model of GLM-5.2 (the public config; bench/model_sizes.py's counts):
  75 MoE layers x 256 experts of 21.2 MB (int4-g64), top-8, one shared
  expert; 3 dense layers; dense part 12.2 GB resident; KV 576 f32 per
  token and layer (MLA latent + rope key) plus the DSA index key (128 f32)
  on the 78 layers.
Assumptions, stated so they can be argued with:
  - routing independent across sequences and even over experts (no hot
    set): per layer a step needs E (1 - (1 - k/E)^B) records; the cache
    holds a fraction c of all records and serves that fraction of them
    (what the streaming store keeps under even routing);
  - the RAM left after the dense part, the KV of B sequences of
    prompt + gen tokens and 2 GB of working memory caches experts;
  - a step's reads overlap its compute (the store interleaves them), so a
    step takes max(read time, compute time); the slower of the two is
    named;
  - prompt rows cost as decode rows (prefill is done in the same steps);
    attention over the document's own context is in the row cost.
Prints, per RAM size and B: the records read per step, bytes per
generated token, step time, what binds it, aggregate completion tok/s and
documents per hour (prompt + gen tokens each).
"""
import argparse
import json

GLM52 = dict(hidden_size=6144, intermediate_size=12288, moe_intermediate_size=2048, num_hidden_layers=78,
             first_k_dense_replace=3, num_attention_heads=64, q_lora_rank=2048, kv_lora_rank=512,
             qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256, n_routed_experts=256,
             n_shared_experts=1, num_experts_per_tok=8, vocab_size=154880, index_head_dim=128,
             index_n_heads=32)
RECORD = 21.2e6      # bytes of one GLM-5.2 expert record, int4-g64
DENSE = 12.2e9       # resident dense part
WORK = 2e9           # step state, buffers, the process


def row_macs(c):
    """Multiply-accumulates of one row through every layer (weights only)."""
    H, nh = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    L, ql, kl = c["num_hidden_layers"], c["q_lora_rank"], c["kv_lora_rank"]
    attn = H * ql + ql * nh * (nope + rope) + H * (kl + rope) + nh * nope * kl + nh * kl * v + nh * v * H
    attn += ql * c.get("index_n_heads", 0) * c.get("index_head_dim", 0) + H * c.get("index_head_dim", 0)
    dense = 3 * H * c["intermediate_size"]
    moe = (c["num_experts_per_tok"] + c["n_shared_experts"]) * 3 * H * c["moe_intermediate_size"]
    moe += H * c["n_routed_experts"]
    nd = c["first_k_dense_replace"]
    return L * attn + nd * dense + (L - nd) * moe + H * c["vocab_size"]


def kv_per_token(c):
    return c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"] + c.get("index_head_dim", 0)) * 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--row-ms", type=float, required=True)
    ap.add_argument("--slice-config", default="/var/tmp/coli-glm5-slice/model/manifest.json")
    ap.add_argument("--disk-gbps", type=float, default=7.0)
    ap.add_argument("--ram-gb", type=float, nargs="+", default=[25, 128])
    ap.add_argument("--prompt", type=int, default=450)
    ap.add_argument("--gen", type=int, default=200)
    ap.add_argument("--parallel", type=int, nargs="+", default=[1, 16, 64, 128, 256])
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--measured-cores", type=int, default=2)
    a = ap.parse_args()
    m = json.load(open(a.slice_config))
    sl = m.get("config", m)
    scale = row_macs(GLM52) / row_macs(sl)
    row_s = a.row_ms / 1e3 * scale * a.measured_cores / a.cores
    E, k = GLM52["n_routed_experts"], GLM52["num_experts_per_tok"]
    L = GLM52["num_hidden_layers"] - GLM52["first_k_dense_replace"]
    all_bytes = L * E * RECORD
    kv_tok = kv_per_token(GLM52)
    print("GLM-5.2 projected from the slice (row %.2f ms on %d cores x %.1f MACs ratio, on %d cores = %.0f ms "
          "a row); disk %.1f GB/s; documents of %d + %d tokens\n" % (a.row_ms, a.measured_cores, scale, a.cores,
                                                                     row_s * 1e3, a.disk_gbps, a.prompt, a.gen))
    print("| RAM | --parallel | KV GB | cache share | records / step | GB / generated token | step s "
          "| bound by | tok/s | documents / hour |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for ram in a.ram_gb:
        for B in a.parallel:
            kv = B * (a.prompt + a.gen) * kv_tok
            cache = ram * 1e9 - DENSE - kv - WORK
            if cache < 0:
                print("| %g GB | %d | %.1f | - | - | - | - | KV does not fit | - | - |" % (ram, B, kv / 1e9))
                continue
            c = min(1.0, cache / all_bytes)
            union = E * (1 - (1 - k / E) ** B)
            reads = L * union * (1 - c)
            io = reads * RECORD / (a.disk_gbps * 1e9)
            # a step: B rows; prompts take (prompt / gen) steps' worth of
            # rows per generated token (prefill in the same steps)
            rows = B * (a.prompt + a.gen) / a.gen
            comp = rows * row_s
            step = max(io, comp)
            tps = B / step
            print("| %g GB | %d | %.1f | %.3f | %.0f | %.2f | %.2f | %s | %.2f | %.0f |" % (
                ram, B, kv / 1e9, c, reads, reads * RECORD / B / 1e9, step, "disk" if io >= comp else "compute",
                tps, tps * 3600 / a.gen))


main()
