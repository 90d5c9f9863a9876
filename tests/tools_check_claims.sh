#!/bin/sh
# tools_check_claims.sh - tools/check-claims.sh fails when a README figure
# drifts from what its command measures: the quantization row (the check
# that takes a second) passes as written, fails when one of its figures
# is edited to a wrong value or the figure is gone from the row, and the
# failure names the figure.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
. "$top_srcdir/tests/test_skip.sh"
"$PY" -c 'import json' 2>/dev/null || test_skip "python3 missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
fail=0
run() { # README-COPY: check-claims --only quant on it; output in $tmp/out
	sh "$top_srcdir/tools/check-claims.sh" --only quant --coli "$COLI" --readme "$1" >"$tmp/out" 2>&1
}
key='| quantization error (rel. RMS by tensor class, glm5-tiny) |'
grep -qF "$key" "$top_srcdir/README.md" || { echo "FAIL: README has no quantization row"; exit 1; }

cp "$top_srcdir/README.md" "$tmp/README.md"
if ! run "$tmp/README.md"; then
	echo "FAIL: check-claims fails on the README as written:"; cat "$tmp/out"; fail=1
fi
[ "$(grep -c ': ok$' "$tmp/out")" = 5 ] || { echo "FAIL: want 5 figures ok:"; cat "$tmp/out"; fail=1; }

# one figure 0.010 off (10 units of the README's last digit)
sed 's/int4-g64 affine 0\.089-/int4-g64 affine 0.079-/' "$top_srcdir/README.md" >"$tmp/wrong.md"
cmp -s "$top_srcdir/README.md" "$tmp/wrong.md" && { echo "FAIL: the edit did not apply"; exit 1; }
if run "$tmp/wrong.md"; then
	echo "FAIL: check-claims passes with int4-g64 0.079 in the README:"; cat "$tmp/out"; fail=1
fi
grep -q '= int4-g64 affine, least: measured .*, README 0.079 (+-0.001): DRIFT$' "$tmp/out" ||
	{ echo "FAIL: no DRIFT line for the edited figure:"; cat "$tmp/out"; fail=1; }
grep -q '^quant: DRIFT (int4-g64 affine, least)$' "$tmp/out" ||
	{ echo "FAIL: no summary line naming the figure:"; cat "$tmp/out"; fail=1; }
[ "$(grep -c ': ok$' "$tmp/out")" = 4 ] || { echo "FAIL: the other 4 figures should still pass:"; cat "$tmp/out"; fail=1; }

# the int8 figure removed from the row: the claim cannot be found
sed 's/; int8 0\.006 (`tools/ (`tools/' "$top_srcdir/README.md" >"$tmp/gone.md"
cmp -s "$top_srcdir/README.md" "$tmp/gone.md" && { echo "FAIL: the removal did not apply"; exit 1; }
if run "$tmp/gone.md"; then
	echo "FAIL: check-claims passes without the int8 figure:"; cat "$tmp/out"; fail=1
fi
grep -q "= int8, most: the README row holds no figure" "$tmp/out" ||
	{ echo "FAIL: no line for the missing figure:"; cat "$tmp/out"; fail=1; }
[ $fail = 0 ] && echo "check-claims: passes as written, fails on an edited or missing figure"
exit $fail
