#!/bin/sh
# tui_atlas.sh - colitop's views of the recorded routing profiles, in tmux
# on a tiny model (issue 29):
#   - two labelled workloads go through `coli batch` into the cache
#     directory first, so the baseline (_all) holds more than the chat;
#   - the Expert map's conversation view (key c) says there is no profile
#     before the first turn, then, after a chat turn and without another
#     key, names per layer the experts this conversation uses more than
#     every recorded request, with z;
#   - what it names agrees with `coli atlas compare session:conv _all` for
#     the same files: per layer the same experts in the same order with the
#     same z (to one decimal), the same token counts, and the CSV's z
#     recomputed here from its counts (an independent check of the score);
#   - key a: the history order clusters the recorded profiles as
#     `coli atlas cluster` does (same number of profiles and clusters),
#     then the live co-activation order, then the id order;
#   - the help screen and the key bar list both keys; frames stay intact.
. "$top_srcdir/tests/tui_common.sh"
tui_setup
PY=${PYTHON3:-/usr/bin/python3}

"$PY" - >"$TUI_TMP/in.jsonl" <<'EOF' || tui_fail "cannot write the batch input"
import json
for i in range(12):
    lab = "code" if i % 2 else "prose"
    txt = ("def f(x): return x * %d  # loop {}[]" % i) if i % 2 else \
        ("the quick brown fox number %d jumps over the lazy dog" % i)
    print(json.dumps({"custom_id": "r%d" % i, "method": "POST", "url": "/v1/completions", "lab": lab,
                      "body": {"prompt": txt * 3, "max_tokens": 4}}))
EOF
"$COLI" batch "$TUI_MODEL" "$TUI_TMP/in.jsonl" "$TUI_TMP/out.jsonl" --label-field lab --threads 1 -q \
	2>"$TUI_TMP/batch.log" || { cat "$TUI_TMP/batch.log"; tui_fail "coli batch"; }
[ -s "$COLI_CACHE_DIR/profiles/code.prof" ] && [ -s "$COLI_CACHE_DIR/profiles/prose.prof" ] ||
	tui_fail "coli batch recorded no labelled profiles"
A() { "$COLI" atlas --cache-dir "$COLI_CACHE_DIR" "$@"; }

tui_start 120 40 --no-server --session conv --max-tokens 24 --ignore-eos
tui_wait 'Routing' 60
# Tab twice: the Expert map; c: the conversation view, empty so far
tui_keys Tab Tab c
tui_wait 'Expert map .*conversation vs all recorded'
tui_wait 'no profile session:conv yet'
tui_wait 'a order  c conversation  q quit'
tui_check_frames 120 40
# back to the chat (S-Tab twice), one turn; the view follows by itself
tui_keys BTab BTab
tui_keys -l 'hello world, this is a chat about zebras and their stripes'
tui_keys Enter
tui_wait 'tok/s +TTFT [0-9]+ ms +24 tok' 60
tui_wait 'conv [0-9]+ tok vs _all [0-9]+ tok: z' 30
tui_check_frames 120 40

# the screen against coli atlas compare on the same files: retried while
# the profile writer may still be replacing them (bounded)
i=0
while :; do
	tui_screen >"$TUI_TMP/screen"
	A compare session:conv _all --csv >"$TUI_TMP/cmp.csv" 2>"$TUI_TMP/cmp.err" &&
		A compare session:conv _all --json >"$TUI_TMP/cmp.json" 2>>"$TUI_TMP/cmp.err" ||
		{ cat "$TUI_TMP/cmp.err"; tui_fail "coli atlas compare session:conv _all"; }
	"$PY" - "$TUI_TMP/screen" "$TUI_TMP/cmp.csv" "$TUI_TMP/cmp.json" >"$TUI_TMP/check.out" 2>&1 <<'EOF' && break
import csv, json, math, re, sys
screen = open(sys.argv[1], encoding="utf-8").read()
rows = list(csv.DictReader(open(sys.argv[2])))
js = json.load(open(sys.argv[3]))
m = re.search(r"conv (\d+) tok vs _all (\d+) tok", screen)
assert m, "no header"
assert (float(m.group(1)), float(m.group(2))) == (js["a_tokens"], js["b_tokens"]), \
    "tokens on screen %s, compare says %s/%s" % (m.groups(), js["a_tokens"], js["b_tokens"])
# the score, recomputed from the counts (Haldane-Anscombe log odds / Woolf se)
for r in rows:
    a, na, b, nb = (float(r[k]) for k in ("a_count", "a_rows", "b_count", "b_rows"))
    a0, b0 = max(na - a, 0), max(nb - b, 0)
    d = math.log((a + .5) * (b0 + .5) / ((a0 + .5) * (b + .5)))
    z = d / math.sqrt(1 / (a + .5) + 1 / (a0 + .5) + 1 / (b + .5) + 1 / (b0 + .5))
    assert abs(z - float(r["z"])) < 1e-6, (r, z)
named = 0
for line in screen.split("\n"):
    for lm in re.finditer(r"│L(\d+) ((?:e\d+ [+-]\d+\.\d\s+)+)", line):
        layer = int(lm.group(1))
        shown = re.findall(r"e(\d+) ([+-]\d+\.\d)", lm.group(2))
        cells = sorted((r for r in rows if int(r["layer"]) == layer and float(r["z"]) > 0),
                       key=lambda r: (-float(r["z"]), int(r["expert"])))
        want = [(r["expert"], "%+.1f" % float(r["z"])) for r in cells][:len(shown)]
        assert shown == want, "layer %d: screen %s, coli atlas compare %s" % (layer, shown, want)
        named += len(shown)
assert named >= 3, "the view names %d experts" % named
print("the conversation view names %d experts, as coli atlas compare does" % named)
EOF
	i=$((i + 1))
	[ $i -lt 20 ] || { cat "$TUI_TMP/check.out"; tui_fail "the conversation view disagrees with coli atlas compare"; }
	sleep 0.5
done
cat "$TUI_TMP/check.out"

# key a: the recorded history (code, prose, session:conv), as coli atlas
# cluster orders them; then live co-activation; then ids (Tab twice from
# the chat: the Expert map again; c: back to its map)
tui_keys Tab Tab c
tui_wait 'Expert map .*[0-9]+/cell'
want=$(A cluster code prose session:conv | sed -n '1s/^\([0-9]*\) cluster(s) of the experts of \([0-9]*\) profile.*/\2 \1/p')
[ -n "$want" ] || tui_fail "coli atlas cluster said nothing"
tui_keys a
tui_wait "affinity order from ${want% *} recorded profiles \(2 labels, 1 sessions\): ${want#* } clusters"
tui_wait 'Expert map .*history affinity order'
tui_check_frames 120 40
tui_keys a
tui_wait 'affinity order \(co-activation since colitop started\)'
tui_keys a
tui_wait 'expert map: id order'
tui_screen | grep -q 'Expert map .*affinity' && tui_fail "the id order still says affinity"

tui_keys '?'
tui_wait 'c this conversation against all recorded'
tui_wait 'a order: id, history, live'
tui_keys Escape
sleep 0.3
tui_keys q
tui_wait_exit 30
[ "$(tui_status)" = 0 ] || tui_fail "exit status $(tui_status) after q"
echo "ok: the conversation view agrees with coli atlas compare; history, live and id orders"
