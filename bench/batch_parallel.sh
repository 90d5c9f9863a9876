#!/bin/sh
# batch_parallel.sh - what decoding requests together buys `coli batch` on a
# tiered MoE (issue 17, benchmark part): total completion tokens per second
# and expert bytes read from disk per generated token, for --parallel 1, 4,
# 8 and 16, on a GLM-5-shaped slice with a third of the experts cached.
#
#   bench/batch_parallel.sh [--work DIR] [--reuse] [--requests N] [--gen N]
#                           [--prompt-words N] [--parallel "1 4 8 16"]
#                           [--threads N] [--no-cgroup] [--coli PATH]
#
# Steps:
#   1. the slice of bench/glm5_slice.sh (coli synth --preset glm5-slice
#      --layers 3 --dense-layers 1 --experts 64 --dtype fp8 --vocab 4096,
#      real GLM-5.2 expert shapes; coli convert int4-g64), reused from
#      WORK when it is there;
#   2. N requests (default 32) of /v1/completions, random words of a fixed
#      seed, max_tokens --gen (default 32), temperature 0;
#   3. per --parallel P: drop the page cache (root), then coli batch with
#      --expert-cache = 1/3 of the experts inside a memory cgroup (v1)
#      limited to dense + 1/3 of the experts + KV of P slots + 256 MiB
#      (page cache included), so the experts that are not cached must come
#      from the disk; the summary line gives tokens, seconds and bytes read.
#      Each run starts with an empty --cache-dir (no routing heat, so no
#      warm start and no pinned set learned by the run before).
# Prints a markdown table: P, tok/s, ratio to P=1, bytes read per generated
# token, ratio to P=1, expert hit rate, the cgroup's peak memory and
# failcnt (also WORK/batch-results/summary.md). Needs root for the cgroup
# and the cache drop (both skipped with a note otherwise). Run it alone,
# or under nice -n -10 on a shared machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-glm5-slice
reuse=0 requests=32 gen=32 words=24 parallel="1 4 8 16" threads=0 cgroup=1
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args batch_parallel.sh 2,29 '--work=work --reuse:reuse=1 --requests=requests --gen=gen
	--prompt-words=words --parallel=parallel --threads=threads
	--no-cgroup:cgroup=0 --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli batch_parallel.sh
py=/usr/bin/python3
hf=$work/hf model=$work/model res=$work/batch-results
cg=/sys/fs/cgroup/memory/coli-batch-parallel
mkdir -p "$work" "$res"
cleanup() {
	[ -d "$cg" ] && { rmdir "$cg" 2>/dev/null || true; }
	[ "$reuse" = 1 ] || rm -rf "$hf" "$model"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. the slice -------------------------------------------------------------
synth_args="--preset glm5-slice --layers 3 --dense-layers 1 --experts 64 --dtype fp8 --vocab 4096"
if [ ! -f "$model/manifest.json" ]; then
	# shellcheck disable=SC2086
	[ -f "$hf/config.json" ] || "$coli" synth "$hf" $synth_args >/dev/null
	"$coli" convert "$hf" "$model" --quant int4-g64 >/dev/null 2>"$work/convert.log"
	[ "$reuse" = 1 ] || rm -rf "$hf"
fi
shards=$(ls "$model"/experts/*.bin)
shard_bytes=$(stat -c %s "$(echo "$shards" | head -1)")
all=$(($(echo "$shards" | wc -l) * shard_bytes))
rec=$((shard_bytes / 64))
third=$((all / 3 / rec * rec))
dense=$(du -sb "$model/dense" | cut -f1)
echo "experts $all bytes, 1/3 = $third; dense $dense" >&2

# --- 2. the requests ------------------------------------------------------------
"$py" - "$res/in.jsonl" "$requests" "$gen" "$words" <<'EOF'
import json, random, sys
path, n, gen, words = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(5)
vocab = "the a of sea river stone light north garden paper window city bread music".split()
with open(path, "w") as f:
    for i in range(n):
        body = {"model": "default", "prompt": " ".join(rnd.choice(vocab) for _ in range(words)),
                "max_tokens": gen, "temperature": 0}
        f.write(json.dumps({"custom_id": "r%d" % i, "method": "POST", "url": "/v1/completions",
                            "body": body}) + "\n")
EOF

# --- 3. one run per --parallel ------------------------------------------------------
targs=""
[ "$threads" -gt 0 ] && targs="--threads $threads"
for p in $parallel; do
	rm -f "$res/out-$p.jsonl" "$res/p$p.cgroup"
	rm -rf "$res/cache-$p"
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		echo "batch_parallel.sh: not root: the page cache is not dropped between runs" >&2
	fi
	cmd="$coli batch $model $res/in.jsonl $res/out-$p.jsonl --parallel $p --expert-cache $third --ctx 512 --cache-dir $res/cache-$p -q $targs"
	echo "run: $cmd" >&2
	if [ "$cgroup" = 1 ] && [ -w /sys/fs/cgroup/memory ]; then
		mkdir -p "$cg"
		# KV per slot is small next to an expert (ctx 512); 64 MiB a slot is ample
		limit=$((dense + third + p * 64 * 1024 * 1024 + 256 * 1024 * 1024))
		echo $limit >"$cg/memory.limit_in_bytes"
		# shellcheck disable=SC2016,SC2086
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" $cmd 2>"$res/p$p.log"
		echo "$limit $(cat "$cg/memory.max_usage_in_bytes") $(cat "$cg/memory.failcnt")" >"$res/p$p.cgroup"
		rmdir "$cg"
	else
		echo "batch_parallel.sh: no writable cgroup v1 memory controller: page cache unconstrained" >&2
		# shellcheck disable=SC2086
		$cmd 2>"$res/p$p.log"
	fi
	tail -1 "$res/p$p.log" >&2
done

# --- report ---------------------------------------------------------------------------
"$py" - "$res" $parallel <<'EOF' | tee "$res/summary.md"
import os, re, sys
res, ps = sys.argv[1], sys.argv[2:]
pat = re.compile(r"(\d+) completion tokens in ([\d.]+) s .*hit rate (\S+), ([\d.]+) MB read")
rows = []
for p in ps:
    line = [l for l in open("%s/p%s.log" % (res, p)) if "completion tokens" in l][-1]
    m = pat.search(line)
    tok, secs, hit, mb = int(m.group(1)), float(m.group(2)), m.group(3), float(m.group(4))
    cg = "n/a | n/a"
    if os.path.exists("%s/p%s.cgroup" % (res, p)):
        limit, peak, failcnt = open("%s/p%s.cgroup" % (res, p)).read().split()
        cg = "%d / %d | %s" % (int(peak) >> 20, int(limit) >> 20, failcnt)
    rows.append((p, tok, secs, tok / secs, mb * 1e6 / tok, hit, cg))
base_tps, base_bpt = rows[0][3], rows[0][4]
print("| --parallel | tokens | s | tok/s | vs %s | disk MB / generated token | vs %s | expert hit rate "
      "| cgroup peak / limit MiB | failcnt |" % (ps[0], ps[0]))
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for p, tok, secs, tps, bpt, hit, cg in rows:
    print("| %s | %d | %.1f | %.2f | %.2f | %.1f | %.2f | %s | %s |" % (
        p, tok, secs, tps, tps / base_tps, bpt / 1e6, bpt / base_bpt, hit, cg))
EOF
