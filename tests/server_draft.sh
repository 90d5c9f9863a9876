#!/bin/sh
# The "draft" request field and the speculative-decoding /metrics series:
# on a model without MTP a number of drafts is a 400 naming the field,
# "auto" is accepted; on the default model "draft": 2 gives the same greedy
# text as "off", and /metrics counts the drafted and accepted tokens.
set -u
: "${COLI:?}"
. "${top_srcdir:-.}/tests/server_common.sh"
srv_setup
fail=0
post() { # post BODY -> HTTP code on stdout, body in $SRV_TMP/body
	curl -s -o "$SRV_TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data "$1" "$URL/completions"
}

"$COLI" synth "$SRV_TMP/hf0" --preset tiny --mtp 0 >/dev/null 2>&1 &&
	"$COLI" convert "$SRV_TMP/hf0" "$SRV_TMP/nomtp" --quant f32 >/dev/null 2>&1 || srv_fail "cannot make a model without MTP"
SRV_MODEL="$SRV_TMP/nomtp"
srv_start nomtp
code=$(post '{"prompt":"hi","max_tokens":2,"draft":2}')
[ "$code" = 400 ] && grep -q '"param":"draft"' "$SRV_TMP/body" && grep -q "no MTP module" "$SRV_TMP/body" ||
	{ echo "FAIL: draft 2 without MTP: $code $(cat "$SRV_TMP/body")"; fail=1; }
code=$(post '{"prompt":"hi","max_tokens":2,"draft":"sometimes"}')
[ "$code" = 400 ] && grep -q '"param":"draft"' "$SRV_TMP/body" ||
	{ echo "FAIL: draft \"sometimes\": $code $(cat "$SRV_TMP/body")"; fail=1; }
code=$(post '{"prompt":"hi","max_tokens":2,"draft":"auto"}')
[ "$code" = 200 ] || { echo "FAIL: draft auto without MTP: $code $(cat "$SRV_TMP/body")"; fail=1; }
srv_stop

SRV_MODEL="$top_srcdir/data/default-model"
srv_start def --cache-dir "$SRV_TMP/cache"
code=$(post '{"prompt":"Once upon a time","max_tokens":60,"temperature":0,"draft":"off"}')
[ "$code" = 200 ] || { echo "FAIL: draft off: $code $(cat "$SRV_TMP/body")"; fail=1; }
off=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$SRV_TMP/body")
code=$(post '{"prompt":"Once upon a time","max_tokens":60,"temperature":0,"draft":2}')
[ "$code" = 200 ] || { echo "FAIL: draft 2: $code $(cat "$SRV_TMP/body")"; fail=1; }
on=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$SRV_TMP/body")
[ -n "$off" ] && [ "$on" = "$off" ] || { echo "FAIL: draft 2 text '$on' != off '$off'"; fail=1; }
curl -s "$BASE/metrics" >"$SRV_TMP/metrics"
drafted=$(awk '$1 == "coli_draft_drafted_total" {print $2}' "$SRV_TMP/metrics")
accepted=$(awk '$1 == "coli_draft_accepted_total" {print $2}' "$SRV_TMP/metrics")
[ "${drafted:-0}" -gt 0 ] && [ "${accepted:--1}" -ge 0 ] && [ "$accepted" -le "$drafted" ] ||
	{ echo "FAIL: metrics drafted=$drafted accepted=$accepted"; fail=1; }
for m in coli_draft_enabled coli_draft_tokens coli_draft_forwards_total coli_draft_forward_tokens_total \
	coli_draft_acceptance_ratio coli_draft_tokens_per_forward; do
	grep -q "^$m " "$SRV_TMP/metrics" || { echo "FAIL: /metrics lacks $m"; fail=1; }
done
srv_stop
[ $fail = 0 ] && echo "server draft: field and metrics ok ($drafted drafted, $accepted accepted)"
exit $fail
