#!/bin/sh
# draft.sh - MTP speculative decoding (--draft) against none (issue 14,
# benchmark part). Every figure is a ratio measured in one run: `coli
# bench --draft MODE` decodes in one engine five times without drafts and
# five times with MODE, interleaved, and reports both medians: wall-clock
# tokens/s and CPU time per token (the "CPU ratio" column: tokens per CPU
# second, drafting over not; the compute cost, which a loaded machine
# distorts far less than wall time - use --threads 1 for it, where no
# pool spins).
#
#   bench/draft.sh [--work DIR] [--reuse] [--keep] [--gen N] [--threads N]
#                  [--no-slice] [--no-default] [--coli PATH]
#
# 1. The default model, everything in RAM: --draft 1, 2, 3 and auto against
#    off; tokens per forward pass and acceptance of the drafting requests.
# 2. A GLM-5-shaped slice with an MTP layer (coli synth --preset glm5-slice
#    --layers 2 --dense-layers 1 --experts 16 --dtype fp8 --vocab 4096
#    --mtp 1: GLM-5.2's expert and attention shapes, 8 of 16 experts per
#    token, 20 MiB int4 records; converted int4-g64 with the int8 MTP
#    head; small enough to synthesize in minutes), cold (experts
#    dropped from the page cache, O_DIRECT reads), a third of the experts
#    cached, inside a memory cgroup (v1) limited to the resident weights
#    (dense and MTP) + that third + 1 GiB (the load's transient page cache
#    and scratch): auto against off, and forced --draft 1
#    against off (what drafting costs when every extra expert is a read).
# --reuse keeps WORK (checkpoint and container) for the next run; --keep
# keeps it once. Prints a markdown table (also WORK/results/draft.md).
# Needs root for the cgroup (skipped with a note otherwise).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-draft-slice
reuse=0 keep=0 gen=128 threads=0 slice=1 default=1 n_exp=16
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args draft.sh 2,28 '--work=work --reuse:reuse=1 --keep:keep=1 --gen=gen --threads=threads
	--no-slice:slice=0 --no-default:default=0 --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli draft.sh
py=/usr/bin/python3
res=$work/results hf=$work/hf model=$work/model
cg=/sys/fs/cgroup/memory/coli-draft-slice
mkdir -p "$res"
cleanup() {
	[ -d "$cg" ] && { rmdir "$cg" 2>/dev/null || true; }
	if [ "$keep" = 0 ] && [ "$reuse" = 0 ]; then
		rm -rf "$hf" "$model"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

targs="--no-kernels --gen $gen"
[ "$threads" -gt 0 ] && targs="$targs --threads $threads"
run() { # run NAME CMD...: stdout -> results/NAME.json
	name=$1; shift
	echo "run: $name: $*" >&2
	"$@" >"$res/$name.json" 2>"$res/$name.log" || {
		echo "draft.sh: $name failed:" >&2; tail -5 "$res/$name.log" >&2; exit 1; }
}

# --- 1. default model, in RAM ------------------------------------------------
for n in 1 2 3 auto; do
	[ "$default" = 1 ] || break
	# shellcheck disable=SC2086
	run "default-$n" "$coli" bench --prompt 16 --draft "$n" $targs
done

# --- 2. GLM-5 slice with MTP, cold, a third cached, memory cgroup -----------
if [ "$slice" = 1 ]; then
	if [ ! -f "$model/manifest.json" ]; then
		args="--preset glm5-slice --layers 2 --dense-layers 1 --experts $n_exp --dtype fp8 --vocab 4096 --mtp 1"
		# shellcheck disable=SC2086
		[ -f "$hf/config.json" ] || "$coli" synth "$hf" $args >/dev/null
		"$coli" convert "$hf" "$model" --quant int4-g64 2>"$work/convert.log" >/dev/null
		[ "$keep" = 1 ] || [ "$reuse" = 1 ] || rm -rf "$hf"
	fi
	shards=$(ls "$model"/experts/*.bin)
	shard_bytes=$(stat -c %s "$(echo "$shards" | head -1)")
	all=$(($(echo "$shards" | wc -l) * shard_bytes))
	rec=$((shard_bytes / n_exp))
	third=$((all / 3 / rec * rec))
	resident=$("$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sum(t.get("nbytes",0) for t in m["tensors"].values()) if isinstance(m.get("tensors"),dict) else sum(t.get("nbytes",0) for t in m["tensors"]))' "$model/manifest.json")
	limit=$((resident + third + 1024 * 1024 * 1024))
	echo "experts $all bytes, a third $third; resident weights $resident; cgroup limit $limit" >&2
	for mode in auto 1; do
		set -- "$coli" bench "$model" --cold --prompt 32 --expert-cache "$third" --draft "$mode" $targs
		if [ -w /sys/fs/cgroup/memory ]; then
			mkdir -p "$cg"
			echo "$limit" >"$cg/memory.limit_in_bytes"
			# shellcheck disable=SC2016
			run "slice-$mode" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
			cat "$cg/memory.failcnt" >"$res/slice-$mode.failcnt"
			rmdir "$cg"
		else
			echo "draft.sh: no writable cgroup v1 memory controller; running without one" >&2
			run "slice-$mode" "$@"
		fi
	done
fi

"$py" - "$res" <<'PYEOF' | tee "$res/draft.md"
import json, os, sys
res = sys.argv[1]
print("| run | off tok/s | draft tok/s | ratio | CPU ratio | acceptance | tokens/forward | auto's last reason |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name in ["default-1", "default-2", "default-3", "default-auto", "slice-auto", "slice-1"]:
    p = os.path.join(res, name + ".json")
    if not os.path.exists(p):
        continue
    d = json.load(open(p))["draft"]
    f = lambda v, s="%.2f": "n/a" if v is None else s % v
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, f(d["off_tokens_per_s"], "%.1f"), f(d["draft_tokens_per_s"], "%.1f"), f(d["ratio"], "%.3f"),
        f(d.get("cpu_ratio"), "%.3f"), f(d["acceptance"]), f(d["tokens_per_forward"]), d["reason"] if "auto" in name else "-"))
PYEOF
