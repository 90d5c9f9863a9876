#!/bin/sh
# The Responses API (/v1/responses) on the wire: a tiny random model whose
# chat template is GLM-5's (it opens a thinking block), served by
# `coli serve -v`; tests/server_responses_wire.py checks objects, streams,
# tools, text.format and stored responses, then the server is restarted on
# the same cache directory and the stored responses must still answer and
# continue from their sessions; `coli sessions` lists each stored response
# as a session whose size counts its record, and gc removes both files.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
$PYTHON3 -c 'import httpx, jsonschema' 2>/dev/null || test_skip "python3-httpx or python3-jsonschema missing"
srv_setup_glm5
CACHE="$SRV_TMP/cache"
WIRE="${top_srcdir:-.}/tests/server_responses_wire.py"
srv_start main --ctx 2048 -v --cache-dir "$CACHE"
$PYTHON3 "$WIRE" "$BASE" "$SRV_TMP/main.log" "$SRV_TMP/state.json" first || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
srv_start again --ctx 2048 -v --cache-dir "$CACHE" --share-session-prefixes
$PYTHON3 "$WIRE" "$BASE" "$SRV_TMP/again.log" "$SRV_TMP/state.json" restarted || { tail -20 "$SRV_TMP/again.log"; exit 1; }
srv_stop
# coli batch answers /v1/responses lines in-process: stores nothing, but
# continues a stored response from its session
$PYTHON3 - "$COLI" "$SRV_MODEL" "$CACHE" "$SRV_TMP" <<'PY' || srv_fail "coli batch with /v1/responses"
import json, os, subprocess, sys
coli, model, cache, tmp = sys.argv[1:]
kv = os.path.join(cache, "kv")
st = json.load(open(os.path.join(tmp, "state.json")))
before = sorted(os.listdir(kv))
lines = [{"custom_id": "new", "method": "POST", "url": "/v1/responses",
          "body": {"input": "Hello there", "max_output_tokens": 3, "temperature": 0, "reasoning": {"effort": "none"}}},
         {"custom_id": "cont", "method": "POST", "url": "/v1/responses",
          "body": {"input": "Go on.", "max_output_tokens": 3, "temperature": 0, "reasoning": {"effort": "none"},
                   "previous_response_id": st["first"]["id"]}}]
with open(os.path.join(tmp, "in.jsonl"), "w") as f:
    f.writelines(json.dumps(l) + "\n" for l in lines)
out = os.path.join(tmp, "out.jsonl")
subprocess.check_call([coli, "batch", model, os.path.join(tmp, "in.jsonl"), out, "--threads", "1", "--ctx", "2048",
                       "--cache-dir", cache, "-q"], stderr=subprocess.DEVNULL)
got = {d["custom_id"]: d["response"] for d in map(json.loads, open(out))}
for k in ("new", "cont"):
    assert got[k]["status_code"] == 200 and got[k]["body"]["object"] == "response", got[k]
    assert got[k]["body"]["store"] is False, got[k]["body"]["store"]
fu = st["first"]["usage"]
cached = got["cont"]["body"]["usage"]["input_tokens_details"]["cached_tokens"]
assert fu["input_tokens"] <= cached <= fu["input_tokens"] + fu["output_tokens"], (cached, fu)
assert sorted(os.listdir(kv)) == before, "batch left files: %s" % sorted(set(os.listdir(kv)) - set(before))
print("responses batch: ok (cached %d)" % cached)
PY
# every stored response is one session: resp_ID.kv + resp_ID.resp.json,
# its listed size the sum of both; nothing else of the server's is there
$PYTHON3 - "$COLI" "$SRV_MODEL" "$CACHE" <<'PY' || srv_fail "sessions of stored responses"
import json, os, subprocess, sys
coli, model, cache = sys.argv[1:]
kv = os.path.join(cache, "kv")
ls = json.loads(subprocess.check_output([coli, "sessions", model, "--cache-dir", cache, "--json", "list"]))
ls = ls["sessions"] if isinstance(ls, dict) else ls
names = {e["name"]: e for e in ls}
recs = [f[:-10] for f in os.listdir(kv) if f.endswith(".resp.json")]
assert recs and set(recs) <= set(names), (recs, sorted(names))
for n in recs:
    size = os.path.getsize(os.path.join(kv, n + ".kv")) + os.path.getsize(os.path.join(kv, n + ".resp.json"))
    assert names[n]["bytes"] == size, (n, names[n], size)
assert all(n.startswith("resp_") for n in names), sorted(names)
subprocess.check_call([coli, "sessions", model, "--cache-dir", cache, "gc", "--budget", "0"], stdout=subprocess.DEVNULL)
left = [f for f in os.listdir(kv) if f.endswith(".kv") or f.endswith(".resp.json")]
assert not left, left
print("responses sessions: ok (%d stored)" % len(recs))
PY
