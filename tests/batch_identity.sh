#!/bin/sh
# coli batch with many sequences in flight (issue 27):
#  1. greedy output byte-identical at --parallel 1, 16, 64 and 256 on the
#     default model (300 mixed requests), with 1 and 2 threads and the
#     input lines in another order; and on a synthesized DSA variant
#     (index_topk 4) in f32 and int4;
#  2. --parallel 256 with a context far beyond the memory limit, inside a
#     small memory cgroup (v1), completes with every answer identical and
#     no OOM kill: the KV budget holds it and says so;
#  3. kill -9 mid-run at --parallel 64, then resume: every custom_id
#     answered exactly once, identical to --parallel 1.
# Under COLI_TEST_SANITIZED=1: 64 requests, no 256 on the DSA variant.
set -u
. "$top_srcdir/tests/test_skip.sh"
[ -n "${COLI:-}" ] && [ -x "$COLI" ] || { echo "FAIL: \$COLI not built"; exit 1; }
PY=${PYTHON3:-python3}
T=$(mktemp -d)
CG=/sys/fs/cgroup/memory/coli-test-batch-$$
PID=
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ -d "$CG" ] && rmdir "$CG" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLI_CACHE_DIR="$T/cache"
N=300
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && N=64
"$PY" "$top_srcdir/tests/batch_mkinput.py" $N "$T/in.jsonl" || fail "mkinput"
# the same lines, reversed (admission takes the longest first, so only
# the order among equal lengths changes with it)
"$PY" -c 'import sys; l = open(sys.argv[1]).readlines(); open(sys.argv[2], "w").writelines(l[::-1])' \
	"$T/in.jsonl" "$T/rev.jsonl" || fail "reverse"

# same.py A B: the same custom_ids, each with the same text, finish_reason
# and usage (completion tokens where no stop string is involved)
cat >"$T/same.py" <<'EOF'
import json, sys
def load(p):
    d = {}
    for l in open(p):
        o = json.loads(l)
        if o["custom_id"] in d:
            sys.exit("%s: %s answered twice" % (p, o["custom_id"]))
        r = o["response"]
        if o["error"] is not None or r["status_code"] != 200:
            sys.exit("%s: not a 200 answer: %s" % (p, l[:200]))
        b = r["body"]
        if isinstance(b, str):  # a body with U+0000 written as a string
            b = json.loads(b)
        c = b["choices"][0]
        text = c["text"] if "text" in c else c["message"]["content"]
        stop = c["finish_reason"] == "stop"
        d[o["custom_id"]] = (text, c["finish_reason"], b["usage"]["prompt_tokens"],
                             None if stop else b["usage"]["completion_tokens"])
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
if set(a) != set(b):
    sys.exit("%d vs %d answers" % (len(a), len(b)))
bad = [k for k in a if a[k] != b[k]]
if bad:
    sys.exit("%d of %d differ, first %s: %r vs %r" % (len(bad), len(a), bad[0], a[bad[0]], b[bad[0]]))
print("%d answers identical" % len(a))
EOF

run() { # MODEL IN OUT ARGS...: coli batch, fail on a non-zero exit
	m=$1 i=$2 o=$3
	shift 3
	"$COLI" batch $m "$i" "$o" -q "$@" 2>"$o.log" || { cat "$o.log"; fail "coli batch $* exited $?"; }
}

# --- 1. identity ------------------------------------------------------------
run "" "$T/in.jsonl" "$T/p1.jsonl" --parallel 1
for p in 16 64 256; do
	run "" "$T/in.jsonl" "$T/p$p.jsonl" --parallel $p
	"$PY" "$T/same.py" "$T/p1.jsonl" "$T/p$p.jsonl" || fail "default model: --parallel $p differs from 1"
	grep -q "^batch: $p slots" "$T/p$p.jsonl.log" || fail "--parallel $p: $(grep slots "$T/p$p.jsonl.log")"
done
run "" "$T/rev.jsonl" "$T/rev.jsonl.out" --parallel 64 --threads 1
"$PY" "$T/same.py" "$T/p1.jsonl" "$T/rev.jsonl.out" || fail "reversed input, 1 thread, differs"
run "" "$T/in.jsonl" "$T/auto.jsonl"
"$PY" "$T/same.py" "$T/p1.jsonl" "$T/auto.jsonl" || fail "--parallel auto differs"

# a reference variant with the DSA indexer (rows attending to their own
# selection share steps with rows attending to every key)
"$COLI" synth "$T/hfd" --preset tiny --seed 12 --layers 3 --index-topk 4 --indexer-types FSF >/dev/null ||
	fail "synth"
"$PY" - "$T/in.jsonl" "$T/small.jsonl" <<'EOF' || fail "small input"
import json, sys
with open(sys.argv[2], "w") as f:
    for l in list(open(sys.argv[1]))[:80]:
        o = json.loads(l)
        o["body"]["model"] = "dsa"  # the served id: the directory's name
        f.write(json.dumps(o) + "\n")
EOF
ps="16 64 256"
[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && ps="16 64"
for q in f32 int4-g64; do
	mkdir -p "$T/$q"
	"$COLI" convert "$T/hfd" "$T/$q/dsa" --quant $q >/dev/null 2>&1 || fail "convert $q"
	run "$T/$q/dsa" "$T/small.jsonl" "$T/dsa-$q-1.jsonl" --parallel 1
	for p in $ps; do
		run "$T/$q/dsa" "$T/small.jsonl" "$T/dsa-$q-$p.jsonl" --parallel $p
		"$PY" "$T/same.py" "$T/dsa-$q-1.jsonl" "$T/dsa-$q-$p.jsonl" || fail "DSA $q: --parallel $p differs"
	done
done

# --- 2. kill -9 mid-run, resume -------------------------------------------------
"$COLI" batch "$T/in.jsonl" "$T/k.jsonl" --parallel 64 -q 2>/dev/null &
PID=$!
# wait for the first answers, then kill
i=0
while [ $i -lt 600 ] && ! [ -s "$T/k.jsonl" ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $PID 2>/dev/null
wait $PID 2>/dev/null
PID=
before=$(wc -l <"$T/k.jsonl")
run "" "$T/in.jsonl" "$T/k.jsonl" --parallel 64
"$PY" "$T/same.py" "$T/p1.jsonl" "$T/k.jsonl" || fail "resumed run differs or answers twice"
# --- 3. --parallel 256 in a small memory cgroup (last: it may skip) --------------------------------
if [ -w /sys/fs/cgroup/memory ] && mkdir "$CG" 2>/dev/null; then
	# the default model's KV is ~2.5 KB a token: 256 x 1024 tokens is
	# 640 MiB, far beyond a 160 MiB limit (the model and the step fit)
	MB=160
	[ "${COLI_TEST_SANITIZED:-0}" = 1 ] && MB=512 # shadow memory; still below the KV asked
	echo $((MB * 1024 * 1024)) >"$CG/memory.limit_in_bytes"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$COLI" batch "$T/in.jsonl" "$T/cg.jsonl" \
		--parallel 256 -q 2>"$T/cg.log"
	rc=$?
	failcnt=$(cat "$CG/memory.failcnt")
	oom=$(awk '/^oom_kill /{print $2}' "$CG/memory.oom_control")
	rmdir "$CG"
	[ "${oom:-0}" = 0 ] || fail "the OOM killer ran in the cgroup ($oom)"
	[ $rc = 0 ] || { cat "$T/cg.log"; fail "--parallel 256 in a $MB MiB cgroup exited $rc (failcnt $failcnt)"; }
	grep -q "KV held to" "$T/cg.log" || { cat "$T/cg.log"; fail "no word that the KV was held back"; }
	"$PY" "$T/same.py" "$T/p1.jsonl" "$T/cg.jsonl" || fail "cgroup run differs"
	echo "cgroup: --parallel 256 in $MB MiB completed (failcnt $failcnt, oom_kill ${oom:-0})"
else
	test_skip "no writable cgroup v1 memory controller: the small-memory case did not run"
fi

echo "batch identity: --parallel 1/16/64/256/auto, 1-2 threads, DSA f32/int4 identical; kill -9 after $before answers resumed"
exit 0
