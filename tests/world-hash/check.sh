#!/bin/bash
# check.sh: the physics steps bit for bit alike however it is built.
#
#   tests/world-hash/check.sh [build/tumble-bench]
#
# Compares the world-hash lines (tests/bench/bench_world_hash.c: every scene
# after its fixed input script) of the release tumble-bench and of the physics
# rebuilt on its own several ways against the goldens in golden.jsonl:
#   gcc-O2        the release flags: the AVX target_clones where they apply
#   gcc-O2-noclones   -DTB_NO_CLONES: the x86-64 baseline (SSE) code only
#   gcc-O2-lanes  -fno-tree-vectorize: the SIMD layer's lanes (simd.h) one by
#                 one, as on a machine or a WebAssembly build without SIMD
#   gcc-O0        no optimisation: nothing reassociated, nothing kept in registers
#   clang-O2, clang-O0
#   wasm-node     build/wasm/tumble-physics.wasm (`make wasm`: clang wasm32-wasi,
#                 musl's libc) run by Node through the client's loader
#                 (node tests/wasm/world-hash.mjs)
# Prints one line per build ("ok NAME" or "FAIL NAME" with a diff) and
# "world-hash: N passed, M failed"; exits non-zero on any failure. The goldens
# change only in a commit that says why the physics' results changed.
set -u
cd "$(dirname "$0")/../.."
bench=${1:-build/tumble-bench}
golden=tests/world-hash/golden.jsonl
out=build/world-hash
mkdir -p "$out"
passed=0; failed=0

compare() { # name file
  if diff -u "$golden" "$2" >"$out/$1.diff"; then
    passed=$((passed + 1)); echo "ok $1"
  else
    failed=$((failed + 1)); echo "FAIL $1"; cat "$out/$1.diff"
  fi
}

if [ -x "$bench" ]; then
  "$bench" world-hash >"$out/tumble-bench.txt" 2>&1
  compare tumble-bench "$out/tumble-bench.txt"
else
  failed=$((failed + 1)); echo "FAIL tumble-bench: $bench not built"
fi

src="server/physics/*.c tests/bench/bench_world_hash.c tests/world-hash/world_hash_main.c"
warn="-std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-psabi -fno-math-errno -ffp-contract=off -Iserver -Itests"
build() { # name compiler flags...
  local name=$1 cc=$2; shift 2
  if ! command -v "$cc" >/dev/null; then
    failed=$((failed + 1)); echo "FAIL $name: no $cc"; return
  fi
  # shellcheck disable=SC2086
  if ! "$cc" $warn "$@" $src -o "$out/$name" -lpthread -lm 2>"$out/$name.log"; then
    failed=$((failed + 1)); echo "FAIL $name: does not build"; cat "$out/$name.log"; return
  fi
  "$out/$name" >"$out/$name.txt" 2>&1
  compare "$name" "$out/$name.txt"
}

build gcc-O2 gcc -O2 -DNDEBUG
build gcc-O2-noclones gcc -O2 -DNDEBUG -DTB_NO_CLONES
build gcc-O2-lanes gcc -O2 -DNDEBUG -fno-tree-vectorize -fno-tree-slp-vectorize
build gcc-O0 gcc -O0
build clang-O2 clang -O2 -DNDEBUG
build clang-O0 clang -O0

wasm=build/wasm/tumble-physics.wasm
if [ ! -f "$wasm" ]; then
  failed=$((failed + 1)); echo "FAIL wasm-node: $wasm not built (make wasm)"
elif ! node tests/wasm/world-hash.mjs "$wasm" >"$out/wasm-node.txt" 2>&1; then
  failed=$((failed + 1)); echo "FAIL wasm-node: node tests/wasm/world-hash.mjs"; cat "$out/wasm-node.txt"
else
  compare wasm-node "$out/wasm-node.txt"
fi

echo "world-hash: $passed passed, $failed failed"
[ "$failed" = 0 ]
