#!/bin/bash
# run-benchmarks.sh: the capacity runs behind BENCHMARKS.md "Load".
#
#   tests/load/run-benchmarks.sh [what...]     what: tower dice flag cape dough idle players
#
# Every measurement gets a fresh build/tumble-server on an ephemeral loopback
# port (rooms left by one run would load the next), and tumble-load on the same
# machine. Ramp runs use 2 clients per room while the scenes keep moving; each
# prints one JSON object to $OUT/<name>.json (ramps also a picture, $OUT/ramp-<scene>.svg) and a
# summary line here. Knobs:
#   OUT=build/load-bench  LATENESS_MS=8.333 (ramp target; 1000 = judge on rates only)
#   STEP=<rooms per step> INTERVAL=5 SETTLE=2 RAMP_MAX=5000 IDLE_ROOMS=10000 PLAYERS=2000
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/load-bench}
LATENESS_MS=${LATENESS_MS:-8.333}
INTERVAL=${INTERVAL:-5}
SETTLE=${SETTLE:-2}
IDLE_ROOMS=${IDLE_ROOMS:-10000}
PLAYERS=${PLAYERS:-2000}
RAMP_MAX=${RAMP_MAX:-5000}
mkdir -p "$OUT"
CLIENT_DIR=$(mktemp -d)
echo '<!doctype html><title>tumble</title>' >"$CLIENT_DIR/index.html"
SERVER_PID=""
trap 'stop_server; rm -rf "$CLIENT_DIR"' EXIT

start_server() {
  local log="$OUT/server-$1.log"
  build/tumble-server --port 0 --bind 127.0.0.1 --client-dir "$CLIENT_DIR" --log-level warn \
    --max-conns-per-address 20000 --max-rooms 20000 --room-create-rate 100000 --max-clients-per-room 64 >"$log" 2>&1 &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  echo "server did not start: $(cat "$log")" >&2
  exit 1
}

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
  fi
}

summary() {
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const f = (v, d = 2) => (v === null || v === undefined ? "-" : Number(v).toFixed(d));
    const ramp = r.ramp ? `held ${r.ramp.max_rooms_held} rooms (${r.ramp.max_clients_held} clients); ` : "";
    console.log(`${process.argv[2]}: ${ramp}${r.rooms} rooms ${r.clients} clients: ratio ${f(r.snapshot_rate_ratio, 3)}, ` +
      `lateness p50/p99 ${f(r.tick_lateness_ms && r.tick_lateness_ms.p50)}/${f(r.tick_lateness_p99_ms)} ms, ` +
      `steps/s/room ${f(r.steps_per_room_per_s, 1)}, latency p99 ${f(r.latency_p99_ms)} ms, ` +
      `${f(r.kbit_per_s_per_client)} kbit/s/client, server cpu ${f(r.server_cpu_cores)} (${f(r.server_cpu_ms_per_room_s)} ms/s per room), rss ${f(r.server_rss_mb, 1)} MB ` +
      `(${f(r.server_kb_per_room, 0)} kB/room), generator cpu ${f(r.generator_cpu_cores)}, errors ${r.errors}; ` +
      `${r.machine.cpu_model}, load average ${r.machine.load_average_start[0]} -> ${r.machine.load_average_end[0]}`);
  ' "$1" "$2"
}

ramp() { # scene step
  local scene=$1 step=${STEP:-$2}
  start_server "$scene"
  build/tumble-load --url "ws://127.0.0.1:$PORT" --scene "$scene" --clients-per-room 2 --ramp \
    --rooms "$step" --ramp-step "$step" --ramp-interval "$INTERVAL" --ramp-settle "$SETTLE" \
    --target-lateness "$LATENESS_MS" --ramp-max-rooms "$RAMP_MAX" --duration 900 --server-pid "$SERVER_PID" \
    --report "$OUT/ramp-$scene.svg" --json >"$OUT/ramp-$scene.json" 2>"$OUT/ramp-$scene.log"
  stop_server
  summary "$OUT/ramp-$scene.json" "ramp $scene"
}

idle() {
  # empty rooms: each is created by a client that leaves right after its welcome
  start_server idle-empty
  build/tumble-load --url "ws://127.0.0.1:$PORT" --scene tower --clients-per-room 1 --rooms "$IDLE_ROOMS" \
    --leave --warmup "${IDLE_WARMUP:-30}" --duration 10 --connect-rate 1000 --join-timeout 90 --server-pid "$SERVER_PID" \
    --json >"$OUT/idle-empty.json" 2>"$OUT/idle-empty.log"
  stop_server
  summary "$OUT/idle-empty.json" "idle empty tower rooms"
}

players() {
  # connected players: dice rooms (light physics) with 8 active players each, so
  # the network thread's fan-out is what is measured
  start_server players
  build/tumble-load --url "ws://127.0.0.1:$PORT" --scene dice --clients-per-room 8 --rooms $((PLAYERS / 8)) \
    --warmup 3 --duration 10 --connect-rate 1000 --join-timeout 60 --server-pid "$SERVER_PID" \
    --json >"$OUT/players.json" 2>"$OUT/players.log"
  stop_server
  summary "$OUT/players.json" "connected players (dice rooms x 8)"
}

[ $# -eq 0 ] && set -- tower dice flag cape dough idle players
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M) UTC"
for what in "$@"; do
  case $what in
    tower) ramp tower 10 ;;
    dice) ramp dice 25 ;;
    flag) ramp flag 25 ;;
    cape) ramp cape 25 ;;
    dough) ramp dough 10 ;;
    idle) idle ;;
    players) players ;;
    *) echo "unknown: $what" >&2; exit 2 ;;
  esac
done
echo "done: load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M) UTC"
