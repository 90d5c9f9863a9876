#!/bin/sh
# The grammar fuzzer (tests/grammar_fuzz_schemas.py): random schemas, random walks
# over allowed bytes validated by python3-jsonschema, random valid documents
# that must be accepted. A bounded run with fixed seeds.
PY=${PYTHON3:-python3}
. "${top_srcdir:-.}/tests/test_skip.sh"
$PY -c 'import jsonschema' 2>/dev/null || test_skip "python3-jsonschema missing"
n=40
[ -n "${COLI_TEST_SANITIZED:-}" ] && n=12
for seed in 1 2; do
	$PY "${top_srcdir:-.}/tests/grammar_fuzz_schemas.py" "${top_builddir:-.}/tests/grammar_test" $n $seed || exit 1
done
