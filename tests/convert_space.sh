#!/bin/sh
# coli convert's disk check on a small model (issue 30, defect 11: it said
# "needs 0.00 GiB more, 0.00 GiB free"): the figures come in units that
# show them (KiB, MiB). Needs a small file system: a 1 MiB tmpfs (root).
set -u
: "${COLI:?}" "${top_srcdir:?}"
. "$top_srcdir/tests/test_skip.sh"
T=$(mktemp -d)
MNT=
trap '[ -n "$MNT" ] && umount "$MNT" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$COLI" synth "$T/ck" --preset tiny >/dev/null 2>&1 || fail "coli synth"
mkdir "$T/fs"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=1m tmpfs "$T/fs" 2>/dev/null; then
	test_skip "no 1 MiB tmpfs could be mounted (not root, or no permission)"
fi
MNT="$T/fs"
"$COLI" convert "$T/ck" "$T/fs/out" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "convert onto 1 MiB: exit not 1: $(cat "$T/err")"
tail -1 "$T/err" | grep -Eq "the container needs [0-9.]+ MiB more, [0-9.]+ (KiB|MiB) free$" ||
	fail "disk check: $(tail -1 "$T/err")"
echo "disk check: $(tail -1 "$T/err")"
