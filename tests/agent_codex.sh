#!/bin/sh
# The real Codex CLI (npm @openai/codex, pinned in tests/node) against
# `coli serve` over the Responses API: `codex exec` with a custom model
# provider (wire_api = "responses", base_url on loopback), update checks,
# analytics, feedback and telemetry off, run with the server inside a
# loopback-only network namespace (unshare --net, lo up), so nothing it
# tries can leave the machine. The model is a tiny random one with GLM-5's
# template and a 32k context (Codex's prompt is some 17k tokens);
# tests/agent_codex_proxy.py steers it: the first request forces a call
# of get_goal (a tool Codex answers itself, nothing is executed), later
# ones a short JSON string so the answer ends. The prefill of that prompt
# on a loaded machine can outlast Codex's 5-minute stream idle timeout
# (SSE keepalive comments do not count for it), so the provider sets
# stream_idle_timeout_ms. Checked: `codex exec`
# exits 0 with a final message, and its second request carries the call
# and Codex's function_call_output for it (one tool round trip).
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
NODE=${NODE:-node}
CODEX="${top_srcdir:-.}/tests/node/node_modules/.bin/codex"
command -v "$NODE" >/dev/null 2>&1 || test_skip "node missing"
[ -x "$CODEX" ] && "$CODEX" --version >/dev/null 2>&1 || test_skip "codex is not installed in tests/node (npm ci)"
command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 || test_skip "unshare or ip missing"
unshare --net --map-root-user sh -c 'ip link set lo up' 2>/dev/null ||
	test_skip "cannot make a loopback-only network namespace (unshare --net --map-root-user)"
srv_setup_glm5
D=$SRV_TMP
mkdir -p "$D/home" "$D/work" "$D/tmp"
cat >"$D/inner.sh" <<'INNER'
# inside the namespace: lo only
set -u
ip link set lo up || exit 90
"$COLI" serve "$SRV_MODEL" --port 0 --threads 1 --ctx 32768 -v --cache-dir "$D/cache" >"$D/url" 2>"$D/serve.log" &
sp=$!
i=0
while [ ! -s "$D/url" ]; do
	kill -0 $sp 2>/dev/null || exit 91
	i=$((i + 1)); [ $i -lt 600 ] || exit 91
	sleep 0.1
done
url=$(head -n1 "$D/url")
"$PYTHON3" "$TOP/tests/agent_codex_proxy.py" "${url%/v1}" "$D/proxy.port" "$D/requests.jsonl" get_goal 2>"$D/proxy.log" &
pp=$!
while [ ! -s "$D/proxy.port" ]; do
	kill -0 $pp 2>/dev/null || exit 92
	sleep 0.1
done
cat >"$D/home/config.toml" <<TOML
model = "$(basename "$SRV_MODEL")"
model_provider = "colitop"
model_reasoning_effort = "none"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.colitop]
name = "colitop"
base_url = "http://127.0.0.1:$(cat "$D/proxy.port")/v1"
wire_api = "responses"
stream_idle_timeout_ms = 3600000

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"
TOML
cd "$D/work"
HOME="$D/home" CODEX_HOME="$D/home" TMPDIR="$D/tmp" timeout 900 "$CODEX" exec --strict-config --skip-git-repo-check \
	"Check the current goal, then say done." </dev/null >"$D/codex.out" 2>"$D/codex.err"
rc=$?
kill $pp $sp
wait $sp
exit $rc
INNER
TOP=${top_srcdir:-.}
case $TOP in /*) ;; *) TOP=$(pwd)/$TOP ;; esac
export COLI SRV_MODEL D PYTHON3 CODEX TOP
unshare --net --map-root-user sh "$D/inner.sh"
rc=$?
[ $rc = 0 ] || { tail -20 "$D/codex.err" "$D/serve.log" "$D/proxy.log" 2>/dev/null; srv_fail "codex exec exited with $rc"; }
"$PYTHON3" - "$D/requests.jsonl" "$D/codex.out" <<'PY' || { tail -5 "$D/codex.err"; srv_fail "codex's requests"; }
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(reqs) >= 2, "%d requests" % len(reqs)
first, second = reqs[0], reqs[1]
assert first["stream"] is True and any(t.get("name") == "get_goal" for t in first["tools"]), first.get("tools")
calls = [i for i in second["input"] if i.get("type") == "function_call" and i.get("name") == "get_goal"]
outs = [i for i in second["input"] if i.get("type") == "function_call_output"]
assert calls and json.loads(calls[-1]["arguments"]) == {}, calls
assert outs and outs[-1]["call_id"] == calls[-1]["call_id"], (calls, outs)
assert "goal" in outs[-1]["output"], outs[-1]
out = open(sys.argv[2], encoding="utf-8").read().strip()
assert out, "no final message"
print("codex exec: %d requests, tool round trip via call %s; final message %r" % (len(reqs), calls[-1]["call_id"], out))
PY
