/* link.c: what each client's link delivers, and the snapshot rate that fits it
 * (session.h: who owns what; issue 17, PROTOCOL.md §13).
 *
 * What the server learns of a link, per session:
 *   - round trips: a WebSocket ping every TB__LINK_PING_NS (one outstanding
 *     at a time; every second on a calm link of under 20 ms); its pong comes back once the client has read every byte
 *     written before it, so ping to pong is the round trip *plus the time
 *     the data waited in buffers* on the way (the server's socket, a proxy,
 *     a router queue). The smallest of the last 10-20 s is the path itself
 *     (rtt_min); the rest is the queueing delay. Every client answers pings
 *     (browsers and `ws` do so on their own), so this holds for old clients
 *     that send no link reports. While a ping is out, its age bounds the
 *     queueing delay from below, so a queue that builds is seen as it builds.
 *   - link reports (§13): the client's newest applied tick gives its view lag
 *     (how far behind the present its picture is: the metrics histogram), and
 *     recv_bytes the bytes delivered and still on the way (payload written -
 *     recv_bytes: the backlog outside the server).
 *   - delivered throughput: bytes known delivered (by pongs and reports)
 *     over time; the largest such sample of the last 5-10 s is what the link
 *     was seen to carry (capacity).
 *   - the kernel send queue (SIOCOUTQ): bytes not yet acknowledged.
 *
 * The stream tier (latency-bounded streaming). A client that cannot take
 * every snapshot gets every k-th one, k in tb_room_strides (60, 30, 20, 15,
 * 10, 5 a second at 60/s), from an encoder of that tier (sim/sched.c) so its
 * deltas chain with the predictor state of its own stream; changing tier
 * costs one keyframe of the new tier, and the session stays on its old tier
 * until that keyframe arrives (outbox.c). The rule, evaluated at most every
 * 50 ms (on snapshots, pongs, reports and the housekeeping timer):
 *   - queueing delay above TB__Q_HIGH_NS, once the last change had time to
 *     show (a round trip + 100 ms) and unless the queue is already draining:
 *     down, to the tier whose expected rate fits 75% of what the link
 *     delivers (rate ~ stride^-0.7: a delta over k snapshots is a bit bigger
 *     than one over one), at least one tier;
 *   - below TB__Q_LOW_NS for a while: up one tier; after 1 s when the next
 *     tier's expected rate fits 80% of the seen capacity, otherwise after
 *     probe_hold (4 s), which doubles (to 64 s) each time a step up is
 *     followed by congestion within 4 s: a link that cannot take the faster
 *     rate is probed rarely, since each probe costs two keyframes.
 * The view lag then stays near one-way delay + the tier's interval + a
 * queue below TB__Q_HIGH_NS: about RTT/2 + 150 ms at the tiers that fit.
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <linux/sockios.h>
#include <math.h>
#include <sys/ioctl.h>

#include "net/log.h"
#include "sim/clock.h"

_Static_assert(TB_ROOM_TIERS == TB_METRICS_TIERS, "metrics count every stream tier");

#define TB__LINK_PING_NS (250 * TB_NS_PER_MS)
#define TB__LAN_RTT_NS (20 * TB_NS_PER_MS)
#define TB__LINK_CHECK_NS (50 * TB_NS_PER_MS)
#define TB__Q_HIGH_NS (120 * TB_NS_PER_MS)
#define TB__Q_LOW_NS (25 * TB_NS_PER_MS)
#define TB__RTT_WINDOW_NS (5 * TB_NS_PER_SEC)
#define TB__CAPACITY_KEEP_NS (30 * TB_NS_PER_SEC)
#define TB__CONGESTED_FOR_NS (250 * TB_NS_PER_MS)
#define TB__CALM_SAFE_NS (1 * TB_NS_PER_SEC)
#define TB__PROBE_MIN_NS (4 * TB_NS_PER_SEC)
#define TB__PROBE_MAX_NS (64 * TB_NS_PER_SEC)
#define TB__RATE_EXPONENT 0.55

static int64_t tb__max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* What the link carries: the delivery rate seen while it was the limit,
 * for 30 s; otherwise what it delivers now (a lower bound). */
static double tb__capacity(const tb_link *l, int64_t now)
{
    if (l->capacity_at_ns && now - l->capacity_at_ns < TB__CAPACITY_KEEP_NS)
        return l->capacity_bps;
    return l->delivered_bps;
}

/* Is the link the limit: it delivers clearly less than is written to it? */
static bool tb__link_limited(const tb_link *l)
{
    return l->delivered_bps > 0 && l->sent_bps > 0 && l->delivered_bps < 0.9 * l->sent_bps;
}

static int64_t tb__rtt_min(const tb_link *l)
{
    int64_t a = l->rtt_min_ns, b = l->rtt_min_next_ns;
    int64_t m = a < b ? a : b;
    return m == INT64_MAX ? 0 : m;
}

void tb_link_init(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    memset(l, 0, sizeof *l);
    l->rtt_min_ns = l->rtt_min_next_ns = INT64_MAX;
    l->rtt_min_since_ns = l->rate_since_ns = now;
    l->view_lag_ns = -1;
    l->probe_hold_ns = TB__PROBE_MIN_NS;
}

void tb_link_written(tb_session *s, size_t payload, bool snapshot)
{
    tb_link *l = &s->link;
    l->payload_sent += payload;
    l->rate_bytes += payload;
    if (snapshot)
        l->frame_bytes = l->frame_bytes > 0 ? 0.9 * l->frame_bytes + 0.1 * (double)payload : (double)payload;
}

/* A delivery sample: bytes delivered over dt. */
static void tb__delivered(tb_link *l, double bytes, int64_t dt, int64_t now)
{
    if (dt < 20 * TB_NS_PER_MS || bytes < 0)
        return;
    double bps = bytes * 1e9 / (double)dt;
    l->delivered_bps = l->delivered_bps > 0 ? 0.7 * l->delivered_bps + 0.3 * bps : bps;
}

void tb_link_pong(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    if (!s->ping_sent_ns)
        return;
    l->rtt_ns = now - s->ping_sent_ns;
    if (now - l->rtt_min_since_ns >= TB__RTT_WINDOW_NS) {
        l->rtt_min_ns = l->rtt_min_next_ns;
        l->rtt_min_next_ns = INT64_MAX;
        l->rtt_min_since_ns = now;
    }
    if (l->rtt_ns < l->rtt_min_next_ns)
        l->rtt_min_next_ns = l->rtt_ns;
    l->queue_prev_ns = l->queue_ns;
    l->queue_ns = l->rtt_ns - tb__rtt_min(l);
    if (s->welcomed)
        tb_hist_observe_link(&s->server->metrics->client_queue_delay, l->queue_ns / TB_NS_PER_US);
    if (l->pong_at_ns)
        tb__delivered(l, (double)(s->ping_end - l->pong_delivered), now - l->pong_at_ns, now);
    l->pong_delivered = s->ping_end;
    l->pong_at_ns = now;
    tb_link_check(s, now);
}

void tb_link_report(tb_session *s, const tb_client_msg *m, int64_t now)
{
    tb_link *l = &s->link;
    if (m->link.has_rtt)
        l->client_rtt_ns = (int64_t)(m->link.rtt_ms * 1e6);
    int64_t rtt = l->client_rtt_ns ? l->client_rtt_ns : tb__rtt_min(l);
    if (m->link.has_ack_tick && s->room && s->welcomed) {
        /* the report left the client rtt/2 ago; the room was at net_tick then */
        int32_t behind = (int32_t)(s->room->net_tick - m->link.ack_tick);
        int64_t lag = (int64_t)behind * TB_STEP_NS - rtt / 2;
        l->view_lag_ns = lag > 0 ? lag : 0;
        l->ack_tick = m->link.ack_tick;
        tb_hist_observe_link(&s->server->metrics->client_view_lag, l->view_lag_ns / TB_NS_PER_US);
    }
    if (m->link.has_recv_bytes) {
        if (l->has_report_bytes) {
            uint32_t got = m->link.recv_bytes - l->report_bytes;
            tb__delivered(l, (double)got, now - l->report_at_ns, now);
            if (got > 0) {
                /* the client reads, however slowly: the outstanding ping is
                 * behind data it is still taking in, not a stalled reader */
                s->last_progress_ns = now;
                if (s->ping_delivered_ns)
                    s->ping_delivered_ns = now;
            }
        }
        l->report_bytes = m->link.recv_bytes;
        l->report_at_ns = now;
        l->has_report_bytes = true;
    }
    tb_link_check(s, now);
}

/* ---- the stream tier ---------------------------------------------------- */

void tb_link_room_tiers(tb_room *room)
{
    unsigned wanted = 0;
    for (tb_session *s = room->net; s; s = s->room_next)
        if (s->welcomed)
            wanted |= (1u << s->link.tier) | (1u << s->link.next);
    atomic_store_explicit(&room->tiers_wanted, wanted & ~1u, memory_order_release);
}

void tb_link_joined(tb_session *s)
{
    s->link.tier = s->link.next = 0;
    atomic_store(&s->server->metrics->snapshot_hz, s->server->cfg->snapshot_rate);
    atomic_fetch_add(&s->server->metrics->clients_by_tier[0], 1);
}

void tb_link_left(tb_session *s)
{
    if (!s->welcomed)
        return;
    atomic_fetch_sub(&s->server->metrics->clients_by_tier[s->link.tier], 1);
    s->link.tier = s->link.next = 0;
    if (s->room)
        tb_link_room_tiers(s->room);
}

void tb_link_switched(tb_session *s, size_t key_bytes)
{
    tb_metrics *m = s->server->metrics;
    tb_link *l = &s->link;
    int64_t now = tb_clock_now_ns();
    double capacity = tb__capacity(l, now);
    l->changed_ns = now;
    /* the keyframe crosses in key/capacity and the queue it leaves drains at
     * the headroom (a quarter of the link, or so): give it four times that */
    l->settle_ns = capacity > 1000 ? (int64_t)(4.0 * (double)key_bytes / capacity * 1e9) : 0;
    if (l->settle_ns > 2 * TB_NS_PER_SEC)
        l->settle_ns = 2 * TB_NS_PER_SEC;
    atomic_fetch_sub(&m->clients_by_tier[s->link.tier], 1);
    atomic_fetch_add(&m->clients_by_tier[s->link.next], 1);
    s->link.tier = s->link.next;
    tb_link_room_tiers(s->room);
}

static void tb__switch(tb_session *s, int tier, int64_t now, int64_t q, int64_t frame_ns)
{
    tb_link *l = &s->link;
    tb_log_debug("client %u: stream every %d%s snapshot -> every %d (queue %.0f ms, frame %.0f ms, rtt_min %.0f ms, "
                 "sent %.1f, delivered %.1f, capacity %.1f kbit/s, probe hold %.0f s)",
                 s->id, tb_room_strides[l->tier], l->tier ? "th" : "", tb_room_strides[tier], (double)q / 1e6,
                 (double)frame_ns / 1e6, (double)tb__rtt_min(l) / 1e6, l->sent_bps * 8e-3, l->delivered_bps * 8e-3,
                 tb__capacity(l, now) * 8e-3,
                 (double)l->probe_hold_ns / 1e9);
    TB_COUNT(s->server->metrics, stream_rate_changes_total[tier > l->tier ? 0 : 1]);
    if (tier < l->tier)
        l->last_up_ns = now;
    l->next = tier;
    l->changed_ns = now;
    l->calm_since_ns = 0;
    tb_link_room_tiers(s->room);
    tb_outbox_want_key(s);
}

/* The queueing delay now: the newest pong's, or the age of the outstanding
 * ping beyond the path's round trip if larger; a kernel send queue that
 * holds more than it should. (A report's backlog, bytes written - received,
 * is not used: on a slow stream one frame the client has not counted yet is
 * a large part of a second's bytes, and reads as a queue it is not.) */
static int64_t tb__queue_now(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    /* two pongs in a row: one late pong is a hiccup (of either end), not a queue */
    int64_t rtt_min = tb__rtt_min(l), q = l->queue_ns < l->queue_prev_ns ? l->queue_ns : l->queue_prev_ns;
    if (s->ping_sent_ns)
        q = tb__max64(q, now - s->ping_sent_ns - rtt_min);
    double rate = l->delivered_bps > l->sent_bps ? l->delivered_bps : l->sent_bps;
    if (rate < 1000)
        rate = 1000;
    int fd = lws_get_socket_fd(s->wsi), outq = 0;
    if (fd >= 0 && ioctl(fd, SIOCOUTQ, &outq) == 0 && outq > 16384)
        q = tb__max64(q, (int64_t)((double)outq / rate * 1e9) - rtt_min);
    return q;
}

void tb_link_check(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    if (!s->welcomed || s->closing || !s->room || now - l->last_check_ns < TB__LINK_CHECK_NS)
        return;
    l->last_check_ns = now;
    /* 4 pings a second where the link matters (a remote client, a queue, a
     * lowered rate); a calm client on a LAN or loopback keeps the
     * housekeeping's one a second (load tests: no extra writes) */
    bool remote = tb__rtt_min(l) > TB__LAN_RTT_NS || l->queue_ns > TB__Q_LOW_NS || l->tier || l->next;
    if (!s->ping_sent_ns && !s->ping_wanted && now - s->last_ping_ns >= (remote ? TB__LINK_PING_NS : TB_NS_PER_SEC)) {
        s->last_ping_ns = now;
        s->ping_wanted = true;
        tb_outbox_ask_writable(s);
    }
    if (now - l->rate_since_ns >= 250 * TB_NS_PER_MS) {
        double bps = (double)l->rate_bytes * 1e9 / (double)(now - l->rate_since_ns);
        l->sent_bps = l->sent_bps > 0 ? 0.5 * l->sent_bps + 0.5 * bps : bps;
        l->rate_bytes = 0;
        l->rate_since_ns = now;
    }
    if (l->tier != l->next)
        return; /* a change is on its way (its keyframe): judge it once it shows */
    int64_t q = tb__queue_now(s, now), rtt_min = tb__rtt_min(l);
    /* a ping sent just behind a snapshot waits while that frame crosses the
     * bottleneck: that much queue is the frame's, not a backlog */
    double capacity = tb__capacity(l, now);
    int64_t frame_ns = capacity > 1000 ? (int64_t)(l->frame_bytes / capacity * 1e9) : 0;
    if (frame_ns > 250 * TB_NS_PER_MS)
        frame_ns = 250 * TB_NS_PER_MS;
    int64_t settle = tb__max64(rtt_min + 100 * TB_NS_PER_MS, 300 * TB_NS_PER_MS) + l->settle_ns;
    int stride = tb_room_strides[l->tier];
    /* known capacity, and what is written now does not fit it: step down
     * before the queue shows (the scene got busier) */
    bool known = l->capacity_at_ns && now - l->capacity_at_ns < TB__CAPACITY_KEEP_NS;
    if (known && l->tier < TB_ROOM_TIERS - 1 && l->sent_bps > l->capacity_bps && now - l->changed_ns >= settle) {
        l->queue_at_change_ns = q;
        tb__switch(s, l->tier + 1, now, q, frame_ns);
        return;
    }
    if (q > TB__Q_HIGH_NS + frame_ns) {
        l->calm_since_ns = 0;
        if (!l->congested_since_ns)
            l->congested_since_ns = now;
        if (l->tier == TB_ROOM_TIERS - 1 || now - l->changed_ns < settle ||
            now - l->congested_since_ns < TB__CONGESTED_FOR_NS)
            return;
        /* still draining what the last change left: give it time */
        if (l->changed_ns && now - l->changed_ns < 3 * TB_NS_PER_SEC && q < l->queue_at_change_ns)
            return;
        /* one tier, unless the link is known to carry far less than is sent */
        double target = 0.8 * l->delivered_bps;
        double ratio = target > 0 && l->sent_bps > 1.5 * target ? l->sent_bps / target : 1.0;
        double want = stride * pow(ratio, 1.0 / TB__RATE_EXPONENT);
        int tier = l->tier + 1;
        while (tier < TB_ROOM_TIERS - 1 && tb_room_strides[tier] < want)
            tier++;
        /* a long queue and no word yet of what the link delivers (the start):
         * a tier more for each further threshold the queue is over */
        for (int64_t over = q - 2 * (TB__Q_HIGH_NS + frame_ns); over > 0 && tier < TB_ROOM_TIERS - 1;
             over -= TB__Q_HIGH_NS + frame_ns)
            tier++;
        bool limited = tb__link_limited(l);
        if (limited) { /* the link is the limit: remember what it carries */
            l->capacity_bps = l->delivered_bps;
            l->capacity_at_ns = now;
        }
        if (limited && l->last_up_ns && now - l->last_up_ns < 4 * TB_NS_PER_SEC) /* a step up that failed */
            l->probe_hold_ns = l->probe_hold_ns * 2 < TB__PROBE_MAX_NS ? l->probe_hold_ns * 2 : TB__PROBE_MAX_NS;
        l->queue_at_change_ns = q;
        tb__switch(s, tier, now, q, frame_ns);
        return;
    }
    l->congested_since_ns = 0;
    if (q > TB__Q_LOW_NS + frame_ns) {
        l->calm_since_ns = 0;
        return;
    }
    if (!l->calm_since_ns)
        l->calm_since_ns = now;
    if (l->tier == 0)
        return;
    int64_t calm = now - tb__max64(l->calm_since_ns, l->changed_ns);
    /* a link never seen limiting (or not for 30 s) is tried after 1 s of
     * calm; one that was, when the next tier's rate fits what it carried,
     * else after the probe hold */
    double expected = l->sent_bps * pow((double)stride / tb_room_strides[l->tier - 1], TB__RATE_EXPONENT);
    bool fits = !known || expected <= 0.8 * capacity;
    if ((fits && calm >= TB__CALM_SAFE_NS) || calm >= l->probe_hold_ns) {
        if (!fits && l->last_up_ns && now - l->last_up_ns > 30 * TB_NS_PER_SEC)
            l->probe_hold_ns = TB__PROBE_MIN_NS; /* long calm: the link may have changed */
        l->queue_at_change_ns = 0;
        tb__switch(s, l->tier - 1, now, q, frame_ns);
    }
}
