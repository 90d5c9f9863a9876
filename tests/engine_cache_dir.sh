#!/bin/sh
# engine_cache_dir.sh - the default cache directory is keyed by the model's
# container fingerprint: two converted models with the same directory name
# in different parents get ${XDG_CACHE_HOME}/colitop/NAME-FP12 each (FP12 =
# the first 12 hex digits of the sha256 of their manifest.json), so their
# routing heat and sessions no longer mix.
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$COLI" ] && [ -x "$COLI" ] || fail "\$COLI not built"
T=$(mktemp -d)
mkdir -p "$T/a" "$T/b"
trap 'rm -rf "$T"' EXIT
"$COLI" synth "$T/hf" --preset tiny >/dev/null 2>"$T/synth.log" &&
	"$COLI" synth "$T/hf2" --preset tiny --vocab 600 >/dev/null 2>>"$T/synth.log" &&
	"$COLI" convert "$T/hf" "$T/a/model" --quant f32 >/dev/null 2>"$T/convert.log" &&
	"$COLI" convert "$T/hf2" "$T/b/model" --quant f32 >/dev/null 2>>"$T/convert.log" ||
	{ cat "$T"/*.log; fail "cannot make the two tiny models"; }
unset COLI_CACHE_DIR COLI_NO_HEAT
export XDG_CACHE_HOME="$T/xdg"
for m in a b; do
	"$COLI" generate "$T/$m/model" --tokens 1,2,3 -n 2 --threads 1 --ctx 64 >/dev/null 2>"$T/gen.log" ||
		{ cat "$T/gen.log"; fail "generate with model $m"; }
done
fa=$(sha256sum "$T/a/model/manifest.json" | cut -c1-12)
fb=$(sha256sum "$T/b/model/manifest.json" | cut -c1-12)
[ "$fa" != "$fb" ] || fail "the two models have one fingerprint (the test proves nothing)"
[ -s "$XDG_CACHE_HOME/colitop/model-$fa/hot-experts/heat.bin" ] || fail "no model-$fa: $(ls "$XDG_CACHE_HOME/colitop")"
[ -s "$XDG_CACHE_HOME/colitop/model-$fb/hot-experts/heat.bin" ] || fail "no model-$fb: $(ls "$XDG_CACHE_HOME/colitop")"
[ "$(ls "$XDG_CACHE_HOME/colitop" | wc -l)" = 2 ] || fail "unexpected cache dirs: $(ls "$XDG_CACHE_HOME/colitop")"
# coli doctor names the same directory
"$COLI" doctor "$T/a/model" >"$T/doctor.out" 2>&1
grep -q "colitop/model-$fa" "$T/doctor.out" || fail "coli doctor does not name model-$fa: $(grep -i cache "$T/doctor.out")"
# a cache directory from before the fingerprint naming (ROOT/NAME) keeps
# being used, so saved sessions are not left behind
export XDG_CACHE_HOME="$T/xdg-old"
mkdir -p "$XDG_CACHE_HOME/colitop/model"
"$COLI" generate "$T/a/model" --tokens 1,2,3 -n 2 --threads 1 --ctx 64 --session keep >/dev/null 2>"$T/gen.log" ||
	{ cat "$T/gen.log"; fail "generate with a legacy cache directory"; }
[ -f "$XDG_CACHE_HOME/colitop/model/kv/keep.kv" ] || fail "the legacy cache directory was not used: $(ls -R "$XDG_CACHE_HOME")"
[ ! -e "$XDG_CACHE_HOME/colitop/model-$fa" ] || fail "a new directory was made beside the legacy one"
echo "ok: two models named 'model' get model-$fa and model-$fb; a legacy model/ directory is kept"
