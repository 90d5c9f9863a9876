#!/bin/sh
# server_vocab.sh - `coli serve` bounds prompt token ids by the model's
# vocab_size, not by the tokenizer's size: on a model whose vocab is padded
# (here 600 embedding rows over the 512-id synthetic tokenizer) ids 512..599
# are accepted and 600 is refused with a 400.
. "${top_srcdir:-.}/tests/test_skip.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$COLI" ] && [ -x "$COLI" ] || fail "\$COLI not built"
command -v curl >/dev/null || test_skip "curl missing"
T=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }; rm -rf "$T"' EXIT
"$COLI" synth "$T/hf" --preset tiny --vocab 600 >/dev/null 2>"$T/synth.log" &&
	"$COLI" convert "$T/hf" "$T/model" --quant f32 >/dev/null 2>"$T/convert.log" ||
	{ cat "$T"/*.log; fail "cannot make the padded tiny model"; }
"$COLI" serve "$T/model" --port 0 --threads 1 --ctx 128 --cache-dir "$T/cache" >"$T/url" 2>"$T/log" &
PID=$!
i=0
while [ ! -s "$T/url" ]; do
	kill -0 "$PID" 2>/dev/null || { cat "$T/log"; fail "coli serve exited"; }
	i=$((i + 1))
	[ $i -lt 600 ] || fail "coli serve did not start"
	sleep 0.1
done
URL=$(head -n1 "$T/url")
post() {
	curl -s -o "$T/body" -w '%{http_code}' --max-time 60 -H "Content-Type: application/json" \
		"$URL/completions" -d "$1"
}
code=$(post '{"prompt":[1,2,511,512,599],"max_tokens":2,"temperature":0}')
[ "$code" = 200 ] || fail "ids 512..599 of a 600-row vocab refused: $code $(head -c 300 "$T/body")"
code=$(post '{"prompt":[1,2,600],"max_tokens":2}')
[ "$code" = 400 ] || fail "id 600 of a 600-row vocab: status $code, want 400"
grep -q 'outside the vocabulary (600)' "$T/body" || fail "id 600: unexpected message $(head -c 300 "$T/body")"
echo "ok: ids up to vocab_size-1 accepted on a padded vocab, vocab_size refused"
