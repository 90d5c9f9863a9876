#!/bin/sh
# avx512_env.sh - the kernels' code path is chosen once per process: the
# best the CPU has, or $COLI_KERNELS_ISA when it names a path the CPU has;
# an unknown or unsupported name is warned about and the best path used.
set -u
bin=${top_builddir:-.}/tests/quant_kernels_test
fail=0

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
best=generic
if [ "$(uname -m)" = x86_64 ] && has avx2 && has fma && has f16c; then
	best=avx2
	if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
		best=avx512
	fi
fi

check() { # env-value expected [warn]
	err=$(mktemp) || exit 1
	if [ -n "$1" ]; then
		got=$(COLI_KERNELS_ISA=$1 "$bin" --print-isa 2>"$err")
	else
		got=$(env -u COLI_KERNELS_ISA "$bin" --print-isa 2>"$err")
	fi
	if [ "$got" != "$2" ]; then
		echo "FAIL: COLI_KERNELS_ISA='$1': path '$got', expected '$2'"
		fail=1
	fi
	if [ "${3:-}" = warn ] && ! grep -q "COLI_KERNELS_ISA=$1" "$err"; then
		echo "FAIL: COLI_KERNELS_ISA='$1': no warning"
		fail=1
	fi
	if [ "${3:-}" != warn ] && [ -s "$err" ]; then
		echo "FAIL: COLI_KERNELS_ISA='$1': unexpected stderr: $(cat "$err")"
		fail=1
	fi
	rm -f "$err"
}

echo "best path on this machine: $best"
check "" "$best"
check auto "$best"
check generic generic
check no-such-path "$best" warn
for p in avx2 avx512; do
	case "$best:$p" in
	avx512:*|avx2:avx2) check $p $p ;;
	*) check $p "$best" warn ;;
	esac
done
exit $fail
