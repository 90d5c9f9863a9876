#!/bin/sh
# Runs core_prefix_adopt on a synthesized tiny model: a prompt prefix
# reused from another saved session, read by the session writer thread
# while another slot decodes, and its fallbacks to prefill.
set -u
: "${COLI:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$COLI" synth "$tmp/hf" --preset tiny --seed 5 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
"$top_builddir/tests/core_prefix_adopt" "$tmp/m" "$tmp"
