#!/bin/sh
# Runs core_session_writer on a synthesized tiny model; then a save that
# fails (test builds: a full disk on the first append) is reported by the
# turn's end, as before the writer thread: `coli generate --session`
# prints it.
set -u
: "${COLI:?}" "${top_builddir:?}" "${top_srcdir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/tiny_model.sh"
tiny_model "$tmp"
"$top_builddir/tests/core_session_writer" "$tmp/m" "$tmp/cache" || exit 1
grep -q 'define COLI_FAULT_INJECTION 1' "$top_builddir/config.h" || exit 0
COLI_CACHE_DIR="$tmp/cache2" COLI_FAULT_KV_WRITE=2 "$COLI" generate "$tmp/m" --ids --tokens 5,6,7 -n 4 \
	--session full >/dev/null 2>"$tmp/err" || { echo "FAIL: generate: $(cat "$tmp/err")"; exit 1; }
grep -q 'No space left on device' "$tmp/err" ||
	{ echo "FAIL: the failed save was not reported: $(cat "$tmp/err")"; exit 1; }
echo "a failed save is reported at the turn's end"
# A turn whose step fails (an expert record that cannot be read) ends with
# the error and leaves the session file as the last good turn left it:
# the failed turn is not saved, and nothing before it is cut (it once
# was: the forgotten history, 0 tokens, was saved over the file).
c3="$tmp/cache3"
"$COLI" generate "$tmp/m" --ids --tokens 3,4,5,6 -n 8 --ignore-eos --session keep --cache-dir "$c3" \
	>/dev/null 2>"$tmp/err" || { echo "FAIL: first turn: $(cat "$tmp/err")"; exit 1; }
tokens() { "$COLI" sessions "$tmp/m" --cache-dir "$c3" --json list |
	/usr/bin/python3 -c 'import json,sys; print([s["tokens"] for s in json.load(sys.stdin)["sessions"] if s["name"] == "keep"][0])'; }
before=$(tokens)
[ "$before" = 12 ] || { echo "FAIL: the first turn saved $before tokens, not 12"; exit 1; }
if COLI_FAULT_READ_EIO=1 "$COLI" generate "$tmp/m" --ids --tokens 7,8 -n 8 --ignore-eos --session keep \
	--cache-dir "$c3" --expert-cache 0 >/dev/null 2>"$tmp/err"; then
	echo "FAIL: a turn whose expert read failed succeeded"; exit 1
fi
grep -q 'Input/output error' "$tmp/err" || { echo "FAIL: the read error was not reported: $(cat "$tmp/err")"; exit 1; }
after=$(tokens)
[ "$after" = "$before" ] || { echo "FAIL: a failed turn left the session at $after tokens, not $before"; exit 1; }
"$COLI" generate "$tmp/m" --ids --tokens 7,8 -n 2 --ignore-eos --session keep --cache-dir "$c3" \
	>/dev/null 2>"$tmp/err" || { echo "FAIL: the turn after the failure: $(cat "$tmp/err")"; exit 1; }
[ "$(tokens)" = 16 ] || { echo "FAIL: the next turn resumed from $(tokens) - 4 tokens, not 12"; exit 1; }
echo "a failed turn leaves the session as the last good turn saved it"
