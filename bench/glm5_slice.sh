#!/bin/sh
# glm5_slice.sh - the tiered expert store on a GLM-5-shaped slice whose
# experts far exceed the RAM budget (issue 4, benchmark part).
#
#   bench/glm5_slice.sh [--work DIR] [--reuse] [--keep] [--gen N] [--prompt N]
#                       [--threads N] [--no-cgroup] [--no-skew] [--throttle BPS]
#                       [--budget-rounds N] [--coli PATH]
#
# Steps (each result is kept as JSON in WORK/results/):
#   1. coli synth --preset glm5-slice --layers 3 --dense-layers 1 --experts 64
#      --dtype fp8 --vocab 4096 (real GLM-5.2 expert shapes), after a
#      --dry-run size check against the free space; coli convert int4-g64
#      twice: "uniform" (as synthesized: a random router spreads routing
#      over every expert, the worst case for any cache) and "skew"
#      (bench/skew_router.py: 12 of 64 experts per layer get +0.5 selection
#      bias, ~90% of routings; a workload whose working set fits 25%).
#   2. coli iobench on an expert shard at the record size (the disk ceiling).
#   Then per variant:
#   3. coli bench --cold --iobench with an expert cache of 1/3 of the experts,
#      (a) unconstrained, (b) inside a memory cgroup (v1) limited to
#      dense + 1/3 of the experts + 256 MiB (page cache included);
#      (c, uniform) in the same group, --budget-rounds rounds (default 2,
#      0 = none) of the automatic budget (no --expert-cache) interleaved
#      with hand-set ones (1/4, 1/3, 1/3 + 4 and + 8 records): the default
#      against the best hand-set value (a run the group kills is recorded
#      as failed, not fatal).
#   4. a warm run: cache = all experts, prefill touches them, so decode is
#      all RAM hits; its ms/token is the compute time of a step.
#   5. learned heat: the same workload twice with a budget of 25% of the
#      experts and a cache dir; the second run reloads hot-experts/heat.bin
#      and pins the hot set at open. The second run's hit rate is reported.
#   6. (uniform) the drive-bound regime: reads capped at --throttle bytes/s
#      (default 500000000) by a blkio cgroup, iobench and the cold 1/3 run
#      with the default prefetch (gated), COLI_PREFETCH=always, --no-prefetch.
#      A busy shared CPU makes step 3 compute-bound; this shows the other side.
# --reuse keeps WORK (HF checkpoint and containers) and reuses it next time;
# --keep keeps it once. Otherwise the multi-GB files are removed at the end.
# Prints a markdown table (also WORK/results/summary.md, summary.json).
# Needs root for the cgroup (skipped with a note otherwise). Run it alone:
# it reads GBs from the disk and uses every core given to it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-glm5-slice
reuse=0 keep=0 gen=32 prompt=64 threads=0 cgroup=1 skew=1 throttle=500000000 budget_rounds=2
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args glm5_slice.sh 2,40 '--work=work --reuse:reuse=1 --keep:keep=1 --gen=gen --prompt=prompt
	--threads=threads --no-cgroup:cgroup=0 --no-skew:skew=0 --throttle=throttle
	--budget-rounds=budget_rounds --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli glm5_slice.sh
py=/usr/bin/python3
hf=$work/hf model=$work/model model_skew=$work/model-skew res=$work/results
cg=/sys/fs/cgroup/memory/coli-glm5-slice
bg=/sys/fs/cgroup/blkio/coli-glm5-slice
mkdir -p "$work" "$res"

cleanup() {
	for d in "$cg" "$bg"; do
		[ -d "$d" ] && { rmdir "$d" 2>/dev/null || true; }
	done
	if [ "$keep" = 0 ] && [ "$reuse" = 0 ]; then
		rm -rf "$hf" "$model" "$model_skew" "$work/cache"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jget() { # jget FILE EXPR: a value of a JSON file (python expression on j)
	"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# --- 1. the slice -----------------------------------------------------------
synth_args="--preset glm5-slice --layers 3 --dense-layers 1 --experts 64 --dtype fp8 --vocab 4096"
if [ ! -f "$model/manifest.json" ] || { [ "$skew" = 1 ] && [ ! -f "$model_skew/manifest.json" ]; }; then
	if [ ! -f "$hf/config.json" ]; then
		# shellcheck disable=SC2086
		need=$("$coli" synth "$hf" $synth_args --dry-run | "$py" -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
		free=$(df -B1 --output=avail "$work" | tail -1)
		# HF checkpoint + two int4 containers (about half of it each)
		if [ "$free" -lt $((need * 2 + need / 2)) ]; then
			echo "glm5_slice.sh: $work has $free bytes free; need about $((need * 2 + need / 2))" >&2
			exit 1
		fi
		echo "synth: $need bytes of HF checkpoint in $hf" >&2
		# shellcheck disable=SC2086
		"$coli" synth "$hf" $synth_args >/dev/null
	fi
	if [ ! -f "$model/manifest.json" ]; then
		# as synthesized (biases ~0); a kept, already skewed one: bias 0
		if [ -f "$hf/.skewed" ]; then
			"$py" "$top/bench/skew_router.py" "$hf" --boost 0 >&2
			rm -f "$hf/.skewed"
		fi
		"$coli" convert "$hf" "$model" --quant int4-g64 2>"$work/convert.log" >/dev/null
	fi
	if [ "$skew" = 1 ] && [ ! -f "$model_skew/manifest.json" ]; then
		"$py" "$top/bench/skew_router.py" "$hf" --hot 12 --boost 0.5 >&2
		: >"$hf/.skewed"
		"$coli" convert "$hf" "$model_skew" --quant int4-g64 2>"$work/convert-skew.log" >/dev/null
	fi
	[ "$keep" = 1 ] || [ "$reuse" = 1 ] || rm -rf "$hf"
fi

shards=$(ls "$model"/experts/*.bin)
shard1=$(echo "$shards" | head -1)
n_shards=$(echo "$shards" | wc -l)
shard_bytes=$(stat -c %s "$shard1")
n_exp=64
rec=$((shard_bytes / n_exp))
all=$((n_shards * shard_bytes))
third=$((all / 3 / rec * rec))
quarter=$((all / 4 / rec * rec))
echo "experts: $n_shards shards x $n_exp x $rec bytes = $all; 1/3 = $third; 1/4 = $quarter" >&2

targs="--no-kernels --prompt $prompt --gen $gen"
[ "$threads" -gt 0 ] && targs="$targs --threads $threads"

# run NAME CMD...: CMD's stdout -> results/NAME.json, time -v -> NAME.time
run() {
	name=$1; shift
	echo "run: $name: $*" >&2
	/usr/bin/time -v -o "$res/$name.time" "$@" >"$res/$name.json" 2>"$res/$name.log" || {
		echo "glm5_slice.sh: $name failed:" >&2; tail -5 "$res/$name.log" >&2; exit 1; }
}

# try NAME CMD...: as run, but a failure (an OOM kill in the cgroup) is
# recorded in NAME.failed and the script goes on
try() {
	name=$1; shift
	echo "run: $name: $*" >&2
	/usr/bin/time -v -o "$res/$name.time" "$@" >"$res/$name.json" 2>"$res/$name.log" || {
		echo "glm5_slice.sh: $name failed (kept going):" >&2; tail -2 "$res/$name.log" >&2
		: >"$res/$name.failed"; rm -f "$res/$name.json"; }
}

# --- 2. the drive at the record size ----------------------------------------
run iobench "$coli" iobench "$shard1" --size "$rec" --seconds 3 --json

variants="uniform"
[ "$skew" = 1 ] && variants="uniform skew"
for v in $variants; do
	m=$model
	[ "$v" = skew ] && m=$model_skew
	# --- 3a. cold, unconstrained ------------------------------------------
	# shellcheck disable=SC2086
	run "$v-cold" "$coli" bench "$m" --cold --iobench --expert-cache "$third" $targs

	# --- 3b. cold inside a memory cgroup ----------------------------------
	dense=$(jget "$res/$v-cold.json" 'j["dense_bytes"]')
	overhead=$((256 * 1024 * 1024))
	limit=$((dense + third + overhead))
	if [ "$cgroup" = 1 ] && [ -w /sys/fs/cgroup/memory ]; then
		mkdir -p "$cg"
		echo "$limit" >"$cg/memory.limit_in_bytes"
		echo 0 >"$cg/memory.max_usage_in_bytes" 2>/dev/null || true
		# shellcheck disable=SC2016,SC2086
		run "$v-cgroup" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
			"$coli" bench "$m" --cold --iobench --expert-cache "$third" $targs
		cat "$cg/memory.max_usage_in_bytes" >"$res/$v-cgroup.max_usage"
		cat "$cg/memory.failcnt" >"$res/$v-cgroup.failcnt"
		echo "$limit" >"$res/$v-cgroup.limit"
		# --- 3c. the automatic budget against hand-set ones, same group
		if [ "$v" = uniform ] && [ "$budget_rounds" -gt 0 ]; then
			r=1
			while [ "$r" -le "$budget_rounds" ]; do
				for b in auto $((quarter)) $((third)) $((third + 4 * rec)) $((third + 8 * rec)); do
					ec="--expert-cache $b"
					[ "$b" = auto ] && ec=
					# shellcheck disable=SC2016,SC2086
					try "$v-budget-$b-$r" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
						"$coli" bench "$m" --cold --iobench $ec $targs
				done
				r=$((r + 1))
			done
		fi
		rmdir "$cg"
	else
		echo "glm5_slice.sh: no writable cgroup v1 memory controller; skipping the cgroup run" >&2
	fi

	# --- 4. warm: everything cached (prefill touches every expert) --------
	# shellcheck disable=SC2086
	run "$v-warm" "$coli" bench "$m" --expert-cache "$all" --pin-budget 0 $targs

	# --- 5. learned heat: the same workload twice at 25% --------------------
	rm -rf "$work/cache"
	hargs="--no-kernels --prompt $prompt --gen $gen --seed 7 --expert-cache $quarter --cache-dir $work/cache"
	[ "$threads" -gt 0 ] && hargs="$hargs --threads $threads"
	# shellcheck disable=SC2086
	run "$v-heat1" "$coli" bench "$m" --cold $hargs
	# shellcheck disable=SC2086
	run "$v-heat2" "$coli" bench "$m" --cold $hargs
done

# --- 6. drive-bound: reads capped by a blkio cgroup -------------------------
if [ "$throttle" -gt 0 ] && [ -w /sys/fs/cgroup/blkio ]; then
	majmin=$(stat -c '%Hd:%Ld' "$shard1")
	# a partition's cap must name its disk: use the parent when there is one
	if [ -e "/sys/dev/block/$majmin/partition" ]; then
		majmin=$(cat "/sys/dev/block/$majmin/../dev")
	fi
	mkdir -p "$bg"
	echo "$majmin $throttle" >"$bg/blkio.throttle.read_bps_device"
	# shellcheck disable=SC2016
	inbg='echo $$ >"$0/cgroup.procs" && exec "$@"'
	run throttled-iobench sh -c "$inbg" "$bg" "$coli" iobench "$shard1" --size "$rec" --seconds 3 --json
	# shellcheck disable=SC2086
	run throttled-gated sh -c "$inbg" "$bg" "$coli" bench "$model" --cold --expert-cache "$third" $targs
	# shellcheck disable=SC2086
	run throttled-always sh -c "$inbg" "$bg" env COLI_PREFETCH=always \
		"$coli" bench "$model" --cold --expert-cache "$third" $targs
	# shellcheck disable=SC2086
	run throttled-none sh -c "$inbg" "$bg" "$coli" bench "$model" --cold --expert-cache "$third" --no-prefetch $targs
	rmdir "$bg"
	variants="$variants throttled"
else
	echo "glm5_slice.sh: no writable blkio cgroup (or --throttle 0); skipping the drive-bound runs" >&2
fi

# shellcheck disable=SC2086
"$py" "$top/bench/glm5_slice_report.py" "$res" $variants | tee "$res/summary.md"
