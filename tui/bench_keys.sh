#!/bin/sh
# bench_keys.sh - keystroke latency of colitop's chat input (not a test):
# the time from a key sent to the terminal until the screen shows its
# effect, with an empty input and with 100 KB already in it (pasted), in
# the same run. The input is a gap buffer and the field is drawn from the
# bytes around the cursor, so the ratio should stay near 1 (before, every
# key re-measured the whole line: 3,000 characters took over a minute).
# Usage: tui/bench_keys.sh BUILD_DIR [KEYS] [KB]
# Each sample: tmux send-keys of one character, then capture-pane polled
# until the figures line counts it (the polling, a process per capture,
# bounds the resolution to a few ms; both cases pay it alike).

B=$(cd "${1:?usage: bench_keys.sh BUILD_DIR [KEYS] [KB]}" && pwd)
KEYS=${2:-40}
KB=${3:-100}
T=$(mktemp -d)
SOCK="colitop-keys-$$"
cleanup() {
	tmux -L "$SOCK" kill-server 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
export COLI_CACHE_DIR="$T/cache"
"$B/coli" synth "$T/hf" --preset tiny >/dev/null 2>&1 &&
	"$B/coli" convert "$T/hf" "$T/model" >/dev/null 2>&1 || { echo "cannot make the model" >&2; exit 1; }

screen() { tmux -L "$SOCK" capture-pane -p -t b; }
now() { date +%s.%N; }

# wait_bytes N: until the figures line says the input holds N bytes
wait_bytes() {
	n=0
	until screen | grep -q "input [0-9]* lines, $1 bytes"; do
		n=$((n + 1))
		[ $n -lt 20000 ] || { echo "no 'input ... $1 bytes' on screen" >&2; screen >&2; exit 1; }
	done
}

# measure BASE: KEYS single keys, each waited for; prints the median ms
measure() {
	have=$1
	i=0
	: >"$T/ms"
	while [ $i -lt "$KEYS" ]; do
		t0=$(now)
		tmux -L "$SOCK" send-keys -t b -l x
		have=$((have + 1))
		wait_bytes $have
		t1=$(now)
		echo "$t0 $t1" | awk '{ printf "%.2f\n", ($2 - $1) * 1000 }' >>"$T/ms"
		i=$((i + 1))
	done
	sort -n "$T/ms" | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }'
}

tmux -L "$SOCK" -f /dev/null new-session -d -s b -x 120 -y 40 \
	"env LANG=C.UTF-8 COLI_CACHE_DIR='$COLI_CACHE_DIR' '$B/colitop' --model '$T/model' --threads 1 --no-server --session keys 2>'$T/err'; sleep 600"
n=0
until screen | grep -q 'session keys (new)'; do
	n=$((n + 1)); [ $n -lt 300 ] || { echo "colitop did not start" >&2; cat "$T/err" >&2; exit 1; }
	sleep 0.1
done
# an input wider than the field shows its size on the figures line: start
# both cases from 200 typed bytes (one line)
tmux -L "$SOCK" send-keys -t b -l "$(printf '%0200d' 0)"
wait_bytes 200
empty=$(measure 200)
base=$((200 + KEYS))
"${PYTHON3:-/usr/bin/python3}" -c "import sys; sys.stdout.write('y' * ($KB * 1024))" >"$T/paste"
tmux -L "$SOCK" load-buffer -b p "$T/paste"
tmux -L "$SOCK" paste-buffer -p -b p -t b
big=$((base + KB * 1024))
wait_bytes $big
full=$(measure $big)
tmux -L "$SOCK" send-keys -t b F10
echo "keystroke to screen, median of $KEYS keys: ${empty} ms with 200 bytes in the input, ${full} ms with $KB KiB more"
echo "$empty $full" | awk '{ printf "ratio (%s KiB / 200 B): %.2f\n", '"$KB"', $2 / $1 }'
