#!/bin/sh
# Placement never changes the model: greedy tokens and logits are identical
# with every expert from disk (cache 0), a small cache, a cache holding
# everything, prefetch on/off, O_DIRECT on/off, a mirror drive, and 1 or 2
# compute threads. Also: a second run of the same workload (warm heat) gives
# the same tokens.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 7 --experts 32 --topk 4 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int4-g64 >/dev/null 2>&1 || exit 1
mkdir -p "$tmp/mirror" && cp -r "$tmp/m/experts" "$tmp/mirror/" || exit 1
prompt=1,5,9,200,33,7,100,4
ref=$("$COLI" generate "$tmp/m" --tokens $prompt -n 24 --ids --ignore-eos) || exit 1
reflog=$("$COLI" logits "$tmp/m" --tokens $prompt | cksum) || exit 1
[ -n "$ref" ] || { echo "no tokens generated"; exit 1; }
fail=0
check() {
	got=$("$COLI" generate "$tmp/m" --tokens $prompt -n 24 --ids --ignore-eos "$@") || { echo "FAIL (exit): $*"; fail=1; return; }
	if [ "$got" != "$ref" ]; then
		echo "FAIL: tokens differ with $*"; echo " ref: $ref"; echo " got: $got"; fail=1
	fi
	lg=$("$COLI" logits "$tmp/m" --tokens $prompt "$@" | cksum)
	[ "$lg" = "$reflog" ] || { echo "FAIL: logits differ with $*"; fail=1; }
}
check --expert-cache 0
check --expert-cache 0 --no-prefetch
check --expert-cache 64K --pin-budget 0
check --expert-cache 1G
check --no-prefetch
check --direct
check --no-direct
check --threads 1
check --threads 2
check --threads 3 --expert-cache 0
check --mirror "$tmp/mirror"
check --mirror "$tmp/mirror" --expert-cache 0 --no-direct
check --cache-policy lfu-decay --expert-cache 128K
check
[ $fail = 0 ] && echo "placement invariants: identical tokens and logits in 14 configurations"
exit $fail
