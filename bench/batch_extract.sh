#!/bin/sh
# batch_extract.sh - the users' job end to end (issue 27): synthetic
# contract-like documents (300-600 tokens each) turned into JSON under a
# schema (response_format json_schema) by `coli batch`, cold, in a memory
# cgroup, on the GLM-5 slice with a third of the experts cached:
# documents per hour at --parallel 1 against --parallel auto, and the
# answers of the documents both runs did compared byte for byte.
#
#   bench/batch_extract.sh [--work DIR] [--docs N] [--p1-docs N]
#                          [--extra "ENGINE OPTIONS"] [--no-cgroup] [--coli PATH]
#
#   --docs N      documents of the auto run (default 64)
#   --p1-docs N   the first N of them at --parallel 1 (default 8: one
#                 sequence at a time from disk takes minutes a document;
#                 its rate is steady, so documents per hour compare)
# The slice is bench/batch_parallel.sh's (WORK/model, built by it or by
# bench/glm5_slice.sh); this script does not build it. Prints a markdown
# table (WORK/extract-results/summary.md); exit 1 when an answer differs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-glm5-slice docs=64 p1docs=8 extra="" cgroup=1
coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args batch_extract.sh 2,18 '--work=work --docs=docs --p1-docs=p1docs --extra=extra
	--no-cgroup:cgroup=0 --coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli batch_extract.sh
py=/usr/bin/python3
model=$work/model res=$work/extract-results
cg=/sys/fs/cgroup/memory/coli-batch-extract
[ -f "$model/manifest.json" ] || { echo "batch_extract.sh: no slice in $model (run bench/batch_parallel.sh --reuse first)" >&2; exit 2; }
mkdir -p "$res"
trap '[ -d "$cg" ] && rmdir "$cg" 2>/dev/null; true' EXIT
trap 'exit 130' INT TERM
shard_bytes=$(stat -c %s "$(ls "$model"/experts/*.bin | head -1)")
all=$(($(ls "$model"/experts/*.bin | wc -l) * shard_bytes))
rec=$((shard_bytes / 64))
third=$((all / 3 / rec * rec))
dense=$(du -sb "$model/dense" | cut -f1)

# --- the documents -------------------------------------------------------------
"$py" - "$res/in.jsonl" "$docs" "$(basename "$model")" <<'EOF'
import json, random, sys
path, n, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rnd = random.Random(27)
firms = "Northwind Contoso Fabrikam Tailspin Wingtip Litware Adventure Proseware Fourth Coffee".split()
clauses = ["The Supplier shall deliver the Goods to the Buyer at the address stated above.",
           "Payment is due within thirty days of the invoice date.",
           "Either party may terminate this Agreement with ninety days written notice.",
           "The Buyer shall inspect the Goods within five business days of delivery.",
           "This Agreement is governed by the laws of the State of Delaware.",
           "Neither party shall disclose Confidential Information to any third party.",
           "The Supplier warrants that the Goods are free from defects for twelve months.",
           "Late payments accrue interest at one percent per month."]
schema = {"type": "object", "additionalProperties": False,
          "required": ["parties", "effective_date", "amount", "term_months", "governing_law"],
          "properties": {"parties": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                         "effective_date": {"type": "string"}, "amount": {"type": "number"},
                         "term_months": {"type": "integer"}, "governing_law": {"type": "string"}}}
with open(path, "w") as f:
    for i in range(n):
        a, b = rnd.sample(firms, 2)
        body = ["SUPPLY AGREEMENT No. %d" % (1000 + i),
                "This Agreement is made on %d March 2026 between %s Ltd. (the Supplier) and %s Inc. (the Buyer)."
                % (rnd.randint(1, 28), a, b),
                "The total price is %d USD for a term of %d months." % (rnd.randint(5, 900) * 1000, rnd.choice([6, 12, 24, 36]))]
        # 300-600 tokens: the slice's synthesized tokenizer (4,096 ids)
        # takes about 3.2 tokens a word of this text
        words = 0
        target = rnd.randint(300, 600) / 3.2
        while words < target:
            c = rnd.choice(clauses)
            body.append(c)
            words += len(c.split())
        req = {"model": model, "temperature": 0, "max_tokens": 96,
               "messages": [{"role": "system", "content": "Extract the contract's fields as JSON."},
                            {"role": "user", "content": " ".join(body)}],
               "response_format": {"type": "json_schema",
                                   "json_schema": {"name": "contract", "strict": True, "schema": schema}}}
        f.write(json.dumps({"custom_id": "doc-%03d" % i, "method": "POST", "url": "/v1/chat/completions",
                            "body": req}) + "\n")
EOF

# --- the runs ----------------------------------------------------------------------
for p in 1 auto; do
	n=$docs
	[ $p = 1 ] && n=$p1docs
	head -n "$n" "$res/in.jsonl" >"$res/in-$p.jsonl"
	rm -f "$res/out-$p.jsonl" "$res/p$p.cgroup"
	rm -rf "$res/cache-$p"
	sync
	[ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches
	cmd="$coli batch $model $res/in-$p.jsonl $res/out-$p.jsonl --parallel $p --expert-cache $third --ctx 1024 --cache-dir $res/cache-$p -q $extra"
	echo "run: $cmd" >&2
	if [ "$cgroup" = 1 ] && [ -w /sys/fs/cgroup/memory ]; then
		mkdir -p "$cg"
		limit=$((dense + third + 1024 * 1024 * 1024))
		echo $limit >"$cg/memory.limit_in_bytes"
		# shellcheck disable=SC2016,SC2086
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" $cmd 2>"$res/p$p.log"
		echo "$limit $(cat "$cg/memory.max_usage_in_bytes")" >"$res/p$p.cgroup"
		rmdir "$cg"
	else
		echo "batch_extract.sh: no writable cgroup v1 memory controller" >&2
		# shellcheck disable=SC2086
		$cmd 2>"$res/p$p.log"
	fi
	tail -2 "$res/p$p.log" >&2
done

"$py" - "$res" <<'EOF' | tee "$res/summary.md"
import json, re, sys
res = sys.argv[1]
pat = re.compile(r"batch: (\d+) answered .*?(\d+) prompt \+ (\d+) completion tokens in ([\d.]+) s .*?([\d.]+) MB read")
rows, ans = [], {}
for p in ("1", "auto"):
    log = open("%s/p%s.log" % (res, p)).read()
    n, pt, ct, secs, mb = pat.findall(log)[-1]
    slots = re.findall(r"batch: (\d+) slots", log)[-1]
    lim, peak = open("%s/p%s.cgroup" % (res, p)).read().split() if __import__("os").path.exists(
        "%s/p%s.cgroup" % (res, p)) else ("0", "0")
    valid = 0
    for l in open("%s/out-%s.jsonl" % (res, p)):
        o = json.loads(l)
        b = o["response"]["body"]
        b = json.loads(b) if isinstance(b, str) else b
        text = b["choices"][0]["message"]["content"]
        ans.setdefault(o["custom_id"], {})[p] = text
        try:
            json.loads(text)
            valid += 1
        except ValueError:
            pass
    rows.append((p, int(slots), int(n), int(pt), int(ct), float(secs), float(mb), valid, int(peak) >> 20, int(lim) >> 20))
base = rows[0][2] / rows[0][5] * 3600
print("| --parallel | slots | documents | prompt tokens | completion tokens | s | documents / hour | vs 1 "
      "| GB read / document | valid JSON | cgroup peak / limit MiB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for p, slots, n, pt, ct, secs, mb, valid, peak, lim in rows:
    dph = n / secs * 3600
    print("| %s | %d | %d | %d | %d | %.1f | %.1f | %.2f | %.2f | %d of %d | %d / %d |" % (
        p, slots, n, pt, ct, secs, dph, dph / base, mb / 1e3 / n, valid, n, peak, lim))
diff = [k for k, v in ans.items() if len(v) == 2 and v["1"] != v["auto"]]
both = sum(1 for v in ans.values() if len(v) == 2)
print("\nanswers of the %d documents both runs did: %d differ" % (both, len(diff)))
sys.exit(1 if diff else 0)
EOF
