# tiny_model.sh - sourced by the shell tests that run a C test program on
# a synthesized tiny model (random weights: every token has text).
# `tiny_model DIR` writes the checkpoint to DIR/hf and the converted int8
# model to DIR/m; a failure of either command fails the test.
tiny_model() {
	"$COLI" synth "$1/hf" --preset tiny --seed 5 >/dev/null || { echo "FAIL: coli synth"; exit 1; }
	"$COLI" convert "$1/hf" "$1/m" --quant int8 >/dev/null 2>&1 || { echo "FAIL: coli convert"; exit 1; }
}
