#!/bin/sh
# coli batch runs a batch file written for a cloud endpoint unchanged: its
# "model" fields name the cloud's models, and every line is answered 200 by
# the one model loaded (the default model), each answer naming the served
# model (coli-serve(1), MODEL NAMES).
set -u
. "${top_srcdir:-.}/tests/test_skip.sh"
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built" >&2; exit 1; }
PY=${PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export COLI_CACHE_DIR="$T/cache"
cat >"$T/in.jsonl" <<'JEOF'
{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini-2024-07-18","messages":[{"role":"user","content":"Hello"}],"max_tokens":3}}
{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-5","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":3,"temperature":0}}
{"custom_id":"c","method":"POST","url":"/v1/completions","body":{"model":"gpt-3.5-turbo-instruct","prompt":"Once","max_tokens":3}}
JEOF
"$COLI" batch "${top_srcdir:-.}/data/default-model" "$T/in.jsonl" "$T/out.jsonl" --threads 1 -q 2>"$T/log" ||
	{ cat "$T/log"; echo "FAIL: coli batch" >&2; exit 1; }
"$PY" - "$T/out.jsonl" <<'PYEOF' || exit 1
import json, sys
got = {}
for l in open(sys.argv[1]):
    o = json.loads(l)
    got[o["custom_id"]] = o
bad = []
for cid, want in (("a", "default-model"), ("b", "default-model"), ("c", "default-model")):
    o = got.get(cid)
    if not o or o["error"] is not None or o["response"]["status_code"] != 200:
        bad.append("%s: %r" % (cid, o))
    elif o["response"]["body"]["model"] != want:
        bad.append("%s: model %r, want %r" % (cid, o["response"]["body"]["model"], want))
if len(got) != 3:
    bad.append("lines: %r" % sorted(got))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PYEOF
