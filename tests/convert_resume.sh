#!/bin/sh
# convert_resume.sh - an interrupted conversion resumes: a run killed with
# SIGKILL after 3 files (fault-injection point COLI_CONVERT_FAIL_AFTER_FILES,
# compiled under COLI_FAULT_INJECTION) is started again; files whose size and
# sha256 verify are kept, a tampered one is rewritten, and the result equals
# an uninterrupted conversion byte for byte.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" "$top_srcdir/tests/convert_mkckpt.py" "$T/ck" || fail "convert_mkckpt.py"
"$COLI" convert "$T/ck" "$T/ref" >/dev/null 2>&1 || fail "reference conversion"

COLI_CONVERT_FAIL_AFTER_FILES=3 "$COLI" convert "$T/ck" "$T/out" >/dev/null 2>"$T/err1"
rc=$?
if [ -f "$T/out/manifest.json" ]; then
	. "${top_srcdir:-.}/tests/test_skip.sh"
	test_skip "built without COLI_FAULT_INJECTION (configure --enable-fault-injection)"
fi
[ $rc -ne 0 ] || fail "interrupted run exited 0"
[ -f "$T/out/.convert-state.json" ] || fail "no state file after the interruption"
# files in order: dense/embed.bin, dense/layer-000.bin, dense/layer-001.bin,
# experts/shard-001.bin, ...
[ -f "$T/out/dense/layer-001.bin" ] || fail "file 3 not written before the kill"
[ -f "$T/out/experts/shard-001.bin" ] && fail "file 4 exists after a kill after file 3"

# Tamper with a finished file: it must not be trusted.
printf 'X' | dd of="$T/out/dense/layer-000.bin" bs=1 seek=100 conv=notrunc 2>/dev/null

"$COLI" convert "$T/ck" "$T/out" >"$T/out2" 2>"$T/err2" || { cat "$T/err2" >&2; fail "resumed run"; }
grep -q 'dense/embed.bin: kept from the previous run' "$T/err2" || fail "embed.bin not kept"
grep -q 'dense/layer-001.bin: kept from the previous run' "$T/err2" || fail "layer-001.bin not kept"
grep -q 'dense/layer-000.bin: does not verify, writing it again' "$T/err2" ||
	fail "tampered layer-000.bin not rewritten: $(cat "$T/err2")"
grep -q '2 kept from an earlier run' "$T/out2" || fail "summary: $(cat "$T/out2")"
[ -f "$T/out/.convert-state.json" ] && fail "state file left after completion"
diff -r "$T/ref" "$T/out" >"$T/diff" || { cat "$T/diff" >&2; fail "resumed container differs"; }

# A full disk (injected ENOSPC after 200 KB) fails with one line naming the
# file; the next run completes the container.
rm -rf "$T/out"
COLI_CONVERT_ENOSPC_AFTER_BYTES=200000 "$COLI" convert "$T/ck" "$T/out" >/dev/null 2>"$T/err4"
rc=$?
[ $rc = 1 ] || fail "ENOSPC: exit $rc, want 1"
grep -q '^coli convert: .*\.tmp: write failed: No space left on device' "$T/err4" ||
	fail "ENOSPC message: $(cat "$T/err4")"
[ -f "$T/out/manifest.json" ] && fail "manifest written after ENOSPC"
"$COLI" convert "$T/ck" "$T/out" >"$T/out5" 2>/dev/null || fail "run after ENOSPC"
grep -q 'kept from an earlier run' "$T/out5" || fail "nothing kept after ENOSPC"
diff -r "$T/ref" "$T/out" >/dev/null || fail "container after ENOSPC differs"

# A partial conversion made with other arguments is refused, then --force restarts.
rm -f "$T/out/manifest.json"
printf '{"format":"colitop-convert-state","version":1,"args":{"quant":"int8"},"files":{}}\n' \
	>"$T/out/.convert-state.json"
"$COLI" convert "$T/ck" "$T/out" >/dev/null 2>"$T/err3"
[ $? = 1 ] && grep -q "other arguments" "$T/err3" || fail "mismatched state accepted: $(cat "$T/err3")"
"$COLI" convert "$T/ck" "$T/out" --force >/dev/null 2>&1 || fail "--force over stale state"
diff -r "$T/ref" "$T/out" >/dev/null || fail "--force result differs"
echo "ok"
