#!/bin/sh
# render.sh OUTDIR: writes OUTDIR/nginx.conf from nginx.conf.template (beside this
# script), copies lobby.js next to it and makes OUTDIR/tmp for nginx's temp files.
# Then: nginx -p OUTDIR -c OUTDIR/nginx.conf -e stderr
#
# Environment:
#   TUMBLE_UPSTREAMS       the tumble servers, "host:port host:port ..." (required)
#   TUMBLE_ROUTER_LISTEN   nginx's listen value (default 8080; e.g. 127.0.0.1:41234)
#   TUMBLE_ROUTER_LOG      error log level (default warn)
#   TUMBLE_ROUTER_ACCESS_LOG  access_log value (default off; e.g. /dev/stdout)
#   TUMBLE_ROUTER_CONNS_PER_ADDRESS  WebSocket connections per client address (default 32)
#   TUMBLE_ROUTER_RESOLVER  a DNS server; when set, server names are re-resolved while nginx
#                          runs (needs nginx >= 1.27.3, e.g. in Kubernetes where a pod's
#                          address changes when it is recreated). Unset: resolved once at start.
#   NGINX_MODULES          folder of ngx_http_js_module.so (default /usr/lib/nginx/modules)
#   TUMBLE_ROUTER_TLS_CERT, TUMBLE_ROUTER_TLS_KEY  PEM files: also serve https and wss (TLS
#                          ends here; the servers behind stay plain) on TUMBLE_ROUTER_TLS_LISTEN
#                          (default 8443)
#   TUMBLE_ROUTER_TLS_SELF_SIGNED=1  make a self-signed certificate at those paths when they
#                          do not exist (local use; needs openssl)
set -eu
out=${1:?usage: render.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
: "${TUMBLE_UPSTREAMS:?set TUMBLE_UPSTREAMS to the tumble servers, e.g. \"tumble-1:8080 tumble-2:8080\"}"
mkdir -p "$out/tmp"
out=$(cd "$out" && pwd)
cp "$here/lobby.js" "$out/lobby.js"
tls=""
if [ -n "${TUMBLE_ROUTER_TLS_CERT:-}" ]; then
  : "${TUMBLE_ROUTER_TLS_KEY:?set TUMBLE_ROUTER_TLS_KEY with TUMBLE_ROUTER_TLS_CERT}"
  if [ ! -s "$TUMBLE_ROUTER_TLS_CERT" ] && [ "${TUMBLE_ROUTER_TLS_SELF_SIGNED:-}" = 1 ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=localhost \
      -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
      -keyout "$TUMBLE_ROUTER_TLS_KEY" -out "$TUMBLE_ROUTER_TLS_CERT" 2>/dev/null
    echo "render.sh: made a self-signed certificate $TUMBLE_ROUTER_TLS_CERT (local use only)" >&2
  fi
  tls="        listen ${TUMBLE_ROUTER_TLS_LISTEN:-8443} ssl;
        ssl_certificate $TUMBLE_ROUTER_TLS_CERT;
        ssl_certificate_key $TUMBLE_ROUTER_TLS_KEY;
        ssl_protocols TLSv1.2 TLSv1.3;"
fi
awk -v ups="$TUMBLE_UPSTREAMS" \
    -v listen="${TUMBLE_ROUTER_LISTEN:-8080}" \
    -v level="${TUMBLE_ROUTER_LOG:-warn}" \
    -v access="${TUMBLE_ROUTER_ACCESS_LOG:-off}" \
    -v peraddr="${TUMBLE_ROUTER_CONNS_PER_ADDRESS:-32}" \
    -v resolver="${TUMBLE_ROUTER_RESOLVER:-}" \
    -v modules="${NGINX_MODULES:-/usr/lib/nginx/modules}" \
    -v tls="$tls" \
    -v jsdir="$out" '
BEGIN {
    n = split(ups, u, /[ ,\n\t]+/); k = 0
    for (i = 1; i <= n; i++) if (u[i] != "") s[k++] = u[i]
    if (k == 0) { print "render.sh: TUMBLE_UPSTREAMS is empty" > "/dev/stderr"; exit 2 }
    servers = ""; locs = ""; ups1 = ""
    opt = (resolver != "") ? " resolve" : ""
    zone = (resolver != "") ? "        zone tumble_rooms 256k;" : ""
    res = (resolver != "") ? "    resolver " resolver " valid=10s ipv6=off;" : ""
    for (i = 0; i < k; i++) {
        # A server that fails is skipped for fail_timeout; the consistent hash then walks
        # on along the ring, so only the rooms that server held move.
        servers = servers "        server " s[i] " max_fails=1 fail_timeout=5s" opt ";\n"
        ups1 = ups1 "    upstream tumble_server_" i " {\n"
        if (resolver != "") ups1 = ups1 "        zone tumble_server_" i " 64k;\n"
        ups1 = ups1 "        server " s[i] opt ";\n    }\n"
        locs = locs "        location /_tumble/" i "/ {\n            internal;\n            proxy_pass http://tumble_server_" i "/;\n        }\n"
    }
    sub(/\n$/, "", servers); sub(/\n$/, "", locs); sub(/\n$/, "", ups1)
}
{
    gsub(/@LISTEN@/, listen); gsub(/@LOG_LEVEL@/, level); gsub(/@ACCESS_LOG@/, access)
    gsub(/@NGINX_MODULES@/, modules); gsub(/@JS_DIR@/, jsdir); gsub(/@SERVER_COUNT@/, k)
    gsub(/@PER_ADDRESS@/, peraddr)
    if ($0 ~ /^@UPSTREAM_SERVERS@$/) { print servers; next }
    if ($0 ~ /^@SERVER_LOCATIONS@$/) { print locs; next }
    if ($0 ~ /^@SERVER_UPSTREAMS@$/) { print ups1; next }
    if ($0 ~ /^@RESOLVER@$/) { if (res != "") print res; next }
    if ($0 ~ /^@TLS@$/) { if (tls != "") print tls; next }
    if ($0 ~ /^@UPSTREAM_ZONE@$/) { if (zone != "") print zone; next }
    print
}' "$here/nginx.conf.template" > "$out/nginx.conf"
