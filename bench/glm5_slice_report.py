#!/usr/bin/python3
"""glm5_slice_report.py RESULTS_DIR [VARIANT...] - the table of bench/glm5_slice.sh.

Reads the JSON that `coli iobench --json` and `coli bench` wrote and prints
a markdown table (one row per run). Also writes RESULTS_DIR/summary.json.

Definitions (all per decoded token):
  needed       bytes the routing needed from the disk: records used that
               were not in RAM (misses, and prefetched records that were
               used) - `coli bench`'s experts.needed_bytes_per_token
  wasted       prefetched records never used (experts.wasted_prefetch_bytes_per_token)
  ceiling      iobench GB/s at the record size (best mode) / needed bytes:
               the rate the drive allows if it read only what decode needs
               (a wrong prefetch guess lowers the ratio to it, it does not
               raise the ceiling); `bench ratio` is the same figure as
               `coli bench --iobench` computes it with its own 2 s iobench
               (io.decode_ratio_to_ceiling)
  read/iobench bytes read (needed + wasted) per second / iobench: how busy
               the reads kept the drive, not closeness to the limit
  io_ms        needed bytes / iobench GB/s  (time the drive needs)
  compute_ms   ms/token of the warm run (every expert a RAM hit)
  step ratio   ms/token / max(io_ms, compute_ms)  (1.0 = perfect overlap)
  step ratio (in-run)  `coli bench`'s experts.step_over_max_io_compute:
               step time / max(time with reads in flight, step - disk
               wait), both from the run itself (on a shared machine the
               warm run may have had a different share of the CPU)
  busy ratio   bytes read / time with reads in flight / iobench: how well
               the reads use the drive while they run
  vs Belady    live RAM hit rate (pinned + cached, prefetched reads not
               counted as hits) / Belady's on the run's own decode trace
               at the same capacity; 'policy' is the best of our policies
               replayed on that trace / Belady (same capacity, no prefetch).
"""
import json
import os
import re
import sys

res = sys.argv[1]


def load(name):
    p = os.path.join(res, name + ".json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def maxrss(name):
    p = os.path.join(res, name + ".time")
    if not os.path.exists(p):
        return None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(p).read())
    return int(m.group(1)) * 1024 if m else None


def readint(name):
    p = os.path.join(res, name)
    return int(open(p).read().split()[0]) if os.path.exists(p) else None


def best_large(io, mode=None):
    if not io:
        return 0
    return max((t["bytes_per_s"] for t in io["tests"]
                if t["ok"] and t["block"] > 4096 and (mode is None or t["mode"] == mode)), default=0)


io = load("iobench")
io_bps, io_direct = best_large(io), best_large(io, "direct")
variants = sys.argv[2:] or ["uniform"]
summary = {"iobench_gbps_at_record_size": io_bps / 1e9, "iobench_direct_gbps": io_direct / 1e9,
           "runs": {}, "cgroup": {}}
rows = []
MiB = 1024 * 1024
RUNS = (("cold", "cold, 1/3 cache"), ("cgroup", "cold, 1/3 cache, cgroup"),
        ("warm", "warm, all cached"), ("heat1", "25% budget, run 1"),
        ("heat2", "25% budget, run 2 (heat.bin)"))
THROTTLED = (("gated", "cold, 1/3, prefetch gated (default)"),
             ("always", "cold, 1/3, COLI_PREFETCH=always"), ("none", "cold, 1/3, --no-prefetch"))
for v in variants:
    vio_bps = io_bps
    if v == "throttled":
        vio_bps = best_large(load("throttled-iobench"))
        summary["throttled_iobench_gbps"] = vio_bps / 1e9
        warm = load("uniform-warm")
    else:
        warm = load(v + "-warm")
    compute_ms = warm["decode"]["ms_per_token"] if warm else None
    for kind, label in (THROTTLED if v == "throttled" else RUNS):
        name = v + "-" + kind
        j = load(name)
        if not j:
            continue
        d, ex, pol = j["decode"], j.get("experts", {}), j.get("policy", {})
        bpt = ex.get("bytes_read_per_token", 0.0)
        npt = ex.get("needed_bytes_per_token", bpt)
        r = {"tok_s": d["tokens_per_s"], "ms_tok": d["ms_per_token"], "cpu_ms_tok": d.get("cpu_ms_per_token"),
             "cpu_share": d.get("cpu_share"),
             "disk_wait_ms": d["time_split"]["disk_wait_ms"], "mb_tok": bpt / 1e6,
             "needed_mb_tok": npt / 1e6, "wasted_mb_tok": ex.get("wasted_prefetch_bytes_per_token", 0.0) / 1e6,
             "bench_ratio": j.get("io", {}).get("decode_ratio_to_ceiling"),
             "gbps": ex.get("achieved_gbps"), "busy_gbps": ex.get("busy_gbps"), "hit": ex.get("hit_rate"),
             "ram_hit": ex.get("cache_hit_rate"), "pf_prec": ex.get("prefetch_precision"),
             "pf_rec": ex.get("prefetch_recall"), "belady": pol.get("belady"),
             "policy_vs_belady": pol.get("best_ratio_to_belady"), "static_best": pol.get("static_best"),
             "working_set": pol.get("working_set_records"), "capacity": pol.get("capacity_records"),
             "hwm": j.get("vm_hwm_bytes"), "maxrss": maxrss(name), "dense": j.get("dense_bytes"),
             "budget": ex.get("budget_pin", 0) + ex.get("budget_cache", 0), "compute_ms": compute_ms}
        r["ram_hit_vs_belady"] = (r["ram_hit"] / r["belady"]) if r["belady"] and r["ram_hit"] is not None else None
        r["hit_vs_belady"] = (r["hit"] / r["belady"]) if r["belady"] and r["hit"] is not None else None
        if vio_bps and npt > 0:
            r["ceiling"] = vio_bps / npt
            r["ratio_ceiling"] = r["tok_s"] / r["ceiling"]
            r["read_ratio"] = r["gbps"] * 1e9 / vio_bps
            r["io_ms"] = 1000.0 * npt / vio_bps
            r["busy_ratio"] = r["busy_gbps"] * 1e9 / vio_bps if r["busy_gbps"] else None
        else:
            r["ceiling"] = r["ratio_ceiling"] = r["read_ratio"] = r["busy_ratio"] = None
            r["io_ms"] = 0.0
        r["step_ratio"] = r["ms_tok"] / max(r["io_ms"], compute_ms) if compute_ms else None
        r["step_ratio_own"] = ex.get("step_over_max_io_compute")
        r["hwm_over"] = r["hwm"] - r["dense"] - r["budget"] if r["hwm"] and r["dense"] is not None else None
        summary["runs"][name] = r
        rows.append((v + ": " + label, r))
    if os.path.exists(os.path.join(res, v + "-cgroup.limit")):
        summary["cgroup"][v] = {"limit": readint(v + "-cgroup.limit"),
                                "max_usage": readint(v + "-cgroup.max_usage"),
                                "failcnt": readint(v + "-cgroup.failcnt")}


def f(v, fmt="%.2f"):
    return "n/a" if v is None else fmt % v


print("iobench at the record size: %.3f GB/s (best mode), %.3f GB/s O_DIRECT%s"
      % (io_bps / 1e9, io_direct / 1e9,
         "; throttled: %.3f GB/s" % summary["throttled_iobench_gbps"] if "throttled_iobench_gbps" in summary else ""))
print()
print("| run | tok/s | ms/tok | CPU ms/tok (share) | disk wait ms | MB read/tok | needed MB/tok | wasted MB/tok "
      "| GB/s | read/iobench | busy read/iobench "
      "| ceiling tok/s (needed bytes) | ratio to ceiling | bench ratio | io ms | compute ms | step/max(io,compute) "
      "| same, in-run | hit (incl. prefetched) "
      "| RAM hit | Belady | RAM hit/Belady | hit/Belady | policies/Belady | best fixed set | pf precision "
      "| pf recall | working set/capacity | VmHWM MiB | over dense+budget MiB |")
print("|" + "---|" * 30)
for label, r in rows:
    print("| " + " | ".join([
        label, f(r["tok_s"]), f(r["ms_tok"], "%.0f"),
        "%s (%s)" % (f(r["cpu_ms_tok"], "%.0f"), f(r["cpu_share"])),
        f(r["disk_wait_ms"], "%.1f"), f(r["mb_tok"], "%.0f"), f(r["needed_mb_tok"], "%.0f"),
        f(r["wasted_mb_tok"], "%.0f"),
        f(r["gbps"]), f(r["read_ratio"]), f(r["busy_ratio"]), f(r["ceiling"]), f(r["ratio_ceiling"]),
        f(r["bench_ratio"]),
        f(r["io_ms"], "%.0f"), f(r["compute_ms"], "%.0f"), f(r["step_ratio"]), f(r["step_ratio_own"]),
        f(r["hit"]), f(r["ram_hit"]), f(r["belady"]), f(r["ram_hit_vs_belady"]), f(r["hit_vs_belady"]),
        f(r["policy_vs_belady"]), f(r["static_best"]), f(r["pf_prec"]), f(r["pf_rec"]),
        "%s/%s" % (r["working_set"], r["capacity"]),
        f(r["hwm"] / MiB if r["hwm"] else None, "%.0f"),
        f(r["hwm_over"] / MiB if r["hwm_over"] is not None else None, "%.0f")]) + " |")
for v, c in summary["cgroup"].items():
    print()
    print("%s cgroup: limit %.0f MiB, max usage %.0f MiB (page cache included), failcnt %d"
          % (v, c["limit"] / MiB, c["max_usage"] / MiB, c["failcnt"]))
# the automatic budget against hand-set ones in the same cgroup (step 3c)
budget = {}
for fn in sorted(os.listdir(res)):
    m = re.match(r"(\w+)-budget-(auto|\d+)-(\d+)\.(json|failed)$", fn)
    if not m:
        continue
    b = budget.setdefault((m.group(1), m.group(2)), {"tok_s": [], "failed": 0, "bytes": None, "hit": [],
                                                     "need": [], "share": []})
    if m.group(4) == "failed":
        b["failed"] += 1
        continue
    j = load(fn[:-5])
    ex = j.get("experts", {})
    b["tok_s"].append(j["decode"]["tokens_per_s"])
    b["hit"].append(ex.get("cache_hit_rate") or 0.0)
    b["need"].append(ex.get("needed_bytes_per_token", 0.0) / 1e6)
    b["share"].append(j["decode"].get("cpu_share") or 0.0)
    b["bytes"] = ex.get("budget_pin", 0) + ex.get("budget_cache", 0)
for v in sorted({k[0] for k in budget}):
    med = {}
    for (vv, lab), b in budget.items():
        if vv == v and b["tok_s"]:
            t = sorted(b["tok_s"])
            med[lab] = t[len(t) // 2] if len(t) % 2 else (t[len(t) // 2 - 1] + t[len(t) // 2]) / 2
    hand = {k: x for k, x in med.items() if k != "auto"}
    best = max(hand, key=hand.get) if hand else None
    print()
    print("%s, cold, in the cgroup: the automatic budget against hand-set --expert-cache "
          "(median decode tok/s of the interleaved rounds)" % v)
    print()
    print("| --expert-cache | budget MiB | tok/s | RAM hit | needed MB/tok | CPU share | runs | killed |")
    print("|---|---|---|---|---|---|---|---|")
    for (vv, lab), b in sorted(budget.items(), key=lambda kv: (kv[0][1] != "auto", int(kv[0][1]) if kv[0][1] != "auto" else 0)):
        if vv != v:
            continue
        mean = (lambda v: sum(v) / len(v) if v else None)
        print("| %s | %s | %s | %s | %s | %s | %d | %d |" % (
            "(automatic)" if lab == "auto" else "%.0f MiB" % (int(lab) / MiB),
            f(b["bytes"] / MiB if b["bytes"] is not None else None, "%.0f"), f(med.get(lab)),
            f(mean(b["hit"])), f(mean(b["need"]), "%.0f"), f(mean(b["share"])), len(b["tok_s"]), b["failed"]))
    if best and "auto" in med:
        ratio = med["auto"] / hand[best]
        print()
        print("automatic / best hand-set (%.0f MiB): %.2f" % (int(best) / MiB, ratio))
        summary.setdefault("budget", {})[v] = {"auto_tok_s": med["auto"], "best_hand_bytes": int(best),
                                                "best_hand_tok_s": hand[best], "ratio": ratio,
                                                "auto_bytes": budget[(v, "auto")]["bytes"]}
with open(os.path.join(res, "summary.json"), "w") as fo:
    json.dump(summary, fo, indent=1)
