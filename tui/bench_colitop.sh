#!/bin/sh
# bench_colitop.sh - figures for colitop's report (not a test):
#   1. decode tokens/s of the same requests served by `coli serve`
#      (headless) and by the server inside a running colitop whose screen
#      is open (tmux, 200x60) and redrawing: the ratio should be >= 0.95;
#   2. colitop's CPU use while idle, from /proc/PID/stat over 20 s.
# Usage: tui/bench_colitop.sh BUILD_DIR [ROUNDS]
# Decode tokens/s is the engine's own figure per request, read from
# /metrics (coli_decode_tokens_per_second sum / count).

B=$(cd "${1:?usage: bench_colitop.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
COLI="$B/coli"
COLITOP="$B/colitop"
T=$(mktemp -d)
SP=
cleanup() {
	[ -z "$SP" ] || kill "$SP" 2>/dev/null || true
	i=1
	while [ $i -le "$ROUNDS" ]; do
		tmux -L "colitop-bench-$$-$i" kill-server 2>/dev/null
		i=$((i + 1))
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
export COLI_CACHE_DIR="$T/cache"
"$COLI" synth "$T/hf" --preset glm5-tiny --layers 8 --experts 64 --topk 8 >/dev/null 2>&1 &&
	"$COLI" convert "$T/hf" "$T/model" >/dev/null 2>&1 || { echo "cannot make the model" >&2; exit 1; }

# run N requests against BASE, print the mean decode tokens/s of them
measure() {
	base=$1
	before=$(curl -s "$base/metrics" | awk '/^coli_decode_tokens_per_second_(sum|count)/ {printf "%s ", $2}')
	i=0
	while [ $i -lt 10 ]; do
		curl -s "$base/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":1500}' >/dev/null
		i=$((i + 1))
	done
	after=$(curl -s "$base/metrics" | awk '/^coli_decode_tokens_per_second_(sum|count)/ {printf "%s ", $2}')
	echo "$before $after" | awk '{ printf "%.1f\n", ($3 - $1) / ($4 - $2) }'
}

headless() {
	rm -f "$T/url"
	"$COLI" serve "$T/model" --port 0 --threads 1 >"$T/url" 2>"$T/serve.log" &
	SP=$!
	n=0
	while [ ! -s "$T/url" ]; do
		n=$((n + 1))
		[ $n -lt 300 ] || { echo "coli serve did not start" >&2; exit 1; }
		sleep 0.1
	done
	base=$(sed 's|/v1$||' "$T/url")
	measure "$base"
	kill "$SP"
	wait "$SP" 2>/dev/null || true
	SP=
}

with_tui() {
	SOCK="colitop-bench-$$-$1"   # a fresh server per round: no race with the last one's exit
	tmux -L "$SOCK" -f /dev/null new-session -d -s b -x 200 -y 60 \
		"env LANG=C.UTF-8 COLI_CACHE_DIR='$COLI_CACHE_DIR' '$COLITOP' --model '$T/model' --threads 1 --port 0 --session bench 2>'$T/tui.err'; sleep 600"
	port=
	n=0
	while [ -z "$port" ]; do
		n=$((n + 1))
		[ $n -lt 300 ] || { echo "colitop did not start" >&2; cat "$T/tui.err" >&2; exit 1; }
		sleep 0.2
		port=$(tmux -L "$SOCK" capture-pane -p -t b | sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\) served.*/\1/p' | head -n1)
	done
	# CPU of colitop's main (UI) thread while the engine decodes
	pid=$(ps -o pid= --ppid "$(tmux -L "$SOCK" display-message -p -t b '#{pane_pid}')" | head -n1 | tr -d ' ')
	u0=$(awk '{print $14 + $15}' "/proc/$pid/task/$pid/stat")
	w0=$(date +%s.%N)
	measure "http://127.0.0.1:$port"
	u1=$(awk '{print $14 + $15}' "/proc/$pid/task/$pid/stat")
	w1=$(date +%s.%N)
	echo "$u0 $u1 $w0 $w1 $(getconf CLK_TCK)" |
		awk '{ printf "%.2f\n", ($2 - $1) / $5 / ($4 - $3) * 100 }' >>"$T/ui_cpu"
}

h=""
c=""
r=0
while [ $r -lt "$ROUNDS" ]; do
	h="$h $(headless)" || exit 1
	r=$((r + 1))
	c="$c $(with_tui $r)" || exit 1
	[ $r -eq "$ROUNDS" ] || tmux -L "colitop-bench-$$-$r" kill-server 2>/dev/null
done

# idle CPU of the colitop still running from the last round
sleep 3
SOCK="colitop-bench-$$-$ROUNDS"
pid=$(ps -o pid= --ppid "$(tmux -L "$SOCK" display-message -p -t b '#{pane_pid}')" | head -n1 | tr -d ' ')
hz=$(getconf CLK_TCK)
t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
sleep 20
t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
idle=$(echo "$t0 $t1 $hz" | awk '{ printf "%.2f", ($2 - $1) / $3 / 20 * 100 }')
tmux -L "$SOCK" send-keys -t b F10
sleep 1

echo "headless tok/s:$h"
echo "colitop  tok/s:$c"
echo "$h|$c" | awk -F'|' '{ n = split($1, a, " "); split($2, b, " "); sa = 0; sb = 0;
	for (i = 1; i <= n; i++) { sa += a[i]; sb += b[i] }
	printf "ratio colitop/headless: %.3f\n", sb / sa }'
echo "colitop UI thread CPU while decoding (% of one core, per round): $(tr '\n' ' ' <"$T/ui_cpu")"
echo "colitop idle CPU over 20 s: $idle% of one core"
