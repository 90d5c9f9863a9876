#!/bin/sh
# Structured output on the wire against `coli serve` on the default model
# and log-probabilities (tests/server_structured_wire.py, raw httpx +
# python3-jsonschema).
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
$PYTHON3 -c 'import httpx, jsonschema' 2>/dev/null || test_skip "python3-httpx or python3-jsonschema missing"
srv_tmp
SRV_MODEL="${top_srcdir:-.}/data/default-model"
srv_start main --ctx 1024
$PYTHON3 "${top_srcdir:-.}/tests/server_structured_wire.py" "$BASE" "$COLI" "$SRV_MODEL" || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
