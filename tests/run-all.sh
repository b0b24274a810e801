#!/bin/bash
# Runs every suite that `make test` owns and prints one closing line:
#   "tumble: N passed, M failed"
# Suites (each skipped when it has nothing yet):
#   C unit tests (cmocka), plain and under ASan+UBSan   build/tests, build/asan/tests
#   fuzz corpus replay (libFuzzer targets, no mutation)  build/fuzz
#   world hashes: the physics built six ways (gcc/clang, -O0/-O2, clones or
#   not, lanes unvectorised) and as WebAssembly in Node steps bit for bit
#   like the goldens                                    tests/world-hash/check.sh
#   JavaScript tests (node --test)                       tests/js, proto/js
#   integration tests against a real server (node --test) tests/integration
# The counts come from each runner's own summary (cmocka, node's TAP reporter).
set -u
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0; failed=0; broken=""
log=build/test-logs; mkdir -p "$log"

# cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)"
run_cmocka() {
  local bin=$1 name out p f rc
  name=$(echo "$bin" | tr / _)
  out="$log/$name.log"
  "$bin" >"$out" 2>&1; rc=$?
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi   # crashed before its summary
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then broken="$broken $bin"; cat "$out"; fi
  printf '%-50s %3d passed, %d failed\n' "$bin" "$p" "$f"
}

for bin in build/tests/test_* build/asan/tests/test_*; do
  [ -x "$bin" ] && run_cmocka "$bin"
done

# Determinism: one test per build of the physics (its count from the script's summary line).
if [ -x tests/world-hash/check.sh ]; then
  out="$log/world-hash.log"
  tests/world-hash/check.sh >"$out" 2>&1; rc=$?
  p=$(sed -n 's/^world-hash: \([0-9]*\) passed.*/\1/p' "$out"); f=$(sed -n 's/^world-hash: [0-9]* passed, \([0-9]*\) failed/\1/p' "$out")
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then broken="$broken world-hash"; cat "$out"; fi
  printf '%-50s %3d passed, %d failed\n' "tests/world-hash/check.sh" "$p" "$f"
fi

# Fuzz targets replay their committed corpus (and the golden vectors) once each.
for bin in build/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  n=$(basename "$bin"); dirs=""
  [ -d "tests/fuzz/corpus/$n" ] && dirs="$dirs tests/fuzz/corpus/$n"
  [ -d proto/vectors ] && dirs="$dirs proto/vectors"
  if "$bin" -runs=0 $dirs >"$log/$n.log" 2>&1; then
    passed=$((passed + 1)); printf '%-50s replay ok\n' "$bin"
  else
    failed=$((failed + 1)); broken="$broken $bin"; tail -30 "$log/$n.log"
  fi
done

# node --test with the TAP reporter ends with "# pass N" and "# fail N".
run_node() {
  local label=$1; shift
  local out="$log/node-$label.log"
  node --test --test-reporter=tap "$@" >"$out" 2>&1
  local rc=$? p f
  p=$(sed -n 's/^# pass \([0-9]*\)/\1/p' "$out" | tail -1); f=$(sed -n 's/^# fail \([0-9]*\)/\1/p' "$out" | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then broken="$broken node:$label"; grep -E '^not ok|^ *(error|expected|actual|stack):|^# ' "$out" | head -80; fi
  printf '%-50s %3d passed, %d failed\n' "node --test ($label)" "$p" "$f"
}

js=$(find tests/js proto/js -name '*.test.mjs' 2>/dev/null | sort)
[ -n "$js" ] && run_node js $js
# Suites that start servers run one file at a time (Node 18 has no --test-concurrency).
for f in $(find tests/integration tests/browser -name '*.test.mjs' 2>/dev/null | sort); do
  run_node "$(basename "$(dirname "$f")")-$(basename "$f" .test.mjs)" "$f"
done

[ -n "$broken" ] && echo "failing:$broken"
echo "tumble: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
