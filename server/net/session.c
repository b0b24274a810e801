/* session.c: a session's life (session.h: who owns what).
 *
 * An upgrade is checked before lws binds a protocol (tb_session_confirm_upgrade):
 * a refusal gets an HTTP answer, then the connection closes (PROTOCOL.md §1).
 * An accepted one becomes a session: counted against its address, on the
 * server's list, with full token buckets. Closing leaves the room (a LEAVE the
 * worker must see: retried while the room's ring is full) and frees what the
 * session holds. The lws callback dispatches to inbound.c and outbox.c.
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "net/fleet.h"
#include "net/log.h"
#include "sim/clock.h"

/* Kernel send buffer per WebSocket: with lws's own one-message partial
 * buffer this bounds what a client that stops reading costs the server. */
#define TB__SNDBUF (256 * 1024)

static tb_addr_count *tb__addr(tb_server *server, const char *addr, bool create)
{
    for (int i = 0; i < server->addr_count; i++)
        if (strcmp(server->addrs[i].addr, addr) == 0)
            return &server->addrs[i];
    if (!create)
        return NULL;
    if (server->addr_count == server->addr_cap) {
        int cap = server->addr_cap ? server->addr_cap * 2 : 16;
        tb_addr_count *a = realloc(server->addrs, (size_t)cap * sizeof *a);
        if (!a)
            return NULL;
        server->addrs = a;
        server->addr_cap = cap;
    }
    tb_addr_count *a = &server->addrs[server->addr_count++];
    snprintf(a->addr, sizeof a->addr, "%s", addr);
    a->count = 0;
    return a;
}

static void tb__addr_release(tb_server *server, const char *addr)
{
    tb_addr_count *a = tb__addr(server, addr, false);
    if (a && --a->count <= 0)
        *a = server->addrs[--server->addr_count];
}

/* ---- rooms -------------------------------------------------------------- */

void tb_session_retry_leaves(tb_server *server)
{
    for (int i = 0; i < server->leave_count;) {
        tb_pending_leave *p = &server->leaves[i];
        if (tb_room_push_input(p->room, &p->in) == 0) {
            tb_room_unref(p->room);
            *p = server->leaves[--server->leave_count];
        } else {
            i++;
        }
    }
}

static void tb__push_leave(tb_server *server, tb_room *room, const tb_input *in)
{
    if (server->leave_count == 0 && tb_room_push_input(room, in) == 0)
        return;
    if (server->leave_count == server->leave_cap) {
        int cap = server->leave_cap ? server->leave_cap * 2 : 16;
        tb_pending_leave *l = realloc(server->leaves, (size_t)cap * sizeof *l);
        if (!l)
            return; /* out of memory: the grabs stay until the room resets */
        server->leaves = l;
        server->leave_cap = cap;
    }
    server->leaves[server->leave_count++] = (tb_pending_leave){tb_room_ref(room), *in};
    tb_session_retry_leaves(server);
}

void tb_session_leave_room(tb_session *s)
{
    tb_room *room = s->room;
    if (!room)
        return;
    if (s->room_prev)
        s->room_prev->room_next = s->room_next;
    else
        room->net = s->room_next;
    if (s->room_next)
        s->room_next->room_prev = s->room_prev;
    s->room_next = s->room_prev = NULL;
    tb_link_left(s);
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_LEAVE;
    in.flags = s->watcher ? 1 : 0;
    in.client = s->id;
    in.target = -1;
    in.recv_ns = tb_clock_now_ns();
    in.serial = ++room->next_serial;
    tb__push_leave(s->server, room, &in);
    atomic_fetch_sub(s->watcher ? &room->watchers : &room->clients, 1);
    atomic_fetch_sub(&s->server->metrics->clients, 1);
    s->room = NULL;
    s->watcher = false;
    s->welcomed = false;
    tb_outbox_clear_slots(s);
    tb_outbox_clear_contacts(s);
    tb_room_unref(room);
}

/* ---- the upgrade ------------------------------------------------------- */

static bool tb__origin_allowed(tb_server *server, struct lws *wsi)
{
    const char *list = server->cfg->allowed_origins;
    if (!list[0])
        return true;
    char origin[256];
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return false;
    size_t olen = strlen(origin);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && *p == ' ') {
            p++;
            n--;
        }
        while (n && p[n - 1] == ' ')
            n--;
        if (n == olen && strncmp(p, origin, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

/* The address per-address limits count this connection as (net/proxy.h). */
static void tb__client_addr(tb_server *server, struct lws *wsi, char *out, size_t cap)
{
    char peer[48] = "", xff[256] = "";
    lws_get_peer_simple(wsi, peer, sizeof peer);
    if (server->proxies.count && lws_hdr_copy(wsi, xff, sizeof xff, WSI_TOKEN_X_FORWARDED_FOR) <= 0)
        xff[0] = 0;
    tb_proxy_client_addr(&server->proxies, peer, xff, out, cap);
}

/* "/ws/<room>" or "/ws/<room>/" -> room; anything else -> "" (any room). */
static void tb__path_room(struct lws *wsi, char *out, size_t cap)
{
    char uri[128];
    out[0] = 0;
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strncmp(uri, "/ws/", 4) != 0)
        return;
    size_t n = strcspn(uri + 4, "/?");
    if (n == 0 || n >= cap)
        return;
    memcpy(out, uri + 4, n);
    out[n] = 0;
}

/* Is a WebSocket upgrade refused? true with the HTTP status and, in why, a
 * one-line reason a person can act on (PROTOCOL.md §1); *reason (may be
 * NULL) gets the refusal's metric. false when it may proceed. */
static bool tb__upgrade_refusal(tb_server *server, struct lws *wsi, int *status, tb_refuse_reason *reason, char *why,
                                size_t cap)
{
    int st = 0;
    tb_refuse_reason r = TB_REFUSE_COUNT;
    char offered[256] = "", addr[48] = "";
    if (lws_hdr_copy(wsi, offered, sizeof offered, WSI_TOKEN_PROTOCOL) < 0)
        offered[0] = 0;
    /* lws binds the first offered name it knows: "http" would land the
     * socket on the HTTP handler, so tumble.v1 must be the only one it knows */
    bool tumble = false, other_known = false;
    for (char *save = NULL, *tok = strtok_r(offered, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        tumble = tumble || strcmp(tok, "tumble.v1") == 0;
        other_known = other_known || strcmp(tok, "http") == 0;
    }
    tb__client_addr(server, wsi, addr, sizeof addr);
    tb_addr_count *a = tb__addr(server, addr, false);
    if (server->stopping) {
        st = 503, r = TB_REFUSE_SHUTTING_DOWN;
        snprintf(why, cap, "server shutting down");
    } else if (server->fleet && tb_fleet_draining(server->fleet)) {
        /* its rooms are moving: a router tries the next server on a 503 */
        st = 503, r = TB_REFUSE_SHUTTING_DOWN;
        snprintf(why, cap, "server draining: its rooms are moving to another server");
    } else if (!tumble || other_known) {
        st = 400, r = TB_REFUSE_SUBPROTOCOL;
        snprintf(why, cap, "WebSocket subprotocol tumble.v1 required (Sec-WebSocket-Protocol: tumble.v1)");
    } else if (!tb__origin_allowed(server, wsi)) {
        st = 403, r = TB_REFUSE_ORIGIN;
        snprintf(why, cap, "origin not allowed (--allowed-origins)");
    } else if (a && a->count >= server->cfg->max_conns_per_address) {
        st = 429, r = TB_REFUSE_PER_ADDRESS;
        snprintf(why, cap, "connection limit per address reached: %d open from %s (--max-conns-per-address)",
                 a->count, addr);
    } else {
        return false;
    }
    if (status)
        *status = st;
    if (reason)
        *reason = r;
    return true;
}

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE (on the http protocol, before lws
 * binds a WebSocket protocol): a refused upgrade gets a plain HTTP answer,
 * "HTTP/1.1 <status>" with the reason as its text body, then the
 * connection closes. Returning -1 makes lws hang up after that write
 * (the >0 path keeps the connection for another request). */
int tb_session_confirm_upgrade(tb_server *server, struct lws *wsi, const char *upgrade)
{
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0)
        return 0;
    int status = 0;
    tb_refuse_reason reason = TB_REFUSE_COUNT;
    char why[160];
    if (!tb__upgrade_refusal(server, wsi, &status, &reason, why, sizeof why))
        return 0;
    TB_COUNT(server->metrics, connections_refused_total[reason]);
    tb_log_debug("refused WebSocket upgrade: %d %s", status, why);
    const char *text = status == 400 ? "Bad Request" : status == 403 ? "Forbidden"
                       : status == 429 ? "Too Many Requests" : "Service Unavailable";
    unsigned char buf[LWS_PRE + 512];
    int n = snprintf((char *)buf + LWS_PRE, sizeof buf - LWS_PRE,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s\n",
                     status, text, strlen(why) + 1, why);
    if (n > 0 && (size_t)n < sizeof buf - LWS_PRE)
        lws_write(wsi, buf + LWS_PRE, (size_t)n, LWS_WRITE_HTTP_HEADERS);
    return -1;
}

/* ---- open and close ----------------------------------------------------- */

static int tb__session_open(tb_server *server, struct lws *wsi, tb_session *s)
{
    memset(s, 0, sizeof *s);
    s->wsi = wsi;
    s->server = server;
    s->id = ++server->next_client_id;
    int sndbuf = TB__SNDBUF, fd = lws_get_socket_fd(wsi);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    tb__client_addr(server, wsi, s->addr, sizeof s->addr);
    tb__path_room(wsi, s->path_room, sizeof s->path_room);
    tb_addr_count *a = tb__addr(server, s->addr, true);
    if (a)
        a->count++;
    int64_t now = tb_clock_now_ns();
    s->last_write_ns = now;
    s->last_progress_ns = now;
    tb_link_init(s, now);
    tb_bucket_init(&s->input, 2.0 * server->cfg->input_rate, now);
    tb_bucket_init(&s->throws, 2.0 * server->cfg->throw_rate, now);
    tb_bucket_init(&s->flood, 2.0 * server->cfg->input_rate, now);
    tb_bucket_init(&s->errors, TB__ERROR_BURST, now);
    s->next = server->sessions;
    if (s->next)
        s->next->prev = s;
    server->sessions = s;
    server->session_count++;
    TB_COUNT(server->metrics, connections_total);
    tb_log_debug("client %u connected from %s", s->id, s->addr);
    return 0;
}

static int tb__session_closed(tb_server *server, tb_session *s)
{
    if (!s->server)
        return 0;
    tb_session_leave_room(s);
    tb_outbox_clear_ctl(s);
    tb_outbox_clear_slots(s);
    tb_outbox_clear_contacts(s);
    free(s->rx);
    s->rx = NULL;
    free(s->tx);
    s->tx = NULL;
    if (s->prev)
        s->prev->next = s->next;
    else
        server->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    server->session_count--;
    tb__addr_release(server, s->addr);
    tb_log_debug("client %u closed", s->id);
    s->server = NULL;
    return 0;
}

/* The client has read everything up to the outstanding ping (housekeeping.c). */
static void tb__pong(tb_session *s)
{
    tb_link_pong(s, tb_clock_now_ns());
    if (s->ping_sent_ns) { /* read everything up to the ping */
        s->ping_sent_ns = 0;
        s->ping_delivered_ns = 0;
        s->last_progress_ns = tb_clock_now_ns();
    }
}

int tb_session_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    tb_server *server = lws_context_user(lws_get_context(wsi));
    tb_session *s = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        /* tb_session_confirm_upgrade has answered every refusal in HTTP
         * already; this only holds if lws ever skipped it */
        char why[160];
        return tb__upgrade_refusal(server, wsi, NULL, NULL, why, sizeof why) ? 1 : 0;
    }
    case LWS_CALLBACK_ESTABLISHED:
        return tb__session_open(server, wsi, s);
    case LWS_CALLBACK_RECEIVE:
        return tb_inbound_receive(s, in, len);
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return tb_outbox_writeable(s);
    case LWS_CALLBACK_RECEIVE_PONG:
        tb__pong(s);
        return 0;
    case LWS_CALLBACK_CLOSED:
        return tb__session_closed(server, s);
    default:
        return 0;
    }
}
