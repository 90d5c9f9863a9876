#!/bin/sh
# pull_hub.sh - `coli pull` against a local stand-in of the Hugging Face Hub
# (tests/pull_mockhub.py) serving a synthesized 4-shard FP8 checkpoint:
#  - the pull equals `coli convert` of the same checkpoint byte for byte
#    (manifest.json aside from its provenance field source.name);
#  - the measured peak disk stays within container + largest shard +
#    tensors held across a shard boundary + 5%;
#  - killed (SIGKILL) at random points of its durable-state sequence, then
#    run again: identical result each time;
#  - a connection dropped mid-shard is continued with a Range request;
#  - a corrupted byte (sha256 mismatch) is downloaded again once; a file
#    corrupt twice stops the pull naming it;
#  - 401 without/with a wrong HF_TOKEN, 403, 404 repository and revision,
#    429 then 200, 503 until the retries end;
#    the token is never printed or written;
#  - a branch that moves mid-pull: the pull stays on the commit it started;
#  - a full disk stops with a clear message and the rerun completes;
#  - a progress line on a terminal, plain lines otherwise;
#  - --dry-run writes nothing; a HF checkpoint given as a model says so.
set -u
: "${COLI:?}" "${top_srcdir:?}"
PY=${PYTHON3:-/usr/bin/python3}
MOCK="$top_srcdir/tests/pull_mockhub.py"
# On a memory file system when there is one: the many runs below fsync a lot.
T=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
HUB_PID=
MNT=
cleanup() {
	[ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S1=model-00001-of-00004.safetensors
S2=model-00002-of-00004.safetensors
S3=model-00003-of-00004.safetensors

"$COLI" synth "$T/ck" --preset tiny --dtype fp8 --shards 4 >/dev/null 2>&1 || fail "coli synth"
"$COLI" synth "$T/ck2" --preset tiny --dtype fp8 --shards 4 --seed 7 >/dev/null 2>&1 ||
	fail "coli synth (second commit)"
"$COLI" convert "$T/ck" "$T/ref" >/dev/null 2>&1 || fail "reference conversion"
"$COLI" convert "$T/ck2" "$T/ref2" >/dev/null 2>&1 || fail "reference conversion 2"

# hub [mock options...]: (re)start the mock; sets HF_ENDPOINT.
hub() {
	[ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null && wait "$HUB_PID" 2>/dev/null
	rm -f "$T/port" "$T/log"
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

# same DIR REF: DIR equals REF but for manifest.json's source.name.
same() {
	diff -r -x manifest.json "$2" "$1" >"$T/diff" 2>&1 || { cat "$T/diff" >&2; return 1; }
	"$PY" - "$1/manifest.json" "$2/manifest.json" <<'EOF' || return 1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
a["source"].pop("name"); b["source"].pop("name")
sys.exit(0 if a == b else 1)
EOF
	[ ! -e "$1/.pull" ] || { echo "$1/.pull left after completion" >&2; return 1; }
}

unset HF_TOKEN COLI_PULL_RETRY_DEADLINE
# short waits between tries (the mock's 429/503 say Retry-After: 0 anyway)
export COLI_PULL_BACKOFF=0.05
FI_SKIPPED=

# ---- a plain pull == coli convert; the peak disk measured ----
hub
"$COLI" pull org/tiny --dry-run "$T/dry" >"$T/dry.out" 2>&1 || { cat "$T/dry.out" >&2; fail "dry run"; }
[ -e "$T/dry" ] && fail "--dry-run created OUT"
for k in "peak disk" "container" "dense part" "RAM" "$S1"; do
	grep -q "$k" "$T/dry.out" || fail "dry run lacks '$k': $(cat "$T/dry.out")"
done
"$COLI" pull org/tiny "$T/out" --connections 3 >"$T/out.txt" 2>"$T/err.txt" ||
	{ cat "$T/err.txt" >&2; fail "pull"; }
same "$T/out" "$T/ref" || fail "pull differs from coli convert"
"$PY" - "$T/out/manifest.json" <<'EOF' || fail "manifest source.name is not org/tiny@COMMIT"
import json, re, sys
n = json.load(open(sys.argv[1]))["source"]["name"]
sys.exit(0 if re.fullmatch(r"org/tiny@[0-9a-f]{40}", n) else 1)
EOF
grep -q "sha256 verified" "$T/err.txt" || fail "no verification line"
grep -q "$(printf '\r')" "$T/err.txt" && fail "progress redrawn (\\r) when not on a terminal"
# On a terminal: one progress line redrawn (script(1) gives it a pty).
if command -v script >/dev/null 2>&1; then
	rm -rf "$T/tty"
	script -qc "'$COLI' pull org/tiny '$T/tty'" /dev/null >"$T/tty.out" 2>&1 </dev/null ||
		fail "pull on a terminal"
	tr '\r' '\n' <"$T/tty.out" | grep -q "^.*shard 4/4 .*/s ETA .* files [0-9]*/12" ||
		fail "no progress line on a terminal: $(tr '\r' '\n' <"$T/tty.out" | tail -3)"
	same "$T/tty" "$T/ref" || fail "pull on a terminal differs"
fi
grep -q "range=bytes=" "$T/log" || fail "no Range requests"
# Peak: measured by coli at the highest point of each shard step (after the
# shard arrived and its files were written, before its tensors are freed).
peak=$(sed -n 's/^  peak disk *\([0-9]*\) bytes measured.*held across shards \([0-9]*\)).*/\1 \2/p' "$T/out.txt")
[ -n "$peak" ] || fail "no peak disk line: $(cat "$T/out.txt")"
container=$(find "$T/out" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
largest=$(find "$T/ck" -name '*.safetensors' -printf '%s\n' | sort -n | tail -1)
set -- $peak
"$PY" -c "import sys; m, h, c, l = map(int, sys.argv[1:]); b = (c + l + h) * 1.05;
print('peak %d bytes, bound %d (container %d + shard %d + held %d + 5%%)' % (m, b, c, l, h));
sys.exit(0 if 0 < m <= b else 1)" "$1" "$2" "$container" "$largest" >"$T/peak" ||
	fail "$(cat "$T/peak")"
cat "$T/peak"

# ---- kill -9 at random points, rerun: identical ----
# COLI_PULL_FAIL_AT=N (SIGKILL at the Nth durable point) exists only in
# builds configured with --enable-fault-injection; without it the checks
# that need it are reported at the end (a failure in CI).
N=20
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && N=5
rm -rf "$T/k"
(COLI_PULL_FAIL_AT=1 "$COLI" pull org/tiny "$T/k" --quiet) >/dev/null 2>&1
[ $? = 137 ] && FI=1 || FI=0
[ $FI = 1 ] || N=0
rm -rf "$T/k"
seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
echo "kill points drawn with seed $seed"
pts=$("$PY" -c "import random; random.seed($seed); print(' '.join(str(random.randint(1, 65)) for _ in range($N)))")
for p in $pts; do
	rm -rf "$T/k"
	(COLI_PULL_FAIL_AT=$p "$COLI" pull org/tiny "$T/k" --quiet) >/dev/null 2>&1
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 137 ]; then fail "kill point $p: exit $rc"; fi
	# a second kill a little further, then the finishing run
	[ -f "$T/k/manifest.json" ] ||
		(COLI_PULL_FAIL_AT=$((p / 2 + 3)) "$COLI" pull org/tiny "$T/k" --quiet) >/dev/null 2>&1
	[ -f "$T/k/manifest.json" ] || "$COLI" pull org/tiny "$T/k" --quiet >/dev/null 2>"$T/kerr" ||
		{ cat "$T/kerr" >&2; fail "rerun after kill at point $p"; }
	same "$T/k" "$T/ref" || fail "result after kill at point $p differs"
done
[ $N -gt 0 ] && [ -z "$pts" ] && fail "no kill points"
[ $FI = 1 ] || pts=
# An external kill -9 while a shard downloads (drops slow it down), then resume.
hub --fault "drop:$S2:30"
rm -rf "$T/k"
"$COLI" pull org/tiny "$T/k" --quiet >/dev/null 2>&1 &
pid=$!
i=0
while ! grep -q "$S2.*range" "$T/log" 2>/dev/null && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.02; done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
"$COLI" pull org/tiny "$T/k" --quiet >/dev/null 2>"$T/kerr" || { cat "$T/kerr" >&2; fail "rerun after kill -9"; }
same "$T/k" "$T/ref" || fail "result after an external kill -9 differs"

# ---- a connection dropped mid-shard: continued with a Range request ----
hub --fault "drop:$S2:2"
rm -rf "$T/d"
"$COLI" pull org/tiny "$T/d" >/dev/null 2>"$T/derr" || { cat "$T/derr" >&2; fail "pull with drops"; }
grep -q "transfer cut short" "$T/derr" || fail "drop not reported: $(cat "$T/derr")"
same "$T/d" "$T/ref" || fail "result after dropped connections differs"
grep -q '^drop ' "$T/log" || fail "the mock did not drop"

# ---- a corrupted byte: downloaded again once; twice: stop naming the file ----
hub --fault "corrupt:$S3:1"
rm -rf "$T/c"
"$COLI" pull org/tiny "$T/c" >/dev/null 2>"$T/cerr" || { cat "$T/cerr" >&2; fail "pull with one corruption"; }
grep -q "$S3: sha256 mismatch, downloading it again" "$T/cerr" || fail "no re-download: $(cat "$T/cerr")"
same "$T/c" "$T/ref" || fail "result after a corrupted byte differs"
hub --fault "corrupt:$S3:2"
rm -rf "$T/c"
"$COLI" pull org/tiny "$T/c" >/dev/null 2>"$T/cerr"
[ $? = 1 ] || fail "a shard corrupt twice: exit not 1"
tail -1 "$T/cerr" | grep -q "^coli pull: $S3: corrupt after downloading it twice" ||
	fail "corrupt twice: $(tail -1 "$T/cerr")"
[ -f "$T/c/manifest.json" ] && fail "manifest written with a corrupt shard"
hub
"$COLI" pull org/tiny "$T/c" --quiet 2>"$T/cerr" || { cat "$T/cerr" >&2; fail "rerun after corruption"; }
same "$T/c" "$T/ref" || fail "result after rerun of a corrupt pull differs"

# ---- 401, 404, 429 then 200; the token never printed or written ----
hub --token sEcReT-tok3n
rm -rf "$T/a"
"$COLI" pull org/tiny "$T/a" >/dev/null 2>"$T/aerr"
[ $? = 1 ] || fail "401: exit not 1"
[ "$(wc -l <"$T/aerr")" = 1 ] || fail "401: not one line: $(cat "$T/aerr")"
grep -q "401 unauthorized.*set HF_TOKEN" "$T/aerr" || fail "401 line: $(cat "$T/aerr")"
HF_TOKEN=wrong "$COLI" pull org/tiny "$T/a" >/dev/null 2>"$T/aerr"
grep -q "401 unauthorized.*HF_TOKEN is not valid" "$T/aerr" || fail "401 (bad token): $(cat "$T/aerr")"
rm -rf "$T/a"
HF_TOKEN=sEcReT-tok3n "$COLI" pull org/tiny "$T/a" >"$T/aout" 2>"$T/aerr" ||
	{ cat "$T/aerr" >&2; fail "pull with a token"; }
same "$T/a" "$T/ref" || fail "authenticated pull differs"
grep -q "auth=yes" "$T/log" || fail "the token was not sent"
grep -rq "sEcReT-tok3n" "$T/a" "$T/aout" "$T/aerr" && fail "the token was printed or written"
hub --fault status:403:1
"$COLI" pull org/tiny "$T/n" >/dev/null 2>"$T/nerr"
[ $? = 1 ] && [ "$(wc -l <"$T/nerr")" = 1 ] && grep -q "^coli pull: org/tiny: 403 forbidden" "$T/nerr" ||
	fail "403: $(cat "$T/nerr")"
hub
"$COLI" pull org/nope "$T/n" >/dev/null 2>"$T/nerr"
[ $? = 1 ] && grep -q "^coli pull: org/nope: 404 not found" "$T/nerr" ||
	fail "404: $(cat "$T/nerr")"
"$COLI" pull org/tiny@no-such-branch "$T/n" >/dev/null 2>"$T/nerr"
grep -q "404 not found: revision 'no-such-branch'" "$T/nerr" || fail "404 revision: $(cat "$T/nerr")"
hub --fault status:429:2
rm -rf "$T/r"
"$COLI" pull org/tiny "$T/r" >/dev/null 2>"$T/rerr" || { cat "$T/rerr" >&2; fail "429 then 200"; }
grep -q "server busy or failing; retrying" "$T/rerr" || fail "429 not retried: $(cat "$T/rerr")"
same "$T/r" "$T/ref" || fail "result after 429 differs"
hub --fault status:503:1000
"$COLI" pull org/tiny "$T/r5" >/dev/null 2>"$T/rerr" && fail "503 forever: exit 0"
tail -1 "$T/rerr" | grep -q "server error 503.*after 6 tries" || fail "503: $(tail -1 "$T/rerr")"

# ---- a branch that moves mid-pull: the commit it started on is kept ----
hub --fault move:3
rm -rf "$T/m"
"$COLI" pull org/tiny "$T/m" --quiet 2>"$T/merr" || { cat "$T/merr" >&2; fail "moved branch"; }
same "$T/m" "$T/ref" || fail "a branch moved mid-pull mixed revisions"
if [ $FI = 1 ]; then
	# interrupted after the move, resumed: still the commit it started on
	hub --fault move:3
	rm -rf "$T/m"
	(COLI_PULL_FAIL_AT=6 "$COLI" pull org/tiny "$T/m" --quiet) >/dev/null 2>&1
	"$COLI" pull org/tiny "$T/m" >/dev/null 2>"$T/merr" || { cat "$T/merr" >&2; fail "moved branch, resumed"; }
	grep -q "resuming org/tiny@main at commit" "$T/merr" || fail "not resumed on the pinned commit"
	same "$T/m" "$T/ref" || fail "a moved branch mixed revisions after a resume"
fi
rm -rf "$T/m2"
"$COLI" pull org/tiny "$T/m2" --quiet 2>/dev/null || fail "pull of the moved branch"
same "$T/m2" "$T/ref2" || fail "a new pull does not follow the moved branch"

# ---- a full disk stops clearly; the rerun after freeing space completes ----
hub
if [ "$(id -u)" = 0 ] && mkdir -p "$T/fs" && mount -t tmpfs -o size=6m tmpfs "$T/fs" 2>/dev/null; then
	MNT="$T/fs"
	# The plan fits (~3.2 MB), then a filler arrives with shard 2.
	hub --fault "fill:$S2:$T/fs/filler:4500000"
	"$COLI" pull org/tiny "$T/fs/out" >/dev/null 2>"$T/ferr"
	[ $? = 1 ] || fail "disk full: exit not 1: $(cat "$T/ferr")"
	tail -1 "$T/ferr" | grep -q "No space left on device" || fail "disk full: $(tail -1 "$T/ferr")"
	rm -f "$T/fs/filler"
	"$COLI" pull org/tiny "$T/fs/out" --quiet 2>"$T/ferr" || { cat "$T/ferr" >&2; fail "rerun after freeing space"; }
	same "$T/fs/out" "$T/ref" || fail "result after a full disk differs"
	# Too little space from the start: refused with the numbers.
	rm -rf "$T/fs/out"
	head -c 4000000 /dev/zero >"$T/fs/filler"
	"$COLI" pull org/tiny "$T/fs/out" >/dev/null 2>"$T/ferr"
	tail -1 "$T/ferr" | grep -q "needs .* at peak (container .* + largest shard .*only .* free" ||
		fail "precheck: $(tail -1 "$T/ferr")"
	umount "$T/fs" && MNT=
else
	# No tmpfs to fill (not root, or no mount permission here): the
	# converter's injected ENOSPC (COLI_CONVERT_ENOSPC_AFTER_BYTES, test
	# builds) stands in for the full disk in the middle of the pull.
	echo "no tmpfs could be mounted: the full disk is injected"
	rm -rf "$T/e"
	COLI_CONVERT_ENOSPC_AFTER_BYTES=600000 "$COLI" pull org/tiny "$T/e" >/dev/null 2>"$T/ferr"
	rc=$?
	if [ -f "$T/e/manifest.json" ]; then
		FI_SKIPPED="$FI_SKIPPED, the disk-full test (no tmpfs either)"
	else
		[ $rc = 1 ] || fail "disk full: exit $rc"
		tail -1 "$T/ferr" | grep -q "No space left on device" || fail "disk full: $(tail -1 "$T/ferr")"
		"$COLI" pull org/tiny "$T/e" --quiet 2>"$T/ferr" || { cat "$T/ferr" >&2; fail "rerun after disk full"; }
		same "$T/e" "$T/ref" || fail "result after a full disk differs"
	fi
fi

# ---- a Hugging Face checkpoint given as a model: said so, with the command ----
"$COLI" info "$T/ck" >/dev/null 2>"$T/ierr"
grep -q "Hugging Face checkpoint.*coli convert $T/ck" "$T/ierr" || fail "HF dir hint: $(cat "$T/ierr")"
mkdir "$T/empty"
"$COLI" info "$T/empty" >/dev/null 2>"$T/ierr"
grep -q "neither a colitop model container.*nor a Hugging Face checkpoint" "$T/ierr" ||
	fail "neither hint: $(cat "$T/ierr")"
if [ $FI = 0 ]; then
	. "$top_srcdir/tests/test_skip.sh"
	test_skip "built without --enable-fault-injection: the kill -9 points$FI_SKIPPED not tested"
fi
echo "ok"
