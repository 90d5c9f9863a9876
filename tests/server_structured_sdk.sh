#!/bin/sh
# Structured output and logprobs with the official npm clients (openai with
# zod helpers, @anthropic-ai/sdk) against `coli serve` on the default model:
# tests/server_structured_sdk.js.
. "${top_srcdir:-.}/tests/server_common.sh"
NODE=${NODE:-node}
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
srv_tmp
SRV_MODEL="${top_srcdir:-.}/data/default-model"
srv_start main --ctx 1024
"$NODE" "${top_srcdir:-.}/tests/server_structured_sdk.js" "$URL"
rc=$?
[ $rc = 77 ] && test_skip "the SDKs are not installed in tests/node (npm ci)"
[ $rc = 0 ] || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
