#!/bin/sh
# Install dependencies, build, and run a model. Uses the embedded default
# model when it exists; otherwise synthesizes a small model of the real
# architecture (coli synth), converts it (coli convert) and generates.
set -e
cd "$(dirname "$0")/.."
./tools/install-deps.sh
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build/run
cd build/run
[ -f Makefile ] || ../../configure -q
make -s -j"$(nproc)"
if [ -x ./colitop ] && [ -f ../../data/default-model/manifest.json ]; then
	exec ./colitop "$@"
fi
if [ ! -f tiny-model/manifest.json ]; then
	./coli synth tiny-hf --preset tiny --seed 1
	./coli convert tiny-hf tiny-model
fi
exec ./coli generate tiny-model -p "Hello" -n 32 "$@"
