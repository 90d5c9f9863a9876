#!/bin/sh
# synth_tokenizer.sh - the tokenizer `coli synth` writes is a valid Hugging
# Face tokenizer: the reference JavaScript implementation
# (@huggingface/tokenizers, tests/node) loads it, encodes a few English,
# code and Unicode strings exactly as `coli tokenize` does, decodes them
# back to the input, and prepends BOS (id 0) when asked for special tokens.
# Skips (77) when node or the npm packages are not installed; fails in CI.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
NODE=${NODE:-node}
nodedir="$top_srcdir/tests/node"
. "$top_srcdir/tests/test_skip.sh"
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
[ -d "$nodedir/node_modules/@huggingface/tokenizers" ] || test_skip "npm packages not installed (cd tests/node && npm ci)"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$COLI" synth "$tmp/hf" --dry-run >/dev/null || fail "coli synth"
# Bare imports resolve from the working directory for --eval code.
script='
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
const [dir, text] = process.argv.slice(1);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8")),
                          JSON.parse(fs.readFileSync(dir + "/tokenizer_config.json", "utf8")));
const ids = tok.encode(text, { add_special_tokens: false }).ids;
const bos = tok.encode(text).ids[0];
console.log(JSON.stringify({ ids, bos, back: tok.decode(ids) === text }));
'
for text in "Hello, world! The model reads 12345 tokens." \
	"int main(void) {
	return 0;
}" "  leading spaces and trailing   " "naïve café — 東京 🙂"; do
	ref=$(cd "$nodedir" && "$NODE" --input-type=module -e "$script" "$tmp/hf" "$text") || fail "node on '$text'"
	got=$("$COLI" tokenize "$tmp/hf" "$text") || fail "coli tokenize '$text'"
	ref_ids=$(printf '%s' "$ref" | sed 's/.*"ids":\(\[[^]]*\]\).*/\1/')
	got_ids=$(printf '%s' "$got" | sed 's/.*"ids":\(\[[^]]*\]\).*/\1/')
	[ "$ref_ids" = "$got_ids" ] || fail "'$text': reference $ref_ids, coli $got_ids"
	case "$ref" in *'"bos":0,"back":true'*) ;; *) fail "'$text': $ref" ;; esac
done
echo "synth_tokenizer: ok"
