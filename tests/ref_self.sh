#!/bin/sh
# ref_self.sh - the numpy reference checked against itself (no C forward
# pass needed): incremental == full pass, BF16/F16/FP8 decoding, RoPE/YaRN
# formulas (tests/ref/ref_selftest.py); then the ref_logits.py front end:
# `coli logits`-shaped JSON, --incremental agrees, bad token refused.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
. "${top_srcdir:-.}/tests/test_skip.sh"
"$PY" -c 'import numpy' 2>/dev/null || test_skip "python3 numpy missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$PY" "$top_srcdir/tests/ref/ref_selftest.py" "$COLI" "$tmp" || exit 1

"$COLI" synth "$tmp/cli" --seed 4 >/dev/null || fail "coli synth"
LOGITS="$top_srcdir/tests/ref/ref_logits.py"
"$PY" "$LOGITS" "$tmp/cli" --tokens 1,2,300 >"$tmp/full.json" || fail "ref_logits.py"
"$PY" "$LOGITS" "$tmp/cli" --tokens "1 2 300" --incremental >"$tmp/inc.json" || fail "ref_logits.py --incremental"
"$PY" "$LOGITS" "$tmp/cli" --tokens 1,2,300 --mtp >"$tmp/mtp.json" || fail "ref_logits.py --mtp"
"$PY" "$LOGITS" "$tmp/cli" --tokens 1,512 >/dev/null 2>&1 && fail "token 512 accepted"
"$PY" - "$tmp/full.json" "$tmp/inc.json" "$tmp/mtp.json" <<'EOF' || fail "ref_logits.py output"
import json, sys
a = json.load(open(sys.argv[1]))["logits"]
b = json.load(open(sys.argv[2]))["logits"]
assert len(a) == 3 and all(len(r) == 512 for r in a), [len(r) for r in a]
worst = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
assert worst < 1e-9, worst
m = json.load(open(sys.argv[3]))["logits"]
assert len(m) == 2 and all(len(r) == 512 for r in m), [len(r) for r in m]
assert m[0] != a[0][:len(m[0])]
print("ref_logits.py: 3 x 512 logits, incremental within %.1e; MTP 2 x 512" % worst)
EOF
