#!/bin/sh
# store_iobench.sh - `coli iobench` on a small temporary file: four tests
# reported in valid JSON, the temporary file removed, bad usage exits 2.
set -u
[ -x "${COLI:-}" ] || { echo "FAIL: COLI not built"; exit 1; }
PY=${PYTHON3:-/usr/bin/python3}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
fail() { echo "store_iobench: $*" >&2; exit 1; }

"$COLI" iobench "$dir" --file-size 16M --size 1M --seconds 0.1 --json >"$dir/out.json" 2>"$dir/err" ||
	fail "iobench failed: $(cat "$dir/err")"
"$PY" - "$dir/out.json" <<'PYEOF' || fail "bad JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["temporary"] is True and r["file_bytes"] == 16 << 20, r
assert len(r["tests"]) == 4
blocks = sorted({t["block"] for t in r["tests"]})
assert blocks == [4096, 1 << 20], blocks
for t in r["tests"]:
    assert t["mode"] in ("direct", "buffered")
    if t["ok"]:
        assert t["iops"] > 0 and t["bytes_per_s"] > 0
assert any(t["ok"] for t in r["tests"])
assert r["bytes_per_token"] == 8 * 75 * (1 << 20)
PYEOF
[ -z "$(ls -A "$dir" | grep -v -e out.json -e err)" ] || fail "temporary file left behind"

# an existing file is read in place, never removed
head -c 4194304 /dev/zero >"$dir/data" 2>/dev/null || dd if=/dev/zero of="$dir/data" bs=1M count=4 2>/dev/null
"$COLI" iobench "$dir/data" --size 1M --seconds 0.05 >"$dir/text" 2>&1 || fail "iobench on a file failed"
grep -q "GB/s" "$dir/text" || fail "no table in text output"
[ -f "$dir/data" ] || fail "input file removed"

"$COLI" iobench >/dev/null 2>&1; [ $? -eq 2 ] || fail "no PATH should exit 2"
"$COLI" iobench "$dir" --size 1000 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--size 1000 should exit 2"
"$COLI" iobench "$dir" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown flag should exit 2"
"$COLI" iobench "$dir/missing" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing path should exit 1"
"$COLI" iobench --help | grep -q "usage: coli iobench" || fail "--help"
echo "store_iobench: ok"
