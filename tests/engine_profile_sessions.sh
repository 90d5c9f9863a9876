#!/bin/sh
# engine_profile_sessions.sh - runs engine_profile_sessions (1,000 sessions'
# routing profiles in bounded memory) on a tiny model with 64 experts.
# Under ThreadSanitizer (COLI_TEST_TSAN) 300 sessions. Then --no-profiles
# and COLI_NO_PROFILES=1: a run records no profile at all, --profiles undoes it.
set -u
: "${COLI:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
"$COLI" synth "$tmp/hf" --preset tiny --experts 64 --seed 5 >/dev/null 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
"$COLI" convert "$tmp/hf" "$tmp/m" >/dev/null 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
# ThreadSanitizer runs it on 300 sessions (ten times slower per request)
n=1000
[ -n "${COLI_TEST_TSAN:-}" ] && n=300
"$top_builddir/tests/engine_profile_sessions" "$tmp/m" "$tmp/cache" $n || exit 1

gen() { "$COLI" generate "$tmp/m" --tokens 1,2,3 -n 2 --threads 1 --ctx 64 "$@" >/dev/null 2>"$tmp/log" ||
	{ cat "$tmp/log"; echo "FAIL: coli generate $*"; exit 1; }; }
gen --cache-dir "$tmp/c1" --no-profiles
[ -e "$tmp/c1/profiles" ] && { echo "FAIL: --no-profiles wrote $(ls "$tmp/c1/profiles")"; exit 1; }
COLI_NO_PROFILES=1 gen --cache-dir "$tmp/c1"
[ -e "$tmp/c1/profiles" ] && { echo "FAIL: COLI_NO_PROFILES=1 wrote $(ls "$tmp/c1/profiles")"; exit 1; }
COLI_NO_PROFILES=1 gen --cache-dir "$tmp/c1" --profiles
[ -s "$tmp/c1/profiles/_all.prof" ] || { echo "FAIL: --profiles did not undo COLI_NO_PROFILES=1"; exit 1; }
echo "ok: --no-profiles and COLI_NO_PROFILES=1 record nothing, --profiles undoes them"
