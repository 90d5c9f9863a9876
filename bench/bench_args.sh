# bench_args.sh - sourced by the bench scripts: their argument loop.
#   . "$top/bench/bench_args.sh"
#   bench_args NAME HELP_LINES 'SPEC' "$@"
# SPEC lists the flags, one word each: "--flag=VAR" takes a value into the
# variable VAR ("--flag V"); "--flag:VAR=VALUE" is a switch that sets VAR to
# VALUE. -h/--help prints lines HELP_LINES (a sed range such as 2,19: the
# script's header comment) of the script and exits 0; anything else is
# "NAME: unknown argument 'ARG' (see --help)" on stderr and exit 2. A flag
# given without its value fails like any unset variable under `set -u`.
bench_args() {
	_ba_name=$1 _ba_help=$2 _ba_spec=$3
	shift 3
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help)
			sed -n "${_ba_help}p" "$0"
			exit 0
			;;
		esac
		_ba_hit=
		for _ba_w in $_ba_spec; do
			case $_ba_w in
			"$1="*)
				eval "${_ba_w#*=}=\$2"
				shift
				_ba_hit=1
				break
				;;
			"$1:"*)
				eval "${_ba_w#*:}"
				_ba_hit=1
				break
				;;
			esac
		done
		if [ -z "$_ba_hit" ]; then
			echo "$_ba_name: unknown argument '$1' (see --help)" >&2
			exit 2
		fi
		shift
	done
}
