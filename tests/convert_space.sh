#!/bin/sh
# coli convert's disk check on a small model (issue 30, defect 11: it said
# "needs 0.00 GiB more, 0.00 GiB free"): the figures come in units that
# show them (KiB, MiB). On a 1 MiB tmpfs (root); elsewhere with the free
# space faked (COLI_CONVERT_FREE_BYTES, builds with fault injection).
set -u
: "${COLI:?}" "${top_srcdir:?}"
. "$top_srcdir/tests/test_skip.sh"
T=$(mktemp -d)
MNT=
trap '[ -n "$MNT" ] && umount "$MNT" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$COLI" synth "$T/ck" --preset tiny >/dev/null 2>&1 || fail "coli synth"
# check: the refusal names MiB/KiB figures
check() {
	[ "$1" = 1 ] || fail "convert onto too little space: exit $1: $(cat "$T/err")"
	tail -1 "$T/err" | grep -Eq "the container needs [0-9.]+ MiB more, [0-9.]+ (KiB|MiB) free$" ||
		fail "disk check: $(tail -1 "$T/err")"
	echo "disk check: $(tail -1 "$T/err")"
}
mkdir "$T/fs"
ran=0
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs "$T/fs" 2>/dev/null; then
	MNT="$T/fs"
	"$COLI" convert "$T/ck" "$T/fs/out" >/dev/null 2>"$T/err"
	check $?
	umount "$MNT" && MNT=
	ran=1
fi
COLI_CONVERT_FREE_BYTES=300000 "$COLI" convert "$T/ck" "$T/out" >/dev/null 2>"$T/err"
rc=$?
if [ -f "$T/out/manifest.json" ]; then
	[ $ran = 1 ] || test_skip "no tmpfs could be mounted and no fault injection (COLI_CONVERT_FREE_BYTES)"
else
	check $rc
fi
