#!/bin/sh
# kv_sessions.sh - `coli sessions`: list/show/rm/rename/gc, --json output,
# the cache-dir rule (XDG_CACHE_HOME, COLI_CACHE_DIR, --cache-dir,
# COLI_MODEL), model matching by manifest fingerprint, exit codes.
set -u
COLI="${COLI:-${top_builddir:-.}/coli}"
W="${top_builddir:-.}/tests/kv_writer"
PY="${PYTHON3:-/usr/bin/python3}"
[ -x "$COLI" ] && [ -x "$W" ] || { echo "coli or kv_writer not built"; exit 99; }
tmp=$(mktemp -d) || exit 99
wpid=
cleanup() { [ -n "$wpid" ] && kill -9 "$wpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# expect CODE CMD... : run, compare the exit status
expect() {
	want=$1; shift
	"$@" > "$tmp/out" 2> "$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || bad "exit $got (want $want): $* : $(cat "$tmp/err")"
}
# jq-like check with python: jcheck 'EXPR' (EXPR sees the JSON as j)
jcheck() {
	"$PY" -c "import json,sys; j=json.load(open('$tmp/out')); sys.exit(0 if ($1) else 1)" ||
		bad "json check failed: $1 in $(cat "$tmp/out")"
}

unset COLI_CACHE_DIR COLI_MODEL COLI_KV_BUDGET
export XDG_CACHE_HOME="$tmp/xdg"
model="$tmp/models/glm-test"
mkdir -p "$model"
printf '{"format_version":1}\n' > "$model/manifest.json"
fp=$(sha256sum "$model/manifest.json" | cut -c1-64)
cdir="$XDG_CACHE_HOME/colitop/glm-test-$(echo "$fp" | cut -c1-12)"
kv="$cdir/kv"
mkdir -p "$kv"

# no sessions yet
expect 0 "$COLI" sessions "$model" list
grep -q "no sessions" "$tmp/out" || bad "empty list: $(cat "$tmp/out")"
"$W" "$kv" chat1 1 make 10 "$fp" || bad "make chat1"
"$W" "$kv" chat2 2 make 4 "$fp" || bad "make chat2"
"$W" "$kv" alien 3 make 7 || bad "make alien"   # another model's fingerprint

expect 0 "$COLI" sessions "$model" list
grep -q "^chat1 .* 10 " "$tmp/out" || bad "text list: $(cat "$tmp/out")"
grep -q "other-model" "$tmp/out" || bad "alien not flagged"
expect 0 "$COLI" sessions "$model" list --json
jcheck "len(j['sessions']) == 3 and j['model_fingerprint'] == '$fp'"
jcheck "[s['name'] for s in j['sessions']] == ['alien', 'chat1', 'chat2']"
jcheck "j['sessions'][1]['tokens'] == 10 and j['sessions'][1]['model_match'] is True"
jcheck "j['sessions'][0]['model_match'] is False and j['sessions'][2]['status'] == 'ok'"
jcheck "j['total_bytes'] == sum(s['bytes'] for s in j['sessions'])"
# DIR from COLI_MODEL, list as the default subcommand
COLI_MODEL="$model" expect 0 "$COLI" sessions --json
jcheck "len(j['sessions']) == 3"
# cache dir overrides
COLI_CACHE_DIR="$tmp/elsewhere" expect 0 "$COLI" sessions "$model" --json list
jcheck "j['sessions'] == [] and j['kv_dir'] == '$tmp/elsewhere/kv'"
expect 0 "$COLI" sessions --cache-dir "$cdir" --json list
jcheck "len(j['sessions']) == 3"
# an explicit cache dir needs no model, even with a stale COLI_MODEL
COLI_MODEL="$tmp/gone" expect 0 "$COLI" sessions --cache-dir "$cdir" --json list
jcheck "len(j['sessions']) == 3 and j['model_fingerprint'] is None"
COLI_MODEL="$tmp/gone" expect 1 "$COLI" sessions list

# show
expect 0 "$COLI" sessions "$model" show chat1 --json
jcheck "j['tokens'] == 10 and j['layers'] == 4 and j['width'] == 64 and j['status'] == 'ok'"
jcheck "j['bytes_per_token_config'] == 4 * 64 * 4 and j['model_match'] is True and j['dead_bytes'] == 0"
jcheck "len(j['records']) == 4 and j['records'][3]['first'] == 9 and j['records'][3]['n'] == 1"
expect 0 "$COLI" sessions "$model" show chat1
grep -q "per token *1024 bytes" "$tmp/out" || bad "text show: $(cat "$tmp/out")"
expect 1 "$COLI" sessions "$model" show nosuch
expect 2 "$COLI" sessions "$model" show ../etc
# a torn tail is reported (exit 0), corruption in the middle is an error
size=$(stat -c %s "$kv/chat2.kv")
truncate -s $((size - 5)) "$kv/chat2.kv"
expect 0 "$COLI" sessions "$model" show chat2 --json
jcheck "j['status'] == 'torn-tail' and j['tokens'] == 3"
printf 'X' | dd of="$kv/chat1.kv" bs=1 seek=200 conv=notrunc 2>/dev/null
expect 1 "$COLI" sessions "$model" show chat1 --json
jcheck "j['status'] == 'corrupt'"
grep -q "followed by valid data" "$tmp/err" || bad "corrupt message: $(cat "$tmp/err")"
# a header whose own CRC holds but whose shape does not describe its records
# (width + 1, CRC recomputed) is corrupt, not a torn tail
"$W" "$kv" hdr 4 make 5 "$fp" || bad "make hdr"
"$PY" - "$kv/hdr.kv" <<'PYEOF' || bad "patch hdr"
import struct, sys
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xffffffff
b = bytearray(open(sys.argv[1], "rb").read())
b[84:88] = struct.pack("<I", struct.unpack("<I", b[84:88])[0] + 1)
b[124:128] = struct.pack("<I", crc32c(bytes(b[:124])))
open(sys.argv[1], "wb").write(bytes(b))
PYEOF
expect 1 "$COLI" sessions "$model" show hdr --json
jcheck "j['status'] == 'corrupt' and j['problem'].startswith('header does not match its records: the record at byte 128 is intact')"
expect 0 "$COLI" sessions "$model" list --json
jcheck "[s['status'] for s in j['sessions'] if s['name'] == 'hdr'] == ['corrupt']"
"$COLI" sessions "$model" rm hdr >/dev/null 2>&1 || bad "rm hdr"

# rename / rm
expect 0 "$COLI" sessions "$model" rename chat2 talk --json
jcheck "j == {'renamed': 'chat2', 'to': 'talk'}"
[ -f "$kv/talk.kv" ] && [ ! -f "$kv/chat2.kv" ] || bad "rename did not move the file"
expect 1 "$COLI" sessions "$model" rename talk alien
[ -f "$kv/talk.kv" ] || bad "failed rename lost the file"
expect 2 "$COLI" sessions "$model" rename talk "a/b"
expect 0 "$COLI" sessions "$model" rm chat1
expect 1 "$COLI" sessions "$model" rm chat1

# gc: least recently used first, a session in use is kept
"$W" "$kv" busy 9 make 20 || bad "make busy"
"$W" "$kv" busy 9 hold > "$tmp/wout" 2>&1 &
wpid=$!
n=0
while ! grep -q ready "$tmp/wout" 2>/dev/null && [ $n -lt 1000 ]; do sleep 0.01; n=$((n + 1)); done
touch -d '2001-01-01' "$kv/alien.kv"
expect 1 "$COLI" sessions "$model" rm busy
grep -q "in use" "$tmp/err" || bad "busy rm message: $(cat "$tmp/err")"
expect 0 "$COLI" sessions "$model" list --json
jcheck "[s['in_use'] for s in j['sessions'] if s['name'] == 'busy'] == [True]"
keep=$(( $(stat -c %s "$kv/talk.kv") + $(stat -c %s "$kv/busy.kv") + 10 ))
expect 0 "$COLI" sessions "$model" gc --budget $keep --json
jcheck "j['removed'] == 1 and j['budget'] == $keep"
[ ! -f "$kv/alien.kv" ] && [ -f "$kv/talk.kv" ] || bad "gc removed the wrong session"
expect 0 "$COLI" sessions "$model" gc --budget 0 --json
jcheck "j['removed'] == 1 and j['bytes_left'] == $(stat -c %s "$kv/busy.kv")"
[ ! -f "$kv/talk.kv" ] || bad "gc kept an idle session"
[ -f "$kv/busy.kv" ] || bad "gc removed a session in use"
kill -9 "$wpid"; wait "$wpid" 2>/dev/null; wpid=
expect 0 "$COLI" sessions "$model" gc --budget=0
expect 0 "$COLI" sessions "$model" list --json
jcheck "j['sessions'] == []"

# usage errors
expect 0 "$COLI" sessions --help
grep -q "usage: coli sessions" "$tmp/out" || bad "--help output"
expect 2 "$COLI" sessions "$model" list extra
expect 2 "$COLI" sessions "$model" list --budget 1G
expect 2 "$COLI" sessions "$model" gc --budget lots
expect 2 "$COLI" sessions "$model" --frobnicate
expect 2 "$COLI" sessions "$model" show
expect 1 "$COLI" sessions "$tmp/nonexistent-model" list
exit $fail
