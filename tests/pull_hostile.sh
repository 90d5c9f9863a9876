#!/bin/sh
# pull_hostile.sh - `coli pull` against a hostile stand-in of the Hugging
# Face Hub (tests/pull_mockhub.py's hostile modes; issue 30, defect 2): the
# number of requests each failure costs is bounded and counted in the
# hub's log, and the waits between them double from COLI_PULL_BACKOFF:
#  - a redirect loop: one request and curl's 10 redirects, then one line;
#  - config.json shorter than its Content-Length, forever: 6 tries;
#  - 503 forever without Retry-After: 6 tries, waits w, 2w, 4w, 8w, 16w
#    (each drawn from its upper half); with Retry-After: 1 and a retry
#    deadline of 2.5 s: given up after at most 3 tries, naming the deadline;
#  - a Content-Length of 10 GiB for config.json or a shard range: refused
#    on its first answer;
#  - a shard listed as 1 PiB: refused before any byte of it is asked for;
#    one listed 1 MiB larger than it is: refused on its first range;
#  - repository ids and revisions outside what the hub allows (org/..,
#    ../x, a newline, org/x@../../y) refused with exit 2 before any request
#    or directory; refs/pr/1 passes the check;
#  - the same pull again after it finished: "up to date", exit 0; after
#    the branch moved: an error naming both commits.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
MOCK="$top_srcdir/tests/pull_mockhub.py"
T=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
HUB_PID=
trap '[ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S1=model-00001-of-00004.safetensors
S2=model-00002-of-00004.safetensors
BASE=0.05
export COLI_PULL_BACKOFF=$BASE
unset HF_TOKEN COLI_PULL_RETRY_DEADLINE

"$COLI" synth "$T/ck" --preset tiny --dtype fp8 --shards 4 >/dev/null 2>&1 || fail "coli synth"
"$COLI" synth "$T/ck2" --preset tiny --dtype fp8 --shards 4 --seed 7 >/dev/null 2>&1 || fail "coli synth 2"

hub() {
	[ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null && wait "$HUB_PID" 2>/dev/null
	rm -f "$T/port" "$T/log"
	: >"$T/log"
	"$PY" "$MOCK" --repo org/tiny --dir "$T/ck" --dir2 "$T/ck2" --port-file "$T/port" \
		--log "$T/log" "$@" &
	HUB_PID=$!
	i=0
	while [ ! -s "$T/port" ]; do
		i=$((i + 1))
		[ $i -gt 200 ] && fail "mock hub did not start"
		sleep 0.05
	done
	HF_ENDPOINT="http://127.0.0.1:$(cat "$T/port")"
	export HF_ENDPOINT
}
# count PATTERN: requests in the hub's log matching PATTERN
count() { grep -c -- "$1" "$T/log"; }
# pull NAME...: exit status in $rc, stderr in $T/err. The timeout only
# keeps a client that retries forever (as before issue 30) from hanging
# the suite: it fails the test, it does not measure speed.
pull() { rm -rf "$T/o"; timeout 300 "$COLI" pull "$@" "$T/o" >"$T/out" 2>"$T/err"; rc=$?; }
# waits N: the N waits logged double from BASE, each within [w/2, w]
waits() {
	sed -n 's/.*retrying in \([0-9.]*\) s (try.*/\1/p' "$T/err" >"$T/waits"
	"$PY" - "$T/waits" "$1" "$BASE" <<'EOF' || fail "waits: $(tr '\n' ' ' <"$T/waits")"
import sys
w = [float(x) for x in open(sys.argv[1])]
n, base = int(sys.argv[2]), float(sys.argv[3])
assert len(w) == n, "%d waits, expected %d" % (len(w), n)
for k, x in enumerate(w):
    hi = base * 2 ** k
    assert hi / 2 - 0.006 <= x <= hi + 0.006, "wait %d: %.3f not in [%.3f, %.3f]" % (k + 1, x, hi / 2, hi)
EOF
}

# ---- a redirect loop ----
hub --fault redirect:100000
pull org/tiny
[ $rc = 1 ] || fail "redirect loop: exit $rc"
n=$(count "^302 ")
[ "$n" -le 11 ] && [ "$n" -ge 2 ] || fail "redirect loop: $n requests (at most 11)"
grep -qi "redirect" "$T/err" || fail "redirect loop: $(cat "$T/err")"
echo "redirect loop: $n requests, then: $(tail -1 "$T/err")"

# ---- a short body, forever ----
hub --fault short:config.json:100000
pull org/tiny
[ $rc = 1 ] || fail "short body: exit $rc"
n=$(count "^cut GET /org/tiny/resolve/.*/config.json")
[ "$n" = 6 ] || fail "short body: $n requests, expected 6"
tail -1 "$T/err" | grep -q "config.json.*after 6 tries" || fail "short body: $(tail -1 "$T/err")"
waits 5
echo "short body: 6 tries, waits $(tr '\n' ' ' <"$T/waits")"

# ---- 503 forever, no Retry-After: backoff; with Retry-After and a deadline ----
hub --fault status:503:100000:none
pull org/tiny
[ $rc = 1 ] || fail "503 forever: exit $rc"
n=$(count "^503 ")
[ "$n" = 6 ] || fail "503 forever: $n requests, expected 6"
tail -1 "$T/err" | grep -q "server error 503.*still after 6 tries" || fail "503: $(tail -1 "$T/err")"
waits 5
echo "503 forever: 6 tries, waits $(tr '\n' ' ' <"$T/waits")"
hub --fault status:503:100000:1
COLI_PULL_RETRY_DEADLINE=2.5 pull org/tiny
[ $rc = 1 ] || fail "503 with a deadline: exit $rc"
n=$(count "^503 ")
[ "$n" -ge 2 ] && [ "$n" -le 3 ] || fail "503 with a deadline of 2.5 s and Retry-After 1: $n requests"
tail -1 "$T/err" | grep -q "server error 503.*tries in .* s (retry deadline 2.5 s)" ||
	fail "deadline: $(tail -1 "$T/err")"
grep -q "retrying in 1.00 s" "$T/err" || fail "Retry-After not honoured: $(cat "$T/err")"
echo "503 with Retry-After 1, deadline 2.5 s: $n tries"

# ---- huge Content-Length ----
hub --fault biglen:config.json:100000
pull org/tiny
[ $rc = 1 ] || fail "10 GiB config.json: exit $rc"
[ "$(count "config.json")" = 1 ] || fail "10 GiB config.json: $(count config.json) requests"
tail -1 "$T/err" | grep -q "config.json.*larger than 64 MiB" || fail "biglen: $(tail -1 "$T/err")"
hub --fault "biglen:$S1:100000"
pull org/tiny
[ $rc = 1 ] || fail "10 GiB range: exit $rc"
[ "$(count "GET /lfs/.*$S1")" = 1 ] || fail "10 GiB range: $(count "GET /lfs/.*$S1") requests"
tail -1 "$T/err" | grep -q "$S1: the answer announces more bytes than the range" ||
	fail "biglen range: $(tail -1 "$T/err")"
echo "10 GiB Content-Length: refused on the first answer"

# ---- a shard listed larger than it is ----
hub --fault "bigsize:$S2:1125899906842624"
pull org/tiny
[ $rc = 1 ] || fail "1 PiB shard: exit $rc"
[ "$(count "GET /lfs/")" = 0 ] || fail "1 PiB shard: shard bytes were asked for"
tail -1 "$T/err" | grep -q "the hub lists $S2 as 1048576.00 GiB, more than the .* free" ||
	fail "1 PiB: $(tail -1 "$T/err")"
real=$(stat -c %s "$T/ck/$S2")
hub --fault "bigsize:$S2:$((real + 1048576))"
pull org/tiny
[ $rc = 1 ] || fail "a shard listed 1 MiB larger: exit $rc"
[ "$(count "GET /lfs/.*$S2")" = 1 ] || fail "listed larger: $(count "GET /lfs/.*$S2") requests"
tail -1 "$T/err" | grep -q "$S2: the hub listed $((real + 1048576)) bytes but serves a file of $real" ||
	fail "listed larger: $(tail -1 "$T/err")"
echo "a shard listed as 1 PiB: refused before downloading; 1 MiB larger: on its first range"

# ---- names ----
hub
for name in 'org/..' '../x' 'org/x
y' 'org/x@../../y' 'org/x@a b' 'org/x@-x' 'org/-x' 'org//x' 'org/x@main/' 'org/x@.git'; do
	pull "$name"
	[ $rc = 2 ] || fail "'$name': exit $rc, expected 2"
	[ -e "$T/o" ] && fail "'$name': OUT created"
	grep -q "not a" "$T/err" || fail "'$name': $(cat "$T/err")"
done
[ -s "$T/log" ] && fail "a refused name reached the hub: $(cat "$T/log")"
pull 'org/tiny@refs/pr/1'
grep -q "404 not found: revision 'refs/pr/1'" "$T/err" || fail "refs/pr/1: $(cat "$T/err")"
grep -q "/revision/refs%2Fpr%2F1" "$T/log" || fail "refs/pr/1 not percent-encoded: $(cat "$T/log")"
echo "names: 10 refused with exit 2 before any request; refs/pr/1 encoded"

# ---- the same pull again ----
hub
rm -rf "$T/u"
"$COLI" pull org/tiny "$T/u" --quiet 2>"$T/err" || { cat "$T/err"; fail "pull"; }
"$COLI" pull org/tiny "$T/u" >"$T/out" 2>"$T/err" || { cat "$T/out" "$T/err"; fail "the same pull again: exit $?"; }
grep -q "^org/tiny@main (commit [0-9a-f]*) is already in $T/u: up to date" "$T/out" ||
	fail "up to date: $(cat "$T/out" "$T/err")"
hub --fault move:0
"$COLI" pull org/tiny "$T/u" >"$T/out" 2>"$T/err" && fail "a moved branch: exit 0"
grep -q "already holds a complete container of org/tiny@[0-9a-f]*, not org/tiny@main (commit" "$T/err" ||
	fail "moved branch: $(cat "$T/err")"
echo "the same pull again: up to date; after the branch moved: refused naming both"
echo ok
