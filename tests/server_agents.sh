#!/bin/sh
# What coding agents rely on, on the wire, against `coli serve` on the
# default model with an alias (tests/server_agents_wire.py, raw httpx +
# python3-jsonschema): tool_choice forced in both APIs, Anthropic details
# Claude Code parses, HEAD /, model names.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
$PYTHON3 -c 'import httpx, jsonschema' 2>/dev/null || test_skip "python3-httpx or python3-jsonschema missing"
srv_tmp
SRV_MODEL="${top_srcdir:-.}/data/default-model"
srv_start main --ctx 1024 --alias local-coder
$PYTHON3 "${top_srcdir:-.}/tests/server_agents_wire.py" "$BASE" local-coder || { tail -20 "$SRV_TMP/main.log"; exit 1; }
srv_stop
