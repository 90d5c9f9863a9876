#!/bin/sh
# Reasoning split out on the wire: a tiny random model whose chat template
# is GLM-5's (tests/node/fixtures/glm5_chat_template.jinja, which opens a
# thinking block), served by `coli serve`; tests/server_thinking_wire.py
# checks reasoning_content / thinking blocks, enable_thinking, usage and a
# constrained answer after the thinking; tests/server_thinking_sdk.js the
# same through the official openai and @anthropic-ai/sdk clients.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
$PYTHON3 -c 'import httpx, jsonschema' 2>/dev/null || test_skip "python3-httpx or python3-jsonschema missing"
srv_tmp
"$COLI" synth "$SRV_TMP/hf" --preset tiny >/dev/null 2>"$SRV_TMP/synth.log" || srv_fail "coli synth failed"
$PYTHON3 - "$SRV_TMP/hf/tokenizer_config.json" "${top_srcdir:-.}/tests/node/fixtures/glm5_chat_template.jinja" <<'PY' || srv_fail "cannot set the template"
import json, sys
p, t = sys.argv[1], sys.argv[2]
c = json.load(open(p, encoding="utf-8"))
c["chat_template"] = open(t, encoding="utf-8").read()
json.dump(c, open(p, "w", encoding="utf-8"), ensure_ascii=False)
PY
"$COLI" convert "$SRV_TMP/hf" "$SRV_TMP/model" --quant f32 >/dev/null 2>"$SRV_TMP/convert.log" || srv_fail "coli convert failed"
SRV_MODEL="$SRV_TMP/model"
end_id=$("$COLI" tokenize "$SRV_MODEL" '</think>' | $PYTHON3 -c 'import json,sys; i=json.load(sys.stdin)["ids"]; assert len(i) == 1, i; print(i[0])') ||
	srv_fail "</think> is not one token"
srv_start main --ctx 1024
$PYTHON3 "${top_srcdir:-.}/tests/server_thinking_wire.py" "$BASE" "$end_id" || { tail -20 "$SRV_TMP/main.log"; exit 1; }
# the same with the official npm clients (tests/server_thinking_sdk.js)
NODE=${NODE:-node}
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
"$NODE" "${top_srcdir:-.}/tests/server_thinking_sdk.js" "$URL" "$end_id"
rc=$?
[ $rc = 77 ] && test_skip "the SDKs are not installed in tests/node (npm ci)"
[ $rc = 0 ] || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
