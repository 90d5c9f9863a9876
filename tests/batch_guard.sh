#!/bin/sh
# coli batch against what issue 30 found (defects 9, 10, 11):
#  1. an output file locked by another process is refused at once, naming
#     its pid, and left untouched; two runs started together answer every
#     custom_id exactly once;
#  2. an answer holding U+0000 is embedded as the JSON object it is (not
#     a string), so `jq .response.body.choices` works on it;
#  3. "max_tokens": 9223372036854775808 (beyond int64) gives that line an
#     error line, the other lines are answered.
set -u
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built"; exit 1; }
PY=${PYTHON3:-python3}
T=$(mktemp -d)
HOLDER=
trap '[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
"$PY" - "$T/in.jsonl" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(40):
        f.write(json.dumps({"custom_id": "c%02d" % i, "method": "POST", "url": "/v1/completions",
                            "body": {"prompt": "the sea %d" % i, "max_tokens": 8}}) + "\n")
PYEOF

# 1a. a lock held by another process (python here: flock(2) as coli takes it)
mkfifo "$T/ready"
"$PY" -c 'import fcntl, signal, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").write("locked\n")
signal.pause()' "$T/held.jsonl" "$T/ready" >/dev/null &
HOLDER=$!
read -r _ <"$T/ready"
"$COLI" batch "$T/in.jsonl" "$T/held.jsonl" --threads 1 -q 2>"$T/held.log"
rc=$?
[ $rc = 1 ] || { cat "$T/held.log"; fail "a locked output: exit $rc, expected 1"; }
grep -q "held.jsonl: another process (pid $HOLDER) is writing this output" "$T/held.log" ||
	{ cat "$T/held.log"; fail "the lock error does not name pid $HOLDER"; }
[ ! -s "$T/held.jsonl" ] || fail "a locked output was written to"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null; HOLDER=
echo "batch: a locked output refused, naming pid"

# 1b. two runs at once on one output: each custom_id once, whoever wins
"$COLI" batch "$T/in.jsonl" "$T/two.jsonl" --threads 1 --parallel 1 -q 2>"$T/two1.log" &
p1=$!
"$COLI" batch "$T/in.jsonl" "$T/two.jsonl" --threads 1 --parallel 1 -q 2>"$T/two2.log" &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
[ $r1 = 0 ] || [ $r2 = 0 ] || { cat "$T/two1.log" "$T/two2.log"; fail "neither run succeeded"; }
"$PY" - "$T/two.jsonl" <<'PYEOF' || fail "two runs on one output"
import json, sys
ids = [json.loads(l)["custom_id"] for l in open(sys.argv[1])]
assert len(ids) == 40 and len(set(ids)) == 40, "%d lines, %d custom_ids" % (len(ids), len(set(ids)))
PYEOF
echo "batch: two runs on one output: 40 lines for 40 custom_ids (exits $r1, $r2)"

# 2 and 3. token 2 of the default model's tokenizer is the byte 0x00
cat >"$T/nul.jsonl" <<'JEOF'
{"custom_id":"nul","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logit_bias":{"2":100}}}
{"custom_id":"big","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":9223372036854775808}}
{"custom_id":"ok","method":"POST","url":"/v1/completions","body":{"prompt":"the sea","max_tokens":2}}
JEOF
"$COLI" batch "$T/nul.jsonl" "$T/nul.out" --threads 1 -q 2>"$T/nul.log" || { cat "$T/nul.log"; fail "nul/big batch"; }
"$PY" - "$T/nul.out" <<'PYEOF' || fail "U+0000 answer / huge max_tokens"
import json, sys
d = {o["custom_id"]: o for o in map(json.loads, open(sys.argv[1]))}
assert set(d) == {"nul", "big", "ok"}, sorted(d)
b = d["nul"]["response"]["body"]
assert isinstance(b, dict), "the U+0000 answer is a %s, not an object" % type(b).__name__
assert b["choices"][0]["message"]["content"] == "\0\0\0", b
assert b["usage"]["completion_tokens"] == 3, b
assert d["big"]["response"] is None and "too big integer" in d["big"]["error"]["message"], d["big"]
assert d["ok"]["response"]["status_code"] == 200, d["ok"]
PYEOF
# the usage of the U+0000 answer is counted too (3 + 2 completion tokens)
grep -q "3 answered (2 ok, 1 errors).* + 5 completion tokens" "$T/nul.log" || { cat "$T/nul.log"; fail "summary"; }
echo "batch: U+0000 answer embedded as an object; a too-big max_tokens is that line's error"
