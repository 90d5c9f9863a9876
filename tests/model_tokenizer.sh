#!/bin/sh
# model_tokenizer.sh - the shipped default model's tokenizer, as the engine
# runs it, gives the same ids as the Python tokenizer it was trained with
# (tools/train/bpe.py) on held-out text: data/eval/tokenizer.jsonl holds
# validation answers in every language, chat-rendered exchanges and a few
# edge cases with the ids bpe.py produced. Every id sequence must also
# decode back to its text. When node and the npm packages of tests/node
# are installed, the reference JavaScript implementation must agree too.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
model="$top_srcdir/data/default-model"
fixture="$top_srcdir/data/eval/tokenizer.jsonl"
. "${top_srcdir:-.}/tests/test_skip.sh"
[ -f "$model/manifest.json" ] || { echo "FAIL: no default model at $model"; exit 1; }
command -v "$PY" >/dev/null 2>&1 || test_skip "python3 missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$PY" -c 'import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    print(json.dumps(json.loads(line)["text"], ensure_ascii=False))' "$fixture" > "$tmp/lines" ||
	fail "reading $fixture"
"$COLI" tokenize "$model" --lines "$tmp/lines" > "$tmp/coli.jsonl" || fail "coli tokenize --lines"
"$PY" - "$fixture" "$tmp/coli.jsonl" <<'PYEOF' || fail "coli tokenize differs from bpe.py"
import json, sys
want = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
got = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert len(want) == len(got), "%d lines, %d results" % (len(want), len(got))
bad = 0
for w, g in zip(want, got):
    if w["ids"] != g["ids"]:
        bad += 1
        print("ids differ on %r:\n  bpe.py %s\n  coli   %s" % (w["text"][:60], w["ids"][:24], g["ids"][:24]))
    elif g["text"] != w["text"]:
        bad += 1
        print("decode differs on %r: %r" % (w["text"][:60], g["text"][:60]))
print("%d strings, %d tokens, %d mismatches" % (len(want), sum(len(w["ids"]) for w in want), bad))
sys.exit(1 if bad else 0)
PYEOF

NODE=${NODE:-node}
nodedir="$top_srcdir/tests/node"
if command -v "$NODE" >/dev/null 2>&1 && [ -d "$nodedir/node_modules/@huggingface/tokenizers" ]; then
	script='
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
const [dir, fx] = process.argv.slice(1);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8")),
                          JSON.parse(fs.readFileSync(dir + "/tokenizer_config.json", "utf8")));
let bad = 0;
for (const line of fs.readFileSync(fx, "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line);
  const ids = tok.encode(r.text, { add_special_tokens: false }).ids;
  if (JSON.stringify(ids) !== JSON.stringify(r.ids)) { bad++; console.log("differs:", r.text.slice(0, 40)); }
}
console.log("reference tokenizer mismatches:", bad);
process.exit(bad ? 1 : 0);
'
	(cd "$nodedir" && "$NODE" --input-type=module -e "$script" "$model/tokenizer" "$fixture") ||
		fail "reference JavaScript tokenizer differs from bpe.py"
else
	echo "note: node reference not installed, checked coli against bpe.py only"
fi
echo "PASS"
