#!/bin/sh
# server_badinput.sh - bad input against a live `coli serve`: each case
# asserts the HTTP status and the error body's shape (OpenAI or Anthropic),
# and that /health still answers afterwards. Never a crash, never a hang.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
srv_setup
srv_start main --ctx 256 --max-body 1M --timeout 2

n=0
failed=0
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }

# t NAME WANT_STATUS SHAPE(openai|anthropic|none) CURL_ARGS...
t() {
	name=$1 want=$2 shape=$3
	shift 3
	n=$((n + 1))
	code=$(curl -s -o "$SRV_TMP/body" -D "$SRV_TMP/hdr" -w '%{http_code}' --max-time 30 "$@")
	if [ "$code" != "$want" ]; then
		bad "$name: status $code, want $want: $(head -c 300 "$SRV_TMP/body")"
	elif [ "$shape" != none ]; then
		"$PYTHON3" - "$SRV_TMP/body" "$shape" <<'PY' || bad "$name: bad error shape: $(head -c 300 "$SRV_TMP/body")"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
if sys.argv[2] == "openai":
    e = d["error"]
    assert isinstance(e["message"], str) and e["message"]
    assert isinstance(e["type"], str) and "param" in e and "code" in e
else:
    assert d["type"] == "error"
    assert isinstance(d["error"]["type"], str) and d["error"]["message"]
PY
	fi
	h=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")
	[ "$h" = 200 ] || srv_fail "$name: /health answered $h afterwards (server dead?)"
}

C="$URL/chat/completions"
P="$URL/completions"
M="$URL/messages"
J="Content-Type: application/json"
MSG='"messages":[{"role":"user","content":"hi"}]'

# malformed bodies
t "truncated JSON" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"us'
t "empty body" 400 openai -H "$J" "$C" -d ''
t "null body" 400 openai -H "$J" "$C" -d 'null'
t "array body" 400 openai -H "$J" "$C" -d '[1,2,3]'
t "string body" 400 openai -H "$J" "$C" -d '"hello"'
t "number body" 400 openai -H "$J" "$C" -d '42'
t "trailing garbage" 400 openai -H "$J" "$C" -d "{$MSG} x"
t "huge real" 400 openai -H "$J" "$C" -d "{$MSG,\"max_tokens\":1e400}"
t "huge integer" 400 openai -H "$J" "$C" -d "{$MSG,\"max_tokens\":123456789012345678901234567890}"
"$PYTHON3" -c 'import sys; sys.stdout.write("{\"messages\":" + "[" * 200000 + "]" * 200000 + "}")' >"$SRV_TMP/deep"
t "deeply nested arrays" 400 openai -H "$J" "$C" --data-binary "@$SRV_TMP/deep"
printf '{"messages":[{"role":"user","content":"a\000b"}]}' >"$SRV_TMP/nul"
t "raw NUL byte" 400 openai -H "$J" "$C" --data-binary "@$SRV_TMP/nul"
t "escaped NUL" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"user","content":"a\u0000b"}]}'
printf '{"messages":[{"role":"user","content":"bad \377\376 utf8"}]}' >"$SRV_TMP/utf8"
t "invalid UTF-8" 400 openai -H "$J" "$C" --data-binary "@$SRV_TMP/utf8"
printf '{"messages":[{"role":"user","content":"\300\257"}]}' >"$SRV_TMP/overlong"
t "overlong UTF-8" 400 openai -H "$J" "$C" --data-binary "@$SRV_TMP/overlong"
t "lone surrogate escape" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"user","content":"\ud800"}]}'
head -c 10485760 /dev/zero | tr '\0' 'a' >"$SRV_TMP/big"
t "10 MB body" 413 openai -H "$J" "$C" --data-binary "@$SRV_TMP/big"
t "10 MB chunked body" 413 openai -H "$J" -H "Transfer-Encoding: chunked" "$C" --data-binary "@$SRV_TMP/big"
t "10 MB body (anthropic)" 413 anthropic -H "$J" "$M" --data-binary "@$SRV_TMP/big"
t "multipart content type" 415 openai -F "messages=x" "$C"
t "xml content type" 415 openai -H "Content-Type: application/xml" "$C" -d "{$MSG}"

# routing and methods
t "GET on a POST route" 405 openai "$C"
grep -qi '^Allow: POST' "$SRV_TMP/hdr" || bad "405 without Allow header"
t "DELETE models" 405 openai -X DELETE "$URL/models"
t "PUT messages" 405 anthropic -X PUT -H "$J" "$M" -d '{}'
t "POST health" 405 openai -X POST "$BASE/health" -d '{}'
t "unknown route" 404 openai "$BASE/v2/chat"
t "dot-dot path" 404 openai --path-as-is "$BASE/v1/../../etc/passwd"
t "dot-dot after route" 404 openai --path-as-is -H "$J" "$C/../../x" -d "{$MSG}"
t "trailing slash" 404 openai "$URL/models/x/y"
t "unknown model id" 404 openai "$URL/models/gpt-17"

# OpenAI field validation
t "messages missing" 400 openai -H "$J" "$C" -d '{"model":"default"}'
t "messages empty" 400 openai -H "$J" "$C" -d '{"messages":[]}'
t "messages not array" 400 openai -H "$J" "$C" -d '{"messages":{"role":"user"}}'
t "role invalid" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"root","content":"x"}]}'
t "role missing" 400 openai -H "$J" "$C" -d '{"messages":[{"content":"x"}]}'
t "content number" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"user","content":5}]}'
t "image part" 400 openai -H "$J" "$C" -d '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}'
t "n=2" 400 openai -H "$J" "$C" -d "{$MSG,\"n\":2}"
t "response_format yaml" 400 openai -H "$J" "$C" -d "{$MSG,\"response_format\":{\"type\":\"yaml\"}}"
t "json_schema without schema" 400 openai -H "$J" "$C" -d "{$MSG,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}}"
t "json_schema invalid" 400 openai -H "$J" "$C" -d "{$MSG,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":7}}}}"
t "json_schema keyword" 400 openai -H "$J" "$C" -d "{$MSG,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"not\":{}}}}}"
t "temperature 5" 400 openai -H "$J" "$C" -d "{$MSG,\"temperature\":5}"
t "max_tokens negative" 400 openai -H "$J" "$C" -d "{$MSG,\"max_tokens\":-1}"
t "max_tokens string" 400 openai -H "$J" "$C" -d "{$MSG,\"max_tokens\":\"10\"}"
t "stream not bool" 400 openai -H "$J" "$C" -d "{$MSG,\"stream\":\"yes\"}"
t "stop number" 400 openai -H "$J" "$C" -d "{$MSG,\"stop\":5}"
t "top_logprobs 99" 400 openai -H "$J" "$C" -d "{$MSG,\"logprobs\":true,\"top_logprobs\":99}"
t "top_logprobs without logprobs" 400 openai -H "$J" "$C" -d "{$MSG,\"top_logprobs\":2}"
t "unknown model" 404 openai -H "$J" "$C" -d "{$MSG,\"model\":\"gpt-17\"}"
grep -q model_not_found "$SRV_TMP/body" || bad "unknown model without code model_not_found"
long=$("$PYTHON3" -c 'print("word " * 2000)')
t "context exceeded" 400 openai -H "$J" "$C" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}]}"
grep -q context_length_exceeded "$SRV_TMP/body" || bad "no context_length_exceeded code"
t "unknown fields ignored" 200 none -H "$J" "$C" -d "{$MSG,\"max_tokens\":2,\"frobnicate\":{\"a\":[1]},\"presence_penalty\":0.5}"

# completions
t "batched prompt" 400 openai -H "$J" "$P" -d '{"prompt":["a","b"]}'
t "prompt missing" 400 openai -H "$J" "$P" -d '{"max_tokens":3}'
t "token id out of vocab" 400 openai -H "$J" "$P" -d '{"prompt":[1,2,99999999]}'
t "echo" 400 openai -H "$J" "$P" -d '{"prompt":"x","echo":true}'

# Anthropic
t "max_tokens missing" 400 anthropic -H "$J" "$M" -d "{\"model\":\"x\",$MSG}"
t "model missing" 400 anthropic -H "$J" "$M" -d "{\"max_tokens\":5,$MSG}"
t "system role in messages" 200 none -H "$J" "$M" -d '{"model":"x","max_tokens":2,"messages":[{"role":"user","content":"x"},{"role":"system","content":"x"}]}'
t "unknown role in messages" 400 anthropic -H "$J" "$M" -d '{"model":"x","max_tokens":5,"messages":[{"role":"robot","content":"x"}]}'
t "unknown block type" 400 anthropic -H "$J" "$M" -d '{"model":"x","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}'
t "count_tokens malformed" 400 anthropic -H "$J" "$URL/messages/count_tokens" -d '{"model":'
t "anthropic headers tolerated" 200 none -H "$J" -H "anthropic-version: 2023-06-01" -H "anthropic-beta: tools-2024-04-04" "$M" -d "{\"model\":\"any-name\",\"max_tokens\":2,$MSG}"

# protocol-level abuse: answered by the front door before libmicrohttpd
# sees the request, in the API's error shape
longurl=$("$PYTHON3" -c 'print("a" * 100000)')
t "100 KB URL" 414 openai "$BASE/$longurl"
t "100 KB header" 431 openai -H "X-Big: $longurl" "$BASE/health"
t "broken Content-Length" 413 openai -H "$J" -H "Content-Length: 99999999999999999999" "$C" -d "{$MSG}"
t "broken Content-Length (anthropic)" 413 anthropic -H "$J" -H "Content-Length: 99999999999999999999" "$M" -d "{$MSG}"
t "HTTP/1.0 request" 200 none -0 "$BASE/health"

# CORS preflight
t "OPTIONS preflight" 204 none -X OPTIONS -H "Origin: http://x" -H "Access-Control-Request-Headers: authorization" "$C"
grep -qi '^Access-Control-Allow-Origin: \*' "$SRV_TMP/hdr" || bad "preflight without Allow-Origin"
grep -qi '^Access-Control-Allow-Headers: authorization' "$SRV_TMP/hdr" || bad "preflight without Allow-Headers"

# a slow client is cut by the idle timeout (2 s here) instead of holding a thread
n=$((n + 1))
"$PYTHON3" - "$BASE" <<'PY' || bad "slow partial send was not cut"
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mes")
s.settimeout(30)
try:
    data = s.recv(4096)   # server closes (b"") or answers an error
except socket.timeout:
    sys.exit(1)
sys.exit(0)
PY

srv_stop

# API key: missing/wrong -> 401 (both error shapes), Bearer and x-api-key accepted, /health public
COLI_TEST_KEY=sekrit-123
export COLI_TEST_KEY
srv_start keyed --api-key-env COLI_TEST_KEY
t "no key" 401 openai "$URL/models"
t "wrong key" 401 openai -H "Authorization: Bearer nope" "$URL/models"
t "wrong x-api-key (anthropic)" 401 anthropic -H "x-api-key: nope" -H "$J" "$URL/messages" -d '{}'
t "bearer key" 200 none -H "Authorization: Bearer sekrit-123" "$URL/models"
t "x-api-key" 200 none -H "x-api-key: sekrit-123" "$URL/models"
t "health is public" 200 none "$BASE/health"
srv_stop

# queue full: every answer is 200 or a 503 with Retry-After and an error body;
# a context and no end of sequence that let a request run far longer than any
# scheduling delay (the disconnect case below)
srv_start busy --max-queue 1 --ctx 65536 --ignore-eos
C="$URL/chat/completions"

# a client that disconnects mid-stream has its request cancelled: it leaves
# after the first chunk of a 60,000-token stream, which cannot end on its own
# before the server notices; then wait for the metric, not for a time
n=$((n + 1))
"$PYTHON3" - "$BASE" <<'PY' || bad "disconnect did not cancel the request"
import json, socket, sys, time, urllib.parse, urllib.request
base = sys.argv[1]
u = urllib.parse.urlparse(base)
def metric(name):
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[1])
    return 0.0
before = metric("coli_requests_cancelled_total")
body = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                   "max_tokens": 60000, "stream": True}).encode()
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body)
s.settimeout(60)
got = b""
while b"data: " not in got:
    d = s.recv(4096)
    if not d:
        sys.exit("stream ended before its first chunk")
    got += d
s.close()
for _ in range(2400):   # a bound against a hang only: the condition ends it
    if metric("coli_requests_cancelled_total") > before and metric("coli_queue_length") == 0:
        sys.exit(0)
    time.sleep(0.05)
sys.exit("cancelled_total %g -> %g" % (before, metric("coli_requests_cancelled_total")))
PY
qpids=
for k in 1 2 3 4 5 6; do
	curl -s -o "$SRV_TMP/q$k.body" -D "$SRV_TMP/q$k.hdr" -w '%{http_code}' --max-time 60 -H "$J" "$C" \
		-d "{$MSG,\"max_tokens\":64}" >"$SRV_TMP/q$k.code" &
	qpids="$qpids $!"
done
for p in $qpids; do wait "$p"; done
for k in 1 2 3 4 5 6; do
	n=$((n + 1))
	code=$(cat "$SRV_TMP/q$k.code")
	case $code in
	200) ;;
	503) grep -qi '^Retry-After:' "$SRV_TMP/q$k.hdr" || bad "503 without Retry-After" ;;
	*) bad "queue case $k: status $code" ;;
	esac
done
srv_stop

echo "$n cases, $failed failed"
[ "$failed" = 0 ]
