#!/bin/sh
# server_signals.sh - signals against `coli serve` (issue 20):
#  - SIGTERM while 4 streams and 2 non-streamed requests run: each client
#    sees a well-formed end (tests/server_signals_clients.py), the server exits 0,
#    and a saved session is intact;
#  - SIGHUP does not stop the server; it reopens --log-file (rotation).
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
srv_setup
CACHE="$SRV_TMP/cache"
"$COLI" generate "$SRV_MODEL" --cache-dir "$CACHE" --threads 1 --session saved -n 4 \
	-p "a conversation to keep" >/dev/null 2>"$SRV_TMP/gen.err" || srv_fail "coli generate: $(cat "$SRV_TMP/gen.err")"
session_state() {
	"$COLI" sessions "$SRV_MODEL" --cache-dir "$CACHE" --json show saved |
		"$PYTHON3" -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["tokens"], d["valid_bytes"])'
}
before=$(session_state) || srv_fail "coli sessions show saved"

# SIGHUP: still serving, and the log file is reopened after a rotation
export COLI_LOG_LEVEL=info
srv_start hup --cache-dir "$CACHE" --log-file "$SRV_TMP/serve.log"
mv "$SRV_TMP/serve.log" "$SRV_TMP/serve.log.1"
kill -HUP "$SRV_PID"
i=0
until grep -q "reopened" "$SRV_TMP/serve.log" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || srv_fail "SIGHUP: the log file was not reopened"
	kill -0 "$SRV_PID" 2>/dev/null || srv_fail "SIGHUP stopped the server"
	sleep 0.1
done
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")
[ "$code" = 200 ] || srv_fail "/health after SIGHUP: $code"
grep -q "listening" "$SRV_TMP/serve.log.1" || srv_fail "the first log file lost its lines"
srv_stop
grep -q "stopped" "$SRV_TMP/serve.log" || srv_fail "the reopened log file has no shutdown line"
unset COLI_LOG_LEVEL

# SIGTERM during 4 streams and 2 non-streamed requests
srv_start term --cache-dir "$CACHE" --ctx 65536 --parallel 4 --shutdown-grace 0.5 --ignore-eos
"$PYTHON3" "${top_srcdir:-.}/tests/server_signals_clients.py" "$BASE" "$SRV_PID" || {
	tail -20 "$SRV_TMP/term.log"
	srv_fail "a client did not see a well-formed end"
}
wait "$SRV_PID"
rc=$?
SRV_PIDS=
[ $rc = 0 ] || { tail -20 "$SRV_TMP/term.log"; srv_fail "coli serve exited with status $rc after SIGTERM"; }
after=$(session_state) || srv_fail "coli sessions show saved after SIGTERM"
[ "$before" = "$after" ] || srv_fail "the saved session changed: '$before' -> '$after'"
if grep -q "LeakSanitizer\|runtime error" "$SRV_TMP"/*.log; then
	grep -A12 "LeakSanitizer\|runtime error" "$SRV_TMP"/*.log | head -30
	srv_fail "sanitizer reports"
fi
echo "ok"
