#!/bin/bash
# docker/test-image.sh: the Docker image, for real, with podman (no Docker engine here).
#   1. podman set up for this sandbox, base image debian:bookworm-slim made once and cached
#      (docker/podman-env.sh);
#   2. `podman build -f docker/Dockerfile .` with the Dockerfile unchanged;
#   3. run it with a published loopback port and --cap-add SYS_NICE, as deployment.md
#      says; /healthz answers 200 and the image's own HEALTHCHECK passes; the unprivileged
#      user's workers run at nice -10 (tumble_worker_nice);
#   4. a WebSocket client joins a room through /ws/<room> and receives snapshots;
#   5. `podman stop -t 2` (SIGTERM, SIGKILL after 2 s): the server must have exited by
#      itself with status 0 in under 2 s;
#   6. the image is under 150 MB; started again, the container restores the rooms the
#      stop saved to its state volume;
#   0. the Kubernetes manifests rendered with `kubectl kustomize` and validated against
#      the Kubernetes schemas offline (docker/k8s-validate.mjs);
#   7. docker/compose.yaml, for real with podman-compose: three servers and the router
#      image (docker/nginx/Dockerfile) and Redis (docker/redis/Dockerfile) on a published
#      loopback port; rooms joined through the router land on one server each, the lobby
#      names it, and stopping one server moves only its rooms, with their worlds (the
#      tick carries on from its checkpoint) (docker/compose-smoke.mjs).
# Ends with the line "docker: N passed, M failed". Run by `make test-docker`.
#
# Behind a TLS-intercepting proxy, npm inside the build needs the proxy's CA: the script
# hands the host's CA bundle ($TUMBLE_BUILD_CA, else $NODE_EXTRA_CA_CERTS, else the system's
# /etc/ssl/certs/ca-certificates.crt) to the build as the optional secret `extra_ca`;
# nothing of it lands in the image.
set -euo pipefail
cd "$(dirname "$0")/.."
. docker/podman-env.sh
IMAGE=${TUMBLE_IMAGE:-localhost/tumble:test}
NAME=tumble-image-test-$$
MAX_BYTES=$((150 * 1000 * 1000))
passed=0; failed=0
ok()   { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
now()  { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
PROJECT=tumble-compose-test-$$
compose_down() {
  local ids
  ids=$(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null || true)
  [ -n "$ids" ] && podman rm -f -v -t 0 $ids >/dev/null 2>&1
  ids=$(podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null || true)
  [ -n "$ids" ] && podman volume rm -f $ids >/dev/null 2>&1
  podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
}
finish() {
  podman rm -f -v -t 0 "$NAME" >/dev/null 2>&1 || true
  compose_down
  echo "docker: $passed passed, $failed failed"
}
trap finish EXIT

# The Kubernetes manifests, offline: rendered by `kubectl kustomize`, every object
# validated against its schema (docker/k8s-validate.mjs); no cluster needed.
mkdir -p build/test-logs
if node docker/k8s-validate.mjs >build/test-logs/k8s-validate.log 2>&1; then
  ok "kubernetes manifests valid ($(tail -1 build/test-logs/k8s-validate.log))"
else
  cat build/test-logs/k8s-validate.log; fail "kubernetes manifests (docker/k8s-validate.mjs)"
fi

t0=$(now)
tumble_podman_setup
tumble_base_image
t1=$(now); echo "base image ready in $(secs "$t0" "$t1") s"

secret=()
ca=${TUMBLE_BUILD_CA:-${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}}
if [ -n "$ca" ] && [ -s "$ca" ]; then secret=(--secret "id=extra_ca,src=$ca"); fi
log=build/test-logs/docker-build.log; mkdir -p build/test-logs
# --format docker keeps HEALTHCHECK (the OCI image format has no field for it).
# bounded: the build fetches Debian and npm packages, and a stalled fetch must fail, not hang
if timeout -k 10 1500 podman build --pull=never --format docker "${secret[@]}" -t "$IMAGE" -f docker/Dockerfile . >"$log" 2>&1; then
  t2=$(now); ok "image built from docker/Dockerfile in $(secs "$t1" "$t2") s"
else
  tail -40 "$log"; fail "podman build (log: $log)"; exit 1
fi

size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
if [ "$size" -lt "$MAX_BYTES" ]; then ok "image size $((size / 1000000)) MB < 150 MB"
else fail "image size $((size / 1000000)) MB, limit 150 MB"; fi

user=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
case "$user" in ''|root|0|0:*|root:*) fail "image runs as root ($user)";; *) ok "image runs as $user";; esac

# Healthcheck timers need systemd, which this machine lacks: run the check by hand below.
podman run -d --name "$NAME" --health-interval disable -p 127.0.0.1::8080 --cap-add SYS_NICE \
  -e TUMBLE_INSTANCE=image-test "$IMAGE" >/dev/null 2>build/test-logs/docker-run.log
port=$(podman port "$NAME" 8080 | head -1 | sed 's/.*://')
health=""
for _ in $(seq 1 50); do
  health=$(curl -fsS --max-time 1 "http://127.0.0.1:$port/healthz" 2>/dev/null) && break
  sleep 0.1
done
if echo "$health" | grep -q '"status":"ok"'; then ok "GET /healthz: $health"
else fail "GET /healthz on port $port: '$health'"; podman logs "$NAME" | tail -20; exit 1; fi

if podman healthcheck run "$NAME" >/dev/null 2>&1; then ok "the image's HEALTHCHECK passes"
else fail "the image's HEALTHCHECK fails"; fi

nice=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '$1 == "tumble_worker_nice" { print $2 }')
if [ "$nice" = -10 ]; then ok "with --cap-add SYS_NICE the workers run at nice -10"
else fail "workers at nice '${nice:-none}' with --cap-add SYS_NICE"; podman logs "$NAME" 2>&1 | grep -i nice | tail -3; fi

if curl -fsS --max-time 2 "http://127.0.0.1:$port/" | grep -qi '<html\|<!doctype'; then ok "GET / serves the web client"
else fail "GET / does not serve a page"; fi

if out=$(node docker/ws-smoke.mjs "$port" image-room 2 2>&1); then ok "WebSocket join and snapshots: $out"
else fail "WebSocket join: $out"; fi

ts=$(now)
podman stop -t 2 "$NAME" >/dev/null 2>>build/test-logs/docker-run.log
te=$(now)
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME")
took=$(secs "$ts" "$te")
if [ "$code" = 0 ] && awk -v t="$took" 'BEGIN { exit !(t < 2.0) }'; then ok "podman stop -t 2: exit 0 after $took s"
else fail "podman stop -t 2: exit code $code after $took s (137 = killed after the 2 s grace)"; podman logs "$NAME" | tail -5; fi
if podman logs "$NAME" 2>&1 | grep -q 'stopped'; then ok "server logged a graceful stop"
else fail "no graceful stop in the log"; fi

# The same container started again keeps its state volume (VOLUME /var/lib/tumble/state):
# the rooms saved by the stop above come back, the joined one included.
podman start "$NAME" >/dev/null 2>>build/test-logs/docker-run.log
port=$(podman port "$NAME" 8080 | head -1 | sed 's/.*://')
rooms=""
for _ in $(seq 1 50); do
  rooms=$(curl -fsS --max-time 1 "http://127.0.0.1:$port/api/rooms" 2>/dev/null) && break
  sleep 0.1
done
restored=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '$1 == "tumble_rooms_restored_total" { print $2 }')
if echo "$rooms" | grep -q '"id":"image-room"' && [ "${restored:-0}" -ge 6 ]; then
  ok "restarted container restored $restored rooms from its state volume, image-room among them"
else
  fail "restarted container: restored '${restored:-none}', rooms: ${rooms:-none}"; podman logs "$NAME" 2>&1 | tail -10
fi
podman stop -t 2 "$NAME" >/dev/null 2>>build/test-logs/docker-run.log || true
echo "image test took $(secs "$t0" "$(now)") s"
[ "$failed" = 0 ] || exit 1

# ---- docker/compose.yaml with podman-compose -------------------------------------
tc=$(now)
if ! command -v podman-compose >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman-compose >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman-compose >/dev/null; }
fi
clog=build/test-logs/docker-compose.log; : >"$clog"
# compose builds images with `docker build` and no build secret; the image is the one
# just built, so tag it as compose names it, and build the router image from its folder.
podman tag "$IMAGE" localhost/tumble:latest
if podman build --pull=never --format docker -t localhost/tumble-router:latest docker/nginx >>"$clog" 2>&1; then
  ok "router image built from docker/nginx/Dockerfile"
else
  tail -20 "$clog"; fail "router image build (log: $clog)"; exit 1
fi
if podman build --pull=never --format docker -t localhost/tumble-redis:latest docker/redis >>"$clog" 2>&1; then
  ok "redis image built from docker/redis/Dockerfile"
else
  tail -20 "$clog"; fail "redis image build (log: $clog)"; exit 1
fi
export TUMBLE_HTTP_PORT TUMBLE_HTTPS_PORT
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
TUMBLE_HTTP_PORT=$(free_port)
TUMBLE_HTTPS_PORT=$(free_port)   # not the compose default 8443: something may hold it
podman-compose -p "$PROJECT" -f docker/compose.yaml up -d --no-build >>"$clog" 2>&1
# In a fleet the rooms open where their first player lands: ready once all three
# servers have answered joins through the router.
for _ in $(seq 1 100); do
  curl -fsS --max-time 1 "http://127.0.0.1:$TUMBLE_HTTP_PORT/router/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
if out=$(node docker/compose-smoke.mjs "$TUMBLE_HTTP_PORT" ready 2>&1); then ok "compose up: router on port $TUMBLE_HTTP_PORT, $out"
else fail "compose up: $out"; tail -30 "$clog"; exit 1; fi
state=$(mktemp)
if node docker/compose-smoke.mjs "$TUMBLE_HTTP_PORT" before "$state"; then ok "compose: rooms placed by the router"; else fail "compose: placement"; fi
# the server holding the most rooms (the state file is {placement: {room: instance}, ticks})
victim=$(node -e 'const p=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).placement; const n={}; for (const v of Object.values(p)) n[v]=(n[v]||0)+1; console.log(Object.keys(n).sort((a,b)=>n[b]-n[a])[0])' "$state")
podman stop -t 2 "${PROJECT}_${victim}_1" >>"$clog" 2>&1
if node docker/compose-smoke.mjs "$TUMBLE_HTTP_PORT" after "$state" "$victim"; then ok "compose: $victim stopped, only its rooms moved"; else fail "compose: after stopping $victim"; fi
rm -f "$state"
compose_down
echo "compose test took $(secs "$tc" "$(now)") s"
[ "$failed" = 0 ]
