#!/bin/sh
# tui_server.sh - the HTTP endpoint inside a running colitop: while the
# Chat pane is generating, curl gets /health, /v1/models, a chat completion
# and /metrics (with the expert-store series) from the same engine, and the
# chat answer still completes. Each external request gets a Log line
# (client address, route, status, tokens, time) and the status line counts
# external generations as "served" and the chat's turns apart. Also: a
# busy port is reported in the status line and colitop keeps running
# without a server.
. "$top_srcdir/tests/tui_common.sh"
tui_setup
command -v curl >/dev/null 2>&1 || test_skip "curl missing"

# long enough that the chat is still generating when curl asks
N=3000
[ -z "$COLI_TEST_SANITIZED" ] || N=800
tui_start 120 40 --port 0 --session srv --max-tokens $N --ignore-eos
tui_wait 'http://127\.0\.0\.1:[0-9]+ served [0-9]+ running' 60
PORT=$(tui_screen | sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\) served.*/\1/p' | head -n1)
[ -n "$PORT" ] || tui_fail "no port in the status line"
BASE="http://127.0.0.1:$PORT"

tui_keys -l 'tell me a long story'
tui_keys Enter
tui_wait 'generating: [0-9]+ tok' 60

curl -sf --max-time 30 "$BASE/health" >/dev/null || tui_fail "/health"
curl -sf --max-time 30 "$BASE/v1/models" | grep -q '"object"' || tui_fail "/v1/models"
# the chat holds the engine: this request queues behind it, then answers
out=$(curl -sf --max-time 120 "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
	-d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}') || tui_fail "chat completion failed"
echo "$out" | grep -q '"choices"' || tui_fail "no choices in: $out"
echo "$out" | grep -q '"completion_tokens": *4' || tui_fail "usage wrong in: $out"
curl -sf --max-time 30 "$BASE/metrics" >"$TUI_TMP/metrics" || tui_fail "/metrics"
grep -q 'expert' "$TUI_TMP/metrics" || tui_fail "no expert series in /metrics"
tui_wait "tok/s +TTFT [0-9]+ ms +$N tok" 120
# one generation from outside, one chat turn: counted apart
tui_wait "served 1 running 0 queued 0 rows/step [0-9]+ chat 1" 30
LOG="$COLI_CACHE_DIR/logs/colitop.log"
grep -Eq 'HTTP 127\.0\.0\.1:[0-9]+ POST /v1/chat/completions 200: [0-9]+\+4 tokens, [0-9.]+ s' "$LOG" ||
	tui_fail "no Log line for the chat completion"
grep -Eq 'HTTP 127\.0\.0\.1:[0-9]+ GET /health 200' "$LOG" || tui_fail "no Log line for /health"

# a second colitop on the same port: says so and keeps going
FIRST=$TUI_T
FIRST_EXIT=$TUI_EXIT
export COLI_CACHE_DIR="$TUI_TMP/cache2"
TUI_N=$(( TUI_N + 1 ))
TUI_T="t$TUI_N"
TUI_EXIT="$TUI_TMP/exit.$TUI_N"
tmux -L "$TUI_SOCK" new-session -d -s "$TUI_T" -x 120 -y 40 \
	"env LANG=C.UTF-8 COLI_CACHE_DIR='$COLI_CACHE_DIR' '$COLITOP' --model '$TUI_MODEL' --threads 1 --port $PORT 2>'$TUI_TMP/stderr2'; echo \$? >'$TUI_EXIT'; exec sleep 600"
tui_wait "port $PORT busy: no server" 60
tui_keys F10
tui_wait_exit 30
[ "$(tui_status)" = 0 ] || tui_fail "second colitop exit status $(tui_status)"
TUI_T=$FIRST
TUI_EXIT=$FIRST_EXIT
tui_keys F10
tui_wait_exit 30
[ "$(tui_status)" = 0 ] || tui_fail "exit status $(tui_status)"
curl -s --max-time 5 "$BASE/health" >/dev/null 2>&1 && tui_fail "server still answering after quit"
echo "tui_server: ok"
exit 0
