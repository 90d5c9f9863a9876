#!/bin/sh
# tokenizer_chat_cli.sh - `coli chat` end to end on a tiny synthesized
# model: turns read from stdin, /reset, /quit, a persisted --session that a
# second process continues; and the refusal of an unknown chat template.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${COLI:=$top_srcdir/coli}"
[ -x "$COLI" ] || { echo "FAIL: $COLI not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
COLI_CACHE_DIR="$tmp/cache"; export COLI_CACHE_DIR
"$COLI" synth "$tmp/hf" >/dev/null 2>&1 && "$COLI" convert "$tmp/hf" "$tmp/m" >/dev/null 2>&1 ||
	{ echo "FAIL: coli synth/convert failed"; exit 1; }
fail=0

printf 'Hello\n\nSecond turn\n/reset\nThird\n/quit\nnot read\n' |
	"$COLI" chat "$tmp/m" -n 4 --system "Be brief" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: chat exit $?"; cat "$tmp/err"; fail=1; }
[ "$(wc -l <"$tmp/out")" = 3 ] || { echo "FAIL: expected 3 replies, got:"; cat "$tmp/out"; fail=1; }

printf 'one\ntwo\n' | "$COLI" chat "$tmp/m" -n 4 --session s >/dev/null 2>"$tmp/err" || { echo "FAIL: session chat"; cat "$tmp/err"; fail=1; }
printf 'three\n' | "$COLI" chat "$tmp/m" -n 4 --session s >/dev/null 2>"$tmp/err" || { echo "FAIL: session continued"; cat "$tmp/err"; fail=1; }
"$COLI" sessions "$tmp/m" list 2>/dev/null | grep -q '^s ' || { echo "FAIL: session s not persisted"; fail=1; }
# the visible transcript beside the session holds all three turns in order,
# and the continued turn did not start a second conversation (one BOS)
"${PYTHON3:-python3}" - "$COLI_CACHE_DIR" <<'PYEOF' || { echo "FAIL: session transcript"; fail=1; }
import glob, json, sys
paths = glob.glob(sys.argv[1] + "/kv/s.chat.json")
assert paths, "no s.chat.json"
t = json.load(open(paths[0]))
assert t["format"] == "colitop-chat" and t["version"] == 1, t
roles = [m["role"] for m in t["messages"]]
users = [m["content"] for m in t["messages"] if m["role"] == "user"]
assert roles == ["user", "assistant"] * 3, roles
assert users == ["one", "two", "three"], users
assert t["last_finish"] in ("stop", "length"), t
PYEOF

# a template of no known family is rendered by the interpreter; one that
# does not parse is refused in one line naming its line; chat_template.jinja
# beside tokenizer_config.json wins over the config's template (checked on
# a copy of the tokenizer: the model container's files are size-checked)
mkdir "$tmp/tk" && cp "$tmp/hf/tokenizer.json" "$tmp/tk/" || exit 1
printf '{"chat_template": "{%% for m in messages %%}[{{ m.role }}] {{ m.content }}{%% endfor %%}"}\n' >"$tmp/tk/tokenizer_config.json"
echo '{"messages":[{"role":"user","content":"hi"}]}' >"$tmp/conv.json"
"$COLI" tokenize "$tmp/tk" --chat "$tmp/conv.json" >"$tmp/out" 2>"$tmp/err"
grep -q '"text":"\[user\] hi"' "$tmp/out" || { echo "FAIL: own template not rendered"; cat "$tmp/out" "$tmp/err"; fail=1; }
printf '{%%- for m in messages %%}<{{ m.role | upper }}>{{ m.content }}{%% endfor %%}\n' >"$tmp/tk/chat_template.jinja"
"$COLI" tokenize "$tmp/tk" --chat "$tmp/conv.json" >"$tmp/out" 2>"$tmp/err"
grep -q '"text":"<USER>hi"' "$tmp/out" || { echo "FAIL: chat_template.jinja not preferred"; cat "$tmp/out" "$tmp/err"; fail=1; }
printf '{%% for m in messages %%}{{ m.content }}\n' >"$tmp/tk/chat_template.jinja"
"$COLI" tokenize "$tmp/tk" --chat "$tmp/conv.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "chat template: template line 1: missing end of block" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: broken template (exit $rc)"; cat "$tmp/err"; fail=1; }
printf '{{ raise_exception("only user turns, please") }}' >"$tmp/tk/chat_template.jinja"
"$COLI" tokenize "$tmp/tk" --chat "$tmp/conv.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q ": only user turns, please$" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: raise_exception (exit $rc)"; cat "$tmp/err"; fail=1; }
"$COLI" chat --bogus 2>/dev/null; [ $? = 2 ] || { echo "FAIL: bad option not usage"; fail=1; }
[ $fail = 0 ] && echo "coli chat: ok"
exit $fail
