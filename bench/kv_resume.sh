#!/bin/sh
# kv_resume.sh - what a persisted KV session buys: resuming an N-token
# conversation from its session file against re-evaluating the same tokens
# (re-prefill), on the same model in one invocation, plus the session's
# bytes on disk per token next to the KV payload per token.
#
#   bench/kv_resume.sh [--tokens N] [--preset P] [--quant Q] [--work DIR]
#                      [--threads N] [--coli PATH]
#
# Defaults: 4000 tokens, `coli synth --preset glm5-tiny` converted to
# int4-g64, in a temporary WORK directory (removed unless --work is given).
# Steps: a session is written by `coli generate --session s` with an
# N-token prompt; then, interleaved, (a) the session resumed with one new
# token and (b) the same history plus that token as a stateless prompt.
# Both must produce the same next token; each time is the time to first
# token reported by --stats (which includes loading the session or the
# prefill). Prints one JSON object: resume_s, prefill_s, their ratio,
# bytes_per_token on disk and kv_bytes_per_token (layers x (kv_lora_rank +
# qk_rope_head_dim) x 4).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
ntok=4000 preset=glm5-tiny quant=int4-g64 work="" threads=0 coli=${COLI:-}
. "$top/bench/bench_args.sh"
bench_args kv_resume.sh 2,19 '--tokens=ntok --preset=preset --quant=quant --work=work --threads=threads
	--coli=coli' "$@"
. "$top/bench/find_coli.sh"
find_coli kv_resume.sh
keep=1
if [ -z "$work" ]; then
	work=$(mktemp -d)
	keep=0
fi
cleanup() { [ $keep = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
if [ ! -f "$work/model/manifest.json" ]; then
	"$coli" synth "$work/hf" --preset "$preset" >/dev/null
	"$coli" convert "$work/hf" "$work/model" --quant "$quant" >/dev/null 2>"$work/convert.log"
	rm -rf "$work/hf"
fi
rm -rf "$work/cache"
ctx=$((ntok + 64))
gen() { "$coli" generate "$work/model" --cache-dir "$work/cache" --threads "$threads" --ctx "$ctx" \
	--ids --ignore-eos --stats "$@"; }
# an N-token prompt of ids in 10..409 (inside every preset's vocabulary)
ids=$(python3 -c "import sys; n=int(sys.argv[1]); print(','.join(str(10 + (i * 7919) % 400) for i in range(n)))" "$ntok")
first=$(gen --session s --tokens "$ids" -n 1 2>/dev/null)
hist="$ids,$first"
ttft() { sed -n 's/.*ttft \([0-9.]*\) ms.*/\1/p' "$1"; }
best_r="" best_p=""
for round in 1 2 3; do
	# resume: copy the session so each round starts from the same file
	rm -rf "$work/cache/kv/r.kv"
	cp "$work/cache/kv/s.kv" "$work/cache/kv/r.kv"
	tr=$(gen --session r --tokens 7 -n 1 2>"$work/resume.err")
	tp=$(gen --tokens "$hist,7" -n 1 2>"$work/prefill.err")
	[ "$tr" = "$tp" ] || { echo "kv_resume.sh: resumed next token $tr != re-prefilled $tp" >&2; exit 1; }
	grep -q "($ntok cached)\|($((ntok + 1)) cached)" "$work/resume.err" ||
		{ echo "kv_resume.sh: the resume did not reuse the session: $(cat "$work/resume.err")" >&2; exit 1; }
	r=$(ttft "$work/resume.err") p=$(ttft "$work/prefill.err")
	best_r=$(python3 -c "import sys; a=sys.argv[1]; b=float(sys.argv[2]); print(b if not a else min(float(a), b))" "$best_r" "$r")
	best_p=$(python3 -c "import sys; a=sys.argv[1]; b=float(sys.argv[2]); print(b if not a else min(float(a), b))" "$best_p" "$p")
done
size=$(stat -c %s "$work/cache/kv/s.kv")
python3 - "$work/model/manifest.json" "$size" "$((ntok + 1))" "$best_r" "$best_p" "$ntok" <<'PY'
import json, sys
man = json.load(open(sys.argv[1]))
cfg = man.get("config", man)
L = cfg["num_hidden_layers"]
W = cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
size, n = int(sys.argv[2]), int(sys.argv[3])
r, p = float(sys.argv[4]) / 1000, float(sys.argv[5]) / 1000
print(json.dumps({"tokens": int(sys.argv[6]), "resume_s": round(r, 4), "prefill_s": round(p, 3),
                  "prefill_over_resume": round(p / r, 1) if r > 0 else None,
                  "bytes_per_token": round(size / n, 1), "kv_bytes_per_token": L * W * 4}))
PY
