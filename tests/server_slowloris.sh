#!/bin/sh
# server_slowloris.sh - connections that trickle their request must not lock
# anyone out (issue 20): see tests/server_slowloris_clients.py.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
srv_setup
# idle timeout far above the trickle period, so only the request deadline
# and the reserve can free the connections
srv_start main --ctx 256 --max-connections 8 --request-timeout 3 --timeout 60
"$PYTHON3" "${top_srcdir:-.}/tests/server_slowloris_clients.py" "$BASE" 8 || {
	tail -20 "$SRV_TMP/main.log"
	srv_fail "slow clients locked others out or were not closed"
}
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")
[ "$code" = 200 ] || srv_fail "/health afterwards: $code"
srv_stop
if grep -q "LeakSanitizer\|runtime error\|AddressSanitizer" "$SRV_TMP/main.log"; then
	grep -A12 "LeakSanitizer\|runtime error\|AddressSanitizer" "$SRV_TMP/main.log" | head -30
	srv_fail "sanitizer reports"
fi
echo "ok"
