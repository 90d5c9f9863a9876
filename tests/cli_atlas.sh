#!/bin/sh
# cli_atlas.sh - routing profiles and `coli atlas` on the default model
# (issue 29's proof):
#  - the Chinese and Russian records of data/eval/val.txt go through
#    `coli batch --label-field lang`; the zh and ru profiles hold exactly
#    the rows the answers say were evaluated, and _all their sum;
#  - a lone request's profile equals `coli perplexity --routing` of its
#    text (the raw routing, taken one token at a time by another path);
#  - `coli atlas compare zh ru` names experts whose scores are recomputed
#    from the counts, and the raw routing of every record, collected
#    independently, confirms the top three of each side (|z| > 3.3) and
#    puts the same expert first;
#  - show's concentration and entropy are recomputed; the PNG is decoded
#    and every pixel checked against the profile in cluster order;
#  - a second run of the same workload in another cache directory gives
#    the same profiles and byte-identical clusters;
#  - damaged, missing and mislabelled inputs are refused, saying why.
set -u
: "${COLI:?COLI must point to the built coli}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
PY=${PYTHON3:-/usr/bin/python3}
. "$top_srcdir/tests/test_skip.sh"
command -v "$PY" >/dev/null 2>&1 || test_skip "python3 missing"
model="$top_srcdir/data/default-model"
chk="$top_srcdir/tests/cli_atlas_check.py"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
unset COLI_CACHE_DIR COLI_MODEL

"$PY" "$chk" inputs "$top_srcdir/data/eval/val.txt" "$T" || fail "cannot make the workload"
run() { # cache out
	"$COLI" batch "$model" "$T/in.jsonl" "$T/$2" --label-field lang --parallel 1 --threads 1 -q \
		--cache-dir "$1" 2>"$T/batch.log" || { cat "$T/batch.log"; fail "coli batch"; }
}
run "$T/c1" out1.jsonl
run "$T/c2" out2.jsonl
A() { "$COLI" atlas --cache-dir "$T/c1" "$@"; }

# the raw routing of each record, and a lone request's profile
for f in "$T"/rec*.txt; do
	"$COLI" perplexity "$model" "$f" --routing --json --window 512 --threads 1 >"${f%.txt}.ppl.json" ||
		fail "coli perplexity --routing $f"
done
one=$(ls "$T"/rec*.zh.txt | head -n 1)
"$PY" -c 'import json, sys
print(json.dumps({"custom_id": "x", "method": "POST", "url": "/v1/completions", "label": "one",
                  "body": {"prompt": open(sys.argv[1], encoding="utf-8").read(), "max_tokens": 1}}))' \
	"$one" >"$T/one.jsonl" || fail "one.jsonl"
"$COLI" batch "$model" "$T/one.jsonl" "$T/one.out" --label-field label --parallel 1 --threads 1 -q \
	--cache-dir "$T/c3" 2>"$T/batch.log" || { cat "$T/batch.log"; fail "coli batch (one request)"; }
cp "$T/c3/profiles/one.prof" "$T/one.prof" || fail "no profile for the label 'one'"
cp "${one%.txt}.ppl.json" "$T/one.ppl.json"

A compare zh ru --json --top 5 >"$T/compare.json" || fail "atlas compare"
A show zh --json --top 4 >"$T/show.json" || fail "atlas show"
A cluster --json --clusters 4 >"$T/cluster1.json" || fail "atlas cluster"
"$COLI" atlas --cache-dir "$T/c2" cluster --json --clusters 4 >"$T/cluster2.json" || fail "atlas cluster (run 2)"
A png "$T/atlas.png" --scale 4 --clusters 4 || fail "atlas png"
"$PY" "$chk" check "$T" "$T/c1" || fail "the atlas does not match the routing"

# the same workload twice: the same counts, byte-identical clusters
for f in zh ru _all; do
	cmp -s "$T/c1/profiles/$f.prof" "$T/c2/profiles/$f.prof" || fail "$f.prof differs between two runs"
done
cmp -s "$T/cluster1.json" "$T/cluster2.json" || fail "the clusters differ between two runs of one workload"
A cluster --csv --clusters 4 >"$T/a.csv" && A cluster --csv --clusters 4 >"$T/b.csv" &&
	cmp -s "$T/a.csv" "$T/b.csv" || fail "cluster --csv is not stable"
echo "ok: two runs of the workload give identical profiles and clusters"

# the other outputs answer
A show --heat --json >"$T/heat.json" || fail "atlas show --heat"
grep -q '"kind":"heat"' "$T/heat.json" || fail "show --heat is not heat: $(head -c 200 "$T/heat.json")"
A show >/dev/null && A show session:none >/dev/null 2>&1; [ $? = 1 ] || fail "a missing session profile must exit 1"
A compare zh ru --csv | head -n 1 | grep -q '^layer,expert,a_count' || fail "compare --csv header"
A list | grep -q '^zh' || fail "atlas list does not list zh"

# refused inputs
A compare zh nosuch >/dev/null 2>"$T/err"; [ $? = 1 ] && grep -q "no profile nosuch" "$T/err" ||
	fail "a missing label: $(cat "$T/err")"
head -c 100 "$T/c1/profiles/zh.prof" >"$T/bad.prof"
A show "$T/bad.prof" >/dev/null 2>"$T/err"; [ $? = 1 ] && grep -q "truncated or damaged\|not a routing profile" "$T/err" ||
	fail "a truncated profile: $(cat "$T/err")"
cp "$T/c1/profiles/zh.prof" "$T/flip.prof" && printf 'X' | dd of="$T/flip.prof" bs=1 seek=200 conv=notrunc 2>/dev/null
A show "$T/flip.prof" >/dev/null 2>"$T/err"; [ $? = 1 ] && grep -q "checksum" "$T/err" ||
	fail "a damaged profile: $(cat "$T/err")"
# --plan-mirror is its own mode (tests/store_mirror_plan.sh): reached from here
A --plan-mirror --help 2>&1 | grep -q -- "--pin-budget" || fail "--plan-mirror --help is not the mirror planner's"
A --plan-mirror >/dev/null 2>&1; [ $? = 2 ] || fail "--plan-mirror without SIZE must exit 2"
A show a b >/dev/null 2>&1; [ $? = 2 ] || fail "show with two arguments must exit 2"
printf '%s\n' '{"custom_id":"n","method":"POST","url":"/v1/completions","label":7,"body":{"prompt":"a","max_tokens":1}}' \
	'{"custom_id":"b","method":"POST","url":"/v1/completions","body":{"prompt":"a","max_tokens":1,"metadata":{"label":"_x"}}}' \
	'{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"metadata":{"label":"chat"}}}' \
	>"$T/badlab.jsonl"
"$COLI" batch "$model" "$T/badlab.jsonl" "$T/badlab.out" --label-field label --threads 1 -q --cache-dir "$T/c4" 2>/dev/null
grep '"custom_id":"n"' "$T/badlab.out" | grep -q invalid_label || fail "a label that is not a string: $(cat "$T/badlab.out")"
grep '"custom_id":"b"' "$T/badlab.out" | grep -q '"status_code":200' || fail "an invalid metadata.label: $(cat "$T/badlab.out")"
[ "$(ls "$T/c4/profiles" | tr '\n' ' ')" = "_all.prof chat.prof " ] ||
	fail "metadata.label of a chat request, or an invalid label: $(ls "$T/c4/profiles")"
echo "ok: missing, truncated and damaged profiles and bad labels are refused"
