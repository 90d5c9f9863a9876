#!/bin/sh
# decode_parts.sh - a warm decode step by part (coli bench's
# decode.breakdown: CPU ms per token of q_a_kv_a, indexer, q_b, absorb,
# attend, w_uv, o_proj, dense_ffn, router, experts, lm_head next to the
# weight bytes each reads), f32 and q8 activations, and optionally a
# second coli binary (--base, e.g. a build of an older commit) run
# interleaved with the first so load hits both alike (issue 21).
#
#   bench/decode_parts.sh --model DIR [--coli PATH] [--base PATH] [--runs N]
#                         [--threads N] [--prompt N] [--gen N] [--work DIR]
#
# Each run: coli bench DIR --no-kernels --expert-cache 100% --pin-budget 0
# --cache-dir WORK/cache --prompt P --gen G --act-quant f32|q8 (one untimed
# run first saves the routing heat, so every timed run reads all its
# experts at open: no read lands in a part). Prints a markdown table of the
# medians over the runs; the JSON stays in WORK (default
# /var/tmp/coli-decode-parts). CPU time, not wall time: on a shared
# machine the parts still add up to the work done.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
model='' work=/var/tmp/coli-decode-parts runs=3 threads=2 prompt=16 gen=32 coli=${COLI:-} base=''
. "$top/bench/bench_args.sh"
bench_args decode_parts.sh 2,18 '--model=model --coli=coli --base=base --runs=runs --threads=threads
	--prompt=prompt --gen=gen --work=work' "$@"
[ -n "$model" ] || { echo "decode_parts.sh: give the model with --model DIR (see --help)" >&2; exit 2; }
. "$top/bench/find_coli.sh"
find_coli decode_parts.sh
mkdir -p "$work/results"
rm -f "$work"/results/*.json
args="--no-kernels --expert-cache 100% --pin-budget 0 --cache-dir $work/cache --threads $threads"
args="$args --prompt $prompt --gen $gen"
bins="new=$coli"
[ -n "$base" ] && bins="old=$base $bins"
# shellcheck disable=SC2086
"$coli" bench "$model" $args >/dev/null 2>"$work/prime.log" ||
	{ echo "decode_parts.sh: coli bench failed, see $work/prime.log" >&2; exit 1; }
uptime >"$work/uptime"
i=1
while [ "$i" -le "$runs" ]; do
	for b in $bins; do
		for a in f32 q8; do
			# shellcheck disable=SC2086
			"${b#*=}" bench "$model" $args --act-quant $a >"$work/results/${b%%=*}-$a-$i.json" \
				2>>"$work/stderr.log" ||
				{ echo "decode_parts.sh: ${b#*=} bench failed, see $work/stderr.log" >&2; exit 1; }
		done
	done
	i=$((i + 1))
done
uptime >>"$work/uptime"
/usr/bin/python3 - "$work" <<'PY'
import glob, json, os, statistics, sys
work = sys.argv[1]
runs = {}
for f in sorted(glob.glob(os.path.join(work, "results", "*.json"))):
    tag = os.path.basename(f).rsplit("-", 1)[0]  # old-f32, new-q8, ...
    runs.setdefault(tag, []).append(json.load(open(f))["decode"])
tags = [t for t in ("old-f32", "new-f32", "old-q8", "new-q8") if t in runs]
med = lambda xs: statistics.median(xs)
first = runs[tags[0]][0]["breakdown"]
print("load: " + " -> ".join(l.split("load average:")[1].strip() for l in open(os.path.join(work, "uptime"))))
print()
print("| part | weight MB/token | bytes share | " + " | ".join("%s CPU ms (share)" % t for t in tags) + " |")
print("|---|---|---|" + "---|" * len(tags))
for p, e in first["parts"].items():
    row = "| %s | %.1f | %.3f |" % (p, e["weight_bytes"] / 1e6, e["bytes_share"] or 0)
    for t in tags:
        ms = med([r["breakdown"]["parts"][p]["cpu_ms_per_token"] for r in runs[t]])
        sh = med([r["breakdown"]["parts"][p]["time_share"] for r in runs[t]])
        row += " %.2f (%.3f) |" % (ms, sh)
    print(row)
for key, label in (("attention_cpu_ms_per_token", "attention (q_a_kv_a..o_proj)"),
                   ("total_cpu_ms_per_token", "decode CPU ms/token")):
    row = "| %s | | %s |" % (label, "%.3f" % first["attention_bytes_share"] if key.startswith("att") else "")
    for t in tags:
        row += " %.2f |" % med([r["breakdown"][key] for r in runs[t]])
    print(row)
row = "| tok/s (wall; cpu share) | | |"
for t in tags:
    row += " %.2f (%.2f) |" % (med([r["tokens_per_s"] for r in runs[t]]), med([r["cpu_share"] for r in runs[t]]))
print(row)
PY
