#!/bin/sh
# Structured output without HTTP: `coli generate` and `coli chat` with
# --json-schema on the default model give documents valid under the schema
# (python3-jsonschema; a bounded schema, so the answer always closes within
# -n); a missing file, invalid JSON, an unsupported keyword and a number
# bound beyond the subset are usage errors (exit 2) naming the file or the
# keyword.
. "${top_srcdir:-.}/tests/test_skip.sh"
PY=${PYTHON3:-python3}
[ -n "$COLI" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built"; exit 1; }
$PY -c 'import jsonschema' 2>/dev/null || test_skip "python3-jsonschema missing"
M="${top_srcdir:-.}/data/default-model"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/s.json" <<'J'
{"type": "object", "properties": {"mood": {"enum": ["calm", "busy"]},
 "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
 "n": {"type": "integer", "minimum": -3, "maximum": 3}},
 "required": ["mood", "score", "n"], "additionalProperties": false}
J
valid() {
	$PY - "$tmp/s.json" "$1" <<'P' || fail "$2: not valid under the schema: $(cat "$1")"
import json, sys
import jsonschema
jsonschema.validate(json.loads(open(sys.argv[2], encoding="utf-8").read()), json.load(open(sys.argv[1])))
P
}
for seed in 1 2 3; do
	"$COLI" generate "$M" -p "Tell me a fortune in English." --temp 0.8 --seed $seed -n 96 \
		--json-schema "$tmp/s.json" >"$tmp/g$seed" 2>"$tmp/err" || fail "generate seed $seed: $(cat "$tmp/err")"
	valid "$tmp/g$seed" "generate seed $seed"
done
# coli chat: the answer of a piped turn
printf 'Tell me a fortune.\n' | "$COLI" chat "$M" --temp 0.8 --seed 4 -n 96 --json-schema "$tmp/s.json" \
	>"$tmp/c" 2>"$tmp/err" || fail "chat: $(cat "$tmp/err")"
valid "$tmp/c" "chat"

# usage errors: exit 2, one line naming the file or the keyword
bad() {   # WHAT FILE NEEDLE
	"$COLI" generate "$M" -p x -n 4 --json-schema "$2" >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "$1: exit $rc, want 2"
	grep -q -- "$3" "$tmp/err" || fail "$1: message does not name $3: $(cat "$tmp/err")"
}
bad "missing file" "$tmp/nope.json" "nope.json"
printf '{"type":' >"$tmp/trunc.json"
bad "invalid JSON" "$tmp/trunc.json" "trunc.json: invalid JSON"
echo '{"type": "integer", "multipleOf": 3}' >"$tmp/mo.json"
bad "unsupported keyword" "$tmp/mo.json" '"multipleOf"'
echo '{"type": "number", "minimum": 0.1234567890123456}' >"$tmp/digits.json"
bad "bound beyond the subset" "$tmp/digits.json" "minimum"
echo '{"type": "number", "minimum": 2, "maximum": 1}' >"$tmp/empty.json"
bad "empty range" "$tmp/empty.json" "no number"
echo "grammar_cli: ok"
