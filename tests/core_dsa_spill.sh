#!/bin/sh
# Spilled rows of a DSA model read back selectively: with 32 KV rows in
# RAM (--kv-ram 32) a 130-token history keeps most of its rows in the
# session file; a layer reads back all of their index keys, then only the
# spilled rows its selection (index_topk 6) takes, through io_uring.
# - greedy tokens equal those of a run holding everything in RAM (prompt
#   chunks of 16 and 5, so chunk rows' selections are merged too);
# - the bytes read back (generate --stats) are under half of the full
#   spill: a full read of every spilled row fails here (the index keys,
#   always read in full, are 31% of a row's bytes on this model);
# - a model without the indexer still reads every spilled row: the
#   counter equals the full spill.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
fail=0
"$COLI" synth "$tmp/hf" --preset tiny --seed 11 --layers 3 --index-topk 6 --indexer-types FSF >/dev/null 2>&1 || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || exit 1
prompt=$(seq 3 2 201 | tr '\n' ',' | sed 's/,$//')   # 100 tokens
gen() { m=$1; shift; "$COLI" generate "$m" --ids --ignore-eos --ctx 512 "$@"; }
# spill figures of a --stats run: "read full"
spilled() { sed -n 's/^spilled KV read back: \([0-9]*\) bytes of \([0-9]*\)$/\1 \2/p' "$1"; }
for pb in 16 5; do
	rm -rf "$tmp/cache"
	a=$(gen "$tmp/m" --tokens "$prompt" -n 30 --kv-ram 32 --prefill-batch $pb --session s --stats 2>"$tmp/err") ||
		{ echo "FAIL: spilled run (chunks of $pb): $(cat "$tmp/err")"; exit 1; }
	r=$(gen "$tmp/m" --tokens "$prompt" -n 30 --prefill-batch $pb) || exit 1
	[ "$a" = "$r" ] || { echo "FAIL: chunks of $pb: spilled run differs"; echo " ram: $r"; echo " got: $a"; fail=1; }
	set -- $(spilled "$tmp/err")
	if [ $# != 2 ] || [ "$1" -le 0 ]; then
		echo "FAIL: chunks of $pb: no spilled rows read back: $(cat "$tmp/err")"; fail=1
	elif [ $(($1 * 2)) -ge "$2" ]; then
		echo "FAIL: chunks of $pb: read back $1 bytes of a $2-byte spill (not only the selected rows)"; fail=1
	else
		echo "chunks of $pb: read back $1 bytes of a $2-byte spill"
	fi
done
# a resumed turn (the session's rows from the file) reads selectively too
b=$(gen "$tmp/m" --tokens 7,8,9 -n 20 --kv-ram 32 --session s --stats 2>"$tmp/err") ||
	{ echo "FAIL: resumed turn: $(cat "$tmp/err")"; exit 1; }
hist="$prompt,$(echo $a | tr ' ' ','),7,8,9"
u=$(gen "$tmp/m" --tokens "$hist" -n 20) || exit 1
[ "$b" = "$u" ] || { echo "FAIL: resumed spilled turn differs"; echo " ram: $u"; echo " got: $b"; fail=1; }
set -- $(spilled "$tmp/err")
[ $# = 2 ] && [ "$1" -gt 0 ] && [ $(($1 * 2)) -lt "$2" ] ||
	{ echo "FAIL: resumed turn read back '$*': $(cat "$tmp/err")"; fail=1; }
# without the indexer every spilled row is read back
"$COLI" synth "$tmp/hfd" --preset tiny --seed 11 --layers 3 >/dev/null 2>&1 || exit 1
"$COLI" convert "$tmp/hfd" "$tmp/d" --quant int8 >/dev/null 2>&1 || exit 1
rm -rf "$tmp/cache"
a=$(gen "$tmp/d" --tokens "$prompt" -n 10 --kv-ram 32 --session s --stats 2>"$tmp/err") ||
	{ echo "FAIL: dense spilled run: $(cat "$tmp/err")"; exit 1; }
r=$(gen "$tmp/d" --tokens "$prompt" -n 10) || exit 1
[ "$a" = "$r" ] || { echo "FAIL: dense spilled run differs"; echo " ram: $r"; echo " got: $a"; fail=1; }
set -- $(spilled "$tmp/err")
[ $# = 2 ] && [ "$1" -gt 0 ] && [ "$1" = "$2" ] ||
	{ echo "FAIL: dense model read back '$*' (every spilled row expected): $(cat "$tmp/err")"; fail=1; }
[ $fail = 0 ] && echo "dsa spill: only the selected spilled rows read back, tokens as with all rows in RAM"
exit $fail
