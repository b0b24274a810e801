#!/bin/sh
# Installs the Debian packages that building and testing Tumble need, when they
# are missing. As root it runs apt-get; as anyone else it names what to install.
# Usage: scripts/deps.sh [build|test]   (test = build + what the suites need)
set -eu
what=${1:-test}

pkgs="gcc make pkg-config libc6-dev libuv1-dev libwebsockets-dev libwebsockets-evlib-uv libmsgpack-dev libhiredis-dev"
# the physics as WebAssembly (make wasm), which the web client carries for its replay
# viewer: clang's wasm32-wasi target needs the C library, the linker and the wasm32
# compiler-rt builtins
pkgs="$pkgs clang wasi-libc lld-14 libclang-rt-14-dev-wasm32"
if [ "$what" = test ]; then
  # libclang-rt-dev: the libFuzzer and sanitizer runtimes (clang only recommends it)
  # nginx + njs: the room router in tests/integration/routing.test.mjs (docker/nginx)
  pkgs="$pkgs libcmocka-dev clang libclang-rt-dev valgrind procps curl nginx libnginx-mod-http-js"
  # redis-server (+ redis-cli): tests/integration/fleet.test.mjs starts its own on a free port
  pkgs="$pkgs redis-server"
  # Debian's Chromium for the browser tests (playwright-core drives it; it never downloads one)
  pkgs="$pkgs chromium"
  # the conformance client (tests/conformance): a second implementation, in Python
  pkgs="$pkgs python3 python3-msgpack python3-websockets"
fi

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js and npm build the web client. Any node >= 18 will do (Debian 12 ships 18;
# some machines carry a newer one from elsewhere, which must not be replaced).
if ! command -v node >/dev/null 2>&1; then missing="$missing nodejs"; fi
if ! command -v npm >/dev/null 2>&1; then missing="$missing npm"; fi
# kubectl renders the Kubernetes manifests for their offline check (make test-docker);
# any kubectl will do (Debian's is in kubernetes-client)
if [ "$what" = test ] && ! command -v kubectl >/dev/null 2>&1; then missing="$missing kubernetes-client"; fi

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "tumble: missing packages:$missing" >&2
  echo "tumble: run as root: apt-get install -y$missing   (or: sudo make deps)" >&2
  exit 1
fi
echo "tumble: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends $missing >/dev/null
