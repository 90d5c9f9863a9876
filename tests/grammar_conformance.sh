#!/bin/sh
# Constrained decoding on the default model: 48 schemas x 2 seeds at
# temperature 0.8, every output validated by python3-jsonschema; the
# unconstrained model must fail most (tests/grammar_conformance_check.py).
PY=${PYTHON3:-python3}
[ -n "$COLI" ] && [ -x "$COLI" ] || { echo "\$COLI not built"; exit 1; }
. "${top_srcdir:-.}/tests/test_skip.sh"
$PY -c 'import jsonschema' 2>/dev/null || test_skip "python3-jsonschema missing"
n=48 seeds="1 2"
[ -n "${COLI_TEST_SANITIZED:-}" ] && n=10 seeds=1
exec $PY "${top_srcdir:-.}/tests/grammar_conformance_check.py" "$COLI" $n $seeds
