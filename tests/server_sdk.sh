#!/bin/sh
# server_sdk.sh - end to end with the official clients: start `coli serve`
# on a tiny synthesized model (free loopback port, API key from the
# environment), run the npm `openai` and `@anthropic-ai/sdk` checks
# (server_sdk.js) and the Python httpx client (server_httpx.py).
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
NODE=${NODE:-node}
srv_setup
COLI_TEST_KEY=test-key-$$
export COLI_TEST_KEY
srv_start sdk --api-key-env COLI_TEST_KEY --ctx 1024
status=0
# Every part must run: a missing client skips the whole test (fails in CI),
# never passes with a part left out.
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
"$PYTHON3" -c 'import httpx' 2>/dev/null || test_skip "python3-httpx missing"
"$NODE" "$top_srcdir/tests/server_sdk.js" "$URL"
rc=$?
[ $rc = 77 ] && test_skip "the SDKs are not installed in tests/node (npm ci)"
[ $rc = 0 ] || status=1
"$PYTHON3" "$top_srcdir/tests/server_httpx.py" "$URL" --key "$COLI_TEST_KEY" || status=1
srv_stop
exit $status
