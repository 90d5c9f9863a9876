#!/bin/sh
# Runs core_session_bind on a synthesized tiny model: a session resumed
# by the session writer thread while another slot decodes.
set -u
: "${COLI:?}" "${top_builddir:?}" "${top_srcdir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/tiny_model.sh"
tiny_model "$tmp"
"$top_builddir/tests/core_session_bind" "$tmp/m" "$tmp/cache"
