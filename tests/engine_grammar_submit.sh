#!/bin/sh
# Runs engine_grammar_submit on the default model (its tokenizer gives the
# grammar a real vocabulary): structured output is compiled by the
# submitting thread, never by the engine thread.
. "${top_srcdir:-.}/tests/test_skip.sh"
: "${top_builddir:?}"
M="${top_srcdir:-.}/data/default-model"
[ -f "$M/manifest.json" ] || { echo "FAIL: $M missing"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$top_builddir/tests/engine_grammar_submit" "$M" "$tmp/cache"
