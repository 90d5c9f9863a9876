#!/bin/sh
# Partial mirrors (issue 29): `coli atlas --plan-mirror SIZE` plans from the
# heat of a workload, --write makes the copy, and on a rerun of the workload
# the mirror serves the predicted share of reads (+-5 points) by the
# per-drive byte counters of `coli bench`. Also: the plan respects SIZE;
# tokens are the same with the partial mirror; a damaged or missing record
# in it is found by `coli doctor --mirror` and read from the primary with
# one warning (same tokens); a bad plan file is a clear error.
set -u
: "${COLI:?}" "${PYTHON3:=python3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 7 --experts 32 --topk 4 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/m" --quant int4-g64 >/dev/null 2>&1 || exit 1
# every routing a read: no RAM tiers, no prefetch; the mirror gets all the
# stripes of the records it holds
io="--expert-cache 0 --pin-budget 0 --no-prefetch --no-kernels --prompt 8 --gen 96 --seed 3"
"$COLI" bench "$tmp/m" --cache-dir "$tmp/cache" $io >/dev/null 2>"$tmp/b1.err" || { cat "$tmp/b1.err"; exit 1; }
[ -s "$tmp/cache/hot-experts/heat.bin" ] || { echo "FAIL: the workload left no heat.bin"; exit 1; }

# the model's expert bytes and a quarter of them
eval "$("$COLI" atlas --plan-mirror 1T "$tmp/m" --json | "$PYTHON3" -c '
import json, sys
p = json.load(sys.stdin)
print("rec=%d all=%d" % (p["record_size"], p["total_records"]))')"
quarter=$((all * rec / 4))

# SIZE is respected, in records and bytes
for size in $rec $((rec * 3 + rec / 2)) $quarter; do
	"$COLI" atlas --plan-mirror "$size" "$tmp/m" --json >"$tmp/p.json" || { die "plan $size"; continue; }
	"$PYTHON3" - "$size" "$tmp/p.json" <<'EOF' || die "plan for $size bytes"
import json, sys
size, p = int(sys.argv[1]), json.load(open(sys.argv[2]))
n = sum(len(l["experts"]) for l in p["layers"])
assert p["bytes"] <= size, (p["bytes"], size)
assert n == p["records"] == p["bytes"] // p["record_size"], (n, p["records"])
assert p["records"] == min(size // p["record_size"], p["total_records"]), p["records"]
spans = sum(e - s for l in p["layers"] for s, e in l["ranges"])
assert spans == p["bytes"], (spans, p["bytes"])
assert 0 < p["expected_share"] <= 1
EOF
done
# --pin-budget: the hottest records the pinned set holds are left out
"$COLI" atlas --plan-mirror $((rec * 4)) "$tmp/m" --json >"$tmp/p4.json" &&
"$COLI" atlas --plan-mirror $((rec * 6)) "$tmp/m" --pin-budget $((rec * 4)) --json >"$tmp/p6p.json" &&
"$COLI" atlas --plan-mirror $((rec * 10)) "$tmp/m" --json >"$tmp/p10.json" || die "plans with --pin-budget"
"$PYTHON3" - "$tmp/p4.json" "$tmp/p6p.json" "$tmp/p10.json" <<'EOF' || die "--pin-budget"
import json, sys
a, b, c = (set((l["layer"], e) for l in json.load(open(f))["layers"] for e in l["experts"]) for f in sys.argv[1:])
assert len(a) == 4 and len(b) == 6 and not (a & b) and a | b == c, (a, b, c)
EOF
"$COLI" atlas --plan-mirror 100 "$tmp/m" >/dev/null 2>&1
[ $? = 2 ] || die "a SIZE below one record is a usage error"

# the mirror for a quarter of the records, and the rerun
"$COLI" atlas --plan-mirror "$quarter" "$tmp/m" --write "$tmp/pm" --json >"$tmp/plan.json" || exit 1
[ -s "$tmp/pm/mirror-plan.json" ] || die "no plan file written"
"$COLI" doctor "$tmp/m" --mirror "$tmp/pm" >"$tmp/doc.out" || { cat "$tmp/doc.out"; die "doctor on a sound mirror"; }
grep -q "mirror .*partial copy.*every record matches" "$tmp/doc.out" || { cat "$tmp/doc.out"; die "doctor's mirror line"; }
"$COLI" bench "$tmp/m" $io --no-heat --mirror "$tmp/pm" --mirror-weights 0,1 >"$tmp/b2.json" 2>"$tmp/b2.err" ||
	{ cat "$tmp/b2.err"; exit 1; }
"$PYTHON3" - "$tmp/plan.json" "$tmp/b2.json" <<'EOF' || die "the mirror's share of reads"
import json, sys
plan, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert plan["records"] * 4 == plan["total_records"], plan["records"]
d = b["experts"]["drives"]
total = sum(x["bytes"] for x in d)
share = d[1]["bytes"] / total
want = plan["expected_share"]
print("mirror of %d/%d records: predicted %.1f%% of reads, served %.1f%% (%d of %d bytes)"
      % (plan["records"], plan["total_records"], 100 * want, 100 * share, d[1]["bytes"], total))
assert abs(share - want) <= 0.05, (share, want)
EOF

# same tokens with the partial mirror, damaged or not
prompt=1,5,9,200,33,7,100,4
gen="--tokens $prompt -n 24 --ids --ignore-eos --no-heat --expert-cache 0"
ref=$("$COLI" generate "$tmp/m" $gen) || exit 1
got=$("$COLI" generate "$tmp/m" $gen --mirror "$tmp/pm" --mirror-weights 0,1 2>"$tmp/g.err") || die "generate with the mirror"
[ "$got" = "$ref" ] || die "tokens differ with the partial mirror"
! grep -q "CRC-32C" "$tmp/g.err" || { cat "$tmp/g.err"; die "a sound mirror warned"; }
# damage two planned records of the first planned layer: one flipped byte,
# one zeroed (a hole)
eval "$("$PYTHON3" - "$tmp/plan.json" "$tmp/pm" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
l = p["layers"][0]
a, b = l["experts"][0], l["experts"][-1]
rs = p["record_size"]
path = sys.argv[2] + "/" + l["file"]
with open(path, "r+b") as f:
    f.seek(a * rs + 100); x = f.read(1); f.seek(a * rs + 100); f.write(bytes([x[0] ^ 0x40]))
    if b != a:
        f.seek(b * rs); f.write(bytes(rs))
print("bad_layer=%d bad_expert=%d" % (l["layer"], a))
EOF
)"
"$COLI" doctor "$tmp/m" --mirror "$tmp/pm" >"$tmp/doc2.out"
[ $? = 1 ] || die "doctor passes a damaged mirror"
grep -q "FAIL.*mirror.*layer $bad_layer expert $bad_expert" "$tmp/doc2.out" || { cat "$tmp/doc2.out"; die "doctor names the damaged record"; }
got=$("$COLI" generate "$tmp/m" $gen --mirror "$tmp/pm" --mirror-weights 0,1 2>"$tmp/g2.err") || { cat "$tmp/g2.err"; die "generate with a damaged mirror"; }
[ "$got" = "$ref" ] || die "tokens differ with a damaged partial mirror"
n=$(grep -c "mirror .*fails its CRC-32C.*from the primary" "$tmp/g2.err")
[ "$n" = 1 ] || { cat "$tmp/g2.err"; die "expected one warning for the damaged mirror, got $n"; }
! grep -qi "error" "$tmp/g2.err" || { cat "$tmp/g2.err"; die "a mirror's bad record logged an error"; }
got=$("$COLI" generate "$tmp/m" $gen --mirror "$tmp/pm" --mirror-weights 0,1 --verify-mirrors 2>"$tmp/g4.err") ||
	die "generate with --verify-mirrors"
[ "$got" = "$ref" ] || die "tokens differ with --verify-mirrors"
grep -q "mirror .*layer $bad_layer expert $bad_expert fails its CRC-32C; read from the primary" "$tmp/g4.err" ||
	{ cat "$tmp/g4.err"; die "--verify-mirrors misses the damaged record"; }

# a planned shard file gone: doctor names it, the primary serves its records
f=$("$PYTHON3" -c 'import json, sys; print(json.load(open(sys.argv[1]))["layers"][0]["file"])' "$tmp/plan.json")
mv "$tmp/pm/$f" "$tmp/shard.away"
"$COLI" doctor "$tmp/m" --mirror "$tmp/pm" >"$tmp/doc5.out"
[ $? = 1 ] && grep -q "FAIL.*mirror.*(its file is missing)" "$tmp/doc5.out" || { cat "$tmp/doc5.out"; die "doctor on a missing shard"; }
got=$("$COLI" generate "$tmp/m" $gen --mirror "$tmp/pm" 2>"$tmp/g5.err") || die "generate without a planned shard"
[ "$got" = "$ref" ] || die "tokens differ without a planned shard"
[ "$(grep -c "mirror .*(planned).*not used for that shard" "$tmp/g5.err")" = 1 ] || { cat "$tmp/g5.err"; die "missing shard warning"; }
mv "$tmp/shard.away" "$tmp/pm/$f"

# a counts file instead of the heat (CSV and JSON)
printf 'layer,expert,count\n1,5,100\n2,7,50\n# a comment\n3,9,25\n1,6,1\n' >"$tmp/counts.csv"
"$COLI" atlas --plan-mirror $((rec * 2)) "$tmp/m" --counts "$tmp/counts.csv" --json >"$tmp/pc.json" || die "plan from counts"
"$PYTHON3" - "$tmp/pc.json" <<'EOF2' || die "the plan from a counts file"
import json, sys
p = json.load(open(sys.argv[1]))
got = sorted((l["layer"], e) for l in p["layers"] for e in l["experts"])
assert got == [(1, 5), (2, 7)], got
assert abs(p["expected_share"] - 150 / 176) < 1e-9, p["expected_share"]
EOF2
echo '[{"layer": 3, "expert": 9, "count": 4}, [2, 1, 3]]' >"$tmp/counts.json"
"$COLI" atlas --plan-mirror $rec "$tmp/m" --counts "$tmp/counts.json" | grep -q "^layer 3 .*experts 9;" ||
	die "plan from a JSON counts file"
echo '1,99,3' >"$tmp/bad.csv"
"$COLI" atlas --plan-mirror $rec "$tmp/m" --counts "$tmp/bad.csv" 2>"$tmp/c.err" >/dev/null
[ $? = 1 ] && grep -q "bad.csv:1: layer 1 expert 99 is not in this model" "$tmp/c.err" || { cat "$tmp/c.err"; die "a bad counts file"; }

# bad plan files: clear errors, the mirror unused, tokens the same
cp "$tmp/pm/mirror-plan.json" "$tmp/plan.good"
check_bad() { # WHAT EXPECTED-TEXT
	"$COLI" doctor "$tmp/m" --mirror "$tmp/pm" >"$tmp/doc3.out"
	[ $? = 1 ] || die "doctor passes a plan with $1"
	grep -q "FAIL.*mirror.*mirror-plan.json: $2" "$tmp/doc3.out" || { cat "$tmp/doc3.out"; die "doctor on $1"; }
	got=$("$COLI" generate "$tmp/m" $gen --mirror "$tmp/pm" 2>"$tmp/g3.err") || die "generate with $1"
	[ "$got" = "$ref" ] || die "tokens differ with $1"
	grep -q "mirror .*mirror-plan.json: $2.*mirror not used" "$tmp/g3.err" || { cat "$tmp/g3.err"; die "no warning for $1"; }
}
printf '{"format": "colitop-mirror-plan", "version": 1,' >"$tmp/pm/mirror-plan.json"
check_bad "truncated JSON" "not JSON"
sed 's/"version": *1/"version": 7/' "$tmp/plan.good" >"$tmp/pm/mirror-plan.json"
check_bad "another version" "plan version 7"
sed 's/"fingerprint": *"[0-9a-f]/"fingerprint": "x/' "$tmp/plan.good" >"$tmp/pm/mirror-plan.json"
check_bad "another model" "planned for another model"
sed 's/"file": *"partial/"file": "..\/partial/' "$tmp/plan.good" >"$tmp/pm/mirror-plan.json"
check_bad "a path leaving the mirror" "layer [0-9]*: file"
exit $fail
