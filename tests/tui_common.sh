# tui_common.sh - sourced by colitop's tmux tests: a tiny model, a private
# tmux server (own socket, killed on exit), helpers to start colitop in a
# pane of a fixed size, poll the screen with a bounded wait, and check the
# pane frames for corruption. A missing tmux skips (fails in CI); a missing
# binary or a failed model build fails.
. "${top_srcdir:-.}/tests/test_skip.sh"

tui_fail() {
	echo "FAIL: $*" >&2
	if [ -n "$TUI_SOCK" ]; then
		echo "--- screen ---" >&2
		tmux -L "$TUI_SOCK" capture-pane -p -t "$TUI_T" >&2 2>/dev/null
	fi
	[ -f "$TUI_TMP/stderr" ] && { echo "--- stderr ---" >&2; cat "$TUI_TMP/stderr" >&2; }
	exit 1
}

tui_setup() {
	command -v tmux >/dev/null 2>&1 || test_skip "tmux missing"
	[ -n "$COLI" ] && [ -x "$COLI" ] || tui_fail "\$COLI not built"
	COLITOP="$top_builddir/colitop"
	[ -x "$COLITOP" ] || tui_fail "colitop not built"
	TUI_TMP=$(mktemp -d)
	TUI_SOCK="colitop-test-$$"
	trap 'tui_cleanup' EXIT
	"$COLI" synth "$TUI_TMP/hf" --preset tiny >/dev/null 2>"$TUI_TMP/synth.log" ||
		{ cat "$TUI_TMP"/*.log; tui_fail "cannot make the tiny model"; }
	# $TUI_CHAT_TEMPLATE: a Jinja chat template file the model gets instead
	# of synth's (tui_thinking.sh: GLM-5's, which opens a thinking block)
	if [ -n "$TUI_CHAT_TEMPLATE" ]; then
		"${PYTHON3:-/usr/bin/python3}" - "$TUI_TMP/hf/tokenizer_config.json" "$TUI_CHAT_TEMPLATE" <<'EOF' ||
import json, sys
c = json.load(open(sys.argv[1], encoding="utf-8"))
c["chat_template"] = open(sys.argv[2], encoding="utf-8").read()
json.dump(c, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False)
EOF
			tui_fail "cannot set the chat template"
	fi
	"$COLI" convert "$TUI_TMP/hf" "$TUI_TMP/model" >/dev/null 2>"$TUI_TMP/convert.log" ||
		{ cat "$TUI_TMP"/*.log; tui_fail "cannot make the tiny model"; }
	TUI_MODEL="$TUI_TMP/model"
	export COLI_CACHE_DIR="$TUI_TMP/cache"
}

tui_cleanup() {
	tmux -L "$TUI_SOCK" kill-server 2>/dev/null
	rm -rf "$TUI_TMP"
}

# tui_start COLS ROWS [colitop options...]: run colitop in a new session
# of a fixed size ($TUI_ENV: extra VAR=value words for its environment). The pane's shell records colitop's exit status in
# $TUI_TMP/exit.N and then sleeps, so the pane (and the tmux server) stay
# up after colitop exits. The terminal's state (stty -g) before colitop
# starts and after it ends goes to $TUI_TMP/stty.N.before and .after
# (tui_check_stty compares them).
tui_start() {
	cols=$1
	rows=$2
	shift 2
	old=$TUI_T
	TUI_N=$(( ${TUI_N:-0} + 1 ))
	TUI_T="t$TUI_N"
	TUI_EXIT="$TUI_TMP/exit.$TUI_N"
	cmd="env LANG=C.UTF-8 LC_ALL=C.UTF-8 COLI_CACHE_DIR='$COLI_CACHE_DIR' $TUI_ENV '$COLITOP' --model '$TUI_MODEL' --threads 1"
	for a in "$@"; do cmd="$cmd '$a'"; done
	# the new session first: killing the last one would stop the server
	TUI_STTY="$TUI_TMP/stty.$TUI_N"
	tmux -L "$TUI_SOCK" -f /dev/null new-session -d -s "$TUI_T" -x "$cols" -y "$rows" \
		"stty -g >'$TUI_STTY.before'; $cmd 2>'$TUI_TMP/stderr'; echo \$? >'$TUI_EXIT.tmp'; stty -g >'$TUI_STTY.after'; mv '$TUI_EXIT.tmp' '$TUI_EXIT'; exec sleep 600" ||
		tui_fail "tmux new-session"
	tmux -L "$TUI_SOCK" set-option -t "$TUI_T" window-size manual >/dev/null 2>&1
	[ -z "$old" ] || tmux -L "$TUI_SOCK" kill-session -t "$old" 2>/dev/null
}

tui_screen() {
	tmux -L "$TUI_SOCK" capture-pane -p -t "$TUI_T"
}

tui_keys() {
	tmux -L "$TUI_SOCK" send-keys -t "$TUI_T" "$@"
}

tui_dead() {
	[ -s "$TUI_EXIT" ]
}

# colitop's pid: the child of the pane's shell.
tui_pid() {
	ps -o pid= --ppid "$(tmux -L "$TUI_SOCK" display-message -p -t "$TUI_T" '#{pane_pid}')" | tr -d ' ' | head -n1
}

tui_status() {
	cat "$TUI_EXIT"
}

# tui_wait REGEX [SECONDS]: poll the screen (every 0.2 s) until it matches.
tui_wait() {
	limit=$(( ${2:-30} * 5 ))
	i=0
	while ! tui_screen | grep -Eq -- "$1"; do
		tui_dead && tui_fail "colitop exited while waiting for /$1/"
		i=$((i + 1))
		[ $i -lt $limit ] || tui_fail "timed out waiting for /$1/"
		sleep 0.2
	done
}

# tui_wait_exit [SECONDS]
tui_wait_exit() {
	limit=$(( ${1:-30} * 5 ))
	i=0
	while ! tui_dead; do
		i=$((i + 1))
		[ $i -lt $limit ] || tui_fail "colitop did not exit"
		sleep 0.2
	done
}

# tui_check_stty WHAT: after colitop exited, the terminal is exactly as
# it was before it started (every termios flag and control character).
tui_check_stty() {
	[ -s "$TUI_STTY.before" ] && [ -s "$TUI_STTY.after" ] || tui_fail "$1: no stty record"
	[ "$(cat "$TUI_STTY.before")" = "$(cat "$TUI_STTY.after")" ] ||
		tui_fail "$1: terminal not restored: stty -g $(cat "$TUI_STTY.before") before, $(cat "$TUI_STTY.after") after"
}

tui_resize() {
	tmux -L "$TUI_SOCK" resize-window -t "$TUI_T" -x "$1" -y "$2" || tui_fail "resize-window"
}

# tui_check_frames COLS ROWS: every row above the status line starts and
# ends with a frame character at the exact width (a character drawn at the
# wrong width, or a stale row, breaks this), the status line is there and
# the F-key bar under it.
tui_check_frames() {
	tui_screen >"$TUI_TMP/screen"
	"${PYTHON3:-/usr/bin/python3}" - "$TUI_TMP/screen" "$1" "$2" <<'PY' || tui_fail "frames broken at $1x$2"
import sys, unicodedata
path, cols, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = open(path, encoding="utf-8", errors="replace").read().split("\n")[:rows]
def width(s):
    w = 0
    for ch in s:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w
bad = 0
for y, line in enumerate(lines[:rows - 2]):
    t = line.rstrip(" ")
    if not t or t[0] not in "\u250c\u2502\u2514" or t[-1] not in "\u2510\u2502\u2518":
        print("row %d: not framed: %r" % (y, line), file=sys.stderr)
        bad += 1
    elif width(t) != cols and all(ord(c) < 0x300 or 0x2500 <= ord(c) < 0x2600 for c in t):
        print("row %d: width %d != %d" % (y, width(t), cols), file=sys.stderr)
        bad += 1
if len(lines) < rows or not lines[rows - 2].strip():
    print("no status line", file=sys.stderr)
    bad += 1
if len(lines) < rows or not lines[rows - 1].startswith("F1Help F2Zoom F3Sessions F4Pane F10Quit"):
    print("no key bar", file=sys.stderr)
    bad += 1
sys.exit(1 if bad else 0)
PY
}
