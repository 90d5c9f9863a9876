#!/bin/sh
# checksum_cost.sh - what the CRC-32C of expert records (container format
# 2) costs cold decode: one GLM-5-shaped container (real GLM-5.2 expert
# shapes, int4-g64 records of 20.25 MiB), `coli bench --cold` with the
# check on and with --no-verify-checksums, interleaved round by round in
# one invocation, plus `coli iobench` on a shard (the drive's O_DIRECT rate
# at the record size) and bench/store_bench's CRC-32C rate, so the check's
# cost per GB stands next to the drive's.
#
#   bench/checksum_cost.sh [--work DIR] [--reuse] [--rounds N] [--gen N]
#                          [--prompt N] [--layers N] [--experts N]
#                          [--cache SIZE] [--threads N] [--coli PATH]
#
# Defaults: 3 rounds of --prompt 16 --gen 16, 3 layers (1 dense) x 32
# experts (bench/glm5_slice.sh's 3 x 64 slice with half the experts, what
# a shared 2-core machine converts in minutes; the per-token work is the
# slice's), --expert-cache 0 (only the scratch pool of 2 x top-k = 16
# records stays in RAM, so nearly every routed expert of every token is
# read from disk: the worst case for the check). Prints a markdown
# table. Run it alone: it reads GBs and uses every core given to it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-checksum-cost
reuse=0 rounds=3 gen=16 prompt=16 layers=3 experts=32 cache=0 threads=0
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args checksum_cost.sh 2,20 '--work=work --reuse:reuse=1 --rounds=rounds --gen=gen
	--prompt=prompt --layers=layers --experts=experts --cache=cache --threads=threads --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli checksum_cost.sh
py=/usr/bin/python3
hf=$work/hf model=$work/model res=$work/results
mkdir -p "$work" "$res"
cleanup() { [ "$reuse" = 1 ] || rm -rf "$hf" "$model"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -f "$model/manifest.json" ]; then
	[ -f "$hf/config.json" ] ||
		"$coli" synth "$hf" --preset glm5-slice --layers "$layers" --dense-layers 1 --experts "$experts" \
			--dtype fp8 --vocab 4096 >/dev/null
	"$coli" convert "$hf" "$model" --force >/dev/null 2>"$res/convert.log"
	rm -rf "$hf"
fi
"$coli" info "$model" | grep '^checksums' | grep -q CRC-32C || { echo "checksum_cost.sh: $model has no checksums" >&2; exit 1; }
shard=$(ls "$model"/experts/shard-*.bin | head -1)
rs=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["experts"]["record_size"])' "$model/manifest.json")
"$coli" iobench "$shard" --size "$rs" --json >"$res/iobench.json" 2>/dev/null || echo '{}' >"$res/iobench.json"
tflag=
[ "$threads" -gt 0 ] && tflag="--threads $threads"
r=1
while [ $r -le "$rounds" ]; do
	for mode in on off; do
		flag=
		[ $mode = off ] && flag=--no-verify-checksums
		# shellcheck disable=SC2086
		"$coli" bench "$model" --cold --no-kernels --prompt "$prompt" --gen "$gen" --expert-cache "$cache" \
			$tflag $flag >"$res/bench-$mode-$r.json" 2>"$res/bench-$mode-$r.log"
	done
	r=$((r + 1))
done
"$py" - "$res" "$rounds" "$rs" <<'PYEOF'
import json, os, statistics, sys
res, rounds, rs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(p):
    try:
        return json.load(open(os.path.join(res, p)))
    except Exception:
        return {}
io = load("iobench.json")
def find(j, *keys):
    # the first number under any of these keys, anywhere in j
    if isinstance(j, dict):
        for k, v in j.items():
            if k in keys and isinstance(v, (int, float)):
                return v
            x = find(v, *keys)
            if x is not None:
                return x
    if isinstance(j, list):
        for v in j:
            x = find(v, *keys)
            if x is not None:
                return x
    return None
tok = {"on": [], "off": []}
cpu = {"on": [], "off": []}
mb = {"on": [], "off": []}
for m in tok:
    for r in range(1, rounds + 1):
        j = load("bench-%s-%d.json" % (m, r))
        d = j.get("decode", {})
        if "tokens_per_s" in d:
            tok[m].append(d["tokens_per_s"])
            cpu[m].append(d["cpu_ms_per_token"])
            mb[m].append(j.get("experts", {}).get("bytes_read_per_token", 0) / 1e6)
med = lambda v: "%.3f" % statistics.median(v) if v else "n/a"
print("| verification | decode tok/s per round | median tok/s | median CPU ms/token | median MB read/token |")
print("| --- | --- | --- | --- | --- |")
for m, name in (("on", "CRC-32C on (default)"), ("off", "--no-verify-checksums")):
    print("| %s | %s | %s | %s | %s |" % (name, ", ".join("%.3f" % x for x in tok[m]), med(tok[m]),
                                         med(cpu[m]), med(mb[m])))
if tok["on"] and tok["off"]:
    pairs = [a / b for a, b in zip(tok["on"], tok["off"])]
    print("\nverified / unverified tok/s: medians %.3f, means %.3f, median of the rounds' ratios %.3f; "
          "CPU ms/token medians %.3f" % (
        statistics.median(tok["on"]) / statistics.median(tok["off"]),
        statistics.mean(tok["on"]) / statistics.mean(tok["off"]), statistics.median(pairs),
        statistics.median(cpu["on"]) / statistics.median(cpu["off"])))
direct = [t for t in io.get("tests", []) if t.get("mode") == "direct" and t.get("block") == rs]
print("record %d bytes; coli iobench O_DIRECT at the record size: %s GB/s" % (
    rs, "%.3f" % direct[0]["gb_per_s"] if direct else "n/a"))
PYEOF
