#!/bin/sh
# Runs core_session_bind on a synthesized tiny model: a session resumed
# by the session writer thread while another slot decodes.
set -u
: "${COLI:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLI" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
"$top_builddir/tests/core_session_bind" "$tmp/m" "$tmp/cache"
