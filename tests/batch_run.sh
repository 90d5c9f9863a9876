#!/bin/sh
# coli batch on the default model:
#  1. 200 requests of mixed sizes decoded 8 at a time give, per custom_id,
#     the same text, finish_reason and prompt usage as each request alone
#     (--parallel 1), greedy;
#  2. a few bodies answered by `coli serve` over HTTP equal the batch
#     bodies (same code path: only id/created and cached_tokens differ);
#  3. a SIGTERM, then kill -9 mid-run 10 times, then resume: every
#     custom_id answered exactly once (no 503 line for the interrupted
#     requests), with the same text as alone;
#  4. a torn last line is cut, a bad line in the middle is refused, a
#     repeated custom_id refuses the input, bad method/url become error lines.
# Under COLI_TEST_SANITIZED=1: 24 requests and 3 interruptions; under
# COLI_TEST_TSAN=1 (ThreadSanitizer, tools/test.sh) 12 and 1.
set -u
. "$top_srcdir/tests/server_common.sh"
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || srv_fail "\$COLI not built"
PY=${PYTHON3:-python3}
T=$(mktemp -d)
PIDS= SRV_PIDS=
trap 'for p in $PIDS $SRV_PIDS; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
# KILLS interruptions: the first a SIGTERM, the others kill -9
N=200 KILLS=11
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && N=24 KILLS=3
[ "${COLI_TEST_TSAN:-0}" = 1 ] && N=12 KILLS=1
"$PY" "$top_srcdir/tests/batch_mkinput.py" $N "$T/in.jsonl" || fail "mkinput"

# check.py OUT [REF]: every custom_id of in.jsonl exactly once, all 200;
# with REF the same text/finish/prompt usage (and completion usage when no
# stop string: after a stop string the count includes the tokens decoded
# before the cancel took effect, which depends on timing).
cat >"$T/check.py" <<'PYEOF'
import json, sys
ins = {}
for l in open(sys.argv[1]):
    o = json.loads(l)
    ins[o["custom_id"]] = o["body"]
def load(p):
    d = {}
    for l in open(p):
        o = json.loads(l)
        cid = o["custom_id"]
        if cid in d:
            sys.exit("custom_id %s answered twice in %s" % (cid, p))
        r = o["response"]
        if o["error"] is not None or r["status_code"] != 200:
            sys.exit("%s: not a 200 answer: %s" % (cid, l))
        b = r["body"]; c = b["choices"][0]
        text = c["text"] if "text" in c else c["message"]["content"]
        u = b["usage"]
        key = (text, c["finish_reason"], u["prompt_tokens"],
               None if "stop" in ins[cid] else u["completion_tokens"])
        d[cid] = key
    return d
got = load(sys.argv[2])
if set(got) != set(ins):
    sys.exit("%s: %d answers, %d missing" % (sys.argv[2], len(got), len(set(ins) - set(got))))
if len(sys.argv) > 3:
    ref = load(sys.argv[3])
    bad = [k for k in ins if got[k] != ref[k]]
    for k in bad[:5]:
        print("%s: %r != %r" % (k, got[k], ref[k]))
    if bad:
        sys.exit("%d of %d answers differ from running alone" % (len(bad), len(ins)))
    if not any(v[0] for v in got.values()):
        sys.exit("every answer is empty")
PYEOF

"$COLI" batch "$T/in.jsonl" "$T/alone.jsonl" --parallel 1 --threads 1 -q 2>"$T/alone.log" ||
	{ cat "$T/alone.log"; fail "batch --parallel 1"; }
"$PY" "$T/check.py" "$T/in.jsonl" "$T/alone.jsonl" || fail "alone output"
"$COLI" batch "$T/in.jsonl" "$T/par.jsonl" --parallel 8 --threads 1 -q 2>"$T/par.log" ||
	{ cat "$T/par.log"; fail "batch --parallel 8"; }
"$PY" "$T/check.py" "$T/in.jsonl" "$T/par.jsonl" "$T/alone.jsonl" || fail "--parallel 8 differs from alone"
grep -q "$N answered ($N ok, 0 errors)" "$T/par.log" || { cat "$T/par.log"; fail "summary line"; }
echo "batch: $N requests x8 equal each alone"

# 2. the same bodies through coli serve (default model).
SRV_TMP="$T" SRV_MODEL="$top_srcdir/data/default-model"
srv_start http --parallel 1
for id in req-001 req-003 req-011; do
	"$PY" - "$T/in.jsonl" "$T/alone.jsonl" "$URL" "$id" <<'PYEOF' || fail "HTTP answer of $id differs"
import json, sys, urllib.request
cid = sys.argv[4]
line = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["custom_id"] == cid][0]
batch = [json.loads(l) for l in open(sys.argv[2]) if json.loads(l)["custom_id"] == cid][0]
req = urllib.request.Request(sys.argv[3] + line["url"][3:], json.dumps(line["body"]).encode(),
                             {"content-type": "application/json"})
http = json.load(urllib.request.urlopen(req))
b = batch["response"]["body"]
for d in (http, b):
    # cached_tokens depends on what the slots held before (a fresh server
    # has nothing cached); the rest of the body must be the same
    d.pop("id"); d.pop("created"); d["usage"].pop("prompt_tokens_details")
if "stop" in line["body"]:
    http["usage"] = b["usage"] = None
if http != b:
    sys.exit("%s\n%s" % (http, b))
PYEOF
done
srv_stop
echo "batch: bodies equal coli serve's"

# 3. kill -9 mid-run, resume.
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
k=0
while [ $k -lt $KILLS ]; do
	before=$(lines "$T/k.jsonl")
	[ "$before" -lt $N ] || break
	"$COLI" batch "$T/in.jsonl" "$T/k.jsonl" --parallel 8 --threads 1 -q 2>>"$T/k.log" &
	pid=$!
	PIDS="$PIDS $pid"
	i=0
	# kill once it has answered a few more (it may also finish first)
	while kill -0 $pid 2>/dev/null && [ "$(lines "$T/k.jsonl")" -lt $((before + 3)) ] && [ $i -lt 3000 ]; do
		sleep 0.01
		i=$((i + 1))
	done
	if [ $k = 0 ]; then
		# the first one a polite SIGTERM: in-flight requests are dropped
		# (not answered with the server's 503), exit 1, resumable
		kill -TERM $pid 2>/dev/null
		wait $pid
		rc=$?
		[ $rc = 1 ] || fail "SIGTERM: exit $rc, expected 1"
		grep -q "interrupted by SIGTERM; rerun the same command to resume" "$T/k.log" ||
			{ cat "$T/k.log"; fail "SIGTERM message"; }
	else
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
	fi
	k=$((k + 1))
done
[ "$(lines "$T/k.jsonl")" -lt $N ] || fail "the runs finished before $KILLS kills (kill loop too slow)"
"$COLI" batch "$T/in.jsonl" "$T/k.jsonl" --parallel 8 --threads 1 -q 2>>"$T/k.log" ||
	{ cat "$T/k.log"; fail "resume"; }
"$PY" "$T/check.py" "$T/in.jsonl" "$T/k.jsonl" "$T/alone.jsonl" || fail "after $k kills"
echo "batch: SIGTERM once, kill -9 $((k - 1)) times, resumed: every custom_id answered once, same text"

# 4. torn tail, corrupt middle, bad input.
grep -E '"custom_id":"req-00[0-4]"' "$T/alone.jsonl" >"$T/torn.jsonl"
printf '{"id":"batch_req_x","custom_id":"req-1' >>"$T/torn.jsonl"
head -n 8 "$T/in.jsonl" >"$T/in8.jsonl"
"$COLI" batch "$T/in8.jsonl" "$T/torn.jsonl" --threads 1 -q 2>"$T/torn.log" || { cat "$T/torn.log"; fail "torn tail"; }
grep -q "torn last line" "$T/torn.log" || fail "no warning about the torn line"
grep -q "3 answered" "$T/torn.log" || { cat "$T/torn.log"; fail "torn: not 3 answered"; }
"$PY" "$T/check.py" "$T/in8.jsonl" "$T/torn.jsonl" || fail "torn output"
{ head -n 2 "$T/alone.jsonl"; echo 'garbage'; sed -n 3p "$T/alone.jsonl"; } >"$T/mid.jsonl"
cp "$T/mid.jsonl" "$T/mid.orig"
"$COLI" batch "$T/in8.jsonl" "$T/mid.jsonl" -q 2>"$T/mid.log" && fail "a corrupt middle line was accepted"
grep -q "mid.jsonl:3: not an output line" "$T/mid.log" || { cat "$T/mid.log"; fail "corrupt middle message"; }
cmp -s "$T/mid.jsonl" "$T/mid.orig" || fail "the refused output was modified"
{ head -n 2 "$T/in.jsonl"; sed -n 1p "$T/in.jsonl"; } >"$T/dup.jsonl"
"$COLI" batch "$T/dup.jsonl" "$T/dup.out" -q 2>"$T/dup.log"
[ $? = 2 ] || fail "a repeated custom_id: expected exit 2"
grep -q "dup.jsonl:3: custom_id 'req-000' repeats line 1" "$T/dup.log" || { cat "$T/dup.log"; fail "dup message"; }
[ ! -s "$T/dup.out" ] || fail "output written for a refused input"
cat >"$T/bad.jsonl" <<'JEOF'
{"custom_id":"m","method":"GET","url":"/v1/completions","body":{}}
{"custom_id":"u","method":"POST","url":"/v1/embeddings","body":{}}
{"custom_id":"p","method":"POST","url":"/v1/completions","body":{"model":"default","prompt":7}}
JEOF
"$COLI" batch "$T/bad.jsonl" "$T/bad.out" --threads 1 -q 2>"$T/bad.log" || { cat "$T/bad.log"; fail "error lines"; }
"$PY" - "$T/bad.out" <<'PYEOF' || fail "error lines"
import json, sys
d = {o["custom_id"]: o for o in map(json.loads, open(sys.argv[1]))}
assert d["m"]["response"] is None and d["m"]["error"]["code"] == "invalid_method", d["m"]
assert d["u"]["response"] is None and d["u"]["error"]["code"] == "invalid_url", d["u"]
r = d["p"]["response"]
assert d["p"]["error"] is None and r["status_code"] == 400, d["p"]
assert r["body"]["error"]["param"] == "prompt" and r["request_id"].startswith("req_"), r
assert d["p"]["id"].startswith("batch_req_")
PYEOF
echo "batch: torn tail cut, corrupt middle refused, bad input refused, error lines written"
