#!/bin/sh
# The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in
# tests/node) against `coli serve` on a synthesized long-context model,
# configured the natural way (ANTHROPIC_MODEL = the served id), inside a
# loopback-only network namespace with its telemetry, update checks and
# other non-essential traffic off:
#  1. `claude -p` completes (exit 0, a successful JSON result), through
#     tests/agents_proxy.py, which only adds stop sequences so that the
#     random model's answer ends as a turn does rather than at max_tokens;
#  2. one tool call round trip through the proxy, which also forces
#     the Glob tool on the first request (tool_choice) with a short
#     pattern: the forced call comes back as a toolu_ tool_use, Claude Code
#     runs it and sends its tool_result with that id on the next request.
#  3. each of the tools Claude Code offers, and "any" of them, can be
#     forced (its schema compiles), checked on the tools it sent.
# Under CI=true a missing binary or a failed unshare is a failure.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
if [ "${COLI_IN_NETNS:-}" != 1 ]; then
	command -v unshare >/dev/null && command -v ip >/dev/null || test_skip "unshare or ip missing"
	unshare --net true 2>/dev/null || test_skip "unshare --net is not permitted here"
	COLI_IN_NETNS=1 exec unshare --net sh "$0" "$@"
fi
ip link set lo up || srv_fail "ip link set lo up"
NM="$(cd "${top_srcdir:-.}" && pwd)/tests/node/node_modules"
CLAUDE=
for b in "$NM/@anthropic-ai/claude-code-linux-x64/claude" "$NM/@anthropic-ai/claude-code-linux-x64-musl/claude" \
	 "$NM/@anthropic-ai/claude-code/bin/claude.exe"; do
	[ -x "$b" ] && "$b" --version >/dev/null 2>&1 && { CLAUDE=$b; break; }
done
[ -n "$CLAUDE" ] || test_skip "Claude Code missing (cd tests/node && npm install)"
srv_tmp
"$COLI" synth "$SRV_TMP/hf" --preset glm5-tiny --yarn >/dev/null 2>"$SRV_TMP/synth.log" &&
	"$COLI" convert "$SRV_TMP/hf" "$SRV_TMP/model" --quant f32 >/dev/null 2>"$SRV_TMP/convert.log" ||
	{ cat "$SRV_TMP"/*.log; srv_fail "cannot make the model"; }
SRV_MODEL="$SRV_TMP/model"
srv_start main --ctx 65536 --threads 2
MODEL_ID=$(curl -s "$URL/models" | "$PYTHON3" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])') ||
	srv_fail "no model id"
mkdir -p "$SRV_TMP/home" "$SRV_TMP/work" "$SRV_TMP/px"
echo "hello" >"$SRV_TMP/work/README"
cc() {
	(cd "$SRV_TMP/work" && HOME="$SRV_TMP/home" XDG_CONFIG_HOME="$SRV_TMP/home/.config" \
		ANTHROPIC_BASE_URL="$1" ANTHROPIC_MODEL="$MODEL_ID" \
		ANTHROPIC_API_KEY=dummy-key ANTHROPIC_AUTH_TOKEN=dummy-token \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
		DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_MAX_OUTPUT_TOKENS=48 CI=1 \
		timeout 900 "$CLAUDE" -p "$2" --output-format json --max-turns 3 --allowedTools Glob \
		</dev/null >"$SRV_TMP/$3.out" 2>"$SRV_TMP/$3.err")
}
# proxy NAME FORCE: a proxy in front of the server (tests/agents_proxy.py), its port in PX
proxy() {
	mkdir -p "$SRV_TMP/$1"
	"$PYTHON3" "${top_srcdir:-.}/tests/agents_proxy.py" "${BASE##*:}" "$SRV_TMP/$1" "$2" pattern \
		>"$SRV_TMP/$1.port" 2>"$SRV_TMP/$1.log" &
	SRV_PIDS="$SRV_PIDS $!"
	i=0
	while [ ! -s "$SRV_TMP/$1.port" ]; do
		i=$((i + 1)); [ $i -lt 100 ] || srv_fail "the proxy did not start"; sleep 0.1
	done
	PX="http://127.0.0.1:$(cat "$SRV_TMP/$1.port")"
}
proxy pp -
cc "$PX" "Say hello." plain || { rc=$?; cat "$SRV_TMP/plain.err" "$SRV_TMP/plain.out"; tail -20 "$SRV_TMP/main.log"; srv_fail "claude -p exited $rc"; }
"$PYTHON3" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j.get("type")=="result" and not j.get("is_error") else 1)' \
	"$SRV_TMP/plain.out" || { cat "$SRV_TMP/plain.out"; srv_fail "claude -p: no successful result"; }
proxy px Glob
cc "$PX" "List the files here." tool ||
	{ rc=$?; cat "$SRV_TMP/tool.err" "$SRV_TMP/tool.out" "$SRV_TMP/px.log"; srv_fail "claude -p (tool) exited $rc"; }
"$PYTHON3" - "$SRV_TMP/px" <<'PYEOF' || { cat "$SRV_TMP/tool.out"; srv_fail "no tool call round trip"; }
import glob, json, os, sys
d = sys.argv[1]
forced, ids = None, []
for req in sorted(glob.glob(os.path.join(d, "*.req.json"))):
    j = json.load(open(req))
    if forced is None and j.get("tool_choice", {}).get("name") == "Glob":
        forced = req
        for line in open(req[:-9] + ".resp", errors="replace"):
            if line.startswith("data: "):
                ev = json.loads(line[6:])
                cb = ev.get("content_block") or {}
                if ev.get("type") == "content_block_start" and cb.get("type") == "tool_use":
                    ids.append(cb["id"])
        continue
    if forced:
        for m in j.get("messages", []):
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_result" and b.get("tool_use_id") in ids:
                    print("round trip: %s -> %s" % (ids, os.path.basename(req)))
                    sys.exit(0)
print("forced request %s, tool_use ids %r, no tool_result after it" % (forced, ids))
sys.exit(1)
PYEOF
# 3. every tool Claude Code offers can be forced: its schema is in the
#    subset (propertyNames, format uri... ; issue 31 found 3 of 24 refused)
"$PYTHON3" - "$SRV_TMP/pp" "$BASE" <<'PYEOF' || srv_fail "a Claude Code tool cannot be forced"
import glob, json, os, sys, urllib.request
tools = None
for req in sorted(glob.glob(os.path.join(sys.argv[1], "*.req.json"))):
    j = json.load(open(req))
    if len(j.get("tools", [])) > 5:
        tools = j["tools"]
        break
if not tools:
    sys.exit("no request with Claude Code's tools")
def post(choice, ts):
    body = {"model": "x", "max_tokens": 1, "messages": [{"role": "user", "content": "go"}],
            "tools": ts, "tool_choice": choice}
    rq = urllib.request.Request(sys.argv[2] + "/v1/messages", json.dumps(body).encode(),
                                {"Content-Type": "application/json"})
    try:
        return urllib.request.urlopen(rq, timeout=300).status, ""
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()[:300]
bad = []
for t in tools:
    if "input_schema" in t:
        st, msg = post({"type": "tool", "name": t["name"]}, tools)
        if st != 200:
            bad.append("%s: %d %s" % (t["name"], st, msg))
st, msg = post({"type": "any"}, tools)
if st != 200:
    bad.append("any: %d %s" % (st, msg))
print("%d tools, forced one by one and as any: %s" % (len(tools), bad or "all 200"))
sys.exit(1 if bad else 0)
PYEOF
srv_stop
