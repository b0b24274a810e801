#!/bin/bash
# sched-latency.sh: where a loaded server's threads wait for a CPU (issue 20).
#
#   tests/load/sched-latency.sh [rooms] [seconds]      default: 250 tower rooms, 5 s of record
#
# Starts build/tumble-server as run-benchmarks.sh does, runs tumble-load (tower
# rooms x 2 players) against it, and in the middle of the run records every
# context switch on every CPU with `perf sched record -a` (root, or
# kernel.perf_event_paranoid <= 1). It then prints, per thread of the server (the
# network thread and each tb-worker) and of the generator, the scheduling delay
# (runnable -> running: `perf sched timehist`'s "sch delay") p50 / p99 / max and
# how many times it waited more than 4 ms and 8.3 ms (one step), and what the CPUs
# ran while the server's threads waited more than 4 ms (sched-attribution.mjs: the
# server's own workers and network thread, the generator, other processes). Then
# the machine's longest waits of any task and the load run's own figures.
# A delay here is a tick lateness there: a worker due at a phase boundary that
# waits 10 ms for a CPU steps its rooms 10 ms late. Read it with the load average
# printed first: other processes' threads take CPUs too.
set -u
cd "$(dirname "$0")/../.."
ROOMS=${1:-250}
SECONDS_REC=${2:-5}
OUT=${OUT:-build/load-bench}
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "sched-latency: perf is not installed (linux-perf)" >&2; exit 2; }
CLIENT_DIR=$(mktemp -d)
echo '<!doctype html><title>tumble</title>' >"$CLIENT_DIR/index.html"
SERVER_PID=""; LOAD_PID=""
cleanup() {
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$CLIENT_DIR"
}
trap cleanup EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M) UTC"
log="$OUT/sched-server.log"
build/tumble-server --port 0 --bind 127.0.0.1 --client-dir "$CLIENT_DIR" --log-level warn \
  --max-conns-per-address 20000 --max-rooms 20000 --room-create-rate 100000 --max-clients-per-room 64 >"$log" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || { echo "server did not start: $(cat "$log")" >&2; exit 1; }

WARMUP=8
build/tumble-load --url "ws://127.0.0.1:$PORT" --scene tower --clients-per-room 2 --rooms "$ROOMS" \
  --warmup "$WARMUP" --duration $((SECONDS_REC + 10)) --server-pid "$SERVER_PID" --json --quiet \
  >"$OUT/sched-load.json" 2>"$OUT/sched-load.log" &
LOAD_PID=$!
# the joins take about rooms*2/400 s; record inside the measurement window
sleep $((ROOMS * 2 / 400 + WARMUP + 3))
perf sched record -a -o "$OUT/sched.data" -- sleep "$SECONDS_REC" >/dev/null 2>&1 ||
  { echo "sched-latency: perf sched record failed (permissions?)" >&2; exit 2; }
GEN_PID=$LOAD_PID
wait "$LOAD_PID"; LOAD_PID=""

perf sched timehist -i "$OUT/sched.data" 2>/dev/null >"$OUT/sched-timehist.txt"
# columns: time cpu task[tid/pid] wait sch_delay run; the task name may hold spaces
awk -v spid="$SERVER_PID" '
  NR > 3 {
    delay = $(NF - 1)
    task = ""; for (i = 3; i <= NF - 3; i++) task = task (task ? " " : "") $i
    if (!match(task, /\[[0-9]+(\/[0-9]+)?\]$/)) next
    ids = substr(task, RSTART + 1, RLENGTH - 2); name = substr(task, 1, RSTART - 1)
    split(ids, id, "/"); pid = (id[2] != "") ? id[2] : id[1]
    if (pid == spid || name ~ /^tumble-load/) printf "%s %s\t%s\n", name, id[1], delay + 0
  }' "$OUT/sched-timehist.txt" | sort -t "$(printf '\t')" -k1,1 -k2,2g | awk -F '\t' '
  function flush(   i50, i99) {
    if (!m) return
    i50 = int(0.5 * m); i99 = int(0.99 * m); if (i99 >= m) i99 = m - 1
    printf "%-28s %7d %9.3f %9.3f %9.3f %7d %7d\n", key, m, a[i50], a[i99], a[m - 1], o4, o8
  }
  BEGIN { printf "%-28s %7s %9s %9s %9s %7s %7s\n", "thread", "waits", "p50 ms", "p99 ms", "max ms", ">4 ms", ">8.3 ms" }
  $1 != key { flush(); key = $1; m = 0; o4 = 0; o8 = 0 }
  { a[m++] = $2 + 0; o4 += ($2 + 0 > 4); o8 += ($2 + 0 > 8.333) }
  END { flush() }'
node tests/load/sched-attribution.mjs "$OUT/sched-timehist.txt" "$SERVER_PID" "$GEN_PID" 4
echo "(all threads, the longest scheduling delays: perf sched latency -i $OUT/sched.data --sort max)"
perf sched latency -i "$OUT/sched.data" --sort max 2>/dev/null | sed -n '4,12p'
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const f = (v, d = 2) => (v === null || v === undefined ? "-" : Number(v).toFixed(d));
  console.log(`load run: ${r.rooms} rooms: ratio ${f(r.snapshot_rate_ratio, 3)}, lateness p99 ${f(r.tick_lateness_p99_ms)} ms, ` +
    `server cpu ${f(r.server_cpu_cores)} (${f(r.server_cpu_ms_per_room_s)} ms/s per room), generator ${f(r.generator_cpu_cores)}, ` +
    `errors ${r.errors}, load average ${r.machine.load_average_start[0]} -> ${r.machine.load_average_end[0]}`);
' "$OUT/sched-load.json"
