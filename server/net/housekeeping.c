/* housekeeping.c: the network thread's 2 Hz timer (session.h: who owns what).
 *
 * It retries LEAVEs a full room ring refused, asks lws again for WRITEABLE
 * callbacks it may have dropped, sends each session a WebSocket ping a
 * second, disconnects slow readers (the three ways one shows are in
 * tb_housekeeping_cb), and retires idle rooms.
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "net/log.h"
#include "sim/clock.h"
#include "sim/registry.h"

/* A WebSocket ping per client this often: its pong tells the client has read
 * everything sent before it (see tb__housekeeping). */
#define TB__PING_INTERVAL_NS (1000 * TB_NS_PER_MS)

/* Has the client read anything lately, by the kernel send queue? The kernel
 * acknowledges data into the client's receive buffer even when the
 * application does not read, so this only sees a stalled client once that
 * buffer is full: a send queue that no longer drains (its receive window
 * closed). Each look: drained = what the queue held last time + what we
 * wrote since - what it holds now. Also notes when an outstanding ping has
 * been acknowledged (everything up to ping_end left the queue while lws
 * itself holds nothing back). */
static bool tb__reader_progressed(tb_session *s, int64_t now)
{
    int fd = lws_get_socket_fd(s->wsi), outq = 0;
    if (fd < 0 || ioctl(fd, SIOCOUTQ, &outq) != 0)
        return true;
    long long written = (long long)(s->wire_bytes - s->wire_bytes_checked);
    long long drained = (long long)s->prev_outq + written - outq;
    s->wire_bytes_checked = s->wire_bytes;
    s->prev_outq = outq;
    if (s->ping_sent_ns && !s->ping_delivered_ns && !lws_send_pipe_choked(s->wsi) &&
        s->wire_bytes - (uint64_t)outq >= s->ping_end)
        s->ping_delivered_ns = now;
    return outq == 0 || drained > 0;
}

void tb_housekeeping_cb(uv_timer_t *timer)
{
    tb_server *server = timer->data;
    int64_t now = tb_clock_now_ns();
    int64_t limit = (int64_t)server->cfg->slow_reader_timeout * TB_NS_PER_SEC;
    if (server->leave_count)
        tb_session_retry_leaves(server);
    server->writing_direct = true;
    for (tb_session *s = server->sessions; s; s = s->next) {
        if (s->write_asked && tb_outbox_has_output(s) && now - s->last_write_ns >= TB_NS_PER_SEC)
            lws_callback_on_writable(s->wsi); /* ask again: a request lws dropped must not stall it */
        if (tb__reader_progressed(s, now))
            s->last_progress_ns = now;
        tb_link_check(s, now);
        if (!s->ping_sent_ns && !s->ping_wanted && !s->closing && now - s->last_ping_ns >= TB__PING_INTERVAL_NS) {
            s->last_ping_ns = now;
            tb_outbox_ping(s);
        }
        /* stuck, one of:
         *  - a ping reached the client's kernel (acknowledged) the timeout ago
         *    and no pong came: the application has not read that far. This
         *    sees a stalled reader while its receive buffer is still filling,
         *    even from a room that sends a trickle;
         *  - nothing drained from the send queue for the timeout;
         *  - lws holds data it could not write at all (no WRITEABLE) as long. */
        bool stuck = (s->ping_delivered_ns && now - s->ping_delivered_ns >= limit) ||
                     now - s->last_progress_ns >= limit ||
                     ((tb_outbox_has_output(s) || s->closing) && now - s->last_write_ns >= limit);
        if (!stuck)
            continue;
        tb_log_info("client %u (%s) has not read for %d s: disconnecting", s->id, s->addr,
                    server->cfg->slow_reader_timeout);
        tb_session_count_slow_reader(s);
        s->last_write_ns = s->last_progress_ns = now; /* once */
        s->ping_sent_ns = s->ping_delivered_ns = 0;
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    }
    server->writing_direct = false;
    if (!server->stopping) {
        int retired = tb_registry_sweep(server->registry, now);
        if (retired)
            tb_log_info("retired %d idle room(s)", retired);
    }
}
