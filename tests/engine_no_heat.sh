#!/bin/sh
# engine_no_heat.sh - --no-heat (and COLI_NO_HEAT, and `coli bench --cold`)
# neither loads nor saves routing heat: a default run leaves
# CACHE_DIR/hot-experts/heat.bin and the next run loads it; a --no-heat run
# does not load it and leaves it byte-for-byte as it was; in a fresh cache
# directory a --no-heat run or a cold bench creates no heat at all.
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$COLI" ] && [ -x "$COLI" ] || fail "\$COLI not built"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$COLI" synth "$T/hf" --preset tiny >/dev/null 2>"$T/synth.log" &&
	"$COLI" convert "$T/hf" "$T/model" --quant f32 >/dev/null 2>"$T/convert.log" ||
	{ cat "$T"/*.log; fail "cannot make the tiny model"; }
export COLI_LOG_LEVEL=info
gen() { "$COLI" generate "$T/model" --tokens 1,2,3,4 -n 4 --threads 1 --ctx 64 "$@" >/dev/null; }

gen --cache-dir "$T/c1" 2>"$T/run1.log" || { cat "$T/run1.log"; fail "first run"; }
[ -s "$T/c1/hot-experts/heat.bin" ] || fail "a default run saved no heat"
cp "$T/c1/hot-experts/heat.bin" "$T/heat.before"
gen --cache-dir "$T/c1" 2>"$T/run2.log" || { cat "$T/run2.log"; fail "second run"; }
grep -q "loaded routing heat" "$T/run2.log" || fail "a default run did not load the saved heat"

cp "$T/c1/hot-experts/heat.bin" "$T/heat.before"
gen --cache-dir "$T/c1" --no-heat 2>"$T/run3.log" || { cat "$T/run3.log"; fail "--no-heat run"; }
grep -q "loaded routing heat" "$T/run3.log" && fail "--no-heat loaded the heat"
cmp -s "$T/heat.before" "$T/c1/hot-experts/heat.bin" || fail "--no-heat changed the saved heat"
COLI_NO_HEAT=1 gen --cache-dir "$T/c1" 2>"$T/run4.log" || { cat "$T/run4.log"; fail "COLI_NO_HEAT run"; }
grep -q "loaded routing heat" "$T/run4.log" && fail "COLI_NO_HEAT=1 loaded the heat"
cmp -s "$T/heat.before" "$T/c1/hot-experts/heat.bin" || fail "COLI_NO_HEAT=1 changed the saved heat"
COLI_NO_HEAT=1 gen --cache-dir "$T/c1" --heat 2>"$T/run5.log" || { cat "$T/run5.log"; fail "--heat run"; }
grep -q "loaded routing heat" "$T/run5.log" || fail "--heat did not override COLI_NO_HEAT=1"

gen --cache-dir "$T/c2" --no-heat 2>"$T/run6.log" || { cat "$T/run6.log"; fail "fresh --no-heat run"; }
[ -e "$T/c2/hot-experts/heat.bin" ] && fail "a --no-heat run saved heat"
"$COLI" bench "$T/model" --prompt 4 --gen 2 --no-kernels --threads 1 --cold --cache-dir "$T/c3" \
	>/dev/null 2>"$T/bench.log" || { cat "$T/bench.log"; fail "coli bench --cold"; }
[ -e "$T/c3/hot-experts/heat.bin" ] && fail "coli bench --cold saved heat"
"$COLI" bench "$T/model" --prompt 4 --gen 2 --no-kernels --threads 1 --cache-dir "$T/c4" \
	>/dev/null 2>"$T/bench2.log" || { cat "$T/bench2.log"; fail "coli bench"; }
[ -s "$T/c4/hot-experts/heat.bin" ] || fail "a warm coli bench with --cache-dir saved no heat (the test proves nothing)"
echo "ok: --no-heat, COLI_NO_HEAT and bench --cold neither load nor save routing heat"
