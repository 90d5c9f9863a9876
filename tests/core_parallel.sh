#!/bin/sh
# Concurrent requests decoded together give exactly the text each gives
# alone: 4 different prompts sent at once to a server with 4 slots match
# the same prompts sent one by one to a server with 1 slot (greedy).
set -u
. "$top_srcdir/tests/server_common.sh"
srv_setup
ask() { # URL PROMPT -> completion text
	curl -sS --max-time 120 "$1/completions" -H 'content-type: application/json' \
		-d "{\"model\":\"default\",\"prompt\":\"$2\",\"max_tokens\":24,\"temperature\":0}" |
		"${PYTHON3:-python3}" -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])'
}
prompts="alpha beta gamma delta"
srv_start one --parallel 1
for p in $prompts; do ask "$URL" "The $p is" >"$SRV_TMP/one.$p" || srv_fail "request $p"; done
srv_stop
srv_start four --parallel 4
pids=
for p in $prompts; do
	ask "$URL" "The $p is" >"$SRV_TMP/four.$p" &
	pids="$pids $!"
done
for pid in $pids; do wait "$pid"; done
srv_stop
fail=0
for p in $prompts; do
	[ -s "$SRV_TMP/one.$p" ] || { echo "FAIL: no text for $p"; fail=1; }
	cmp -s "$SRV_TMP/one.$p" "$SRV_TMP/four.$p" ||
		{ echo "FAIL: '$p' differs: '$(cat "$SRV_TMP/one.$p")' vs '$(cat "$SRV_TMP/four.$p")'"; fail=1; }
done
[ $fail = 0 ] && echo "parallel: 4 concurrent requests equal their sequential answers"
exit $fail
