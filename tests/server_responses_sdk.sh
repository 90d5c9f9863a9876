#!/bin/sh
# The Responses API with the official openai npm client (responses.create,
# stream, parse with zod, function calling, previous_response_id,
# retrieve, delete) against `coli serve` on a tiny GLM-5-template model:
# tests/server_responses_sdk.js.
. "${top_srcdir:-.}/tests/server_common.sh"
NODE=${NODE:-node}
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
srv_setup_glm5
srv_start main --ctx 2048 --cache-dir "$SRV_TMP/cache"
"$NODE" "${top_srcdir:-.}/tests/server_responses_sdk.js" "$URL"
rc=$?
[ $rc = 77 ] && test_skip "the SDKs are not installed in tests/node (npm ci)"
[ $rc = 0 ] || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
