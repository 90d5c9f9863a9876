#!/bin/sh
# chat_template_conformance.sh - coli's Jinja interpreter against
# python3-jinja2 in Hugging Face's environment (tests/chat_template_ref.py),
# byte for byte, on the model makers' templates in tests/templates/ over
# the conversations of tests/templates/conversations.json, each rendered
# with no kwargs, enable_thinking on and off, clear_thinking off, and with
# and without the generation prompt. A case the reference refuses (the
# template raises) must be refused by coli too. Then generated templates
# (tests/chat_jinja_diff.py: typical expressions, random whitespace
# control). Skips (77) without python3-jinja2; fails in CI.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=.}"
PYTHON3=${PYTHON3:-/usr/bin/python3}
. "$top_srcdir/tests/test_skip.sh"
"$PYTHON3" -c 'import jinja2' 2>/dev/null || test_skip "python3-jinja2 not installed (tools/install-deps.sh)"
render="$top_builddir/tests/chat_jinja_render"
[ -x "$render" ] || { echo "FAIL: $render not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
tdir="$top_srcdir/tests/templates"
fail=0
for t in "$tdir"/*.jinja; do
	name=$(basename "$t" .jinja)
	case "$name" in
	*DeepSeek*) bos='<｜begin▁of▁sentence｜>' eos='<｜end▁of▁sentence｜>' ;;
	*Kimi*) bos='[BOS]' eos='[EOS]' ;;
	*) bos='' eos='<|endoftext|>' ;;
	esac
	"$PYTHON3" - "$tdir/conversations.json" "$tmp/$name.cases.json" "$bos" "$eos" <<'PY' || exit 1
import json, sys
convs = json.load(open(sys.argv[1], encoding="utf-8"))
kwargs = [None, {"enable_thinking": True}, {"enable_thinking": False},
          {"enable_thinking": True, "clear_thinking": False}]
cases = []
for c in convs:
    for kw in kwargs:
        for agp in (True, False):
            d = dict(c, add_generation_prompt=agp, bos_token=sys.argv[3], eos_token=sys.argv[4])
            if kw is not None:
                d["chat_template_kwargs"] = kw
            cases.append(d)
json.dump(cases, open(sys.argv[2], "w", encoding="utf-8"))
PY
	"$PYTHON3" "$top_srcdir/tests/chat_template_ref.py" "$t" "$tmp/$name.cases.json" >"$tmp/$name.ref" || {
		echo "FAIL: $name: reference render failed"; fail=1; continue; }
	"$render" "$t" "$tmp/$name.cases.json" >"$tmp/$name.out" || { echo "FAIL: $name: coli render failed"; fail=1; continue; }
	"$PYTHON3" - "$tmp/$name.cases.json" "$tmp/$name.ref" "$tmp/$name.out" "$name" <<'PY' || fail=1
import json, sys
cases = json.load(open(sys.argv[1], encoding="utf-8"))
ref = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
got = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8")]
name, bad, texts, errors = sys.argv[4], 0, 0, 0
if len(ref) != len(cases) or len(got) != len(cases):
    print("FAIL: %s: %d cases, %d reference lines, %d coli lines" % (name, len(cases), len(ref), len(got)))
    sys.exit(1)
for c, r, g in zip(cases, ref, got):
    label = "%s %s kwargs=%s agp=%s" % (name, c["name"], c.get("chat_template_kwargs"), c["add_generation_prompt"])
    if "error" in r:
        errors += 1
        if "error" not in g:
            bad += 1
            print("FAIL: %s: reference refuses (%s), coli renders" % (label, r["error"]))
        continue
    texts += 1
    if g.get("text") != r["text"]:
        bad += 1
        print("FAIL: %s: %s" % (label, g.get("error", "text differs")))
        if "text" in g:
            a, b = r["text"], g["text"]
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            print("  at %d: reference %r" % (i, a[max(0, i - 40):i + 40]))
            print("  at %d: coli      %r" % (i, b[max(0, i - 40):i + 40]))
print("%s: %d renders equal, %d refusals shared, %d differ" % (name, texts - bad if bad <= texts else 0, errors, bad))
sys.exit(1 if bad or texts == 0 else 0)
PY
done
"$PYTHON3" "$top_srcdir/tests/chat_jinja_diff.py" "$render" "$tdir/expressions.txt" "$tmp" || fail=1
exit $fail
