#!/bin/sh
# coli compare end to end:
#  - two coli serve on the default model, the "remote" one with a key:
#    every request succeeds (exit 0), both sides give the same characters
#    and tokens (same model, greedy), the local rows carry /metrics deltas,
#    rounds x prompts x 2 rows, in JSONL, CSV, markdown (piped) and table;
#  - --model DIR serves the model in-process;
#  - wrong key, missing key, a URL without the API (404 + /v1 hint), a base
#    URL without /v1 (accepted), against a mock: malformed SSE, a stream cut
#    before [DONE] -> exit 1 with one clear line each; the key never appears
#    in any output;
#  - --json against the mock: fenced/plain JSON answers agree field by field.
set -u
. "$top_srcdir/tests/server_common.sh"
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || srv_fail "\$COLI not built"
PY=${PYTHON3:-python3}
command -v "$PY" >/dev/null || test_skip "python3 missing"
SRV_TMP=$(mktemp -d)
SRV_PIDS=
MOCK=
trap 'srv_cleanup; [ -n "$MOCK" ] && kill "$MOCK" 2>/dev/null' EXIT
T=$SRV_TMP
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
SRV_MODEL="$top_srcdir/data/default-model"
KEY=colitest-$$-sekret
export COMPARE_KEY="$KEY"

srv_start local
LOCAL=$URL
COLI_TEST_KEY=$KEY srv_start remote --api-key-env COLI_TEST_KEY
REMOTE=$URL
"$PY" "$top_srcdir/tests/compare_mock.py" "$T/mock.port" &
MOCK=$!
i=0
while [ ! -s "$T/mock.port" ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "mock did not start"
	sleep 0.1
done
MP=$(cat "$T/mock.port")
MOCKURL=http://127.0.0.1:$MP

cat >"$T/p.jsonl" <<'EOF'
{"id": "sea", "prompt": "Write one sentence about the sea.", "system": "Be brief."}
{"id": "list", "messages": [{"role": "user", "content": "Name three colours."}]}
EOF
printf 'Hello there\nWhat is 2+2?\n' >"$T/p.txt"

# 1. two coli serve, JSONL, 2 rounds
"$COLI" compare "$T/p.jsonl" --local "$LOCAL" --remote "$REMOTE" --remote-model default \
	--key-env COMPARE_KEY --rounds 2 --max-tokens 12 --format jsonl >"$T/j.out" 2>"$T/j.err" ||
	{ cat "$T/j.err" "$T/j.out"; fail "compare of two coli serve exited $?"; }
"$PY" - "$T/j.out" <<'EOF' || fail "JSONL rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 8, len(rows)
assert all(r["type"] == "request" and r["ok"] and r["http_status"] == 200 for r in rows), rows
assert [r["round"] for r in rows] == [1, 1, 1, 1, 2, 2, 2, 2]
assert [r["id"] for r in rows[:4]] == ["sea", "sea", "list", "list"]
for l, r in zip(rows[::2], rows[1::2]):
    assert l["side"] == "local" and r["side"] == "remote"
    # same model, greedy: the same answer on both sides
    assert l["chars"] == r["chars"] and l["completion_tokens"] == r["completion_tokens"], (l, r)
    assert l["completion_tokens"] and l["completion_tokens"] <= 12, l
    assert l["ttft_ms"] is not None and l["total_s"] > 0
    # /metrics deltas on the local side only
    assert l["bytes_read"] is not None and l["expert_hit_rate"] is not None, l
    assert 0 <= l["expert_hit_rate"] <= 1
    assert r["bytes_read"] is None and r["expert_hit_rate"] is None, r
EOF
echo "compare: two coli serve, 2 rounds, JSONL rows consistent"

# 2. CSV, markdown (piped default), table; text prompts; base URL without /v1
"$COLI" compare "$T/p.txt" --local "${LOCAL%/v1}" --remote "${REMOTE%/v1}/" --remote-model default \
	--key-env COMPARE_KEY --max-tokens 4 --format csv >"$T/c.out" 2>"$T/c.err" ||
	{ cat "$T/c.err"; fail "csv run"; }
head -n1 "$T/c.out" | grep -q '^round,id,side,ok,http_status,ttft_ms,total_s,chars,chars_per_s,' || fail "csv header"
[ "$(wc -l <"$T/c.out")" = 5 ] || { cat "$T/c.out"; fail "csv: 4 rows expected"; }
grep -q '^1,2,remote,true,200,' "$T/c.out" || { cat "$T/c.out"; fail "csv row of prompt 2"; }
"$COLI" compare "$T/p.txt" --local "$LOCAL" --remote "$REMOTE" --remote-model default \
	--key-env COMPARE_KEY --max-tokens 4 >"$T/m.out" 2>"$T/m.err" || { cat "$T/m.err"; fail "markdown run"; }
head -n2 "$T/m.out" | tail -n1 | grep -q '^| ---: | --- | --- | --- | ---: |' || { cat "$T/m.out"; fail "markdown when piped"; }
"$COLI" compare "$T/p.txt" --local "$LOCAL" --remote "$REMOTE" --remote-model default \
	--key-env COMPARE_KEY --max-tokens 4 --format table >"$T/t.out" 2>"$T/t.err" || fail "table run"
head -n1 "$T/t.out" | grep -q '^round  id  side  *status  *ttft ms  *total s  *chars  *chars/s  *tokens  *tok/s  *hit  *MB read$' ||
	{ cat "$T/t.out"; fail "aligned table header"; }
echo "compare: CSV, markdown when piped, aligned table; base URLs without /v1"

# 3. in-process local model
"$COLI" compare "$T/p.txt" --model "$SRV_MODEL" --threads 1 --remote "$REMOTE" --remote-model default \
	--key-env COMPARE_KEY --max-tokens 6 --format jsonl >"$T/in.out" 2>"$T/in.err" ||
	{ cat "$T/in.err"; fail "--model run"; }
"$PY" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 4 and all(r["ok"] for r in rows), rows
assert rows[0]["chars"] == rows[1]["chars"] and rows[0]["bytes_read"] is not None, rows
' "$T/in.out" || fail "--model rows"
echo "compare: --model DIR served in-process"

# 4. failures: each exits 1 with its line
expect_fail() { # NAME PATTERN compare-args...
	name=$1 pat=$2
	shift 2
	"$COLI" compare "$T/p.txt" --local "$LOCAL" --max-tokens 4 --format markdown "$@" \
		>"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	[ $rc = 1 ] || { cat "$T/$name.out" "$T/$name.err"; fail "$name: exit $rc, expected 1"; }
	grep -q -- "$pat" "$T/$name.out" || { cat "$T/$name.out"; fail "$name: no line matching '$pat'"; }
}
COMPARE_KEY=wrong expect_fail wrongkey 'the API key in \$COMPARE_KEY was refused' \
	--remote "$REMOTE" --remote-model default --key-env COMPARE_KEY
expect_fail nokey 'wants an API key; give the variable holding it with --key-env VAR' \
	--remote "$REMOTE" --remote-model default
expect_fail notfound "404 from POST $MOCKURL/nope/chat/completions: .*try the base URL with /v1 appended" \
	--remote "$MOCKURL/nope" --remote-model m
expect_fail notfoundv1 "404 from POST $MOCKURL/nope/v1/chat/completions: .*the /v1 prefix was used" \
	--remote "$MOCKURL/nope/v1" --remote-model m
expect_fail badsse 'malformed SSE: a data line is not a JSON object' \
	--remote "$MOCKURL/badsse/v1" --remote-model m
expect_fail cut 'without \[DONE\]\|broke off' --remote "$MOCKURL/cut/v1" --remote-model m
grep -q '| FAIL 401 |' "$T/wrongkey.out" || fail "status column of a 401"
expect_fail mockkey 'the API key in \$COMPARE_KEY was refused' \
	--remote "$MOCKURL/key/v1" --remote-model m --key-env COMPARE_KEY
"$COLI" compare "$T/p.txt" --local "$LOCAL" --remote "$MOCKURL/key/v1" --remote-model m \
	--key-env MOCK_KEY --max-tokens 4 >/dev/null 2>&1 && fail "unset --key-env accepted"
MOCK_KEY=sekrit "$COLI" compare "$T/p.txt" --local "$LOCAL" --remote "$MOCKURL/key/v1" --remote-model m \
	--key-env MOCK_KEY --max-tokens 4 >"$T/mk.out" 2>&1 || { cat "$T/mk.out"; fail "mock with the right key"; }
# the key went out as a bearer header
grep -q '"auth": "Bearer sekrit"' "$T/mock.port.log" || fail "mock never saw the key"
grep -q '"include_usage": true' "$T/mock.port.log" || fail "include_usage not requested"
for f in "$T"/*.out "$T"/*.err; do
	grep -q -- "$KEY" "$f" && fail "the key appears in $(basename "$f")"
done
echo "compare: 401 (wrong/missing key), 404 with the URL and /v1 hint, malformed SSE, cut stream; key never printed"

# 5. --json diff, mock on both sides (same JSON, one slower)
printf '{"id":"a","prompt":"x","response_format":{"type":"json_object"}}\n{"id":"b","prompt":"y"}\n' >"$T/pj.jsonl"
MOCK_DELAY=0.3 "$COLI" compare "$T/pj.jsonl" --local "$MOCKURL/ok/v1" --remote "$MOCKURL/ok/v1" \
	--remote-model m --json --format jsonl >"$T/json.out" 2>"$T/json.err" || { cat "$T/json.err"; fail "--json run"; }
"$PY" - "$T/json.out" <<'EOF' || fail "--json output"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
req = [r for r in rows if r["type"] == "request"]
fields = {r["path"]: (r["agree"], r["total"]) for r in rows if r["type"] == "field"}
assert len(req) == 4 and all(r["ok"] and r["json_parsed"] for r in req), req
assert all(r["json_fields"] == 2 and r["json_agree"] == 2 for r in req), req
# the mock waits 0.2 s before its first chunk: a lower bound, not a timing claim
assert all(r["ttft_ms"] >= 200 for r in req), req
assert req[0]["completion_tokens"] == 6 and req[0]["chars"] == 24, req[0]
assert fields == {"$.city": (2, 2), "$.n": (2, 2)}, fields
assert not [r for r in rows if r["type"] == "json_diff"]
EOF
# (coli serve refuses response_format json_object: no response_format here)
printf '{"id":"a","prompt":"x"}\n' >"$T/pj2.jsonl"
"$COLI" compare "$T/pj2.jsonl" --local "$LOCAL" --remote "$MOCKURL/ok/v1" --remote-model m --json \
	--max-tokens 4 --format markdown >"$T/jm.out" 2>"$T/jm.err" || { cat "$T/jm.err"; fail "--json vs coli"; }
grep -q '^| 1 | a | \$ | unparsed | (no JSON) | (JSON) |$' "$T/jm.out" || { cat "$T/jm.out"; fail "unparsed row"; }
grep -q '^### Agreement per field' "$T/jm.out" || fail "field summary heading"
echo "compare: --json field agreement and the unparsed case"
