#!/bin/sh
# coli doctor: passes on a good container, reports a truncated expert shard
# and a manifest-contradicting directory name, warns about an int4 MTP head,
# and never writes anything.
set -u
: "${COLI:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COLI_CACHE_DIR="$tmp/cache"
"$COLI" synth "$tmp/hf" --preset tiny --seed 2 >/dev/null || exit 1
"$COLI" convert "$tmp/hf" "$tmp/good" >/dev/null 2>&1 || exit 1
fail=0
"$COLI" doctor "$tmp/good" >"$tmp/out" || { echo "FAIL: doctor failed on a good model"; cat "$tmp/out"; fail=1; }
"$COLI" doctor "$tmp/good" --json | "${PYTHON3:-python3}" -c '
import json, sys
d = json.load(sys.stdin)
assert d["failures"] == 0, d
assert any(c["check"] == "container" and c["status"] == "ok" for c in d["checks"]), d
assert any(c["check"] == "huge-pages" and c["status"] in ("ok", "warning") for c in d["checks"]), d
' || { echo "FAIL: --json"; fail=1; }
[ ! -e "$tmp/cache" ] || { echo "FAIL: doctor wrote into the cache dir"; fail=1; }
# int4 MTP head -> warning naming the fix
"$COLI" convert "$tmp/hf" "$tmp/int8-model" --mtp-quant int4-g64 >/dev/null 2>&1 || exit 1
"$COLI" doctor "$tmp/int8-model" >"$tmp/out2"
grep -q "mtp-quant int8" "$tmp/out2" || { echo "FAIL: no int4 MTP warning"; cat "$tmp/out2"; fail=1; }
grep -q "disagrees with the manifest" "$tmp/out2" || { echo "FAIL: name tag contradiction not reported"; fail=1; }
# truncated expert shard -> failure, exit 1
cp -r "$tmp/good" "$tmp/bad"
shard=$(ls "$tmp/bad/experts/" | head -1)
truncate -s 4096 "$tmp/bad/experts/$shard"
if "$COLI" doctor "$tmp/bad" >"$tmp/out3"; then
	echo "FAIL: truncated shard not detected"; cat "$tmp/out3"; fail=1
fi
grep -q "^FAIL" "$tmp/out3" || { echo "FAIL: no FAIL line"; fail=1; }
[ $fail = 0 ] && echo "doctor: good, int4-MTP, misnamed and truncated containers reported as expected"
exit $fail
