#!/bin/sh
# isa-required.sh - the kernel paths this CPU can run, as a space-separated
# list for COLI_TEST_ISA_REQUIRED (tests/test_util.h): read from the flags
# the kernel reports in /proc/cpuinfo, not from the library's own detection,
# so a path the CPU has but the build or its dispatch leaves out fails the
# kernel tests instead of being skipped. Paths the CPU lacks cannot be run
# here (no emulator in Debian runs AVX-512) and are left out; the tests
# report them as not checked.
#   generic      always
#   avx2         AVX2, FMA, F16C (f32/int8/int4 and int8-activation rows)
#   avxvnni-emu  the AVX-VNNI rows with vpdpbusd emulated: AVX2, FMA, F16C
#   avxvnni      AVX-VNNI itself, on top of avx2
#   avx512       AVX-512 F, BW, VL, DQ on top of avx2
#   avx512vnni   AVX512-VNNI on top of avx512
#   amx-emu      the AMX rows on emulated tiles (their float part is AVX-512
#                code): avx512vnni
#   amx          AMX-TILE and AMX-INT8 on top of avx512vnni
set -u
flags=$(grep -m1 '^flags' "${COLI_CPUINFO:-/proc/cpuinfo}" 2>/dev/null | cut -d: -f2)
has() {
	for f in "$@"; do
		case " $flags " in *" $f "*) ;; *) return 1 ;; esac
	done
}
out=generic
if has avx2 fma f16c; then
	out="$out avx2 avxvnni-emu"
	has avx_vnni && out="$out avxvnni"
	if has avx512f avx512bw avx512vl avx512dq; then
		out="$out avx512"
		if has avx512_vnni; then
			out="$out avx512vnni amx-emu"
			has amx_tile amx_int8 && out="$out amx"
		fi
	fi
fi
echo "$out"
