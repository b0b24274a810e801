/* server.h: the network thread: libwebsockets on the main libuv loop.
 *
 * tb_server owns every socket. It serves HTTP (client files, /api/rooms,
 * /healthz, /metrics) and the `tumble.v1` WebSocket protocol. It never
 * touches a world: it decodes client messages into tb_input records for
 * the room rings, and it drains the workers' output rings (woken by
 * tb_server_wake from any thread) into the sessions' outbound slots.
 *
 * Lifecycle, libuv style: tb_server_init -> tb_server_attach ->
 * tb_server_start -> ... -> tb_server_stop(close_cb). Stop is graceful:
 * refuse new connections, close every WebSocket with 1001 (going away),
 * stop the workers, destroy the lws context and close the server's own
 * handles, then call close_cb on the loop.
 */
#ifndef TB_SERVER_H
#define TB_SERVER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "net/config.h"
#include "net/limits.h"
#include "net/proxy.h"
#include "sim/metrics.h"
#include "sim/registry.h"
#include "sim/sched.h"

/* outbox.c, tb__write_batch: up to this many bytes of frames in one write,
 * behind room for lws's LWS_PRE */
#define TB_BATCH_BYTES 32768
#define TB_BATCH_PRE 64

struct lws_context;
struct lws_vhost;
struct tb_session;
typedef struct tb_server tb_server;
typedef void (*tb_server_close_cb)(tb_server *server);

typedef struct tb_addr_count {
    char addr[48];
    int count;
} tb_addr_count;

struct tb_server {
    uv_loop_t *loop;
    const tb_config *cfg;
    tb_metrics *metrics;
    tb_sched *sched;
    tb_registry *registry;

    struct lws_context *context;
    struct lws_vhost *vhost;
    int port; /* the bound port (the real one when --port 0) */

    uv_async_t wake;          /* workers -> network thread */
    uv_timer_t housekeeping;  /* slow readers, idle rooms (2 Hz) */
    uv_timer_t stop_timer;    /* graceful-stop progress */
    uv_timer_t rx_resume;     /* re-opens sockets paused for fairness */
    bool rx_resume_armed;
    int handles_open;
    /* sessions given output while on_wake delivers: written directly at its
     * end (see server.c, "Writing"); empty outside on_wake */
    struct tb_session *flush;
    bool delivering;
    /* in on_wake or the housekeeping timer, outside any lws callback: a due
     * ping may be written at once there (outbox.c, tb_outbox_ping) */
    bool writing_direct;
    /* several queued frames of one session framed for one write (outbox.c,
     * tb__write_batch); network thread only */
    unsigned char batch[TB_BATCH_PRE + TB_BATCH_BYTES];

    char root_real[PATH_MAX]; /* realpath of --client-dir, "" when missing */

    struct tb_session *sessions; /* every WebSocket session */
    int session_count;
    uint32_t next_client_id;
    tb_addr_count *addrs;
    int addr_count, addr_cap;
    struct tb_pending_leave *leaves; /* LEAVEs a full room ring refused: retried */
    int leave_count, leave_cap;
    tb_rate_table create_rates; /* room creations per address (--room-create-rate) */
    tb_proxy_list proxies;      /* --trusted-proxies */

    bool started, stopping, workers_stopped;
    int64_t started_ns;
    int64_t stop_deadline_ns;
    tb_server_close_cb close_cb;
    struct tb_fleet *fleet; /* --redis (net/fleet.h), or NULL */
};

int tb_server_init(tb_server *server, uv_loop_t *loop, const tb_config *cfg, tb_metrics *metrics);
void tb_server_attach(tb_server *server, tb_sched *sched, tb_registry *registry);
/* tb_sched_wake_cb: safe from any thread. */
void tb_server_wake(void *server);
/* Creates the lws context and listens. 0, or TB_EINVAL when lws fails. */
int tb_server_start(tb_server *server);
void tb_server_stop(tb_server *server, tb_server_close_cb close_cb);

/* Hooks for net/fleet.c. The fleet's answer to a hello it held
 * back (tb_fleet_claim): verdict 0 joins (the room is restored, or is
 * created as usual), a TB_E* code refuses with why. */
struct tb_client_msg;
void tb_server_fleet_join(tb_server *server, uint32_t client, const struct tb_client_msg *hello, int verdict,
                          const char *why);
/* Close every session of the room with 1001 (its players reconnect). */
void tb_server_close_room(tb_server *server, tb_room *room, const char *reason);

/* HTTP side (http.c), called from the lws callback in server.c with the
 * per-connection tb_http_session as user. */
struct lws;
typedef struct tb_http_session {
    unsigned char *body; /* LWS_PRE + len bytes, written on HTTP_WRITEABLE */
    size_t len;
} tb_http_session;
int tb_http_callback(tb_server *server, struct lws *wsi, int reason, void *user, void *in, size_t len);

#endif
