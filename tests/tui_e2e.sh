#!/bin/sh
# tui_e2e.sh - colitop end to end in tmux on a tiny model: a chat turn
# streams text and fills the Routing, Expert map, Cache and I/O panes;
# resizing to 80x24 and 200x60 keeps the frames intact and changes the
# layout; below 80x24 a clear message; help, Tab, zoom; q quits cleanly;
# restarting with the same --session shows the conversation and continues
# the KV session without prefilling it again; SIGTERM and SIGSEGV restore
# the terminal.
. "$top_srcdir/tests/tui_common.sh"
tui_setup

tui_start 120 40 --no-server --session e2e --max-tokens 24 --ignore-eos
tui_wait 'Routing' 60
tui_wait 'session e2e \(new\)'
tui_check_frames 120 40

# a chat turn with CJK and emoji in the prompt
tui_keys -l 'hello 中文 😀 there'
tui_keys Enter
tui_wait 'tok/s +TTFT [0-9]+ ms +24 tok' 60
tui_screen >"$TUI_TMP/s1"
grep -q '> hello 中文 😀 there' "$TUI_TMP/s1" || tui_fail "prompt not shown with wide characters"
grep -Eq 'L[0-9]+ S +[0-9]+ ' "$TUI_TMP/s1" || tui_fail "routing pane empty"
grep -Eq 'L[0-9]+ [^ ]{16}' "$TUI_TMP/s1" || tui_fail "expert map empty"
grep -Eq 'hit rate [0-9.]+%' "$TUI_TMP/s1" || tui_fail "cache pane empty"
grep -Eq '/token +[0-9]+ reads/s' "$TUI_TMP/s1" || tui_fail "I/O pane empty"
grep -Eq '\* e2e +[0-9]+' "$TUI_TMP/s1" || tui_fail "the session is not listed"
tui_check_frames 120 40

# resizes: narrow minimum, wide (three columns), too small, back
tui_resize 80 24
tui_wait 'Sessions'
sleep 0.5
tui_check_frames 80 24
tui_resize 200 60
tui_wait '─ Chat ─.*─ Routing ─.*─ Cache ─'
sleep 0.5
tui_check_frames 200 60
tui_resize 70 20
tui_wait 'terminal too small \(need 80x24'
tui_resize 120 40
tui_wait 'Routing'
sleep 0.5
tui_check_frames 120 40

# F2 zooms the Chat pane while typing, and back
tui_keys F2
tui_wait 'Chat \(zoom\)'
tui_keys F2
tui_wait 'Routing'

# help overlay (F1 anywhere), any key closes it
tui_keys F1
tui_wait 'colitop keys'
tui_keys Space
sleep 0.5
tui_screen | grep -q 'colitop keys' && tui_fail "help did not close"
# Tab to Routing, zoom it, unzoom, ? opens help outside the chat
tui_keys Tab
tui_keys z
tui_wait 'Routing \(zoom\)'
tui_keys z
tui_wait 'Expert map'
# Tab to the Expert map: a switches to the history order, which needs two
# recorded profiles: with this one session's it falls back to the live
# affinity (co-activation) order (tests/tui_atlas.sh: the history order)
tui_keys Tab a
tui_wait 'Expert map .*affinity order'
tui_check_frames 120 40
tui_keys '?'
tui_wait 'colitop keys'
tui_keys Escape
sleep 0.3
# q quits when not typing
tui_keys q
tui_wait_exit 30
[ "$(tui_status)" = 0 ] || tui_fail "exit status $(tui_status) after q"
grep -q 'colitop: .*chat session e2e' "$TUI_TMP/stderr" || tui_fail "log lines not replayed on stderr"
[ -s "$COLI_CACHE_DIR/logs/colitop.log" ] || tui_fail "no log file"
[ -s "$COLI_CACHE_DIR/kv/e2e.chat.json" ] || tui_fail "no transcript sidecar"

# restart on the same session: the transcript is back, the KV is reused
tui_start 120 40 --no-server --session e2e --max-tokens 8 --ignore-eos
tui_wait 'session e2e: [0-9]+ tokens on disk +\(resumed' 60
tui_screen | grep -q '> hello 中文 😀 there' || tui_fail "previous conversation not shown"
tui_keys -l 'and again'
tui_keys Enter
tui_wait 'prompt [0-9]+ \([1-9][0-9]* cached\)' 60
tui_screen | grep -q 'chat session e2e resumed' || tui_fail "log does not say resumed"

# SIGTERM: clean exit, terminal restored (the alternate screen is gone)
kill -TERM "$(tui_pid)"
tui_wait_exit 30
[ "$(tui_status)" = 0 ] || tui_fail "exit status $(tui_status) after SIGTERM"
tui_screen | grep -q '─ Chat ─' && tui_fail "screen not restored after SIGTERM"

# plain ASCII locale, no colour: nothing but ASCII on the screen
TUI_ENV="LANG=C LC_ALL=C NO_COLOR=1" tui_start 80 24 --no-server --session e2e
tui_wait '\+- Routing -' 60
tui_wait 'Ctrl-Q|queue|no server'
tui_screen >"$TUI_TMP/ascii"
LC_ALL=C grep -q "$(printf '[\200-\377]')" "$TUI_TMP/ascii" && tui_fail "non-ASCII bytes in the C locale"
grep -q '> hello ?? ? there' "$TUI_TMP/ascii" || tui_fail "wide characters not replaced in the C locale"
tui_keys F10
tui_wait_exit 30

# the Sessions pane: rename, delete (after y), new
tui_start 100 30 --no-server --session other
tui_wait 'session other \(new\)' 60
tui_keys Tab Tab Tab Tab Tab
tui_wait '^.* e2e +[0-9]+ '
tui_keys r
tui_wait 'rename to: e2e'
tui_keys BSpace BSpace BSpace
tui_keys -l 'renamed'
tui_keys Enter
tui_wait '  renamed +[0-9]+ '
[ -s "$COLI_CACHE_DIR/kv/renamed.kv" ] && [ -s "$COLI_CACHE_DIR/kv/renamed.chat.json" ] ||
	tui_fail "rename did not move the session and its transcript"
tui_keys d
tui_wait 'delete session renamed\? \(y/n\)'
tui_keys y
tui_wait 'no sessions on disk yet'
[ ! -e "$COLI_CACHE_DIR/kv/renamed.kv" ] && [ ! -e "$COLI_CACHE_DIR/kv/renamed.chat.json" ] ||
	tui_fail "delete left files behind"
tui_keys n
tui_wait 'session chat-[0-9]{8}-[0-9]{6}(-2)? \(new\)'

# a crash: the fatal-signal handler restores the terminal and re-raises
# (sanitizers install their own handlers: not checked there)
if [ -z "$COLI_TEST_SANITIZED" ]; then
	kill -SEGV "$(tui_pid)"
	tui_wait_exit 30
	[ "$(tui_status)" = 139 ] || tui_fail "status $(tui_status) after SIGSEGV (expected death by the signal)"
	tui_screen | grep -q '─ Chat ─' && tui_fail "screen not restored after SIGSEGV"
else
	tui_keys F10
	tui_wait_exit 30
fi
echo "tui_e2e: ok"
exit 0
