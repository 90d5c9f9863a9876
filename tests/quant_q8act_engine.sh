#!/bin/sh
# --act-quant q8 (int8 activations, quant_kernels_q8.h) in the engine: the same
# determinism rules as the exact path. Greedy tokens and logits are
# identical with 1, 2 and 3 compute threads; logits of an incremental pass
# (one token at a time through the KV cache) equal the full pass; the
# environment twin COLI_ACT_QUANT=q8 gives the same as the flag, and the
# flag overrides it. q8 really changes the arithmetic (its logits differ
# from the f32 run's), and coli bench's JSON names the mode that ran. A bad
# value (flag or environment) is a usage error: exit status 2 and one line
# naming the flag.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
unset COLI_ACT_QUANT
"$COLI" synth "$tmp/hf" --preset tiny --seed 11 --experts 16 --topk 4 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int4-g64 >/dev/null 2>&1 || exit 1
prompt=1,5,9,200,33,7,100,4,17,3
fail=0
ref=$("$COLI" generate "$tmp/m" --tokens $prompt -n 16 --ids --ignore-eos --act-quant q8 --threads 1) || exit 1
[ -n "$ref" ] || { echo "no tokens generated"; exit 1; }
for t in 2 3; do
	got=$("$COLI" generate "$tmp/m" --tokens $prompt -n 16 --ids --ignore-eos --act-quant q8 --threads $t)
	[ "$got" = "$ref" ] || { echo "FAIL: q8 tokens differ with $t threads"; echo " ref: $ref"; echo " got: $got"; fail=1; }
done
got=$(COLI_ACT_QUANT=q8 "$COLI" generate "$tmp/m" --tokens $prompt -n 16 --ids --ignore-eos --threads 2)
[ "$got" = "$ref" ] || { echo "FAIL: COLI_ACT_QUANT=q8 differs from --act-quant q8"; fail=1; }

full=$("$COLI" logits "$tmp/m" --tokens $prompt --act-quant=q8 --threads 1 | cksum)
for t in 2 3; do
	lg=$("$COLI" logits "$tmp/m" --tokens $prompt --act-quant=q8 --threads $t | cksum)
	[ "$lg" = "$full" ] || { echo "FAIL: q8 logits differ with $t threads"; fail=1; }
done
inc=$("$COLI" logits "$tmp/m" --tokens $prompt --act-quant q8 --incremental --threads 2 | cksum)
[ "$inc" = "$full" ] || { echo "FAIL: q8 incremental logits differ from the full pass"; fail=1; }
f32=$("$COLI" logits "$tmp/m" --tokens $prompt --threads 2 | cksum)
[ "$f32" != "$full" ] || { echo "FAIL: --act-quant q8 gave the f32 logits (not applied?)"; fail=1; }
over=$(COLI_ACT_QUANT=q8 "$COLI" logits "$tmp/m" --tokens $prompt --act-quant f32 --threads 2 | cksum)
[ "$over" = "$f32" ] || { echo "FAIL: --act-quant f32 does not override COLI_ACT_QUANT=q8"; fail=1; }

for a in f32 q8; do
	"$COLI" bench "$tmp/m" --no-kernels --prompt 4 --gen 4 --act-quant $a >"$tmp/bench.json" 2>/dev/null ||
		{ echo "FAIL: coli bench --act-quant $a"; fail=1; }
	grep -q "\"act_quant\": *\"$a\"" "$tmp/bench.json" || { echo "FAIL: coli bench JSON lacks act_quant $a"; fail=1; }
done

"$COLI" generate "$tmp/m" --tokens $prompt -n 2 --act-quant q4 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] || { echo "FAIL: --act-quant q4 exits $rc, expected 2"; fail=1; }
grep -q -- "--act-quant" "$tmp/err" || { echo "FAIL: error does not name --act-quant:"; cat "$tmp/err"; fail=1; }
COLI_ACT_QUANT=int8 "$COLI" logits "$tmp/m" --tokens $prompt >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] || { echo "FAIL: COLI_ACT_QUANT=int8 exits $rc, expected 2"; fail=1; }
grep -q "COLI_ACT_QUANT" "$tmp/err" || { echo "FAIL: error does not name COLI_ACT_QUANT:"; cat "$tmp/err"; fail=1; }
[ $fail = 0 ] && echo "act-quant q8: same tokens and logits for 1-3 threads, incremental == full, bench names the mode, bad values exit 2"
exit $fail
