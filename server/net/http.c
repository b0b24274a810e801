/* http.c: the HTTP side of the server: client files, lobby API, health,
 * metrics.
 *
 *   GET /               the web client (client-dir/index.html), or a small
 *                       built-in lobby page while no client is built
 *   GET /r/<room-id>    the same page: a shareable room link
 *   GET /api/rooms      JSON array of open rooms
 *   GET /api/records    with --record: JSON array of the record files (name,
 *                       room, bytes, modified), newest first; 404 without
 *   GET /records/<name> with --record: one record file, for the browser's
 *                       replay viewer (names as the server writes them,
 *                       <room>-<digits>.rec, resolved like static files)
 *   GET /replay[/<name>] the web client's replay viewer (the same page)
 *   GET /healthz        JSON, 200 while serving, 503 once stopping
 *   GET /metrics        Prometheus text format
 *   GET /<file>         a file under client-dir, through tb_path_resolve()
 *
 * Dynamic bodies are built in full, the headers written at once and the
 * body on the next HTTP_WRITEABLE (lws wants one write per callback).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h> /* CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID */

#include "net/fleet.h"
#include "net/log.h"
#include "net/path.h"
#include "net/server.h"
#include "net/strbuf.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/room.h"

static const char tb__lobby_html[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>Tumble</title>\n"
    "<style>body{font:16px system-ui,sans-serif;margin:2em;max-width:46em}"
    "table{border-collapse:collapse}td,th{padding:.3em .8em;text-align:left;border-bottom:1px solid #ddd}</style>\n"
    "</head><body>\n<h1>Tumble</h1>\n"
    "<p>The web client is not built yet (<code>make</code> builds it into client-web/dist). Open rooms:</p>\n"
    "<table id=\"rooms\"><thead><tr><th>room</th><th>kind</th><th>scene</th><th>clients</th><th>watching</th><th>bodies</th>"
    "<th>awake</th><th>step (&micro;s)</th></tr></thead><tbody></tbody></table>\n"
    "<script>\n"
    "fetch('/api/rooms').then(r => r.json()).then(rooms => {\n"
    "  const body = document.querySelector('#rooms tbody');\n"
    "  for (const r of rooms) {\n"
    "    const tr = document.createElement('tr');\n"
    "    const a = document.createElement('a'); a.href = '/r/' + encodeURIComponent(r.id); a.textContent = r.id;\n"
    "    const td = document.createElement('td'); td.appendChild(a); tr.appendChild(td);\n"
    "    for (const v of [r.kind, r.scene, r.clients, r.watchers, r.bodies, r.awake, r.step_us.toFixed(1)]) {\n"
    "      const c = document.createElement('td'); c.textContent = v; tr.appendChild(c);\n"
    "    }\n"
    "    body.appendChild(tr);\n"
    "  }\n"
    "});\n"
    "</script>\n</body></html>\n";

static int tb__respond(struct lws *wsi, tb_http_session *h, unsigned status, const char *ctype, const char *body,
                       size_t len)
{
    unsigned char hdr[LWS_PRE + 1024], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr - 1;
    free(h->body);
    h->body = malloc(LWS_PRE + len + 1);
    if (!h->body)
        return -1;
    memcpy(h->body + LWS_PRE, body, len);
    h->len = len;
    if (lws_add_http_common_headers(wsi, status, ctype, (lws_filepos_t)len, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", (const unsigned char *)"no-store",
                                    8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int tb__respond_text(struct lws *wsi, tb_http_session *h, unsigned status, const char *text)
{
    return tb__respond(wsi, h, status, "text/plain; charset=utf-8", text, strlen(text));
}

static int tb__api_rooms(tb_server *server, struct lws *wsi, tb_http_session *h)
{
    if (server->fleet) { /* the whole fleet's rooms */
        size_t len = 0;
        char *json = tb_fleet_rooms_json(server->fleet, &len);
        int rc = json ? tb__respond(wsi, h, 200, "application/json", json, len)
                      : tb__respond_text(wsi, h, 500, "out of memory\n");
        free(json);
        return rc;
    }
    int cap = server->cfg->max_rooms + 8;
    tb_room_row *rows = calloc((size_t)cap, sizeof *rows);
    if (!rows)
        return tb__respond_text(wsi, h, 500, "out of memory\n");
    int n = tb_registry_rows(server->registry, rows, cap);
    if (n > cap)
        n = cap;
    tb_strbuf b = {0};
    tb_strbuf_printf(&b, "[");
    for (int i = 0; i < n; i++) {
        const tb_room_row *r = &rows[i];
        tb_strbuf_printf(&b, "%s{\"id\":", i ? "," : "");
        tb_strbuf_json_str(&b, r->id);
        tb_strbuf_printf(&b, ",\"kind\":");
        tb_strbuf_json_str(&b, r->kind);
        tb_strbuf_printf(&b, ",\"scene\":");
        tb_strbuf_json_str(&b, r->scene);
        tb_strbuf_printf(&b, ",\"clients\":%d,\"watchers\":%d,\"bodies\":%d,\"awake\":%d,\"step_us\":%.2f,\"steps\":%llu,\"worker\":%d,\"default\":%s,\"instance\":",
                      r->clients, r->watchers, r->bodies, r->awake, r->step_us, (unsigned long long)r->steps, r->worker,
                      r->keep ? "true" : "false");
        tb_strbuf_json_str(&b, server->cfg->instance); /* which server holds it, for a router's merged lobby */
        tb_strbuf_printf(&b, "}");
    }
    tb_strbuf_printf(&b, "]\n");
    free(rows);
    int rc = b.failed ? tb__respond_text(wsi, h, 500, "out of memory\n")
                      : tb__respond(wsi, h, 200, "application/json", b.buf, b.len);
    free(b.buf);
    return rc;
}

static int tb__healthz(tb_server *server, struct lws *wsi, tb_http_session *h)
{
    tb_strbuf b = {0};
    bool draining = server->fleet && tb_fleet_draining(server->fleet);
    tb_strbuf_printf(&b, "{\"status\":\"%s\",\"instance\":",
                  server->stopping ? "stopping" : draining ? "draining" : "ok");
    tb_strbuf_json_str(&b, server->cfg->instance);
    tb_strbuf_printf(&b, ",\"rooms\":%d,\"clients\":%d,\"workers\":%d,\"uptime_s\":%.1f}\n",
                  atomic_load(&server->metrics->rooms), atomic_load(&server->metrics->clients),
                  server->cfg->workers, (double)(tb_clock_now_ns() - server->started_ns) / 1e9);
    int rc = b.failed ? -1
                      : tb__respond(wsi, h, server->stopping || draining ? 503 : 200, "application/json", b.buf, b.len);
    free(b.buf);
    return rc;
}

static int tb__metrics(tb_server *server, struct lws *wsi, tb_http_session *h)
{
    tb_strbuf b = {0};
    b.buf = tb_metrics_render(server->metrics, 1024, &b.len, &b.cap);
    if (!b.buf)
        return tb__respond_text(wsi, h, 500, "out of memory\n");
    /* per worker: how rooms are spread and how much each one steps */
    tb_strbuf_printf(&b, "# HELP tumble_worker_rooms Rooms owned by each worker thread.\n"
                      "# TYPE tumble_worker_rooms gauge\n");
    for (int w = 0; w < server->sched->worker_count; w++)
        tb_strbuf_printf(&b, "tumble_worker_rooms{worker=\"%d\"} %d\n", w, tb_sched_worker_load(server->sched, w));
    tb_strbuf_printf(&b, "# HELP tumble_worker_steps_total World steps taken by each worker thread.\n"
                      "# TYPE tumble_worker_steps_total counter\n");
    for (int w = 0; w < server->sched->worker_count; w++)
        tb_strbuf_printf(&b, "tumble_worker_steps_total{worker=\"%d\"} %llu\n", w,
                      (unsigned long long)tb_sched_worker_steps(server->sched, w));
    /* where the CPU goes, by thread: this runs on the network thread */
    tb_strbuf_printf(&b, "# HELP tumble_worker_cpu_seconds_total CPU time (user + system) used by each worker thread.\n"
                      "# TYPE tumble_worker_cpu_seconds_total counter\n");
    for (int w = 0; w < server->sched->worker_count; w++) {
        int64_t ns = tb_sched_worker_cpu_ns(server->sched, w);
        if (ns >= 0)
            tb_strbuf_printf(&b, "tumble_worker_cpu_seconds_total{worker=\"%d\"} %.6f\n", w, (double)ns / 1e9);
    }
    int64_t net = tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID), proc = tb_clock_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    if (net >= 0)
        tb_strbuf_printf(&b, "# HELP tumble_network_thread_cpu_seconds_total CPU time (user + system) used by the "
                          "network thread (WebSocket, HTTP, Redis).\n"
                          "# TYPE tumble_network_thread_cpu_seconds_total counter\n"
                          "tumble_network_thread_cpu_seconds_total %.6f\n",
                      (double)net / 1e9);
    if (proc >= 0)
        tb_strbuf_printf(&b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                          "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n",
                      (double)proc / 1e9);
    if (server->fleet) {
        char *fleet = tb_fleet_metrics_text(server->fleet);
        tb_strbuf_printf(&b, "%s", fleet ? fleet : "");
        free(fleet);
    }
    int rc = b.failed ? tb__respond_text(wsi, h, 500, "out of memory\n")
                      : tb__respond(wsi, h, 200, "text/plain; version=0.0.4; charset=utf-8", b.buf, b.len);
    free(b.buf);
    return rc;
}

/* POST /admin/drain, from this machine or a trusted proxy only
 * (the address the request counts as, after X-Forwarded-For from a
 * trusted proxy: a player behind the router is refused). */
static int tb__admin_drain(tb_server *server, struct lws *wsi, tb_http_session *h)
{
    char peer[48] = "", xff[256] = "", addr[48];
    lws_get_peer_simple(wsi, peer, sizeof peer);
    if (server->proxies.count && lws_hdr_copy(wsi, xff, sizeof xff, WSI_TOKEN_X_FORWARDED_FOR) <= 0)
        xff[0] = 0;
    tb_proxy_client_addr(&server->proxies, peer, xff, addr, sizeof addr);
    if (!tb_fleet_admin_allowed(addr, &server->proxies)) {
        tb_log_warn("POST /admin/drain from %s refused", addr);
        return tb__respond_text(wsi, h, 403, "forbidden: loopback or trusted proxies only\n");
    }
    tb_log_warn("POST /admin/drain from %s: draining", addr);
    tb_fleet_drain(server->fleet, 5000, NULL);
    return tb__respond(wsi, h, 202, "application/json", "{\"status\":\"draining\"}\n", 22);
}

/* ---- records (--record): listed and served for the replay viewer ---------- */

/* A record's file name as sim/record.c makes it: <room id>-<digits>.rec.
 * Nothing else in the folder is listed or served. */
static bool tb__record_name(const char *name)
{
    size_t n = strlen(name);
    if (n < 7 || n > 64 || strcmp(name + n - 4, ".rec") != 0)
        return false;
    size_t dash = n - 4;
    while (dash > 0 && name[dash - 1] >= '0' && name[dash - 1] <= '9')
        dash--;
    if (dash == n - 4 || dash < 2 || name[dash - 1] != '-')
        return false;
    char id[TB_ROOM_ID_MAX + 1];
    if (dash - 1 > TB_ROOM_ID_MAX)
        return false;
    memcpy(id, name, dash - 1);
    id[dash - 1] = 0;
    return tb_room_id_valid(id);
}

typedef struct {
    char name[72];
    long long bytes, mtime_ms;
} tb__record_row;

static int tb__record_newest_first(const void *a, const void *b)
{
    const tb__record_row *x = a, *y = b;
    return x->mtime_ms != y->mtime_ms ? (x->mtime_ms < y->mtime_ms ? 1 : -1) : strcmp(x->name, y->name);
}

#define TB__RECORDS_LISTED 500

static int tb__api_records(tb_server *server, struct lws *wsi, tb_http_session *h)
{
    if (!server->cfg->record_dir[0]) /* nothing recorded: an empty list (the lobby asks every server) */
        return tb__respond(wsi, h, 200, "application/json", "[]\n", 3);
    DIR *d = opendir(server->cfg->record_dir);
    tb__record_row *rows = calloc(TB__RECORDS_LISTED, sizeof *rows);
    int n = 0;
    for (struct dirent *e; d && rows && n < TB__RECORDS_LISTED && (e = readdir(d));) {
        struct stat st;
        if (!tb__record_name(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        memcpy(rows[n].name, e->d_name, strlen(e->d_name) + 1); /* a record name: at most 64 bytes */
        rows[n].bytes = (long long)st.st_size;
        rows[n].mtime_ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        n++;
    }
    if (d)
        closedir(d);
    if (!rows)
        return tb__respond_text(wsi, h, 500, "out of memory\n");
    qsort(rows, (size_t)n, sizeof *rows, tb__record_newest_first);
    tb_strbuf b = {0};
    tb_strbuf_printf(&b, "[");
    for (int i = 0; i < n; i++) {
        char room[TB_ROOM_ID_MAX + 1];
        const char *dash = strrchr(rows[i].name, '-');
        snprintf(room, sizeof room, "%.*s", (int)(dash - rows[i].name), rows[i].name);
        tb_strbuf_printf(&b, "%s{\"name\":", i ? "," : "");
        tb_strbuf_json_str(&b, rows[i].name);
        tb_strbuf_printf(&b, ",\"room\":");
        tb_strbuf_json_str(&b, room);
        tb_strbuf_printf(&b, ",\"bytes\":%lld,\"modified_ms\":%lld}", rows[i].bytes, rows[i].mtime_ms);
    }
    tb_strbuf_printf(&b, "]\n");
    free(rows);
    int rc = b.failed ? tb__respond_text(wsi, h, 500, "out of memory\n")
                      : tb__respond(wsi, h, 200, "application/json", b.buf, b.len);
    free(b.buf);
    return rc;
}

/* GET /records/<name>: the name checked as a record's, then resolved under
 * the record folder's real path like any static file (no traversal, no
 * symlink out of it). */
static int tb__record_file(tb_server *server, struct lws *wsi, tb_http_session *h, const char *uri)
{
    if (!server->cfg->record_dir[0])
        return tb__respond_text(wsi, h, 404, "not recording (start the server with --record DIR)\n");
    const char *name = uri + strlen("/records/");
    char root[PATH_MAX], path[PATH_MAX];
    if (!tb__record_name(name)) {
        TB_COUNT(server->metrics, http_refused_paths_total);
        return tb__respond_text(wsi, h, 403, "not a record name (<room>-<digits>.rec)\n");
    }
    if (!realpath(server->cfg->record_dir, root))
        return tb__respond_text(wsi, h, 404, "no record folder\n");
    int rc = tb_path_resolve(root, uri + strlen("/records"), path, sizeof path);
    if (rc == TB_EPATH) {
        TB_COUNT(server->metrics, http_refused_paths_total);
        return tb__respond_text(wsi, h, 403, "forbidden\n");
    }
    if (rc < 0)
        return tb__respond_text(wsi, h, 404, "no such record\n");
    int n = lws_serve_http_file(wsi, path, "application/octet-stream", "cache-control: no-cache\r\n", 25);
    if (n < 0)
        return -1;
    if (n > 0 && lws_http_transaction_completed(wsi))
        return -1;
    return 0;
}

static int tb__serve_file(struct lws *wsi, const char *path)
{
    int n = lws_serve_http_file(wsi, path, tb_path_mime(path), "cache-control: no-cache\r\n", 25);
    if (n < 0)
        return -1;
    if (n > 0 && lws_http_transaction_completed(wsi))
        return -1;
    return 0;
}

static bool tb__is_app_route(const char *uri)
{
    if (strcmp(uri, "/") == 0 || strcmp(uri, "/index.html") == 0 || strcmp(uri, "/replay") == 0 ||
        strcmp(uri, "/replay/") == 0)
        return true;
    /* the replay viewer of one record: /replay/<name> (the page checks the name) */
    if (strncmp(uri, "/replay/", 8) == 0)
        return strchr(uri + 8, '/') == NULL;
    if (strncmp(uri, "/r/", 3) != 0)
        return false;
    /* Any one-segment room path gets the client, valid id or not: the page
     * tells a person what is wrong with a name ("/r/bad name"), where a bare
     * 404 would not. Client files never live under /r/. */
    size_t n = strlen(uri + 3);
    if (n > 0 && uri[3 + n - 1] == '/')
        n--;
    return n > 0 && memchr(uri + 3, '/', n) == NULL;
}

static int tb__on_request(tb_server *server, struct lws *wsi, tb_http_session *h, const char *uri)
{
    TB_COUNT(server->metrics, http_requests_total);
    if (server->fleet && strcmp(uri, "/admin/drain") == 0 && lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0)
        return tb__admin_drain(server, wsi, h);
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0)
        return tb__respond_text(wsi, h, 405, "only GET\n");
    tb_log_debug("GET %s", uri);
    if (strcmp(uri, "/healthz") == 0)
        return tb__healthz(server, wsi, h);
    if (strcmp(uri, "/metrics") == 0)
        return tb__metrics(server, wsi, h);
    if (strcmp(uri, "/api/rooms") == 0)
        return tb__api_rooms(server, wsi, h);
    if (strcmp(uri, "/api/records") == 0)
        return tb__api_records(server, wsi, h);
    if (strncmp(uri, "/records/", 9) == 0)
        return tb__record_file(server, wsi, h, uri);
    if (server->stopping)
        return tb__respond_text(wsi, h, 503, "shutting down\n");

    char path[PATH_MAX];
    if (tb__is_app_route(uri)) {
        if (server->root_real[0] && tb_path_resolve(server->root_real, "/index.html", path, sizeof path) == 0)
            return tb__serve_file(wsi, path);
        return tb__respond(wsi, h, 200, "text/html; charset=utf-8", tb__lobby_html, sizeof tb__lobby_html - 1);
    }
    if (!server->root_real[0])
        return tb__respond_text(wsi, h, 404, "not found\n");
    int rc = tb_path_resolve(server->root_real, uri, path, sizeof path);
    if (rc == TB_EPATH) {
        TB_COUNT(server->metrics, http_refused_paths_total);
        return tb__respond_text(wsi, h, 403, "forbidden\n");
    }
    if (rc < 0)
        return tb__respond_text(wsi, h, 404, "not found\n");
    return tb__serve_file(wsi, path);
}

int tb_http_callback(tb_server *server, struct lws *wsi, int reason, void *user, void *in, size_t len)
{
    tb_http_session *h = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        char uri[1024];
        size_t n = len < sizeof uri - 1 ? len : sizeof uri - 1;
        memcpy(uri, in, n);
        uri[n] = 0;
        if (strlen(uri) != n) { /* NUL inside the path */
            TB_COUNT(server->metrics, http_refused_paths_total);
            return tb__respond_text(wsi, h, 403, "forbidden\n");
        }
        return tb__on_request(server, wsi, h, uri);
    }
    case LWS_CALLBACK_HTTP_WRITEABLE: {
        if (!h || !h->body)
            return 0;
        int n = lws_write(wsi, h->body + LWS_PRE, h->len, LWS_WRITE_HTTP_FINAL);
        size_t want = h->len;
        free(h->body);
        h->body = NULL;
        if (n < (int)want)
            return -1;
        if (lws_http_transaction_completed(wsi))
            return -1;
        return 0;
    }
    case LWS_CALLBACK_CLOSED_HTTP:
        if (h) {
            free(h->body);
            h->body = NULL;
        }
        return 0;
    default:
        return lws_callback_http_dummy(wsi, (enum lws_callback_reasons)reason, user, in, len);
    }
}
