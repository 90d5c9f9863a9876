#!/bin/sh
# Runs core_prefix_adopt on a synthesized tiny model: a prompt prefix
# reused from another saved session, read by the session writer thread
# while another slot decodes, and its fallbacks to prefill.
set -u
: "${COLI:?}" "${top_builddir:?}" "${top_srcdir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/tiny_model.sh"
tiny_model "$tmp"
"$top_builddir/tests/core_prefix_adopt" "$tmp/m" "$tmp"
