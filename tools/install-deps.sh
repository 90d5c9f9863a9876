#!/bin/sh
# Install every Debian package the build, the tests and the tools need.
# Idempotent: only missing packages are fetched. Run as root (or via sudo).
set -e
PKGS="build-essential autoconf automake pkg-config clang llvm libclang-rt-14-dev \
libjansson-dev liburing-dev libmicrohttpd-dev libncurses-dev libpcre2-dev libutf8proc-dev \
libedit-dev libcurl4-openssl-dev libpng-dev python3 python3-numpy python3-httpx python3-jsonschema python3-jinja2 mandoc tmux curl wrk iproute2"
missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# Node.js may come from Debian or from NodeSource (whose nodejs bundles npm
# and conflicts with Debian's npm package): install only what is absent.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	echo "installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
