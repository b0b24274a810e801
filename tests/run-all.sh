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
#   the Python conformance client against a real server   tests/conformance
#   some of them again against the ASan+UBSan server       build/asan/tumble-server
#   browser tests (Chromium; missing Chromium fails)       tests/browser
# The counts come from each runner's own summary (cmocka, node's TAP reporter).
# The world hashes and the conformance client run in the background beside the C unit
# tests (their lines are printed where they always were); all else runs one at a time.
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

# The world hashes (six compiles of the physics, about 40 s of CPU) build while the C
# unit tests run: both only compute. test_sched measures step rates, so it waits for them.
wh_pid=""; conf_pid=""
# So does the Python conformance client (its servers answer within seconds; no rates):
# it starts here and its line is printed at the end, where it always was.
py=${TUMBLE_PYTHON:-/usr/bin/python3}
if [ -f tests/conformance/conformance.py ]; then
  rm -f "$log/conformance.rc"
  if "$py" -c 'import msgpack, websockets' 2>/dev/null; then
    ("$py" tests/conformance/conformance.py >"$log/conformance.log" 2>&1; echo $? >"$log/conformance.rc") &
    conf_pid=$!
  else
    echo "not ok - $py lacks python3-msgpack/python3-websockets (make deps)" >"$log/conformance.log"; echo 1 >"$log/conformance.rc"
  fi
fi
if [ -x tests/world-hash/check.sh ]; then
  rm -f "$log/world-hash.rc"
  (tests/world-hash/check.sh >"$log/world-hash.log" 2>&1; echo $? >"$log/world-hash.rc") &
  wh_pid=$!
fi
for bin in build/tests/test_* build/asan/tests/test_*; do
  case "$bin" in */test_sched) continue ;; esac
  [ -x "$bin" ] && run_cmocka "$bin"
done
[ -n "$wh_pid" ] && wait "$wh_pid"
[ -n "$conf_pid" ] && wait "$conf_pid"
for bin in build/tests/test_sched build/asan/tests/test_sched; do
  [ -x "$bin" ] && run_cmocka "$bin"
done

# Determinism: one test per build of the physics (its count from the script's summary line).
if [ -x tests/world-hash/check.sh ]; then
  out="$log/world-hash.log"
  rc=$(cat "$log/world-hash.rc" 2>/dev/null || echo 1)
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

# node --test with the TAP reporter ends with "# pass N", "# fail N" and "# skip N" (or "# skipped N").
# With SKIP_FAILS=1 a skipped test counts as failed (the browser suites: make test
# installs Chromium through make deps, so a browser test that skips is a broken setup).
# node_count LABEL RC SECONDS: counts the log of a finished run and prints its line.
node_count() {
  local label=$1 rc=$2 secs=$3
  local out="$log/node-$label.log" p f s
  p=$(sed -n 's/^# pass \([0-9]*\)/\1/p' "$out" | tail -1); f=$(sed -n 's/^# fail \([0-9]*\)/\1/p' "$out" | tail -1)
  s=$(sed -n 's/^# skip\(ped\)\{0,1\} \([0-9]*\)/\2/p' "$out" | tail -1)   # node 18: "# skip", 20: "# skipped"
  p=${p:-0}; f=${f:-0}; s=${s:-0}
  if [ "$rc" -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
  if [ "${SKIP_FAILS:-0}" = 1 ] && [ "$s" != 0 ]; then
    echo "$label: $s test(s) skipped:"; grep -E '# SKIP' "$out" | head -5
    f=$((f + s))
  fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then broken="$broken node:$label"; grep -E '^not ok|^ *(error|expected|actual|stack):|^# ' "$out" | head -80; fi
  printf '%-50s %3d passed, %d failed  (%d s)\n' "node --test ($label)" "$p" "$f" "$secs"
}
# Every node run has a wall limit (FILE_LIMIT seconds, default 900; the longest file takes
# about 150 s here): a file that hangs is stopped and counted as failed instead of holding
# the suite until CI's own limit ends it with nothing said.
FILE_LIMIT=${TUMBLE_FILE_LIMIT:-900}
# timeout runs node in a process group of its own (pgid = its pid) and sends SIGTERM to
# all of it: the harness then stops its servers and playwright its browser; what is left
# of the group 10 s later (a server that was starting as the stop came) gets SIGKILL.
node_run() { # LOG ARGS...: node --test into LOG within FILE_LIMIT
  local out=$1; shift
  timeout "$FILE_LIMIT" node --test --test-reporter=tap "$@" >"$out" 2>&1 &
  local tp=$! rc
  wait "$tp"; rc=$?
  if [ $rc -eq 124 ]; then
    sleep 10; kill -KILL -- "-$tp" 2>/dev/null
    echo "# run-all: stopped after ${FILE_LIMIT} s (TUMBLE_FILE_LIMIT)" >>"$out"; echo "not ok - stopped after ${FILE_LIMIT} s" >>"$out"
  fi
  return $rc
}
run_node() {
  local label=$1; shift
  local t0=$SECONDS
  node_run "$log/node-$label.log" "$@"
  node_count "$label" $? $((SECONDS - t0))
}

js=$(find tests/js proto/js -name '*.test.mjs' 2>/dev/null | sort)
[ -n "$js" ] && run_node js $js

# The files that start servers, plain and against the ASan+UBSan server, run
# TUMBLE_TEST_JOBS at a time (default 3): they mostly wait on timers (a file uses
# 10-40 % of a core, measured), every server listens on a port the kernel picks, and
# every file has its own folders. Each file's line is printed in the usual order once
# all have ended. The browser files below still run one at a time (Chromium draws in
# software and takes a core).
jobs_max=${TUMBLE_TEST_JOBS:-3}
pool_labels=()
# pool_start LABEL SERVER_BIN FILE: starts one file in the background once a slot is free.
pool_start() {
  local label=$1 bin=$2 file=$3
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n 2>/dev/null || true; done
  rm -f "$log/node-$label.rc"
  ( t0=$SECONDS
    if [ -n "$bin" ]; then export TUMBLE_SERVER_BIN=$bin; fi
    node_run "$log/node-$label.log" "$file"
    echo "$? $((SECONDS - t0))" >"$log/node-$label.rc" ) &
  pool_labels+=("$label")
}

# The ASan+UBSan server (harness.mjs fails a file whose server printed a sanitizer
# report) runs some of the suites: the ones that drive the server's input paths
# hardest (hostile and malformed messages, the WebSocket edge, room lifecycle, state
# files read back, shutdown, state images from Redis and the drain, TLS). The load,
# routing, churn, workers and replay files measure rates or run many servers and
# would only measure ASan's slowness. They start first: they are the longest.
ASAN_SERVER=build/asan/tumble-server
ASAN_SUITES="hostile fleet limits rooms budget flags persistence ws watchers restart tls shutdown"
if [ -x "$ASAN_SERVER" ]; then
  for n in $ASAN_SUITES; do
    f=tests/integration/$n.test.mjs
    [ -f "$f" ] && pool_start "asan-integration-$n" "$ASAN_SERVER" "$f"
  done
elif [ -d tests/integration ]; then
  failed=$((failed + 1)); broken="$broken asan-integration"
  echo "no $ASAN_SERVER: make build/asan/tumble-server (make test builds it)"
fi
for f in $(find tests/integration -name '*.test.mjs' 2>/dev/null | sort); do
  pool_start "integration-$(basename "$f" .test.mjs)" "" "$f"
done
wait
for label in $(printf '%s\n' "${pool_labels[@]}" | sort -t- -k1,1r -s); do
  read -r rc secs <"$log/node-$label.rc" 2>/dev/null || { rc=1; secs=0; }
  node_count "$label" "$rc" "$secs"
done

# Browser suites: Chromium is part of make deps, so a missing browser is a failure,
# not a skipped suite.
browser=$(find tests/browser -name '*.test.mjs' 2>/dev/null | sort)
if [ -n "$browser" ] && [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  failed=$((failed + 1)); broken="$broken browser(no-chromium)"
  echo "no Chromium at ${CHROMIUM:-/usr/bin/chromium}: the browser suites cannot run (make deps installs it)"
fi
for f in $browser; do
  SKIP_FAILS=1 run_node "browser-$(basename "$f" .test.mjs)" "$f"
done

# The conformance client (tests/conformance, Python from PROTOCOL.md alone) against
# real servers it starts itself; TAP summary like node's. Debian's python3 with
# python3-msgpack and python3-websockets (scripts/deps.sh).
# (It ran beside the C unit tests, above.)
if [ -f tests/conformance/conformance.py ]; then
  out="$log/conformance.log"
  rc=$(cat "$log/conformance.rc" 2>/dev/null || echo 1)
  p=$(sed -n 's/^# pass \([0-9]*\)/\1/p' "$out" | tail -1); f=$(sed -n 's/^# fail \([0-9]*\)/\1/p' "$out" | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then broken="$broken conformance"; grep -E '^not ok|^  #' "$out" | head -60; fi
  printf '%-50s %3d passed, %d failed\n' "conformance (python)" "$p" "$f"
fi

[ -n "$broken" ] && echo "failing:$broken"
echo "run-all took $SECONDS s (load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
echo "tumble: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
