#!/bin/sh
# bench_figures.sh - `coli bench` separates the bytes the routed misses
# need from the bytes wasted on prefetched records never used (together
# exactly the bytes read, each a whole number of records), reports the
# step against max(io, compute) (never below 1: both parts fit in a step),
# and with --iobench the ceiling from the needed bytes; its automatic
# expert budget counts the KV it allocates.
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$COLI" ] && [ -x "$COLI" ] || fail "\$COLI not built"
PYTHON3=${PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$COLI" synth "$T/hf" --preset tiny >/dev/null 2>"$T/synth.log" &&
	"$COLI" convert "$T/hf" "$T/model" --quant f32 >/dev/null 2>"$T/convert.log" ||
	{ cat "$T"/*.log; fail "cannot make the tiny model"; }
"$COLI" bench "$T/model" --prompt 4 --gen 6 --no-kernels --threads 1 --expert-cache 0 --iobench \
	>"$T/out.json" 2>"$T/bench.log" || { cat "$T/bench.log"; fail "coli bench"; }
"$PYTHON3" - "$T/out.json" <<'PY' || fail "bench figures: $(cat "$T/out.json")"
import json, sys
j = json.load(open(sys.argv[1]))
ex, io = j["experts"], j["io"]
rec = ex["record_bytes"]
need, waste, read = ex["needed_bytes_per_token"], ex["wasted_prefetch_bytes_per_token"], ex["bytes_read_per_token"]
assert need > 0, "no needed bytes with --expert-cache 0"
assert abs(need + waste - read) < 1e-6 * read, (need, waste, read)
assert abs(need * 6 / rec - round(need * 6 / rec)) < 1e-9 and abs(waste * 6 / rec - round(waste * 6 / rec)) < 1e-9
assert ex["step_over_max_io_compute"] >= 1.0 - 1e-9, ex["step_over_max_io_compute"]
gbps = io["iobench_gbps_at_record_size"] * 1e9
assert abs(io["ceiling_tokens_per_s"] - gbps / need) < 1e-6 * io["ceiling_tokens_per_s"]
assert "read_ratio_to_iobench" in io
PY
# the automatic budget subtracts the KV this command allocates: one
# sequence of prompt + gen + 1 tokens, 4 layers x (64 + 32) floats each
# = 16.5 KiB (not the engine's 4096-token context x slots, 24 MiB)
COLI_LOG_LEVEL=info "$COLI" bench "$T/model" --prompt 4 --gen 6 --no-kernels --threads 1 \
	>/dev/null 2>"$T/auto.log" || { cat "$T/auto.log"; fail "coli bench with the automatic budget"; }
grep -q "automatic budget .* - KV 16.5 KiB - margin 64.0 MiB, in whole records (store " "$T/auto.log" ||
	fail "automatic budget terms: $(grep budget "$T/auto.log")"
echo "ok: needed + wasted = read, step/max(io,compute) >= 1, ceiling from needed bytes, bench's KV in the budget"
