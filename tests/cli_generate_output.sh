#!/bin/sh
# coli generate's output and signals (issue 30, defects 3 and 4):
#  1. --ids into a pipe read slowly (the smallest pipe, a pause before the
#     first read): every id arrives, 3,500 of 3,500;
#  2. SIGTERM, SIGHUP and SIGINT mid-turn with --session: exit 128+signal,
#     the turn stops before its end (Ctrl-C used to be seen only after
#     100 ms without a token: never, while tokens flow), and the session
#     holds the prompt and every id printed (no more, no fewer);
#  3. a closed stdout is reported (exit 1, "standard output"), not a
#     silent kill by SIGPIPE, and the turn so far is saved.
# A synthesized tiny model: the default model's context (1024) holds too few
# ids to fill a pipe and the request's event ring.
set -u
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built"; exit 1; }
PY=${PYTHON3:-python3}
T=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
"$COLI" synth "$T/hf" --preset tiny >/dev/null 2>&1 || fail "coli synth"
"$COLI" convert "$T/hf" "$T/m" >/dev/null 2>&1 || fail "coli convert"
N=3500
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && N=1500
GEN="$COLI generate $T/m --ctx 8192 --ignore-eos --tokens 10,11,12"

# 1. a slow reader
cat >"$T/slow.py" <<'EOF'
import fcntl, os, sys, time
fd = sys.stdin.fileno()
fcntl.fcntl(fd, 1031, 4096)   # F_SETPIPE_SZ: the smallest pipe
time.sleep(float(sys.argv[1]))
d = b""
while True:
    b = os.read(fd, 64)
    if not b:
        break
    d += b
    time.sleep(0.001)
print(len(d.split()))
EOF
got=$($GEN -n $N --ids 2>"$T/err1" | "$PY" "$T/slow.py" 2) || fail "slow reader"
[ "$got" = $N ] || { cat "$T/err1"; fail "a slow reader got $got of $N ids"; }
echo "slow reader: $got of $N ids"

# 2. a signal mid-turn: the session holds what was printed
# tokens NAME: the session's token count
tokens() {
	"$COLI" sessions "$T/m" --json show "$1" >"$T/show" 2>&1 || { cat "$T/show"; fail "sessions show $1"; }
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/show"
}
for sig in TERM HUP INT; do
	s=sig-$sig
	rm -f "$T/out"
	$GEN -n $N --ids --session "$s" >"$T/out" 2>"$T/err" &
	PID=$!
	i=0
	# until some ids are out (the turn is under way); never a timed check
	while [ "$(wc -c <"$T/out" 2>/dev/null || echo 0)" -lt 400 ] && [ $i -lt 6000 ]; do
		sleep 0.01
		i=$((i + 1))
	done
	kill -$sig $PID
	wait $PID
	rc=$?
	PID=
	want=$((128 + $(kill -l $sig)))
	[ $rc = $want ] || { cat "$T/err"; fail "SIG$sig: exit $rc, expected $want"; }
	printed=$(wc -w <"$T/out")
	[ "$printed" -lt $N ] || fail "SIG$sig: the turn ran to the end ($printed ids)"
	have=$(tokens "$s")
	[ "$have" = $((printed + 3)) ] ||
		fail "SIG$sig: the session holds $have tokens, printed $printed + 3 of the prompt"
	echo "SIG$sig: $printed ids printed, the session holds 3 + $printed"
done

# 3. stdout closed early: reported, and the turn so far is saved
$GEN -n $N --ids --session closed 2>"$T/err" | head -c 100 >/dev/null
grep -q "standard output: Broken pipe" "$T/err" || fail "closed stdout: $(cat "$T/err")"
have=$(tokens closed)
[ "$have" -gt 3 ] && [ "$have" -lt $((N + 3)) ] || fail "closed stdout: the session holds $have tokens"
echo "closed stdout: reported, the session holds $have tokens"
