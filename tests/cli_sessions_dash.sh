#!/bin/sh
# A session whose name starts with '-' (issue 30, defect 11: `-rf` could be
# created by coli generate --session but neither removed nor renamed):
# after "--" every argument of coli sessions is a name.
set -u
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
"$COLI" generate --session -rf -n 2 --tokens 1,2 >/dev/null 2>"$T/err" || { cat "$T/err"; fail "generate --session -rf"; }
[ -f "$T/cache/kv/-rf.kv" ] || fail "no session -rf: $(ls "$T/cache/kv")"
"$COLI" sessions rm -rf >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "rm -rf without --: not a usage error"
grep -q "coli sessions rm -- -rf" "$T/err" || fail "no hint: $(cat "$T/err")"
"$COLI" sessions rename -- -rf -x >/dev/null 2>"$T/err" || { cat "$T/err"; fail "rename -- -rf -x"; }
[ -f "$T/cache/kv/-x.kv" ] && [ ! -e "$T/cache/kv/-rf.kv" ] || fail "rename: $(ls "$T/cache/kv")"
"$COLI" sessions show -- -x >/dev/null 2>"$T/err" || { cat "$T/err"; fail "show -- -x"; }
"$COLI" sessions -- rm -x >/dev/null 2>"$T/err" || { cat "$T/err"; fail "-- rm -x"; }
[ ! -e "$T/cache/kv/-x.kv" ] || fail "rm -- -x left the file"
echo "a session named -rf: renamed and removed after --"
