#!/bin/sh
# tui_thinking.sh - a thinking model in colitop, in tmux as a user meets
# it. The tiny model gets GLM-5's chat template, which opens a "<think>"
# block in the prompt, so its answer is thinking until it writes
# "</think>" (the random model never does):
#   - while it thinks, the Chat pane shows one dimmed, moving line
#     "▸ thinking... (N tokens)  <the end of the thinking>", not the text;
#   - when the answer ends it stays one line, "▸ thinking (24 tokens)";
#     F5 expands it (the thinking text, as stored, is on screen), F5 again
#     collapses it, t does the same outside the chat input;
#   - restarted with the same --session, the conversation shows the same
#     collapsed line with the same count, and F5 shows the same text;
#   - a transcript an older colitop wrote ("THINKING</think>ANSWER" in the
#     content) opens with the thinking collapsed and the answer below.
top_srcdir=${top_srcdir:-.}
TUI_CHAT_TEMPLATE="$top_srcdir/tests/node/fixtures/glm5_chat_template.jinja"
. "$top_srcdir/tests/tui_common.sh"
tui_setup
PY3=${PYTHON3:-/usr/bin/python3}

# the Chat pane's columns only (it is the left column at 100x30), its
# frame and the blank rows dropped
chat_pane() {
	tui_screen | head -n 28 | $PY3 -c '
import sys
for line in sys.stdin.read().split("\n"):
    t = line[1:49].rstrip()
    if t.strip():
        print(t)'
}

# the Chat pane's text as one line (a word wrapped across rows is whole)
chat_text() {
	chat_pane | sed 's/^ *//' | tr -d '\n'
}

# ---- live: the collapsed line moves while the model thinks; Esc stops ----
N=3000
[ -z "$COLI_TEST_SANITIZED" ] || N=800
tui_start 100 30 --no-server --session live --max-tokens $N --ignore-eos
tui_wait 'Sessions' 60
tui_keys -l 'think hard'
tui_keys Enter
tui_wait '▸ thinking\.\.\. \([0-9]+ tokens?\)' 60
tui_keys Escape
tui_wait 'cancelled' 60
tui_wait '▸ thinking \([0-9]+ tokens\)'
chat_pane | grep -q 'thinking\.\.\.' && tui_fail "still shown as live after the answer ended"
# one line: nothing of the answer's text between the head and the figures
rows=$(chat_pane | sed -n '/▸ thinking (/,/tok\/s/p' | wc -l)
[ "$rows" -eq 2 ] || tui_fail "collapsed thinking takes more than one line ($rows)"
tui_keys F10
tui_wait_exit 30

# ---- a whole answer: collapsed, F5 / t expand, the text is the stored one ----
tui_start 100 30 --no-server --session th --max-tokens 24 --ignore-eos
tui_wait 'Sessions' 60
tui_keys -l 'hello'
tui_keys Enter
tui_wait 'tok/s +TTFT [0-9]+ ms +24 tok' 60
tui_wait '▸ thinking \(24 tokens\)'
tui_wait 'F5 thinking'   # the key bar says which key shows it
KV_DIR=$(dirname "$(find "$COLI_CACHE_DIR" -name th.chat.json | head -n1)")
[ -f "$KV_DIR/th.chat.json" ] || tui_fail "no transcript th.chat.json under $COLI_CACHE_DIR"
# the longest word of the stored thinking (not one of the screen's own)
WORD=$($PY3 - "$KV_DIR/th.chat.json" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1], encoding="utf-8"))["messages"]
a = [x for x in m if x["role"] == "assistant"][-1]
assert a["reasoning_tokens"] == 24 and a["content"] == "", a
ui = "hello thinking tokens session prompt cached length Enter send F5 stop Esc tok"
w = sorted((w for w in re.findall(r"[A-Za-z]{4,}", a["reasoning_content"]) if w.lower() not in ui.lower()),
           key=len)
print(w[-1] if w else "")
PY
) || tui_fail "the transcript does not hold the thinking with its 24 tokens"
[ -n "$WORD" ] || tui_fail "no word in the stored thinking to look for"
chat_text | grep -q -- "$WORD" && tui_fail "collapsed thinking shows its text ($WORD)"
tui_keys F5
tui_wait '▾ thinking \(24 tokens\)'
chat_text | grep -q -- "$WORD" || tui_fail "F5 did not show the thinking ($WORD)"
tui_keys F5
tui_wait '▸ thinking \(24 tokens\)'
chat_text | grep -q -- "$WORD" && tui_fail "F5 again did not collapse it"
# t outside the chat input (in the input it is a letter)
tui_keys Tab
tui_keys t
tui_wait '▾ thinking \(24 tokens\)'
tui_keys t
tui_wait '▸ thinking \(24 tokens\)'
tui_keys BTab
tui_keys F10
tui_wait_exit 30

# ---- restart: the same collapsed line, the same text behind F5 ----
tui_start 100 30 --no-server --session th --max-tokens 24 --ignore-eos
tui_wait 'session th: [0-9]+ tokens on disk' 60
tui_wait '▸ thinking \(24 tokens\)'
chat_pane | grep -q '> hello' || tui_fail "the resumed conversation lost the question"
chat_text | grep -q -- "$WORD" && tui_fail "resumed thinking is not collapsed"
tui_keys F5
tui_wait '▾ thinking \(24 tokens\)'
chat_text | grep -q -- "$WORD" || tui_fail "resumed thinking lost its text ($WORD)"
tui_keys F10
tui_wait_exit 30

# ---- a transcript from before the thinking was stored apart ----
cat >"$KV_DIR/old.chat.json" <<'JSON'
{"format": "colitop-chat", "version": 1, "session": "old", "last_finish": "stop",
 "messages": [{"role": "user", "content": "what is two and two"},
              {"role": "assistant", "content": "\nadding them up\n</think>\n\nfour, surely"}]}
JSON
tui_start 100 30 --no-server --session old
tui_wait '> what is two and two' 60
tui_wait 'four, surely'
chat_pane | grep -q '▸ thinking$' || tui_fail "old thinking not collapsed to a line (no token count known)"
chat_pane | grep -q 'adding them up\|</think>' && tui_fail "old thinking shown raw"
tui_keys F5
tui_wait '▾ thinking'
chat_pane | grep -q 'adding them up' || tui_fail "old thinking not shown by F5"
tui_keys F10
tui_wait_exit 30
tui_check_stty "F10"
exit 0
