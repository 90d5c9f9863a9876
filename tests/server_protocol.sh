#!/bin/sh
# server_protocol.sh - HTTP protocol edges, error text, logit_bias and
# client-gone cancellation against a live `coli serve` (issue 20); the
# cases are in tests/server_protocol_cases.py.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
srv_setup
# a context long enough that an uncancelled request would run for a while,
# and no early end of sequence (Anthropic's API has no logit_bias to ban it)
srv_start main --ctx 65536 --timeout 30 --ignore-eos
"$PYTHON3" "${top_srcdir:-.}/tests/server_protocol_cases.py" "$BASE" || srv_fail "protocol cases failed"
srv_stop
if grep -q "LeakSanitizer\|runtime error" "$SRV_TMP/main.log"; then
	grep -A12 "LeakSanitizer\|runtime error" "$SRV_TMP/main.log" | head -30
	srv_fail "sanitizer reports"
fi
echo "ok"
