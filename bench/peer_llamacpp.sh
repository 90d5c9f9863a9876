#!/bin/sh
# peer_llamacpp.sh - colitop against llama.cpp on the same GLM-5-shaped
# slice, in one invocation, interleaved A/B (issue 21). Never part of
# `make check`.
#
#   bench/peer_llamacpp.sh [--work DIR] [--reuse] [--rounds N] [--threads N]
#                          [--gen N] [--prompt N] [--pp N] [--throttle BPS]
#                          [--cold-gen N] [--no-cold] [--no-warm] [--pp-chunk C]
#                          [--prebuilt]
#                          [--llama-bench PATH] [--llama-args ARGS] [--coli PATH]
#
# llama.cpp, the way a user here can have it: a `llama-bench` on PATH (or
# --llama-bench PATH), else the llama.cpp source that the npm package
# node-llama-cpp@3.21.1 ships as a git bundle (package/llama/gitRelease.bundle,
# fetched with `npm pack` from the configured registry), cloned and built
# with cmake (llama-bench only: -DLLAMA_CURL=OFF, no server/tests/examples,
# native CPU flags, under nice -n 10) in ~/.cache/colitop-peer (or
# $XDG_CACHE_HOME/colitop-peer); the build is kept and reused (1 h 42 min
# on 2 busy cores here). --prebuilt instead takes the libraries node-llama-cpp
# ships prebuilt for linux-x64 (npm pack @node-llama-cpp/linux-x64@3.21.1:
# libllama, libggml with CPU variants chosen at run time) and compiles only
# llama-bench against them (minutes). The GGUF
# writer is that source's gguf-py, driven by bench/slice_to_gguf.py with
# Debian's python3-numpy (`apt-get install python3-numpy`). Where neither
# npm nor a llama-bench is there, or numpy is missing, it says so and
# exits 77 (skipped).
#
# The slice is bench/glm5_slice.sh's: `coli synth --preset glm5-slice
# --layers 3 --dense-layers 1 --experts 64 --dtype fp8 --vocab 4096`, then
# `coli convert --quant int4-g64` for colitop and slice_to_gguf.py --quant
# q4_0 for llama.cpp. Q4_0 is the llama.cpp type closest to int4-g64: both
# symmetric 4-bit with one scale per group, 4.5 bits per weight (Q4_0: f16
# scale per 32; int4-g64: f32 scale per 64); routers F32 in both.
#
# Each round runs, colitop then llama.cpp (so noise hits both sides):
#   warm   decode, every expert in RAM: coli bench --expert-cache ALL
#          --prompt P --gen G vs llama-bench -d P -n G (repacked weights,
#          llama.cpp's default); tokens/s of the G decoded tokens; colitop
#          also with --act-quant q8 (activations in int8, as llama.cpp's
#          Q4_0 kernels quantize them to Q8_0), against the same llama runs
#   pp     prefill of --pp tokens (default 512), every expert in RAM:
#          coli bench --prompt PP --gen 1 --warmup vs llama-bench -p PP
#          -n 0 (both run the prompt once untimed first: llama-bench's
#          warm-up, colitop's --warmup, so neither times reading weights
#          into the process); colitop also with --act-quant q8 (ppq8);
#          --pp-chunk C sets colitop's --prefill-batch (default: coli
#          bench's 64; llama.cpp's micro-batch is 512)
#   cold   decode of --cold-gen tokens (default --gen) inside a cgroup v1
#          memory group of dense + 1/3 of the experts + 256 MiB (as
#          glm5_slice.sh): coli bench --cold --expert-cache 1/3 vs
#          llama.cpp on the mmap'd file (-lm mmap), its page cache dropped
#          first, with its CPU weight repacking off (what llama-cli and
#          llama-server call --no-repack), a 32-token batch (-b 32 -ub 32).
#          Repacking is what the group killed: llama.cpp copies every
#          Q4_0 tensor it can repack (all experts included, even under
#          -ot exps=CPU, which in this version picks CPU_REPACK) into
#          anonymous memory, 3.0 GB against the group's 1.6 GB, so its
#          default cannot run in any group smaller than the model.
#          llama-bench has no flag for it, so the harness compiles
#          llama-bench-norepack: llama-bench.cpp with
#          mparams.use_extra_bufts = false, linked against the same
#          libraries (seconds). Each cold run's peak group usage and OOM
#          kills are kept (cold-*.mem). With --throttle BPS both engines
#          run a second cold case under a blkio read cap of BPS bytes/s
#          on the model's disk (the "cold, capped" row)
# and prints the median of each side over the rounds and the ratio
# colitop / llama.cpp (> 1: colitop faster). Results: WORK/results/
# (peer.json, peer.md). --threads defaults to the online cores.
# --llama-args adds flags to every llama-bench run (e.g. "--poll 0": its
# threads sleep instead of spinning at barriers, which a busy, shared
# machine punishes; the default is what users get, and what is measured).
# --no-warm leaves out the warm decode rows (a prefill-only comparison).
# --reuse keeps WORK (checkpoint, container, GGUF) for the next run.
# Needs root for the cgroups (the cold row is skipped with a note otherwise).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/coli-peer
reuse=0 rounds=3 threads=0 gen=64 prompt=25 pp=512 throttle=0 cold=1 cgen= warm=1 ppchunk=0
coli=${COLI:-} lbench='' prebuilt=0 lextra=
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--reuse) reuse=1 ;;
	--rounds) rounds=$2; shift ;;
	--threads) threads=$2; shift ;;
	--gen) gen=$2; shift ;;
	--prompt) prompt=$2; shift ;;
	--pp) pp=$2; shift ;;
	--throttle) throttle=$2; shift ;;
	--no-cold) cold=0 ;;
	--cold-gen) cgen=$2; shift ;;
	--no-warm) warm=0 ;;
	--pp-chunk) ppchunk=$2; shift ;;
	--llama-bench) lbench=$2; shift ;;
	--prebuilt) prebuilt=1 ;;
	--llama-args) lextra=$2; shift ;;
	--coli) coli=$2; shift ;;
	-h|--help) sed -n '2,74p' "$0"; exit 0 ;;
	*) echo "peer_llamacpp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
. "$top/bench/find_coli.sh"
find_coli peer_llamacpp.sh
py=/usr/bin/python3
[ "$threads" -gt 0 ] || threads=$(nproc)
skip() { echo "peer_llamacpp.sh: skipped: $*" >&2; exit 77; }

# --- 1. llama.cpp -------------------------------------------------------------
cache=${XDG_CACHE_HOME:-$HOME/.cache}/colitop-peer
src=$cache/llama.cpp
pkg=node-llama-cpp@3.21.1
[ -n "$lbench" ] || lbench=$(command -v llama-bench 2>/dev/null || true)
if [ ! -d "$src/gguf-py" ]; then
	command -v npm >/dev/null || skip "no npm to fetch $pkg (llama.cpp's source, for gguf-py and the build)"
	command -v git >/dev/null || skip "no git to clone the llama.cpp bundle"
	mkdir -p "$cache"
	echo "peer_llamacpp.sh: npm pack $pkg into $cache" >&2
	(cd "$cache" && npm pack --silent "$pkg" >/dev/null) || skip "npm pack $pkg failed"
	tgz=$cache/node-llama-cpp-${pkg#*@}.tgz
	tar -xzf "$tgz" -C "$cache" package/llama/gitRelease.bundle || skip "$tgz has no package/llama/gitRelease.bundle"
	rm -rf "$src"
	git clone -q "$cache/package/llama/gitRelease.bundle" "$src" 2>/dev/null || skip "git clone of the bundle failed"
	rm -rf "$cache/package" "$tgz"
fi
if [ -z "$lbench" ] && [ "$prebuilt" = 1 ]; then
	# node-llama-cpp's prebuilt libraries for this platform (libllama,
	# libllama-common, libggml and its CPU variants picked at run time);
	# only llama-bench itself is compiled, from the bundle's source
	pdir=$cache/prebuilt/package/bins/linux-x64
	lbench=$pdir/llama-bench
	if [ ! -x "$lbench" ]; then
		ppkg=@node-llama-cpp/linux-x64@${pkg#*@}
		mkdir -p "$cache/prebuilt"
		(cd "$cache/prebuilt" && npm pack --silent "$ppkg" >/dev/null) || skip "npm pack $ppkg failed"
		tar -xzf "$cache/prebuilt/node-llama-cpp-linux-x64-${pkg#*@}.tgz" -C "$cache/prebuilt" ||
			skip "cannot unpack $ppkg"
		[ -f "$src/build/common/build-info.h" ] || [ -f "$src/common/build-info.h" ] ||
			skip "no build-info.h in $src/common"
		echo "peer_llamacpp.sh: compiling llama-bench against $ppkg" >&2
		# shellcheck disable=SC2016
		nice -n 10 g++ -std=c++17 -O2 -DNDEBUG -I"$src/include" -I"$src/ggml/include" -I"$src/common" \
			-I"$src/tools/llama-bench" "$src/tools/llama-bench/llama-bench.cpp" \
			"$src/tools/llama-bench/main.cpp" -o "$lbench" -L"$pdir" -l:libllama-common.so \
			-l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,'$ORIGIN' -pthread \
			>"$cache/prebuilt/build.log" 2>&1 || skip "compiling llama-bench failed (see $cache/prebuilt/build.log)"
	fi
fi
if [ -z "$lbench" ]; then
	lbench=$src/build/bin/llama-bench
	if [ ! -x "$lbench" ]; then
		command -v cmake >/dev/null || skip "no cmake to build llama.cpp (apt-get install cmake) and no llama-bench on PATH"
		echo "peer_llamacpp.sh: building llama-bench in $src/build (long on a small machine; kept)" >&2
		nice -n 10 cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
			-DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
			-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
			>"$cache/cmake.log" 2>&1 || skip "cmake configure failed (see $cache/cmake.log)"
		nice -n 10 cmake --build "$src/build" -j"$(nproc)" --target llama-bench \
			>"$cache/build.log" 2>&1 || skip "the llama-bench build failed (see $cache/build.log)"
	fi
fi
# llama-bench-norepack (see cold above): the same llama-bench.cpp with
# repacking off, linked like lbench: against the native build's static
# libraries, or the prebuilt shared ones; a llama-bench on PATH has
# neither, so its cold row is skipped with a note
b=$src/build libs=
if [ "$lbench" = "$b/bin/llama-bench" ] && [ -f "$b/src/libllama.a" ]; then
	lnr=$cache/norepack/llama-bench-norepack
elif [ "$prebuilt" = 1 ] && [ "$lbench" = "${pdir:-}/llama-bench" ]; then
	# beside the libraries: ggml looks for its CPU variants next to the
	# executable
	lnr=$pdir/llama-bench-norepack
else
	lnr=$cache/norepack/none
fi
if [ "$cold" = 1 ] && [ ! -x "$lnr" ] && [ "${lnr##*/}" != none ]; then
	mkdir -p "$cache/norepack"
	sed 's/^\( *\)mparams.no_host *= no_host;/&\n\1mparams.use_extra_bufts = false;/' \
		"$src/tools/llama-bench/llama-bench.cpp" >"$cache/norepack/llama-bench.cpp"
	grep -q 'use_extra_bufts = false' "$cache/norepack/llama-bench.cpp" ||
		skip "cannot turn repacking off in $src/tools/llama-bench/llama-bench.cpp (no mparams.no_host line)"
	if [ "$lnr" = "$cache/norepack/llama-bench-norepack" ]; then
		libs="$b/common/libllama-common.a $b/common/libllama-common-base.a $b/src/libllama.a
			$b/ggml/src/libggml.a $b/ggml/src/libggml-cpu.a $b/ggml/src/libggml-base.a
			$b/vendor/cpp-httplib/libcpp-httplib.a -fopenmp -ldl"
	else
		# shellcheck disable=SC2016
		libs='-L'$pdir' -l:libllama-common.so -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so
			-Wl,-rpath,$ORIGIN'
	fi
	echo "peer_llamacpp.sh: compiling ${lnr##*/} (for the cold rows)" >&2
	# shellcheck disable=SC2086
	nice -n 10 g++ -std=c++17 -O2 -DNDEBUG -I"$src/include" -I"$src/ggml/include" -I"$src/common" \
		-I"$src/tools/llama-bench" "$cache/norepack/llama-bench.cpp" \
		"$src/tools/llama-bench/main.cpp" -o "$lnr" $libs -pthread \
		>"$cache/norepack/build.log" 2>&1 || skip "compiling ${lnr##*/} failed (see $cache/norepack/build.log)"
fi
if [ "$cold" = 1 ] && [ ! -x "$lnr" ]; then
	echo "peer_llamacpp.sh: no libraries to build llama-bench-norepack against ($lbench): no cold row" >&2
	cold=0
fi
[ -n "$cgen" ] || cgen=$gen
echo "peer_llamacpp.sh: using $lbench ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo 'on PATH'))" >&2
"$py" -c 'import numpy' 2>/dev/null || skip "$py has no numpy for the GGUF writer (apt-get install python3-numpy)"

# --- 2. the slice, for both -----------------------------------------------------
hf=$work/hf model=$work/model gguf=$work/slice-q4_0.gguf res=$work/results
cg=/sys/fs/cgroup/memory/coli-peer bg=/sys/fs/cgroup/blkio/coli-peer
mkdir -p "$work" "$res"
# the table reads every round's files it finds: a run with --no-cold (or
# fewer rounds) must not print an earlier run's rows as its own
rm -f "$res"/*-coli-*.json "$res"/*-coli-*.log "$res"/*-llama-*.json "$res"/*-llama-*.log \
	"$res"/*-llama-*.failed "$res"/cold*.mem
cleanup() {
	for d in "$cg" "$bg"; do
		[ -d "$d" ] && { rmdir "$d" 2>/dev/null || true; }
	done
	[ "$reuse" = 1 ] || rm -rf "$hf" "$model" "$gguf"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ ! -f "$model/manifest.json" ] || [ ! -f "$gguf" ]; then
	if [ ! -f "$hf/config.json" ]; then
		echo "peer_llamacpp.sh: coli synth the slice into $hf" >&2
		"$coli" synth "$hf" --preset glm5-slice --layers 3 --dense-layers 1 --experts 64 --dtype fp8 \
			--vocab 4096 >/dev/null
	fi
	[ -f "$model/manifest.json" ] ||
		"$coli" convert "$hf" "$model" --quant int4-g64 >/dev/null 2>"$work/convert.log"
	if [ ! -f "$gguf" ]; then
		echo "peer_llamacpp.sh: slice_to_gguf.py -> $gguf" >&2
		nice -n 10 "$py" "$top/bench/slice_to_gguf.py" "$hf" "$gguf.tmp" --gguf-py "$src/gguf-py" \
			--quant q4_0 2>"$work/gguf.log" || { tail -3 "$work/gguf.log" >&2; exit 1; }
		mv "$gguf.tmp" "$gguf"
	fi
	[ "$reuse" = 1 ] || rm -rf "$hf"
fi
shards=$(ls "$model"/experts/*.bin)
shard1=$(echo "$shards" | head -1)
all=0
for s in $shards; do all=$((all + $(stat -c %s "$s"))); done
rec=$((($(stat -c %s "$shard1")) / 64))
third=$((all / 3 / rec * rec))
cargs="--no-kernels --threads $threads"
wargs="--expert-cache $all --pin-budget 0 --cache-dir $work/cache"
largs="-t $threads -r 1 -o json $lextra"
coli_run() { # NAME CMD...: stdout -> NAME.json
	n=$1; shift
	"$@" >"$res/$n.json" 2>"$res/$n.log" || { echo "peer_llamacpp.sh: $n failed:" >&2; tail -3 "$res/$n.log" >&2; exit 1; }
}
# untimed: both files into the page cache, colitop's routing heat saved
# (its warm runs then read every expert they will use at open)
echo "peer_llamacpp.sh: priming both engines" >&2
# shellcheck disable=SC2086
coli_run prime-coli "$coli" bench "$model" $wargs --prompt "$prompt" --gen "$gen" $cargs
# shellcheck disable=SC2086
coli_run prime-llama "$lbench" -m "$gguf" -p 0 -n 8 $largs
dense=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dense_bytes"])' "$res/prime-coli.json")
limit=$((dense + third + 256 * 1024 * 1024))
echo "peer_llamacpp.sh: experts $all bytes, 1/3 = $third; dense $dense; cgroup $limit; $threads threads; $rounds rounds" >&2

# --- 3. the runs ------------------------------------------------------------------
# in_groups CAP CMD...: CMD inside the memory group (and the blkio one
# when CAP is 1), its peak usage reset first
in_groups() {
	c=$1; shift
	echo 0 >"$cg/memory.max_usage_in_bytes"
	# shellcheck disable=SC2016
	# (sh -c: $0 is the first word after the script, $1 the next)
	if [ "$c" = 1 ]; then
		sh -c 'echo $$ >"$0/cgroup.procs" && echo $$ >"$1/cgroup.procs" && shift && exec "$@"' "$cg" "$bg" "$@"
	else
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
	fi
}
# group_mem NAME: the group's peak usage and OOM kills so far -> NAME.mem
group_mem() {
	echo "max_usage_bytes $(cat "$cg/memory.max_usage_in_bytes") $(grep oom_kill "$cg/memory.oom_control" | tr '\n' ' ')" \
		>"$res/$1.mem"
}
# cold_pair KIND CAP R: colitop then llama.cpp, cold, in the group
cold_pair() {
	# shellcheck disable=SC2086
	coli_run "$1-coli-$3" in_groups "$2" "$coli" bench "$model" --cold --expert-cache "$third" \
		--prompt "$prompt" --gen "$cgen" $cargs
	group_mem "$1-coli-$3"
	dropcache "$gguf"
	# shellcheck disable=SC2086
	in_groups "$2" "$lnr" -m "$gguf" -p 0 -n "$cgen" -d "$prompt" -lm mmap -b 32 -ub 32 \
		--no-warmup $largs >"$res/$1-llama-$3.json" 2>"$res/$1-llama-$3.log" || {
		echo "peer_llamacpp.sh: llama.cpp's $1 run $3 failed ($(tail -1 "$res/$1-llama-$3.log"))" >&2
		: >"$res/$1-llama-$3.failed"; }
	group_mem "$1-llama-$3"
}
dropcache() { # the kernel's page cache of a file, as a cold start has it
	"$py" -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
if [ "$cold" = 1 ]; then
	if [ -w /sys/fs/cgroup/memory ]; then
		mkdir -p "$cg"
		echo "$limit" >"$cg/memory.limit_in_bytes"
		if [ "$throttle" -gt 0 ]; then
			[ -w /sys/fs/cgroup/blkio ] || skip "--throttle: no writable blkio cgroup (v1)"
			majmin=$(stat -c '%Hd:%Ld' "$shard1")
			[ -e "/sys/dev/block/$majmin/partition" ] && majmin=$(cat "/sys/dev/block/$majmin/../dev")
			mkdir -p "$bg"
			echo "$majmin $throttle" >"$bg/blkio.throttle.read_bps_device"
		fi
	else
		echo "peer_llamacpp.sh: no writable cgroup v1 memory controller: no cold row" >&2
		cold=0
	fi
fi
ppargs=
[ "$ppchunk" -gt 0 ] && ppargs="--prefill-batch $ppchunk"
uptime >"$res/uptime-before"
r=1
while [ "$r" -le "$rounds" ]; do
	echo "peer_llamacpp.sh: round $r/$rounds" >&2
	if [ "$warm" = 1 ]; then
		# shellcheck disable=SC2086
		coli_run "warm-coli-$r" "$coli" bench "$model" $wargs --prompt "$prompt" --gen "$gen" $cargs
		# shellcheck disable=SC2086
		coli_run "warmq8-coli-$r" "$coli" bench "$model" $wargs --prompt "$prompt" --gen "$gen" --act-quant q8 $cargs
		# shellcheck disable=SC2086
		coli_run "warm-llama-$r" "$lbench" -m "$gguf" -p 0 -n "$gen" -d "$prompt" $largs
	fi
	# shellcheck disable=SC2086
	coli_run "pp-coli-$r" "$coli" bench "$model" $wargs --prompt "$pp" --gen 1 --warmup $ppargs $cargs
	# shellcheck disable=SC2086
	coli_run "ppq8-coli-$r" "$coli" bench "$model" $wargs --prompt "$pp" --gen 1 --warmup $ppargs --act-quant q8 $cargs
	# shellcheck disable=SC2086
	coli_run "pp-llama-$r" "$lbench" -m "$gguf" -p "$pp" -n 0 $largs
	if [ "$cold" = 1 ]; then
		cold_pair cold 0 "$r"
		if [ "$throttle" -gt 0 ]; then
			cold_pair coldcap 1 "$r"
		fi
	fi
	r=$((r + 1))
done

uptime >"$res/uptime-after"

# --- 4. the table -------------------------------------------------------------------
lver=$(git -C "$src" log -1 --format='%h %cs' 2>/dev/null || echo "$lbench")
cver=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
"$py" - "$res" "$rounds" "$threads" "$throttle" "$pp" "$prompt" "$gen" "$lver" "$cver" "$cgen" <<'EOF' | tee "$res/peer.md"
import json, os, statistics, sys
res, rounds, threads, throttle, pp, prompt, gen, lver, cver, cgen = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9], sys.argv[10]
def coli(kind, r):
    p = os.path.join(res, "%s-coli-%d.json" % (kind, r))
    if not os.path.exists(p):
        return None
    j = json.load(open(p))
    return j["prefill"]["tokens_per_s"] if kind in ("pp", "ppq8") else j["decode"]["tokens_per_s"]
def llama(kind, r):
    p = os.path.join(res, "%s-llama-%d.json" % ({"warmq8": "warm", "ppq8": "pp"}.get(kind, kind), r))
    if not os.path.exists(p) or not os.path.getsize(p):
        return None
    return json.load(open(p))[0]["avg_ts"]
rows, out = [], {}
labels = {"warm": "warm decode (tg%s at depth %s, all in RAM)" % (gen, prompt),
          "warmq8": "warm decode, colitop --act-quant q8 (llama.cpp's Q4_0 path quantizes activations to Q8_0 too)",
          "pp": "prefill pp%s (all in RAM, both warmed up)" % pp,
          "ppq8": "prefill pp%s, colitop --act-quant q8" % pp,
          "cold": "cold decode (tg%s, memory cgroup, 1/3 of experts fit; llama.cpp mmap, no repack)" % cgen,
          "coldcap": "cold decode, reads capped at %.2f GB/s (blkio)" % (throttle / 1e9)}
for kind in ("warm", "warmq8", "pp", "ppq8", "cold", "coldcap"):
    c = [v for v in (coli(kind, r) for r in range(1, rounds + 1)) if v]
    l = [v for v in (llama(kind, r) for r in range(1, rounds + 1)) if v]
    if c and not l and any(os.path.exists(os.path.join(res, "%s-llama-%d.failed" % (kind, r)))
                           for r in range(1, rounds + 1)):
        rows.append("| %s | %.2f | killed by the memory group | - |" % (labels[kind], statistics.median(c)))
        out[kind] = {"colitop_tok_s": c, "llamacpp_tok_s": None, "ratio": None}
        continue
    if not c or not l:
        continue
    mc, ml = statistics.median(c), statistics.median(l)
    out[kind] = {"colitop_tok_s": c, "llamacpp_tok_s": l, "ratio": mc / ml}
    rows.append("| %s | %.2f | %.2f | %.2f |" % (labels[kind], mc, ml, mc / ml))
print("colitop %s (int4-g64) vs llama.cpp %s (Q4_0); %d interleaved rounds, %s threads, medians; "
      "ratio = colitop / llama.cpp; load: %s -> %s" % (cver, lver, rounds, threads,
      open(os.path.join(res, "uptime-before")).read().split("load average:")[-1].strip(),
      open(os.path.join(res, "uptime-after")).read().split("load average:")[-1].strip()))
print()
print("| case | colitop tok/s | llama.cpp tok/s | ratio |")
print("|---|---|---|---|")
print("\n".join(rows))
json.dump(out, open(os.path.join(res, "peer.json"), "w"), indent=1)
EOF
