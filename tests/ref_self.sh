#!/bin/sh
# ref_self.sh - the numpy reference checked against itself (no C forward
# pass needed): incremental == full pass, BF16/F16/FP8 decoding, RoPE/YaRN
# formulas. See tests/ref/ref_selftest.py.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import numpy' 2>/dev/null || { echo "SKIP: python3 numpy missing"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
"$PY" "$top_srcdir/tests/ref/ref_selftest.py" "$COLI" "$tmp"
