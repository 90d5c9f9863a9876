#!/bin/sh
# server_siege.sh [--coli PATH] [--seconds S] [--clients N] [--slow N] - the
# issue-20 load test: a tiny synthesized model served by `coli serve` with
# its defaults (--max-connections 64, --request-timeout 30), 64 streaming
# clients for 60 s plus 64 slowloris connections (a header line every 5 s)
# and a /health prober, after the same load without the attackers (the
# baseline); prints both JSON lines of bench/server_siege.py and the ratios.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
COLI=${COLI:-$here/../build/dev/coli}
secs=60 clients=64 slow=64
while [ $# -gt 0 ]; do
	case $1 in
	--coli) COLI=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--clients) clients=$2; shift 2 ;;
	--slow) slow=$2; shift 2 ;;
	*) echo "usage: $0 [--coli PATH] [--seconds S] [--clients N] [--slow N]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
"$COLI" synth "$work/hf" --preset tiny >/dev/null
"$COLI" convert "$work/hf" "$work/model" --quant f32 >/dev/null
"$COLI" serve "$work/model" --port 0 --max-queue 128 >"$work/url" 2>"$work/log" &
pid=$!
while [ ! -s "$work/url" ]; do
	kill -0 $pid 2>/dev/null || { cat "$work/log"; exit 1; }
	sleep 0.1
done
# the same load without the attackers first: the baseline of the ratios
url=$(head -n1 "$work/url")
/usr/bin/python3 "$here/server_siege.py" --url "$url" --pid $pid --seconds "$secs" \
	--clients "$clients" --slow 0 >"$work/base.json" || true
/usr/bin/python3 "$here/server_siege.py" --url "$url" --pid $pid --seconds "$secs" \
	--clients "$clients" --slow "$slow" >"$work/siege.json" || status=$?
/usr/bin/python3 - "$work/base.json" "$work/siege.json" <<'PY'
import json, sys
base = json.loads(open(sys.argv[1]).readline())
siege = json.loads(open(sys.argv[2]).readline())
print(json.dumps({"baseline": base, "siege": siege, "ratios_siege_to_baseline": {
    k: round(siege[k] / base[k], 2) if base.get(k) else None
    for k in ("ttft_p50_ms", "ttft_p99_ms", "streams_ok", "rss_kb_end")}}))
PY
grep '^malformed' "$work/siege.json" || true
exit ${status:-0}
