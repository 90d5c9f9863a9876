#!/bin/sh
# KV sessions through the engine: three turns, each in a new process
# (resumed from disk), give exactly the tokens one uninterrupted sequence
# gives; resumed turns report the stored tokens as cached (no prefill); a
# stateless request whose prompt starts with a stored session's tokens
# reuses them only with --share-session-prefixes (never by default: the
# cached count would reveal the session's text); a session from another
# model is refused and left untouched.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 3 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || exit 1
gen() { "$COLI" generate "$tmp/m" --ids --ignore-eos -n 6 "$@"; }
fail=0
t1=$(gen --tokens 1,5,9 --session chat) || exit 1
t2=$(gen --tokens 40,41 --session chat 2>"$tmp/err2" --stats) || exit 1
t3=$(gen --tokens 77 --session chat 2>"$tmp/err3" --stats) || exit 1
# the uninterrupted sequence: each turn's prompt follows the previous answer
hist="1,5,9,$(echo $t1 | tr ' ' ','),40,41"
u2=$(gen --tokens "$hist") || exit 1
[ "$u2" = "$t2" ] || { echo "FAIL: turn 2 after restart '$t2' != uninterrupted '$u2'"; fail=1; }
hist="$hist,$(echo $t2 | tr ' ' ','),77"
u3=$(gen --tokens "$hist" --stats 2>"$tmp/err_u3") || exit 1
[ "$u3" = "$t3" ] || { echo "FAIL: turn 3 after restart '$t3' != uninterrupted '$u3'"; fail=1; }
s3=$(gen --tokens "$hist" --stats --share-session-prefixes 2>"$tmp/err_s3") || exit 1
[ "$s3" = "$t3" ] || { echo "FAIL: turn 3 from the shared prefix '$s3' != uninterrupted '$u3'"; fail=1; }
# turn 2 resumed 9 stored tokens (3 prompt + 6 answer) without prefill
grep -q "prompt 11 tokens (9 cached)" "$tmp/err2" || { echo "FAIL: turn 2 stats: $(cat "$tmp/err2")"; fail=1; }
grep -q "prompt 18 tokens (17 cached)" "$tmp/err3" || { echo "FAIL: turn 3 stats: $(cat "$tmp/err3")"; fail=1; }
# the stateless run did not read the stored session; the opted-in one did
grep -q "(0 cached)" "$tmp/err_u3" || { echo "FAIL: a stateless run read a session: $(cat "$tmp/err_u3")"; fail=1; }
grep -q "(17 cached)" "$tmp/err_s3" || { echo "FAIL: prefix reuse: $(cat "$tmp/err_s3")"; fail=1; }
# a session of another model is refused, file untouched
"$COLI" synth "$tmp/hf2" --preset tiny --seed 4 >/dev/null || exit 1
"$COLI" convert "$tmp/hf2" "$tmp/m2" --quant int8 >/dev/null 2>&1 || exit 1
sum=$(cksum < "$tmp/cache/kv/chat.kv")
if "$COLI" generate "$tmp/m2" --tokens 1 -n 2 --session chat >/dev/null 2>"$tmp/err4"; then
	echo "FAIL: a session of another model was accepted"; fail=1
fi
grep -qi "chat" "$tmp/err4" || { echo "FAIL: unclear refusal: $(cat "$tmp/err4")"; fail=1; }
[ "$(cksum < "$tmp/cache/kv/chat.kv")" = "$sum" ] || { echo "FAIL: refused session file changed"; fail=1; }
[ $fail = 0 ] && echo "session resume: 3 turns across restarts equal the uninterrupted sequence"
exit $fail
