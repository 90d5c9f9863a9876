#!/bin/sh
# Long context beyond RAM: with only 64 KV rows in RAM (--kv-ram 64), a
# session of 170+ tokens keeps its older rows in the session file and reads
# them back on demand; the tokens equal those of a run holding everything
# in RAM, also after a restart. Without a session the limit is refused
# clearly.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || exit 1
prompt=$(seq 2 101 | tr '\n' ',' | sed 's/,$//')   # 100 tokens
gen() { "$COLI" generate "$tmp/m" --ids --ignore-eos --ctx 512 "$@"; }
fail=0
a1=$(gen --tokens "$prompt" -n 40 --kv-ram 64 --session long) || { echo "FAIL: turn 1"; exit 1; }
r1=$(gen --tokens "$prompt" -n 40) || exit 1
[ "$a1" = "$r1" ] || { echo "FAIL: turn 1 with 64 rows in RAM differs"; echo " ram: $r1"; echo " got: $a1"; fail=1; }
a2=$(gen --tokens 7,8,9 -n 30 --kv-ram 64 --session long --stats 2>"$tmp/err2") || { echo "FAIL: turn 2: $(cat "$tmp/err2")"; exit 1; }
hist="$prompt,$(echo $a1 | tr ' ' ','),7,8,9"
r2=$(gen --tokens "$hist" -n 30) || exit 1
[ "$a2" = "$r2" ] || { echo "FAIL: resumed turn 2 differs"; echo " ram: $r2"; echo " got: $a2"; fail=1; }
grep -q "(140 cached)" "$tmp/err2" || { echo "FAIL: turn 2 did not resume from disk: $(cat "$tmp/err2")"; fail=1; }
# without a session the RAM window is the limit, refused with a clear message
if gen --tokens "$prompt" -n 4 --kv-ram 64 >/dev/null 2>"$tmp/err3"; then
	echo "FAIL: a 100-token prompt fit in 64 rows without a session"; fail=1
fi
grep -q "kv-ram\|session" "$tmp/err3" || { echo "FAIL: unclear refusal: $(cat "$tmp/err3")"; fail=1; }
[ $fail = 0 ] && echo "long context: 173 tokens through 64 RAM rows equal the all-in-RAM run, across a restart"
exit $fail
