#!/bin/sh
# batch_parallel.sh - what many sequences in flight buy `coli batch` on a
# tiered MoE (issues 17 and 27): aggregate completion and prompt tokens
# per second, expert bytes read from disk per generated token, hit rates,
# disk wait against compute, peak memory, for --parallel 1, 16, 64, 256
# and auto, on a GLM-5-shaped slice with a third of the experts cached.
#
#   bench/batch_parallel.sh [--work DIR] [--reuse] [--requests N] [--gen N]
#                           [--prompt-words N] [--parallel "1 16 64 64@384 256 auto"]
#                           [--threads N] [--extra "ENGINE OPTIONS"]
#                           [--no-cgroup] [--coli PATH]
#
# Steps:
#   1. the slice of bench/glm5_slice.sh (coli synth --preset glm5-slice
#      --layers 3 --dense-layers 1 --experts 64 --dtype fp8 --vocab 4096,
#      real GLM-5.2 expert shapes; coli convert int4-g64), reused from
#      WORK when it is there;
#   2. per run, /v1/completions requests of random words of a fixed seed
#      (--prompt-words, default 24), max_tokens --gen (default 32),
#      temperature 0: P requests at --parallel P (at least 4; --requests N
#      fixes the count; auto answers 256), the first of one list, so
#      every run's answers can be compared with the others'; an entry
#      P@N of --parallel runs P with --prefill-batch N (more prompt rows
#      a step: fewer steps, so fewer expert reads, for more step memory);
#   3. per --parallel P: drop the page cache (root), then coli batch with
#      --expert-cache = 1/3 of the experts inside a memory cgroup (v1)
#      limited to dense + 1/3 of the experts + 1 GiB (KV, the step state
#      and the page cache included), so the experts that are not cached
#      must come from the disk; coli batch's summary lines give tokens,
#      seconds, bytes read, hit rates, rows per step and disk wait.
#      Each run starts with an empty --cache-dir (no routing heat, so no
#      warm start and no pinned set learned by the run before).
# Prints a markdown table (also WORK/batch-results/summary.md) and checks
# that every answer a run shares with another is identical (exit 1 when
# one differs). Needs root for the cgroup and the cache drop (both skipped
# with a note otherwise). Run it alone, or under nice -n -10 on a shared
# machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-glm5-slice
reuse=0 requests=0 gen=32 words=24 parallel="1 16 64 64@384 256 auto" threads=0 cgroup=1 extra=""
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args batch_parallel.sh 2,36 '--work=work --reuse:reuse=1 --requests=requests --gen=gen
	--prompt-words=words --parallel=parallel --threads=threads --extra=extra
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
"$py" - "$res/in.jsonl" 256 "$gen" "$words" <<'EOF'
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
	n=$requests pp=${p%@*} pb=""
	case $p in *@*) pb="--prefill-batch ${p#*@}" ;; esac
	if [ "$n" -le 0 ]; then
		case $pp in auto) n=256 ;; *) n=$((pp < 4 ? 4 : pp)) ;; esac
	fi
	head -n "$n" "$res/in.jsonl" >"$res/in-$p.jsonl"
	rm -f "$res/out-$p.jsonl" "$res/p$p.cgroup"
	rm -rf "$res/cache-$p"
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		echo "batch_parallel.sh: not root: the page cache is not dropped between runs" >&2
	fi
	cmd="$coli batch $model $res/in-$p.jsonl $res/out-$p.jsonl --parallel $pp --expert-cache $third --ctx 512 --cache-dir $res/cache-$p -q $targs $extra $pb"
	echo "run: $cmd" >&2
	if [ "$cgroup" = 1 ] && [ -w /sys/fs/cgroup/memory ]; then
		mkdir -p "$cg"
		limit=$((dense + third + 1024 * 1024 * 1024))
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
	tail -2 "$res/p$p.log" >&2
done

# --- report ---------------------------------------------------------------------------
"$py" - "$res" $parallel <<'EOF' | tee "$res/summary.md"
import json, os, re, sys
res, ps = sys.argv[1], sys.argv[2:]
pat = re.compile(r"(\d+) prompt \+ (\d+) completion tokens in ([\d.]+) s .*hit rate (\S+), ([\d.]+) MB read")
pat2 = re.compile(r"batch: (\d+) slots; (\d+) steps, ([\d.]+) rows/step .*expert uses from RAM (\S+); "
                  r"disk wait ([\d.]+) s")
rows, answers = [], {}
for p in ps:
    log = open("%s/p%s.log" % (res, p)).read()
    m, m2 = pat.findall(log)[-1], pat2.findall(log)[-1]
    ptok, tok, secs, hit, mb = int(m[0]), int(m[1]), float(m[2]), m[3], float(m[4])
    slots, rps, ram, wait = int(m2[0]), float(m2[2]), m2[3], float(m2[4])
    cg = "n/a"
    if os.path.exists("%s/p%s.cgroup" % (res, p)):
        limit, peak, failcnt = open("%s/p%s.cgroup" % (res, p)).read().split()
        cg = "%d / %d" % (int(peak) >> 20, int(limit) >> 20)
    for l in open("%s/out-%s.jsonl" % (res, p)):
        o = json.loads(l)
        b = o["response"]["body"]
        b = json.loads(b) if isinstance(b, str) else b
        answers.setdefault(o["custom_id"], {})[p] = b["choices"][0]["text"]
    rows.append((p, slots, tok, secs, tok / secs, ptok / secs, mb * 1e6 / tok, hit, ram, rps, wait, cg))
base_tps, base_bpt = rows[0][4], rows[0][6]
print("| --parallel | slots | completion tokens | s | tok/s | vs %s | prompt tok/s | disk MB / generated token "
      "| vs %s | record hit rate | uses from RAM | rows / step | disk wait s | compute s | cgroup peak / limit MiB |"
      % (ps[0], ps[0]))
print("| ---: " * 15 + "|")
for p, slots, tok, secs, tps, ptps, bpt, hit, ram, rps, wait, cg in rows:
    print("| %s | %d | %d | %.1f | %.2f | %.2f | %.1f | %.1f | %.3f | %s | %s | %.1f | %.1f | %.1f | %s |" % (
        p, slots, tok, secs, tps, tps / base_tps, ptps, bpt / 1e6, bpt / base_bpt, hit, ram, rps, wait,
        secs - wait, cg))
diff = [k for k, v in answers.items() if len(set(v.values())) > 1]
print()
print("answers compared across runs: %d custom_ids, %d differ" % (len(answers), len(diff)))
sys.exit(1 if diff else 0)
EOF
