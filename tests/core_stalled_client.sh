#!/bin/sh
# Runs core_stalled_client on a synthesized tiny model (random weights:
# every token has text, so an unread stream fills its buffer quickly).
set -u
: "${COLI:?}" "${top_builddir:?}" "${top_srcdir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/tiny_model.sh"
tiny_model "$tmp"
"$top_builddir/tests/core_stalled_client" "$tmp/m" "$tmp/cache"
