#!/bin/sh
# server_hardening.sh - regression tests for defects found by an adversarial
# run against `coli serve` (issue 20). Each case reproduces what used to go
# wrong and checks the server is still alive and correct afterwards.
#  1. the tokenizer's BPE cache was cleared with a free() of an interior
#     pointer: ~30,000 distinct words in one count_tokens aborted the server
#     (and `coli tokenize --file` on a large word list aborted too);
#  2. a stateless request reused the KV prefix of any saved session and
#     reported it as cached tokens, revealing the session's text;
#  3. an Anthropic tool_use block without "input" leaked a JSON object per
#     request (seen by LeakSanitizer at exit in the sanitizer build).
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
srv_setup

# 40,000 distinct words: more than 3/4 of the BPE cache's 32,768 slots.
"$PYTHON3" - "$SRV_TMP/words.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    def word(i):  # letters only, so the pre-tokenizer keeps each word whole
        w = ""
        for _ in range(4):
            w += "bcdfghjklmnpqrstvwxz"[i % 20] + "aeiou"[(i // 20) % 5]
            i //= 100
        return w
    f.write(" ".join(word(i * 7919 % 100000000) for i in range(40000)))
PY

# 1a. the CLI path
"$COLI" tokenize "$SRV_MODEL" --file "$SRV_TMP/words.txt" >"$SRV_TMP/ids.json" 2>"$SRV_TMP/tok.err" ||
	srv_fail "coli tokenize --file on 40,000 distinct words failed: $(tail -3 "$SRV_TMP/tok.err")"
"$PYTHON3" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ids"]) > 40000' "$SRV_TMP/ids.json" ||
	srv_fail "coli tokenize --file: no ids"

# 2. a saved session, written before the server starts
CACHE="$SRV_TMP/cache"
SECRET="the vault code of the north office is sword fish seven"
"$COLI" generate "$SRV_MODEL" --cache-dir "$CACHE" --threads 1 --session private -n 2 \
	-p "$SECRET" >/dev/null 2>"$SRV_TMP/gen.err" || srv_fail "coli generate --session: $(cat "$SRV_TMP/gen.err")"

srv_start main --cache-dir "$CACHE" --ctx 256
J="Content-Type: application/json"

# 1b. the server path: count_tokens with the word list, twice (the second
# call clears the cache again), then /health
"$PYTHON3" - "$SRV_TMP/words.txt" "$SRV_TMP/count.json" <<'PY'
import json, sys
words = open(sys.argv[1]).read()
json.dump({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": words}]},
          open(sys.argv[2], "w"))
PY
for k in 1 2; do
	code=$(curl -s -o "$SRV_TMP/body" -w '%{http_code}' --max-time 120 -H "$J" \
		"$URL/messages/count_tokens" --data-binary "@$SRV_TMP/count.json")
	[ "$code" = 200 ] || srv_fail "count_tokens with 40,000 distinct words: status $code $(head -c 200 "$SRV_TMP/body")"
done
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/health")
[ "$code" = 200 ] || srv_fail "/health after the large count_tokens: $code"

# cached tokens a raw completion of PROMPT reports
cached_of() {
	"$PYTHON3" -c 'import json,sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": 1}))' "$1" >"$SRV_TMP/c.json"
	curl -s --max-time 60 -H "$J" "$URL/completions" --data-binary "@$SRV_TMP/c.json" |
		"$PYTHON3" -c 'import json,sys; u=json.load(sys.stdin)["usage"]; print((u.get("prompt_tokens_details") or {}).get("cached_tokens", 0))'
}
got=$(cached_of "$SECRET and more") || srv_fail "completion request failed"
[ "$got" = 0 ] || srv_fail "a stateless request reused $got tokens of a saved session (its text is guessable)"
# the same stateless prompt again is served from the stateless prefix cache
got=$(cached_of "$SECRET and more")
[ "$got" -gt 0 ] || srv_fail "the stateless prefix cache did not serve a repeated prompt (cached $got)"

# 3. tool_use blocks without input, many times; LSan checks at exit
cat >"$SRV_TMP/tool.json" <<'EOF'
{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},
 {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f"}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}
EOF
i=0
while [ $i -lt 40 ]; do
	code=$(curl -s -o "$SRV_TMP/body" -w '%{http_code}' --max-time 30 -H "$J" "$URL/messages" \
		--data-binary "@$SRV_TMP/tool.json")
	[ "$code" = 200 ] || srv_fail "tool_use without input: status $code $(head -c 200 "$SRV_TMP/body")"
	i=$((i + 1))
done
srv_stop
if grep -q "LeakSanitizer" "$SRV_TMP/main.log"; then
	grep -A12 "LeakSanitizer" "$SRV_TMP/main.log" | head -30
	srv_fail "leaks reported"
fi

# 2b. the opt-in: with --share-session-prefixes the saved session is reused
srv_start shared --cache-dir "$CACHE" --ctx 256 --share-session-prefixes
got=$(cached_of "$SECRET and more")
[ "$got" -gt 0 ] || srv_fail "--share-session-prefixes: the saved session was not reused (cached $got)"
srv_stop
echo "ok"
