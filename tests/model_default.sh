#!/bin/sh
# model_default.sh - the embedded default model (data/default-model) works
# as shipped:
#  - `coli info` loads it and it is the DeepSeek-V3 architecture with MTP;
#  - `coli perplexity` on the committed held-out sample (data/eval/val.txt)
#    equals the loss PyTorch computed on the same int4 weights (read back
#    from this container) with the same windows (data/eval/expected.json,
#    written by tools/train/analyze.py) to 0.000%: 5e-6 relative, the
#    precision README.md claims;
#  - the greedy answer to one fixed prompt per language is the committed
#    string and is written in that language's script (CJK for Chinese,
#    Cyrillic for Russian, Latin otherwise). Those strings are REGRESSION
#    goldens: the engine produced them when the model shipped, so alone
#    they only say "unchanged". Beside each, the independent check: the
#    float64 numpy reference (tests/ref/greedy.py) on the container's own
#    weights, decoded from the documented byte layout, continues the same
#    prompt with exactly the engine's token ids;
#  - usage errors of `coli perplexity` exit 2, a missing file exits 1.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
model="$top_srcdir/data/default-model"
ev="$top_srcdir/data/eval"
. "${top_srcdir:-.}/tests/test_skip.sh"
[ -f "$model/manifest.json" ] || { echo "FAIL: no default model at $model"; exit 1; }
command -v "$PY" >/dev/null 2>&1 || test_skip "python3 missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$COLI" info "$model" > "$tmp/info" || fail "coli info $model"
grep -q deepseek_v3 "$tmp/info" || fail "coli info does not name deepseek_v3"

"$COLI" perplexity >/dev/null 2>&1; [ $? -eq 2 ] || fail "perplexity without FILE must exit 2"
"$COLI" perplexity "$model" --window 1 "$ev/val.txt" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--window 1 must exit 2"
"$COLI" perplexity "$model" "$tmp/missing.txt" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing FILE must exit 1"

"$COLI" perplexity "$model" "$ev/val.txt" --json > "$tmp/ppl.json" || fail "coli perplexity"
cat "$tmp/ppl.json"
# the shipped MTP head drafts far better than chance (1/vocab), and the
# one-token-at-a-time path gives the same loss
"$COLI" perplexity "$model" "$ev/val.txt" --json --mtp > "$tmp/mtp.json" || fail "coli perplexity --mtp"
"$PY" -c 'import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert abs(a["loss"] - b["loss"]) <= 1e-6 * abs(a["loss"]), (a["loss"], b["loss"])
# README: "MTP draft acceptance 42.1%"; the margin of half a point covers
# drafts flipped by the rounding of another kernel path
assert b["mtp_drafts"] > 1000 and 0.416 <= b["mtp_acceptance"] <= 0.426, b
print("MTP draft acceptance on val.txt: %.4f" % b["mtp_acceptance"])' "$tmp/ppl.json" "$tmp/mtp.json" || fail "MTP acceptance"

# Regression goldens, one coli run per language (greedy, 48 tokens at
# most), and the reference's greedy ids beside the engine's.
"$PY" -c 'import json, sys
for g in json.load(open(sys.argv[1], encoding="utf-8"))["golden"]:
    print(json.dumps(g, ensure_ascii=False))' "$ev/expected.json" > "$tmp/golden" || fail "reading expected.json"
i=0
while IFS= read -r line; do
	i=$((i + 1))
	prompt=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["prompt"])' "$line")
	"$COLI" generate "$model" -p "<｜User｜>$prompt<｜Assistant｜>" -n 48 > "$tmp/gen.$i" ||
		fail "coli generate '$prompt'"
	# the same prompt as ids (BOS first, as -p puts it), engine vs reference
	ids=$("$COLI" tokenize "$model" "<｜User｜>$prompt<｜Assistant｜>" |
		"$PY" -c 'import json, sys; print(",".join(map(str, [0] + json.load(sys.stdin)["ids"])))') ||
		fail "coli tokenize '$prompt'"
	eng=$("$COLI" generate "$model" --tokens "$ids" -n 48 --ids) || fail "coli generate --ids '$prompt'"
	ref=$("$PY" "$top_srcdir/tests/ref/greedy.py" "$model" "$ids" 48) || fail "tests/ref/greedy.py '$prompt'"
	[ "$(echo $eng)" = "$(echo $ref)" ] ||
		fail "'$prompt': engine ids [$eng], numpy reference on the same weights [$ref]"
	"$COLI" tokenize "$model" --decode "$(echo $eng | tr ' ' ,)" > "$tmp/dec.$i" ||
		fail "coli tokenize --decode"
	"$PY" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1], encoding="utf-8"))["text"] + "\n" != open(sys.argv[2], encoding="utf-8").read())' \
		"$tmp/dec.$i" "$tmp/gen.$i" || fail "'$prompt': the ids decode to other text than -p gave"
done < "$tmp/golden"
echo "greedy answers: engine ids = numpy reference ids on the container's weights ($i prompts)"

"$PY" - "$ev/expected.json" "$tmp/ppl.json" "$tmp" <<'PYEOF' || exit 1
import json, sys, unicodedata
exp = json.load(open(sys.argv[1], encoding="utf-8"))
got = json.load(open(sys.argv[2]))
ok = True
if got["tokens"] != exp["sample_tokens"] or got["window"] != exp["window"]:
    print("FAIL: sample tokenized to %d tokens / window %d, expected %d / %d"
          % (got["tokens"], got["window"], exp["sample_tokens"], exp["window"]))
    ok = False
rel = abs(got["loss"] - exp["loss_pytorch_int4"]) / exp["loss_pytorch_int4"]
print("engine loss %.5f, PyTorch on the same int4 weights %.5f (f32 %.5f): %.3f%% apart"
      % (got["loss"], exp["loss_pytorch_int4"], exp["loss_pytorch_f32"], 100 * rel))
# README and data/README.md say "engine = PyTorch to 0.000%": the gate is
# that precision (half a unit of the last printed digit), not the looser
# tolerance expected.json was written with
CLAIM = 5e-6
if rel > CLAIM:
    print("FAIL: %.2e apart, the README claims 0.000%% (< %.0e)" % (rel, CLAIM))
    ok = False

def script_share(text, lang):
    letters = [c for c in text if unicodedata.category(c).startswith("L")]
    if not letters:
        return 0.0
    if lang == "zh":
        mine = [c for c in letters if "\u4e00" <= c <= "\u9fff"]
    elif lang == "ru":
        mine = [c for c in letters if "\u0400" <= c <= "\u04ff"]
    else:
        mine = [c for c in letters if c < "\u0250"]
    return len(mine) / len(letters)

for i, g in enumerate(exp["golden"], 1):
    out = open("%s/gen.%d" % (sys.argv[3], i), encoding="utf-8", errors="replace").read()
    share = script_share(out, g["lang"])
    print("%s %-40r -> %r (%.0f%% in script)" % (g["lang"], g["prompt"], out[:60], 100 * share))
    if out != g["text"]:
        print("FAIL: %s: expected %r" % (g["lang"], g["text"]))
        ok = False
    if share < 0.8:
        print("FAIL: %s answer is not in the language's script" % g["lang"])
        ok = False
sys.exit(0 if ok else 1)
PYEOF
echo "PASS"
