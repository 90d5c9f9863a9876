# server_common.sh - sourced by the server's shell tests: make a tiny model,
# start `coli serve` on a free loopback port, stop it, clean up.
# A missing outside tool skips (fails in CI); a failure of our own commands fails.
. "${top_srcdir:-.}/tests/test_skip.sh"

srv_fail() { echo "FAIL: $*" >&2; exit 1; }

# srv_tmp: $COLI must be built; SRV_TMP, a temporary directory removed on
# exit together with every server started.
srv_tmp() {
	[ -n "$COLI" ] && [ -x "$COLI" ] || srv_fail "\$COLI not built"
	SRV_TMP=$(mktemp -d)
	SRV_PIDS=
	trap 'srv_cleanup' EXIT
}

# srv_setup: srv_tmp, curl, and a tiny synthesized f32 model in SRV_MODEL.
srv_setup() {
	srv_tmp
	"$COLI" serve --help >/dev/null 2>&1 || srv_fail "coli serve --help failed"
	command -v curl >/dev/null || test_skip "curl missing"
	"$COLI" synth "$SRV_TMP/hf" --preset tiny >/dev/null 2>"$SRV_TMP/synth.log" &&
		"$COLI" convert "$SRV_TMP/hf" "$SRV_TMP/model" --quant f32 >/dev/null 2>"$SRV_TMP/convert.log" ||
		{ cat "$SRV_TMP"/*.log; srv_fail "cannot make the tiny model"; }
	SRV_MODEL="$SRV_TMP/model"
}

srv_cleanup() {
	for p in $SRV_PIDS; do kill "$p" 2>/dev/null; done
	for p in $SRV_PIDS; do wait "$p" 2>/dev/null; done
	[ -n "${COLI_TEST_KEEP:-}" ] && cp -r "$SRV_TMP" "$COLI_TEST_KEEP"
	rm -rf "$SRV_TMP"
}

# srv_start NAME [serve options...]: sets URL (…/v1) and BASE; logs in $SRV_TMP/NAME.log
srv_start() {
	name=$1
	shift
	: >"$SRV_TMP/$name.url"
	"$COLI" serve "$SRV_MODEL" --port 0 --threads 1 "$@" >"$SRV_TMP/$name.url" 2>"$SRV_TMP/$name.log" &
	SRV_PID=$!
	SRV_PIDS="$SRV_PIDS $SRV_PID"
	i=0
	while [ ! -s "$SRV_TMP/$name.url" ]; do
		kill -0 "$SRV_PID" 2>/dev/null || { cat "$SRV_TMP/$name.log"; srv_fail "coli serve exited"; }
		i=$((i + 1))
		[ $i -lt 600 ] || srv_fail "coli serve did not start"
		sleep 0.1
	done
	URL=$(head -n1 "$SRV_TMP/$name.url")
	BASE=${URL%/v1}
}

# srv_stop: SIGTERM the latest server and require a clean exit.
srv_stop() {
	kill -TERM "$SRV_PID"
	wait "$SRV_PID" || srv_fail "coli serve exited with status $? on SIGTERM"
	SRV_PIDS=$(echo "$SRV_PIDS" | sed "s/ $SRV_PID\b//")
}

# srv_setup_glm5: srv_tmp and a tiny synthesized f32 model whose chat
# template is GLM-5's (tests/node/fixtures/glm5_chat_template.jinja: it
# opens a thinking block) in SRV_MODEL.
srv_setup_glm5() {
	srv_tmp
	"$COLI" synth "$SRV_TMP/hf" --preset tiny >/dev/null 2>"$SRV_TMP/synth.log" || srv_fail "coli synth failed"
	${PYTHON3:-/usr/bin/python3} - "$SRV_TMP/hf/tokenizer_config.json" \
		"${top_srcdir:-.}/tests/node/fixtures/glm5_chat_template.jinja" <<'PY' || srv_fail "cannot set the template"
import json, sys
p, t = sys.argv[1], sys.argv[2]
c = json.load(open(p, encoding="utf-8"))
c["chat_template"] = open(t, encoding="utf-8").read()
json.dump(c, open(p, "w", encoding="utf-8"), ensure_ascii=False)
PY
	"$COLI" convert "$SRV_TMP/hf" "$SRV_TMP/model" --quant f32 >/dev/null 2>"$SRV_TMP/convert.log" ||
		srv_fail "coli convert failed"
	SRV_MODEL="$SRV_TMP/model"
}
