/* server.c: the lws context on the foreign libuv loop, and the server's
 * lifecycle: init, attach, start (listen), stop (graceful: every session is
 * closed with 1001, then the workers stop and the handles close). What a
 * session does lives in session.c, inbound.c, outbox.c and housekeeping.c
 * (session.h says which owns what).
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <stdlib.h>
#include <string.h>

#include "net/log.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/wire.h"

static int tb__http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    tb_server *server = lws_context_user(lws_get_context(wsi));
    if (reason == LWS_CALLBACK_HTTP_CONFIRM_UPGRADE)
        return tb_session_confirm_upgrade(server, wsi, in);
    return tb_http_callback(server, wsi, (int)reason, user, in, len);
}

static struct lws_protocols tb__protocols[] = {
    {"http", tb__http_callback, sizeof(tb_http_session), 0, 0, NULL, 0},
    {"tumble.v1", tb_session_callback, sizeof(tb_session), TB__RX_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* 4.1.6 has no LWS_PROTOCOL_LIST_TERM */
};

/* No lws validity timer: the housekeeping pings every client each second and
 * cuts one that stops reading (housekeeping.c), which is all the default
 * policy (ping after 40 s idle, hang up after 50 s) would do. The default
 * was not free: every pong re-arms it by an insertion into a sorted list of
 * every connection's timers, 1.3 % of a 2-core machine's CPU at 600 clients. */
static const lws_retry_bo_t tb__no_validity = {.secs_since_valid_ping = 0, .secs_since_valid_hangup = 0};

/* ---- lifecycle ----------------------------------------------------------- */

int tb_server_init(tb_server *server, uv_loop_t *loop, const tb_config *cfg, tb_metrics *metrics)
{
    memset(server, 0, sizeof *server);
    server->loop = loop;
    server->cfg = cfg;
    server->metrics = metrics;
    server->started_ns = tb_clock_now_ns();
    if (!realpath(cfg->client_dir, server->root_real))
        server->root_real[0] = 0;
    char err[160];
    if (tb_proxy_parse(&server->proxies, cfg->trusted_proxies, err, sizeof err) < 0) /* checked by config */
        server->proxies.count = 0;
    uv_async_init(loop, &server->wake, tb_outbox_on_wake);
    server->wake.data = server;
    uv_timer_init(loop, &server->housekeeping);
    server->housekeeping.data = server;
    uv_timer_init(loop, &server->stop_timer);
    server->stop_timer.data = server;
    uv_timer_init(loop, &server->rx_resume);
    server->rx_resume.data = server;
    server->handles_open = 4;
    return 0;
}

void tb_server_attach(tb_server *server, tb_sched *sched, tb_registry *registry)
{
    server->sched = sched;
    server->registry = registry;
}

static void tb__lws_log(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    tb_log(level == LLL_ERR ? TB_LOG_ERROR : level == LLL_WARN ? TB_LOG_WARN : TB_LOG_DEBUG, "lws: %.*s",
           (int)n, line);
}

int tb_server_start(tb_server *server)
{
    const tb_config *cfg = server->cfg;
    lws_set_log_level(cfg->log_level >= TB_LOG_DEBUG ? (LLL_ERR | LLL_WARN | LLL_NOTICE) : (LLL_ERR | LLL_WARN),
                      tb__lws_log);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *foreign_loops[1] = {server->loop};
    info.foreign_loops = foreign_loops;
    info.options = LWS_SERVER_OPTION_LIBUV;
    if (!strchr(cfg->bind, ':'))
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    info.port = cfg->port;
    info.iface = strcmp(cfg->bind, "0.0.0.0") == 0 ? NULL : cfg->bind;
    info.protocols = tb__protocols;
    info.user = server;
    info.gid = -1;
    info.uid = -1;
    info.timeout_secs = 20;
    info.retry_and_idle_policy = &tb__no_validity;
    if (cfg->tls_cert[0]) { /* https and wss on the same port (both files checked by config.c) */
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = cfg->tls_cert;
        info.ssl_private_key_filepath = cfg->tls_key;
    }
    info.pcontext = &server->context;
    server->context = lws_create_context(&info);
    if (!server->context) {
        tb_log_error("cannot listen on %s:%d", cfg->bind, cfg->port);
        return TB_EINVAL;
    }
    server->vhost = lws_get_vhost_by_name(server->context, "default");
    server->port = server->vhost ? lws_get_vhost_listen_port(server->vhost) : cfg->port;
    uv_timer_start(&server->housekeeping, tb_housekeeping_cb, 500, 500);
    server->started = true;
    return 0;
}

static void tb__handle_closed(uv_handle_t *handle)
{
    tb_server *server = handle->data;
    if (--server->handles_open == 0) {
        free(server->addrs);
        server->addrs = NULL;
        for (int i = 0; i < server->leave_count; i++)
            tb_room_unref(server->leaves[i].room);
        free(server->leaves);
        server->leaves = NULL;
        server->leave_count = 0;
        tb_rate_table_free(&server->create_rates);
        if (server->close_cb)
            server->close_cb(server);
    }
}

/* Second half of stop: every client has gone (or the deadline passed). */
static void tb__finish_stop(tb_server *server)
{
    uv_timer_stop(&server->stop_timer);
    tb_sched_stop(server->sched); /* no more uv_async_send after this */
    server->workers_stopped = true;
    tb_out out;
    while (tb_sched_poll(server->sched, &out)) {
        tb_msg_unref(out.msg);
        tb_msg_unref(out.key);
        tb_room_unref(out.room);
    }
    if (server->context) {
        /* Drop session state of anything lws still holds; CLOSED follows. */
        lws_context_destroy(server->context);
    }
    uv_close((uv_handle_t *)&server->wake, tb__handle_closed);
    uv_close((uv_handle_t *)&server->housekeeping, tb__handle_closed);
    uv_close((uv_handle_t *)&server->stop_timer, tb__handle_closed);
    uv_close((uv_handle_t *)&server->rx_resume, tb__handle_closed);
}

static void tb__stop_tick(uv_timer_t *timer)
{
    tb_server *server = timer->data;
    if (server->session_count == 0 || tb_clock_now_ns() >= server->stop_deadline_ns)
        tb__finish_stop(server);
}

/* Going away beats anything still queued for the client: it is told why
 * and closed with 1001, which makes it reconnect (to this room's next
 * server, when a router stands in front). */
static void tb__going_away(tb_session *s, const char *reason)
{
    tb_outbox_clear_ctl(s);
    tb_outbox_clear_slots(s);
    tb_outbox_clear_contacts(s);
    tb_outbox_push_ctl(s, tb_wire_error(TB_ERR_SHUTTING_DOWN, reason, -1));
    tb_session_begin_close(s, LWS_CLOSE_STATUS_GOINGAWAY, reason);
}

/* The room moves to another server of the fleet (net/fleet.h). */
void tb_server_close_room(tb_server *server, tb_room *room, const char *reason)
{
    (void)server;
    for (tb_session *s = room->net; s; s = s->room_next)
        tb__going_away(s, reason);
}

void tb_server_stop(tb_server *server, tb_server_close_cb close_cb)
{
    if (server->stopping)
        return;
    server->stopping = true;
    server->close_cb = close_cb;
    server->stop_deadline_ns = tb_clock_now_ns() + 700 * TB_NS_PER_MS;
    tb_log_info("stopping: closing %d client(s) with 1001", server->session_count);
    for (tb_session *s = server->sessions; s; s = s->next)
        tb__going_away(s, "server shutting down");
    uv_timer_stop(&server->housekeeping);
    if (!server->started) {
        tb__finish_stop(server);
        return;
    }
    uv_timer_start(&server->stop_timer, tb__stop_tick, 10, 10);
}
