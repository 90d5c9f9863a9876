#!/bin/sh
# check-claims.sh - run the commands behind README.md's Numbers table on
# this machine and print each figure next to what the README says.
#
#   tools/check-claims.sh [--quick | --all] [--coli PATH] [--only NAME]
#
# --quick (the default) runs the checks that take seconds to a couple of
# minutes on tiny models: ref (forward pass vs the numpy reference), mtp,
# quant (quantization error), default (the shipped model's held-out loss
# and MTP acceptance), kv (session resume vs re-prefill, bytes per token),
# tiktoken (Kimi-format tokenizer vs js-tiktoken). --all adds the ones that
# measure speed on this machine: kernels (int4 matvec bandwidth / triad),
# tokenizer (throughput), http (tests/server_load.py), idle (colitop's
# idle CPU), dsa (bench/dsa_decode.sh: the DSA indexer against dense
# MLA on a GLM-5-shaped slice, synthesized once into
# /var/tmp/coli-dsa-bench, 700 MB, and reused), batch
# (bench/batch_parallel.sh --requests 16: coli batch --parallel 1, 4, 8, 16
# on the GLM-5 slice, 1/3 of the experts cached, memory cgroup; about 40
# minutes on a busy 2-core machine, 2.7 GB kept in /var/tmp/coli-glm5-slice,
# root for the cgroup), stalled (bench/stalled_client.sh) and admission
# (bench/session_admission.sh); the other GLM-5 slice figures need
# bench/glm5_slice.sh (tens of minutes and 40 GB of disk: run it by hand,
# see bench/README.md). Run --all under `nice -n -10` on a quiet machine.
# Output: one line per figure, "NAME: measured ... | README: ...".
# Exit status 1 when a command failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mode=quick coli=${COLI:-} only=""
. "$top/bench/bench_args.sh"
bench_args check-claims.sh 2,25 '--quick:mode=quick --all:mode=all --coli=coli --only=only' "$@"
. "$top/bench/find_coli.sh"
find_coli check-claims.sh
builddir=$(cd "$(dirname "$coli")" && pwd)
# the Debian python3 the tests use (python3-httpx, -numpy, -jsonschema are
# installed for it by tools/install-deps.sh); a python3 earlier on PATH
# (pyenv) may lack them
PY=${PYTHON3:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

readme() { # the README (or bench/README) row whose first cell contains $1
	grep -F -h "| $1" "$top/README.md" "$top/bench/README.md" | head -n1 | sed 's/^| [^|]* | //; s/ |$//'
}
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
say() { # NAME MEASURED README-KEY
	printf '%s: measured %s\n    README: %s\n' "$1" "$2" "$(readme "$3")"
}
failed() { echo "$1: FAILED ($2)"; status=1; }
# last N both|out CMD...: run CMD keeping its stdout (and its stderr with
# "both"), print the last N lines on one line, and return CMD's status;
# `m=$(CMD | tail)` would return tail's, so a failing bench would pass.
last() {
	_n=$1 _w=$2
	shift 2
	if [ "$_w" = both ]; then
		"$@" >"$tmp/last" 2>&1
	else
		"$@" >"$tmp/last" 2>/dev/null
	fi
	_rc=$?
	tail -n "$_n" "$tmp/last" | tr '\n' ' '
	return $_rc
}
# bench_json NAME SCRIPT README-KEY EXPR: run bench/SCRIPT, whose last
# stdout line is a JSON object d, and say NAME with the text the Python
# expression EXPR makes of d.
bench_json() {
	if m=$(last 1 out sh "$top/bench/$2" --coli "$coli") &&
		m=$(echo "$m" | "$PY" -c "import json,sys; d=json.load(sys.stdin); print($4)"); then
		say "$1" "$m" "$3"
	else
		failed "$1" "bench/$2"
	fi
}

if want ref; then
	if COLI=$coli top_srcdir=$top sh "$top/tests/ref_forward.sh" >"$tmp/ref.log" 2>&1; then
		m=$("$PY" - "$tmp/ref.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
f32 = [r for r in rows if r["quant"] == "f32"]
print("%d f32 variants, worst relative logit difference %.1e, incremental decode = full pass in %d of %d" % (
    len({r["name"] for r in f32}), max(r["worst_rel"] for r in f32),
    sum(1 for r in f32 if r.get("incremental_rel", 1) == 0.0), len(f32)))
PY
)
		say ref "$m" "forward pass vs independent numpy reference"
	else
		failed ref "tests/ref_forward.sh; see its output"
	fi
fi

if want mtp; then
	if COLI=$coli top_srcdir=$top sh "$top/tests/core_mtp.sh" >"$tmp/mtp.log" 2>&1; then
		m=$("$PY" -c 'import json,sys; print("%.1e" % max(json.loads(l)["mtp_f32_worst_rel"] for l in open(sys.argv[1]) if "mtp_f32_worst_rel" in l))' "$tmp/mtp.log")
		say mtp "worst relative difference $m" "MTP head vs reference"
	else
		failed mtp "tests/core_mtp.sh"
	fi
fi

if want quant; then
	if "$coli" synth "$tmp/q-hf" --preset glm5-tiny --seed 1 >/dev/null 2>&1 &&
		"$coli" convert "$tmp/q-hf" "$tmp/q4" --quant int4-g64 >/dev/null 2>&1 &&
		"$coli" convert "$tmp/q-hf" "$tmp/q8" --quant int8 >/dev/null 2>&1; then
		m=$("$PY" - "$tmp/q4/manifest.json" "$tmp/q8/manifest.json" <<'PY'
import json, sys
def errs(p, qt):
    q = json.load(open(p))["quant_error"]
    return {k: (v["rel_rms"], v.get("rel_rms_sym_int4")) for k, v in q.items()
            if isinstance(v, dict) and v.get("qtype") == qt}
e4, e8 = errs(sys.argv[1], "int4-g64"), errs(sys.argv[2], "int8")
a = [v[0] for v in e4.values()]
s = [v[1] for v in e4.values() if v[1] is not None]
b = [v[0] for v in e8.values()]
txt = "int4-g64 %.3f-%.3f" % (min(a), max(a))
if s:
    txt += " (symmetric %.3f-%.3f)" % (min(s), max(s))
txt += ", int8 %.4f-%.4f (rel. RMS by tensor class, glm5-tiny)" % (min(b), max(b))
print(txt)
PY
)
		say quant "$m" "quantization error"
	else
		failed quant "coli synth/convert"
	fi
fi

if want default; then
	model="$top/data/default-model"
	if "$coli" perplexity "$model" "$top/data/eval/val.txt" >"$tmp/ppl" 2>&1 &&
		"$coli" perplexity "$model" "$top/data/eval/val.txt" --mtp >"$tmp/mtp-ppl" 2>&1; then
		loss=$(sed -n 's/^loss \([0-9.]*\) nats.*/\1/p' "$tmp/ppl" | head -n1)
		acc=$(sed -n 's/^MTP draft acceptance \([0-9.]*\).*/\1/p' "$tmp/mtp-ppl" | head -n1)
		say default "held-out loss $loss nats/token; MTP acceptance $acc" "default model"
	else
		failed default "coli perplexity"
	fi
fi

if want kv; then
	if m=$(sh "$top/bench/kv_resume.sh" --coli "$coli" --preset tiny --tokens 4000 2>/dev/null); then
		say kv "$m" "KV session resume"
	else
		failed kv "bench/kv_resume.sh"
	fi
fi

if want tiktoken; then
	if COLI=$coli top_srcdir=$top sh "$top/tests/tokenizer_tiktoken.sh" >"$tmp/tt.log" 2>&1; then
		say tiktoken "$(grep mismatches "$tmp/tt.log" | sed 's/^.*\///' | tr '\n' ';')" "tokenizer, Kimi-K2"
	else
		failed tiktoken "tests/tokenizer_tiktoken.sh"
	fi
fi

[ $mode = all ] || exit $status

if want kernels; then
	# One `coli bench` per kernel path: each measures the STREAM triad and
	# the int4 matvecs in the same invocation, on the same 2 threads, so
	# each ratio has its own triad (both best-of-passes).
	m= kfail=
	for isa in avx512 avx2; do
		if COLI_KERNELS_ISA=$isa "$coli" bench "$top/data/default-model" --threads 2 --prompt 1 --gen 1 \
			>"$tmp/bench-$isa.json" 2>"$tmp/bench-$isa.err"; then
			m="$m$("$PY" - "$tmp/bench-$isa.json" "$isa" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))["kernels"]
if k["isa"] != sys.argv[2]:
    print("%s: not on this CPU (ran %s); " % (sys.argv[2], k["isa"]))
    sys.exit(0)
r = sorted(x["ratio_to_triad"] for x in k["int4"])
print("%s %.2f-%.2f (median %.2f; %d shapes, triad %.1f GB/s, int4 %.1f-%.1f GB/s, %d threads); " % (
    k["isa"], r[0], r[-1], r[len(r) // 2], len(r), k["triad"]["gbps"],
    min(x["gbps"] for x in k["int4"]), max(x["gbps"] for x in k["int4"]), k["threads"]))
PY
)"
		else
			kfail="$kfail $isa: $(tail -n 1 "$tmp/bench-$isa.err");"
		fi
	done
	if [ -z "$kfail" ]; then
		say kernels "int4 matvec / triad: $m" "int4 matvec bandwidth"
	else
		failed kernels "coli bench with COLI_KERNELS_ISA=$kfail"
	fi
fi

if want tokenizer; then
	if m=$(last 3 both sh "$top/bench/tokenizer_bench.sh"); then
		say tokenizer "$m" "tokenizer, DeepSeek-V3"
	else
		failed tokenizer "bench/tokenizer_bench.sh"
	fi
fi

if want http; then
	# tests/server_load.py drives a running server: serve the tiny
	# synthesized model on a free port for the README's 32 clients x 30 s
	if "$coli" synth "$tmp/http-hf" --preset tiny >"$tmp/http.log" 2>&1 &&
		"$coli" convert "$tmp/http-hf" "$tmp/http-model" --quant f32 >>"$tmp/http.log" 2>&1; then
		"$coli" serve "$tmp/http-model" --port 0 --max-queue 64 >"$tmp/http-url" 2>>"$tmp/http.log" &
		http_pid=$!
		while [ ! -s "$tmp/http-url" ] && kill -0 $http_pid 2>/dev/null; do sleep 0.1; done
		if [ -s "$tmp/http-url" ] &&
			m=$(last 3 both "$PY" "$top/tests/server_load.py" --url "$(head -n1 "$tmp/http-url")" \
				--clients 32 --seconds 30); then
			say http "$m" "HTTP"
		else
			failed http "tests/server_load.py: $(tail -n 1 "$tmp/last" "$tmp/http.log" 2>/dev/null | tr '\n' ' ')"
		fi
		kill $http_pid 2>/dev/null
		wait $http_pid 2>/dev/null
	else
		failed http "the tiny model: $(tail -n 1 "$tmp/http.log")"
	fi
fi

if want dsa; then
	if m=$(last 9 both nice -n -10 sh "$top/bench/dsa_decode.sh" --coli "$coli" --reuse); then
		say dsa "$m" "DSA sparse attention"
	else
		failed dsa "bench/dsa_decode.sh"
	fi
fi

if want stalled; then
	bench_json stalled stalled_client.sh "decode rate of a slot beside a client that stops" \
		'"decode rate beside a stalled reader / beside a reading one %.2f (alone %.0f, reading %.0f, stalled %.0f tok/s; the stalled one cancelled after %d-%d tokens)" % (d["ratio_stalled_to_reading"], d["b_tps_alone"], d["b_tps_beside_reading"], d["b_tps_beside_stalled"], *d["a_tokens_before_cancel"])'
fi

if want admission; then
	bench_json admission session_admission.sh "admission of a request without a session" \
		'"TTFT beside 10/100/1000 sessions %.2f/%.2f/%.2f ms (1000/10 = %.2f, flat if <= %.1f: %s); index lookup %.2f/%.2f/%.2f us" % (*d["ttft_ms"], d["ttft_ratio_1000_to_10"], d["flat_bound"], "yes" if d["flat"] else "no", *d["lookup_us"])'
fi

if want idle; then
	if m=$(last 2 both env COLI="$coli" sh "$top/tui/bench_colitop.sh"); then
		say idle "$m" "colitop idle CPU"
	else
		failed idle "tui/bench_colitop.sh"
	fi
fi

if want batch; then
	if nice -n -10 sh "$top/bench/batch_parallel.sh" --coli "$coli" --reuse --requests 16 >"$tmp/batch.md" 2>"$tmp/batch.log"; then
		m=$("$PY" - "$tmp/batch.md" <<'PY'
import sys
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in open(sys.argv[1])
        if l.startswith("| ") and l[2].isdigit()]
print("; ".join("P=%s %s tok/s (%sx), %s MB/token (%sx), hit %s" % (r[0], r[3], r[4], r[5], r[6], r[7])
                for r in rows))
PY
)
		say batch "$m" "coli batch on the GLM-5 slice"
	else
		tail -n 3 "$tmp/batch.log"
		failed batch "bench/batch_parallel.sh"
	fi
fi
exit $status
